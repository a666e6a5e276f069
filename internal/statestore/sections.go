package statestore

import (
	"errors"
	"fmt"
	"time"

	"github.com/forecastd/forecastd/anomaly"
	"github.com/forecastd/forecastd/embedding"
	"github.com/forecastd/forecastd/pipeline"
)

// sectionCodec writes and reads one section of a state file: enc, if not
// nil, writes it when present says the state has one (nil: always); dec
// reads it. Encode writes the sections in this order.
type sectionCodec struct {
	tag     uint64
	enc     func(*enc, *pipeline.SeriesState)
	present func(*pipeline.SeriesState) bool
	dec     func(*dec, *pipeline.SeriesState)
}

var sectionCodecs = []sectionCodec{
	{secConfig, encConfig, nil, decConfig},
	{secSeries, encSeries, nil, decSeries},
	{secStats, encStats, nil, decStats},
	{secEmbedding, encEmbedding, nil, decEmbedding},
	{secIntervals, encIntervals, nil, decIntervals},
	{secAnomaly, encAnomaly, func(st *pipeline.SeriesState) bool {
		return st.Anomaly != (anomaly.State{}) || st.Stats.Anomalies != 0 // a fresh detector needs none
	}, decAnomaly},
	{secAnomalyHistory, encAnomalyHistory, func(st *pipeline.SeriesState) bool {
		h := st.Anomaly
		return h.HasLast || h.Steps != 0 || h.BlockStart != 0 || h.HasRange
	}, decAnomalyHistory},
	{secAnomalySeasonal, encAnomalySeasonal, func(st *pipeline.SeriesState) bool {
		return st.Anomaly.SeasonalN != 0 || st.Anomaly.LastOpen != 0
	}, decAnomalySeasonal},
	{secAnomalySurprised, func(e *enc, st *pipeline.SeriesState) { e.Uint(st.Anomaly.Surprised) },
		func(st *pipeline.SeriesState) bool { return st.Anomaly.Surprised != 0 },
		func(d *dec, st *pipeline.SeriesState) { st.Anomaly.Surprised = d.Uint() }},
	{secChange, encChange, func(st *pipeline.SeriesState) bool { return st.Changes != nil }, decChange},
	{secBucket, encBucket, func(st *pipeline.SeriesState) bool { return st.Bucket != nil }, decBucket},
	{secBucketScale, func(e *enc, st *pipeline.SeriesState) { e.Int(int64(st.Bucket.Shift)) },
		func(st *pipeline.SeriesState) bool { return st.Bucket != nil && st.Bucket.Shift != 0 }, decBucketScale},
	{secAhead, func(e *enc, st *pipeline.SeriesState) { encodeAhead(e, st.Horizon) },
		func(st *pipeline.SeriesState) bool { return st.Horizon != nil }, func(d *dec, st *pipeline.SeriesState) { st.Horizon = decodeAhead(d) }},
	// An earlier version's multi-step state: its steps start afresh.
	{secHorizon, nil, nil, func(d *dec, _ *pipeline.SeriesState) { d.B = d.B[len(d.B):] }},
}

// encConfig writes section secConfig.
func encConfig(e *enc, st *pipeline.SeriesState) {
	e.Uint(uint64(len(st.Config)))
	for _, f := range st.Config {
		e.Str(f.Key)
		e.Str(f.Value)
	}
}

// decConfig reads section secConfig.
func decConfig(d *dec, st *pipeline.SeriesState) {
	n := d.Count(2)
	st.Config = make([]pipeline.ConfigField, 0, n)
	for range n {
		k := d.Str()
		v := d.Str()
		st.Config = append(st.Config, pipeline.ConfigField{Key: k, Value: v})
	}
}

// encSeries writes section secSeries.
func encSeries(e *enc, st *pipeline.SeriesState) {
	e.Bools(st.Learning, st.RestartNext, st.HavePoint, st.Pending)
	e.Uint(st.Learned)
	e.Time(st.LastTime)
	e.Int(int64(st.NSpacing))
	for _, d := range st.Spacings {
		e.Int(int64(d))
	}
	encForecast(e, st.Pend)
	e.Float(st.PendH)
}

// decSeries reads section secSeries.
func decSeries(d *dec, st *pipeline.SeriesState) {
	st.Learning, st.RestartNext, st.HavePoint, st.Pending = d.Bool(), d.Bool(), d.Bool(), d.Bool()
	st.Learned = d.Uint()
	st.LastTime = d.Time()
	st.NSpacing = d.Intn()
	for i := range st.Spacings {
		st.Spacings[i] = time.Duration(d.Int())
	}
	st.Pend = decForecast(d)
	st.PendH = d.Float()
}

