// Package backtest is the engine of `forecastd backtest`: it replays a
// recorded series through the daemon's per-series pipeline (the forecast of
// point i is made from points 0…i−1 only), scores every forecast — at each
// step of the path with pipeline.Config.Horizon > 1 — against the actual
// values, and against persistence, seasonal naive and simple exponential
// smoothing on exactly the same points ([lab/baseline]), and
// summarises one series ([Summarize]) or many ([Score], [SummarizeBench]).
//
// It reads no files and parses no flags: lab (forecastd
// backtest) reads the series and prints what this package computes, and
// other code and tests (a model kind's, the anomaly detector's) run it
// directly.
package backtest

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/forecastd/forecastd/anomaly"
	"github.com/forecastd/forecastd/lab/baseline"
	"github.com/forecastd/forecastd/pipeline"
)

// Float is a float64 that marshals NaN and ±Inf (an undefined mean) as null.
type Float float64

// MarshalJSON writes the shortest exact form, or null.
func (f Float) MarshalJSON() ([]byte, error) {
	x := float64(f)
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return []byte("null"), nil
	}
	return strconv.AppendFloat(nil, x, 'g', -1, 64), nil
}

// NaN is an undefined Float.
var NaN = Float(math.NaN())

// Data is a recorded series: the pipeline's timestamps, the same as Unix
// seconds (for plots), and the values. The slices have the same length and
// are only read.
type Data struct {
	Times  []time.Time
	Secs   []float64
	Values []float64
}

// Options say which points are scored and what else a run does.
type Options struct {
	// Train: the first Train points are learned but not scored.
	Train int
	// ScoreFrom: only points from index ⌊ScoreFrom·N⌋ on are scored,
	// 0 ≤ ScoreFrom < 1.
	ScoreFrom float64
	// Freeze stops learning at point Train (the AOSVR paper's fixed
	// predictor).
	Freeze bool
	// OnRow, if not nil, is called with each scored row as it is made, in
	// order (step 1 first for each target point); an error stops the run.
	OnRow func(Row) error
	// Progress, if not nil, is called every 1024 points with the next
	// index.
	Progress func(next int)
}

// ScoreStart returns the first scored index of a series of n points.
func (o Options) ScoreStart(n int) int {
	return max(o.Train, int(math.Floor(o.ScoreFrom*float64(n))))
}

// Row is one scored forecast: of point Index, made Horizon points before.
type Row struct {
	Index                          int
	Secs                           float64
	Actual, Forecast, Lower, Upper float64
	Horizon                        int
	// Anomaly is the detector's observation of the point, on step 1's
	// row; a later step's has a NaN score and no event.
	Anomaly anomaly.Observation
}

// Result is a run of one series.
type Result struct {
	Config pipeline.Config
	// Horizon is the steps scored, max(1, Config.Horizon).
	Horizon int
	// Points is the series' length, Start the first index scored.
	Points, Start int
	// Outcomes counts every 1-step outcome, scored or not, and the first
	// and last one's index.
	Outcomes, FirstOutcome, LastOutcome int
	// Rows are the scored rows of every step, in order of the target
	// point, then of the step.
	Rows []Row
	// Step 1's sums: errors in the series' units and in the model's
	// scaled units, and persistence's (the last value accepted before the
	// point), on the same points.
	N, NIntervals, Covered     int
	SE, AE, SEScaled, AEScaled float64
	PersistenceSE, PersistenceAE,
	PersistenceSEScaled, PersistenceAEScaled float64
	// Took is the wall time of the pipeline (and the scoring).
	Took                  time.Duration
	Stats                 pipeline.Stats
	ModelSize, ModelBytes int
}

