package sinks

import (
	"bytes"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/influxdata/influxdb-client-go/v2/api/write"
	lp "github.com/influxdata/line-protocol"

	"github.com/forecastd/forecastd/anomaly"
	"github.com/forecastd/forecastd/anomaly/threshold"
	"github.com/forecastd/forecastd/pipeline"
)

// clientPoint is the write.Point the sink built of a record before it
// wrote line protocol itself: the oracle lineEncoder must match byte for
// byte once the client has encoded it (clientLine).
func clientPoint(measurement string, names tagNames, r *Record) *write.Point {
	p := write.NewPointWithMeasurement(measurement)
	nf := 0
	field := func(k string, v float64) {
		if !math.IsNaN(v) && !math.IsInf(v, 0) {
			p.AddField(k, v)
			nf++
		}
	}
	tags := func(thr bool) {
		p.AddTag(names.series, tagText(r.Series))
		p.AddTag("model", tagText(r.Model))
		if thr {
			p.AddTag("threshold", threshold.Name(threshold.Direction(r.thr.dir), r.thr.value))
		}
		if r.Measurement != "" {
			p.AddTag(names.measurement, tagText(r.Measurement))
		}
		if r.Field != "" {
			p.AddTag(names.field, tagText(r.Field))
		}
		if r.horizon > 0 && !thr {
			p.AddTag(TagHorizon, names.horizonText(r.horizon))
		}
		if r.Step != "" {
			p.AddTag(TagStep, tagText(r.Step))
		}
		for _, tg := range r.Tags {
			if tg.Key == "" || tg.Value == "" {
				continue
			}
			k := inputTagKey(tg.Key, r.Tags)
			if thr && k == "threshold" {
				k = "tag_threshold"
			}
			p.AddTag(tagText(k), tagText(tg.Value))
		}
	}
	if o := &r.thr; o.dir != 0 {
		field("eta_seconds", o.eta)
		field("threshold_probability", o.prob)
		if nf == 0 {
			return nil
		}
		if ev := threshold.Event(o.event); ev != threshold.None {
			p.AddField("threshold_state", ev.String())
		}
		tags(true)
		p.SortTags()
		p.SortFields()
		p.SetTime(r.Forecast.Origin)
		return p
	}
	var t time.Time
	switch r.Kind {
	case KindForecast:
		f := &r.Forecast
		t = f.Time
		field("yhat", f.Value)
		if f.HasInterval() {
			field("yhat_lower", f.Lower)
			field("yhat_upper", f.Upper)
		}
	case KindOutcome:
		o := &r.Outcome
		t = o.Forecast.Time
		field("y", o.Actual)
		field("error", o.Actual-o.Forecast.Value)
		field("anomaly_score", o.Anomaly.Score)
		if o.Anomaly.Event == anomaly.Opened {
			field("anomaly", 1)
			reason := "deviation"
			switch {
			case o.Anomaly.Extreme:
				reason = "extreme"
			case o.Anomaly.Seasonal:
				reason = "seasonal"
			}
			p.AddField("anomaly_reason", reason)
		}
	}
	if nf == 0 {
		return nil
	}
	tags(false)
	p.SortTags()
	p.SortFields()
	p.SetTime(t)
	return p
}

// clientLine encodes p as influxdb-client-go's WritePoint does
// (internal/write.Service.EncodePoints).
func clientLine(t *testing.T, p *write.Point) []byte {
	var b bytes.Buffer
	e := lp.NewEncoder(&b)
	e.SetFieldTypeSupport(lp.UintSupport)
	e.FailOnFieldErr(true)
	e.SetPrecision(time.Nanosecond)
	if _, err := e.Encode(p); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// awkward are strings line protocol escapes, or the sink rewrites.
var awkward = []string{"", "cpu", "a b", "a,b", "a=b", `c:\`, `x\\`, "t\tn\nf\fr\r", `q"uote`, "é€😀", "time", "model", "yhat",
	"series", "series_key", "_field", "tag_model", "threshold", "tag_threshold", "horizon", "step", `\`, " ", ","}

// Every record the sink makes of forecasts and outcomes — with and
// without an interval, a path, thresholds, an anomaly opened, awkward
// tags, both tag namings — is the line the client's encoder makes of the
// sink's former write.Point.
func TestLineMatchesClient(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	pick := func() string { return awkward[rng.IntN(len(awkward))] }
	nan := math.NaN()
	values := []float64{0, 1, -0.25, 1e-300, 1.7e308, -1.7e308, 123456789.125, nan, math.Inf(1), 3}
	num := func() float64 { return values[rng.IntN(len(values))] }
	n := 0
	for i := range 3000 {
		r := forecastRec(pick(), pick(), i, rng.IntN(2) == 0)
		r.Model = pick()
		if rng.IntN(2) == 0 {
			r.Measurement, r.Field = pick(), pick()
		}
		if rng.IntN(3) == 0 {
			r.Step = pick()
		}
		for range rng.IntN(4) {
			r.Tags = append(r.Tags, Tag{Key: pick(), Value: pick()})
		}
		r.Forecast.Value, r.Forecast.Lower = num(), num()
		if rng.IntN(2) == 0 {
			r.Forecast.Path = []pipeline.Step{
				{Horizon: 1, Time: r.Forecast.Time, Value: num(), Lower: num(), Upper: num()},
				{Horizon: 2, Time: r.Forecast.Time.Add(time.Second), Value: num(), Lower: nan, Upper: nan},
				{Horizon: 12, Time: r.Forecast.Time.Add(time.Minute), Value: num(), Lower: num(), Upper: num()},
			}
		}
		o := outcomeRec(r, num())
		o.Measurement, o.Field, o.Step = r.Measurement, r.Field, r.Step
		o.Outcome.Path = r.Forecast.Path
		o.Outcome.Anomaly.Score = num()
		switch rng.IntN(4) {
		case 1:
			o.Outcome.Anomaly.Event = anomaly.Opened
		case 2:
			o.Outcome.Anomaly.Event, o.Outcome.Anomaly.Extreme = anomaly.Opened, true
		case 3:
			o.Outcome.Anomaly.Event, o.Outcome.Anomaly.Seasonal = anomaly.Opened, true
		}
		var recs []Record
		r.steps(func(q Record) { recs = append(recs, q) })
		o.steps(func(q Record) { recs = append(recs, q) })
		for k := range rng.IntN(3) {
			recs = append(recs, thresholdRecord(r, threshold.Observation{
				Direction: threshold.Direction(1 + k%2), Value: num(), Event: threshold.Event(rng.IntN(4)),
				Crossing: rng.IntN(2) == 0, ETA: time.Duration(rng.IntN(1000)) * time.Second, Probability: num(),
			}))
		}
		names := currentTags
		if i%5 == 0 {
			names = legacyTags
		}
		meas := []string{"forecast", "a b,c", "m\tx"}[i%3]
		e := &lineEncoder{measurement: meas, names: names}
		for j := range recs {
			got, ok := e.line(nil, &recs[j])
			p := clientPoint(meas, names, &recs[j])
			if (p != nil) != ok {
				t.Fatalf("record %+v: line %v, client point %v", recs[j], ok, p != nil)
			}
			if p == nil {
				continue
			}
			if want := clientLine(t, p); !bytes.Equal(got, want) {
				t.Fatalf("record %+v:\n got %q\nwant %q", recs[j], got, want)
			}
			n++
		}
	}
	if n < 5000 {
		t.Errorf("only %d lines compared", n)
	}
}