// encStats writes section secStats.
func encStats(e *enc, st *pipeline.SeriesState) {
	s := st.Stats
	for _, v := range []uint64{s.Points, s.OutOfOrder, s.NonFinite, s.Restarts, s.Updates, s.LearnErrors, s.Forecasts, s.PredictErrors} {
		e.Uint(v)
	}
	e.Int(s.UpdateNanos)
	e.Int(s.PredictNanos)
	e.Int(int64(s.MaxModelSize))
}

// decStats reads section secStats.
func decStats(d *dec, st *pipeline.SeriesState) {
	s := &st.Stats
	for _, p := range []*uint64{&s.Points, &s.OutOfOrder, &s.NonFinite, &s.Restarts, &s.Updates, &s.LearnErrors, &s.Forecasts, &s.PredictErrors} {
		*p = d.Uint()
	}
	s.UpdateNanos = d.Int()
	s.PredictNanos = d.Int()
	s.MaxModelSize = d.Intn()
}

// encEmbedding writes section secEmbedding.
func encEmbedding(e *enc, st *pipeline.SeriesState) {
	d := st.Delay
	e.Int(int64(d.B))
	e.Int(int64(d.Tau))
	e.Int(int64(d.Count))
	e.Floats(d.Values)
	sc := st.Scaler
	e.Int(int64(sc.Spec.Mode))
	e.Float(sc.Spec.Min)
	e.Float(sc.Spec.Max)
	e.Int(int64(sc.Spec.N))
	e.Int(int64(sc.Seen))
	e.Float(sc.Min)
	e.Float(sc.Max)
	e.Uint(uint64(len(st.Warmup)))
	for _, p := range st.Warmup {
		e.Time(p.Time)
		e.Float(p.Value)
		e.Bools(p.Restart)
	}
}

// decEmbedding reads section secEmbedding.
func decEmbedding(d *dec, st *pipeline.SeriesState) {
	st.Delay = embedding.DelayState{B: d.Intn(), Tau: d.Intn(), Count: d.Intn(), Values: d.Floats()}
	sc := &st.Scaler
	sc.Spec.Mode = embedding.ScaleMode(d.Intn())
	sc.Spec.Min, sc.Spec.Max = d.Float(), d.Float()
	sc.Spec.N = d.Intn()
	sc.Seen = d.Intn()
	sc.Min, sc.Max = d.Float(), d.Float()
	n := d.Count(11)
	if n > 0 {
		st.Warmup = make([]pipeline.WarmupPoint, n)
	}
	for i := range n {
		st.Warmup[i].Time = d.Time()
		st.Warmup[i].Value = d.Float()
		st.Warmup[i].Restart = d.Bool()
	}
}

// encIntervals writes section secIntervals.
func encIntervals(e *enc, st *pipeline.SeriesState) {
	e.Floats(st.Residuals)
	e.Float(st.Alpha)
}

// decIntervals reads section secIntervals.
func decIntervals(d *dec, st *pipeline.SeriesState) {
	st.Residuals = d.Floats()
	st.Alpha = d.Float()
}

// encAnomaly writes section secAnomaly.
func encAnomaly(e *enc, st *pipeline.SeriesState) {
	e.Uint(st.Anomaly.Recent)
	e.Bools(st.Anomaly.Open)
	e.Int(int64(st.Anomaly.Inside))
	e.Int(int64(st.Anomaly.Age))
	e.Uint(st.Stats.Anomalies)
}

// decAnomaly reads section secAnomaly.
func decAnomaly(d *dec, st *pipeline.SeriesState) {
	st.Anomaly.Recent = d.Uint()
	st.Anomaly.Open = d.Bool()
	st.Anomaly.Inside = d.Intn()
	st.Anomaly.Age = d.Intn()
	st.Stats.Anomalies = d.Uint()
}

// encAnomalyHistory writes section secAnomalyHistory.
func encAnomalyHistory(e *enc, st *pipeline.SeriesState) {
	h := st.Anomaly
	e.Float(h.LastY)
	e.Bools(h.HasLast)
	e.Float(h.MeanStep)
	e.Int(int64(h.Steps))
	e.Floats(h.Peaks[:])
	e.Float(h.Peak)
	e.Int(h.BlockStart)
	e.Int(int64(h.Block))
	e.Bools(h.HasRange)
	e.Float(h.Low)
	e.Float(h.High)
	e.Int(h.LowTime)
	e.Int(h.HighTime)
}