// Run replays data through a new pipeline.Series named name, configured by
// cfg, and scores it. It fails if the configuration is invalid or a point
// is refused for anything but its time order (dropped and counted, as the
// daemon does).
func Run(name string, cfg pipeline.Config, data Data, o Options) (*Result, error) {
	s, err := pipeline.New(name, cfg)
	if err != nil {
		return nil, err
	}
	n := len(data.Values)
	res := &Result{Config: cfg, Horizon: max(1, cfg.Horizon), Points: n, Start: o.ScoreStart(n)}
	sc := &scorer{s: s, data: data, res: res, onRow: o.OnRow}
	if h := res.Horizon; h > 1 {
		sc.paths = make([]pathAt, h+1)
		for i := range sc.paths {
			sc.paths[i].steps = make([]pipeline.Step, 0, h)
		}
	}
	freezeAt := -1
	if o.Freeze {
		freezeAt = o.Train
	}
	var took time.Duration
	t0 := time.Now()
	for i := range data.Values {
		if i == freezeAt {
			s.Freeze()
		}
		sc.index = i
		err := s.Process(pipeline.Point{Time: data.Times[i], Value: data.Values[i]}, sc)
		if errors.Is(err, pipeline.ErrOutOfOrder) {
			continue // counted by the series
		} else if err != nil {
			return nil, fmt.Errorf("point %d: %w", i, err)
		}
		sc.prev, sc.havePv = data.Values[i], true
		sc.accepted++
		if i&1023 == 1023 && o.Progress != nil {
			took += time.Since(t0)
			o.Progress(i + 1)
			t0 = time.Now()
		}
	}
	res.Took = took + time.Since(t0)
	res.Stats, res.ModelSize, res.ModelBytes = s.Stats(), s.ModelSize(), s.ModelBytes()
	return res, nil
}

// scorer is the run's pipeline.Sink.
type scorer struct {
	s        *pipeline.Series
	data     Data
	res      *Result
	onRow    func(Row) error
	index    int // the point being pushed
	accepted int // the points accepted before it
	prev     float64
	havePv   bool
	// paths are, with a horizon H > 1, the paths forecast at the last
	// H+1 accepted points, a ring by their number, so that each step is
	// scored on the point it reached.
	paths []pathAt
}

// pathAt is a path forecast at an accepted point, and the restarts the
// series had counted then: a restart (a gap) since drops it, as the
// series drops its pending forecasts.
type pathAt struct {
	valid    bool
	at       int
	restarts uint64
	steps    []pipeline.Step
}

func (sc *scorer) Forecast(_ string, f pipeline.Forecast) error {
	if sc.paths == nil {
		return nil
	}
	p := &sc.paths[sc.accepted%len(sc.paths)]
	p.valid, p.at, p.restarts = true, sc.accepted, sc.s.Stats().Restarts
	p.steps = append(p.steps[:0], f.Path...)
	return nil
}

func (sc *scorer) Outcome(_ string, o pipeline.Outcome) error {
	r, i := sc.res, sc.index
	if r.Outcomes == 0 {
		r.FirstOutcome = i
	}
	r.Outcomes++
	r.LastOutcome = i
	if i < r.Start {
		return nil
	}
	f := o.Forecast
	e := o.Actual - f.Value
	eS := o.ActualScaled - f.Scaled
	r.N++
	r.SE += e * e
	r.AE += math.Abs(e)
	r.SEScaled += eS * eS
	r.AEScaled += math.Abs(eS)
	if sc.havePv {
		pe := o.Actual - sc.prev
		pS, _ := sc.s.Scale(sc.prev)
		peS := o.ActualScaled - pS
		r.PersistenceSE += pe * pe
		r.PersistenceAE += math.Abs(pe)
		r.PersistenceSEScaled += peS * peS
		r.PersistenceAEScaled += math.Abs(peS)
	}
	if f.HasInterval() {
		r.NIntervals++
		if f.Lower <= o.Actual && o.Actual <= f.Upper {
			r.Covered++
		}
	}
	if err := sc.row(Row{i, sc.data.Secs[i], o.Actual, f.Value, f.Lower, f.Upper, 1, o.Anomaly}); err != nil || sc.paths == nil {
		return err
	}
	restarts := sc.s.Stats().Restarts
	for h := 2; h <= r.Horizon; h++ {
		p := &sc.paths[(sc.accepted-h+len(sc.paths))%len(sc.paths)]
		if sc.accepted < h || !p.valid || p.at != sc.accepted-h || p.restarts != restarts || len(p.steps) < h {
			continue
		}
		st := p.steps[h-1]
		a := anomaly.Observation{Score: math.NaN()}
		if err := sc.row(Row{i, sc.data.Secs[i], o.Actual, st.Value, st.Lower, st.Upper, st.Horizon, a}); err != nil {
			return err
		}
	}
	return nil
}

