package pipeline

import (
	"math"
	"time"

	"github.com/forecastd/forecastd/ahead"
	"github.com/forecastd/forecastd/embedding"
)

// MaxHorizon bounds Config.Horizon: two weeks of hourly points, or a day
// of 5-minute points.
const MaxHorizon = ahead.MaxHorizon

// Step is the forecast of one step of a path: the value h points after the
// forecast's origin.
type Step struct {
	// Horizon is h ≥ 1, the steps ahead of the origin.
	Horizon int
	// Time is the target time: the origin plus h intervals.
	Time time.Time
	// Value is ŷ(t+h) in the series' units.
	Value float64
	// Lower and Upper bound the step's prediction interval, calibrated on
	// the errors of the steps around it; NaN while too few were seen.
	Lower, Upper float64
}

// HasInterval reports whether the step carries a prediction interval.
func (s Step) HasInterval() bool { return !math.IsNaN(s.Lower) }

// horizon forecasts steps 2…H of a series with target change (step 1 is
// the Series' own forecast, unchanged) by package ahead: seasonal and
// autoregressive forecasters of the series' values, combined step by step
// by their errors at anchor steps (2, 3, 4, 6, 8, 12, …, H), each step
// with its own interval. See ahead.Forecaster.
type horizon struct {
	fc   *ahead.Forecaster
	path []Step // the newest forecast's steps 1…H (Forecast.Path)
	done []Step // the steps closed by the newest point (Outcome.Path)
	// scaled and errors are fc.Path and fc.Errors, which the thresholds
	// read (a test puts constructed ones in their place).
	scaled func() []float64
	errors func(h int) ([]float64, float64)

	// The model's recursive path, a forecaster the combination weighs:
	// its own forecasts fed back as inputs (embedding.Changes.InputAhead),
	// modelSteps of them, then held.
	modelPath []float64
	input     []float64
	ahead     embedding.Ahead
}

func newHorizon(cfg Config) (*horizon, error) {
	fc, err := ahead.New(ahead.Config{Horizon: cfg.Horizon, Coverage: cfg.Coverage, Window: cfg.IntervalWindow, External: 1})
	if err != nil {
		return nil, err
	}
	return &horizon{fc: fc, path: make([]Step, cfg.Horizon), done: make([]Step, 0, len(ahead.Anchors(cfg.Horizon))+1),
		scaled: fc.Path, errors: fc.Errors, modelPath: make([]float64, cfg.Horizon), input: make([]float64, cfg.ModelDim())}, nil
}

// modelSteps is the steps of the model's recursive path; beyond them it
// goes on at the mean step it took. Its errors compound as its forecasts
// become its inputs: a dozen steps is where it helps the combination of
// short horizons (five-minute NAB streams, an hour ahead) and costs a
// dozen predictions a point at most, and a trend it learned (a disk that
// fills) is carried on beyond them.
const modelSteps = 12

// recursive fills z.modelPath with the model's path from its scaled change
// y1 at the newest value v (scaled): steps 1…modelSteps by feeding its
// forecasts back as inputs, then on at the mean step from v.
func (s *Series) recursive(y1, scale, v float64) {
	z, c := s.horizon, s.changes
	prev := c.Unscale(y1)
	if math.IsNaN(prev) || math.IsInf(prev, 0) {
		prev = v
	}
	z.modelPath[0] = prev
	c.ResetAhead(&z.ahead)
	k := min(modelSteps, len(z.modelPath))
	for h := 2; h <= k; h++ {
		if s.learned > 0 {
			c.InputAheadFrom(z.input, z.modelPath[:h-1], &z.ahead)
			y, err := s.model.reg.Predict(z.input)
			if err == nil && !math.IsNaN(y) && !math.IsInf(y, 0) {
				if n := prev + y*scale; !math.IsNaN(n) && !math.IsInf(n, 0) {
					prev = n
				}
			}
		}
		z.modelPath[h-1] = prev
	}
	step := (prev - v) / float64(k)
	for h := k + 1; h <= len(z.modelPath); h++ {
		if n := prev + step; !math.IsNaN(n) && !math.IsInf(n, 0) {
			prev = n
		}
		z.modelPath[h-1] = prev
	}
}

// restart forgets every pending forecast (a gap: none will be scored).
func (z *horizon) restart() { z.fc.Restart() }

// pushAhead gives the point of time tm and scaled value v, just pushed
// into the series' changes, to the forecasts ahead, and makes z.done its
// closed steps: step 1 (step1, if has) first, then the anchor steps it
// scored.
func (s *Series) pushAhead(tm time.Time, step1 Step, has bool) {
	z := s.horizon
	z.fc.Push(s.changes)
	z.done = z.done[:0]
	if has {
		z.done = append(z.done, step1)
	}
	for _, sc := range z.fc.Scored() {
		st := Step{Horizon: sc.Step, Time: time.Unix(0, sc.Label).In(tm.Location()), Value: s.bound(s.scaler.Unscale(sc.Forecast)),
			Lower: math.NaN(), Upper: math.NaN()}
		s.interval(&st, sc.Forecast, sc.HalfWidth, sc.Scale)
		z.done = append(z.done, st)
	}
}

// interval sets st's bounds from the scaled forecast yhat and its
// half-width half in scales (none if half < 0 or a bound is infinite).
func (s *Series) interval(st *Step, yhat, half, scale float64) {
	if half < 0 {
		return
	}
	lo, hi := s.bound(s.scaler.Unscale(yhat-half*scale)), s.bound(s.scaler.Unscale(yhat+half*scale))
	if !math.IsInf(lo, 0) && !math.IsInf(hi, 0) {
		st.Lower, st.Upper = lo, hi
	}
}

// forecastAhead makes the path of the newest point, whose step-1 forecast
// is f (the Series' forecast, step 1 of the path), from the model's scaled
// change y1 (0 for a model that has learned nothing), at scale, the
// newest value v (scaled). It fills z.path.
func (s *Series) forecastAhead(f Forecast, y1, scale, v float64) {
	z := s.horizon
	iv := s.Interval()
	origin := f.Origin
	s.recursive(y1, scale, v)
	z.fc.Forecast(s.changes, scale, func(h int) int64 { return origin.Add(time.Duration(h) * iv).UnixNano() }, z.modelPath)
	z.path[0] = Step{Horizon: 1, Time: f.Time, Value: f.Value, Lower: f.Lower, Upper: f.Upper}
	ap := z.fc.Path()
	for h := 2; h <= len(z.path); h++ {
		yhat := ap[h-1]
		if math.IsNaN(yhat) || math.IsInf(yhat, 0) {
			yhat = v
		}
		st := Step{Horizon: h, Time: origin.Add(time.Duration(h) * iv), Value: s.bound(s.scaler.Unscale(yhat)),
			Lower: math.NaN(), Upper: math.NaN()}
		s.interval(&st, yhat, z.fc.HalfWidth(h), scale)
		z.path[h-1] = st
	}
}