// decAnomalyHistory reads section secAnomalyHistory.
func decAnomalyHistory(d *dec, st *pipeline.SeriesState) {
	h := &st.Anomaly
	h.LastY = d.Float()
	h.HasLast = d.Bool()
	h.MeanStep = d.Float()
	h.Steps = d.Intn()
	if peaks := d.Floats(); len(peaks) == len(h.Peaks) {
		copy(h.Peaks[:], peaks)
	} else if d.Err == nil {
		d.Fail(fmt.Errorf("anomaly history: %d block peaks, want %d", len(peaks), len(h.Peaks)))
	}
	h.Peak = d.Float()
	h.BlockStart = d.Int()
	h.Block = d.Intn()
	h.HasRange = d.Bool()
	h.Low = d.Float()
	h.High = d.Float()
	h.LowTime = d.Int()
	h.HighTime = d.Int()
}

// encAnomalySeasonal writes section secAnomalySeasonal.
func encAnomalySeasonal(e *enc, st *pipeline.SeriesState) {
	h := st.Anomaly
	e.Float(h.SeasonalMean)
	e.Int(int64(h.SeasonalN))
	e.Int(int64(h.SeasonalRun))
	e.Int(h.SeasonalSince)
	e.Int(h.LastOpen)
}

// decAnomalySeasonal reads section secAnomalySeasonal.
func decAnomalySeasonal(d *dec, st *pipeline.SeriesState) {
	h := &st.Anomaly
	h.SeasonalMean = d.Float()
	h.SeasonalN = d.Intn()
	h.SeasonalRun = d.Intn()
	h.SeasonalSince = d.Int()
	h.LastOpen = d.Int()
}

// encChange writes section secChange.
func encChange(e *enc, st *pipeline.SeriesState) {
	c := st.Changes
	e.Floats(c.Values)
	e.Int(int64(c.N))
	e.Int(int64(c.Run))
	e.Float(c.Scale)
	e.Int(int64(c.NScale))
	e.Float(c.SumAbs)
	e.Floats(c.Levels)
	e.Bools(c.Seasons != nil)
	e.Uint(uint64(len(c.Seasons)))
	for _, p := range c.Seasons {
		e.Int(int64(p))
	}
	e.Bools(st.HaveInput)
	e.Float(st.PendS)
	for _, cs := range []*pipeline.CombinerState{st.Combine, st.Guard} {
		e.Bools(cs != nil)
		if cs != nil {
			e.Floats(cs.Loss)
			e.Floats(cs.Forecasts)
		}
	}
}

// decChange reads section secChange.
func decChange(d *dec, st *pipeline.SeriesState) {
	c := &embedding.ChangesState{}
	c.Values = d.Floats()
	c.N, c.Run = int(d.Int()), int(d.Int())
	c.Scale = d.Float()
	c.NScale = int(d.Int())
	c.SumAbs = d.Float()
	c.Levels = d.Floats()
	hasSeasons := d.Bool()
	n := d.Count(1)
	if hasSeasons {
		c.Seasons = make([]int, 0, n)
	}
	for range n {
		p := int(d.Int())
		if hasSeasons {
			c.Seasons = append(c.Seasons, p)
		}
	}
	st.Changes = c
	st.HaveInput = d.Bool()
	st.PendS = d.Float()
	for _, cs := range []**pipeline.CombinerState{&st.Combine, &st.Guard} {
		if d.Bool() {
			*cs = &pipeline.CombinerState{Loss: d.Floats(), Forecasts: d.Floats()}
		}
	}
}

// encBucket writes section secBucket.
func encBucket(e *enc, st *pipeline.SeriesState) {
	b := st.Bucket
	e.Bools(b.Open, b.HaveLast, b.RateOK)
	e.Int(b.Start)
	e.Int(int64(b.N))
	e.Float(b.Acc)
	e.Int(b.LastT)
	e.Float(b.LastV)
	e.Int(b.RateFrom)
	e.Int(b.ClosedEnd)
	e.Int(int64(b.Step))
	e.Uint(uint64(b.Agg))
	e.Uint(st.Stats.Late)
}

// decBucket reads section secBucket.
func decBucket(d *dec, st *pipeline.SeriesState) {
	b := &pipeline.BucketState{}
	b.Open, b.HaveLast, b.RateOK = d.Bool(), d.Bool(), d.Bool()
	b.Start = d.Int()
	b.N = d.Intn()
	b.Acc = d.Float()
	b.LastT = d.Int()
	b.LastV = d.Float()
	b.RateFrom = d.Int()
	b.ClosedEnd = d.Int()
	b.Step = time.Duration(d.Int())
	b.Agg = pipeline.Aggregate(d.Uint())
	st.Stats.Late = d.Uint()
	st.Bucket = b
}

// decBucketScale reads section secBucketScale, after secBucket.
func decBucketScale(d *dec, st *pipeline.SeriesState) {
	shift := d.Int()
	if st.Bucket == nil {
		d.Fail(errors.New("before the bucket section"))
	} else if shift < 1 || shift > 64 {
		d.Fail(fmt.Errorf("scale 2^%d", shift))
	} else {
		st.Bucket.Shift = int(shift)
	}
}