func (sc *scorer) row(r Row) error {
	sc.res.Rows = append(sc.res.Rows, r)
	if sc.onRow != nil {
		return sc.onRow(r)
	}
	return nil
}

// StepRows returns the rows of step h (1-based), in order.
func (r *Result) StepRows(h int) []Row {
	var out []Row
	for _, x := range r.Rows {
		if x.Horizon == h {
			out = append(out, x)
		}
	}
	return out
}

// NotScored says why a run scored nothing, or returns "" if it scored.
func (r *Result) NotScored(o Options) string {
	cfg := r.Config
	switch {
	case r.N > 0:
		return ""
	case r.Points == 0:
		return "no points"
	case r.Outcomes == 0:
		return fmt.Sprintf("no forecast was made: %d points are too few for the model to warm up (scale %s, then dim %d, delay %d)", r.Points, cfg.Scale, cfg.Dim, cfg.Delay)
	}
	why := fmt.Sprintf("--train %d", o.Train)
	if o.ScoreStart(r.Points) > o.Train {
		why = fmt.Sprintf("--score_from %g", o.ScoreFrom)
	}
	return fmt.Sprintf("the first forecast is for point %d, the last for point %d, and scoring starts at point %d (%s) of %d", r.FirstOutcome, r.LastOutcome, r.Start, why, r.Points)
}

// StepScores are a run's scores at each step h = 1…H (index h−1), over
// the same rows for forecastd and the baselines: persistence at h
// (ŷ[i] = y[i−h]) and seasonal naive at h (ŷ[i] = y[i−P·⌈h/P⌉], P one day
// of points as in baseline.SeasonalPeriod; NaN without a period, or if a
// scored point is within the first P·⌈h/P⌉). Coverage is over the rows
// with an interval.
type StepScores struct {
	N                      []int
	MAE, Coverage          []Float
	PersistenceMAE, Snaive []Float
	SnaivePeriod           int
}

// Steps scores every step of r against data's values.
func (r *Result) Steps(data Data) StepScores {
	H := r.Horizon
	p := baseline.SeasonalPeriod(len(data.Values), baseline.MedianSpacing(data.Times))
	s := StepScores{N: make([]int, H), MAE: make([]Float, H), Coverage: make([]Float, H),
		PersistenceMAE: make([]Float, H), Snaive: make([]Float, H), SnaivePeriod: p}
	ae, pae, sae := make([]float64, H), make([]float64, H), make([]float64, H)
	nInt, cov := make([]int, H), make([]int, H)
	snOK := make([]bool, H)
	for h := range snOK {
		snOK[h] = p > 0
	}
	y := data.Values
	for _, x := range r.Rows {
		h := x.Horizon - 1
		s.N[h]++
		ae[h] += math.Abs(x.Actual - x.Forecast)
		if j := x.Index - (h + 1); j >= 0 {
			pae[h] += math.Abs(x.Actual - y[j])
		} else {
			pae[h] = math.NaN()
		}
		if p > 0 {
			if j := x.Index - p*((h+p)/p); j >= 0 {
				sae[h] += math.Abs(x.Actual - y[j])
			} else {
				snOK[h] = false
			}
		}
		if !math.IsNaN(x.Lower) {
			nInt[h]++
			if x.Lower <= x.Actual && x.Actual <= x.Upper {
				cov[h]++
			}
		}
	}
	for h := range H {
		n := float64(s.N[h])
		s.MAE[h], s.PersistenceMAE[h], s.Snaive[h] = Float(ae[h]/n), Float(pae[h]/n), NaN
		if snOK[h] && s.N[h] > 0 {
			s.Snaive[h] = Float(sae[h] / n)
		}
		s.Coverage[h] = Float(float64(cov[h]) / float64(nInt[h]))
	}
	return s
}

// Summary is the --json object of one series. The first fields are the
// stable contract scripts rely on; the rest were added after; the by-horizon arrays (index
// h−1 for step h) are there only with a horizon above 1.
type Summary struct {
	Model            string `json:"model"`
	NScored          int    `json:"n_scored"`
	MSE              Float  `json:"mse"`
	MAE              Float  `json:"mae"`
	RMSE             Float  `json:"rmse"`
	MSEScaled        Float  `json:"mse_scaled"`
	MAEScaled        Float  `json:"mae_scaled"`
	PersistenceMSE   Float  `json:"persistence_mse"`
	PersistenceMAE   Float  `json:"persistence_mae"`
	ModelSize        int    `json:"model_size"`
	MaxModelSize     int    `json:"max_model_size"`
	Updates          uint64 `json:"updates"`
	NsPerUpdate      Float  `json:"ns_per_update"`
	ModelBytes       int    `json:"model_bytes"`
	IntervalCoverage Float  `json:"interval_coverage"`
	Seconds          Float  `json:"seconds"`

	PersistenceMSEScaled Float  `json:"persistence_mse_scaled"`
	PersistenceMAEScaled Float  `json:"persistence_mae_scaled"`
	NsPerForecast        Float  `json:"ns_per_forecast"`
	CoverageNominal      Float  `json:"coverage_nominal"`
	NIntervals           int    `json:"n_intervals"`
	NPoints              int    `json:"n_points"`
	SkippedRows          int    `json:"skipped_rows"`
	Dropped              uint64 `json:"dropped"`
	LearnErrors          uint64 `json:"learn_errors"`

	Horizon                 int     `json:"horizon,omitempty"`
	MAEByHorizon            []Float `json:"mae_by_horizon,omitempty"`
	PersistenceMAEByHorizon []Float `json:"persistence_mae_by_horizon,omitempty"`
	SnaiveMAEByHorizon      []Float `json:"snaive_mae_by_horizon,omitempty"`
	CoverageByHorizon       []Float `json:"coverage_by_horizon,omitempty"`
	SnaivePeriod            int     `json:"snaive_period,omitempty"`
}

// Summarize returns the summary of a run of data that scored (see
// NotScored); Seconds and SkippedRows are the caller's.
func Summarize(r *Result, data Data) Summary {
	st := r.Stats
	nf := float64(r.N)
	sum := Summary{
		Model:                r.Config.Kind.String(),
		NScored:              r.N,
		MSE:                  Float(r.SE / nf),
		MAE:                  Float(r.AE / nf),
		RMSE:                 Float(math.Sqrt(r.SE / nf)),
		MSEScaled:            Float(r.SEScaled / nf),
		MAEScaled:            Float(r.AEScaled / nf),
		PersistenceMSE:       Float(r.PersistenceSE / nf),
		PersistenceMAE:       Float(r.PersistenceAE / nf),
		PersistenceMSEScaled: Float(r.PersistenceSEScaled / nf),
		PersistenceMAEScaled: Float(r.PersistenceAEScaled / nf),
		ModelSize:            r.ModelSize,
		MaxModelSize:         st.MaxModelSize,
		Updates:              st.Updates,
		NsPerUpdate:          Float(float64(st.UpdateNanos) / float64(st.Updates)),
		NsPerForecast:        Float(float64(st.PredictNanos) / float64(st.Forecasts)),
		ModelBytes:           r.ModelBytes,
		IntervalCoverage:     Float(float64(r.Covered) / float64(r.NIntervals)),
		CoverageNominal:      Float(r.Config.Coverage),
		NIntervals:           r.NIntervals,
		NPoints:              r.Points,
		Dropped:              st.OutOfOrder,
		LearnErrors:          st.LearnErrors,
	}
	if r.Horizon > 1 {
		s := r.Steps(data)
		sum.Horizon = r.Horizon
		sum.MAEByHorizon, sum.PersistenceMAEByHorizon, sum.SnaiveMAEByHorizon = s.MAE, s.PersistenceMAE, s.Snaive
		sum.CoverageByHorizon, sum.SnaivePeriod = s.Coverage, s.SnaivePeriod
	}
	return sum
}
