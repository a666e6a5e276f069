package pipeline

import (
	"math"
	"time"
)

// MaxHorizon bounds Config.Horizon: a series keeps H·(H+1)/2 forecasts
// pending, each with its forecasters' values, so memory grows as H².
const MaxHorizon = 64

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
	// the step's own residuals; NaN while too few were seen.
	Lower, Upper float64
}

// HasInterval reports whether the step carries a prediction interval.
func (s Step) HasInterval() bool { return !math.IsNaN(s.Lower) }

// horizon forecasts steps 2…H of a series with target change (step 1 is
// the Series' own forecast, unchanged): the model's path by the recursive
// strategy (its own forecasts fed back as inputs through
// embedding.Changes.InputAhead), and for each step h a combination of that
// path, the robust persistence (the median of the last robustPoints
// values), the exponential smoothing levels and the seasonal median at h,
// weighted by their errors at that step, guarded against persistence
// at that step; each step's interval is split conformal on the residuals
// of forecasts made h points before (its own calibration, its own
// adaptive level: an h-step error is not a 1-step one).
//
// Cost per point: H−1 model predictions, O(H·(N + interval_window)) for
// the combiners and calibrations (N forecasters). Memory: H slots of H
// steps of N values. No allocation once made.
type horizon struct {
	h     int          // H ≥ 2
	n     int          // forecasters combined (0: no combination)
	comb  []*combiner  // step h at comb[h-1]; comb[0] unused (the Series')
	guard []*combiner  // the same
	conf  []*conformal // the same
	slots []hslot      // the forecasts of the last H origins, a ring by point
	pos   int          // slots[pos] is the newest origin's

	path      []Step    // the newest forecast's steps 1…H (Forecast.Path)
	done      []Step    // the steps closed by the newest point (Outcome.Path)
	modelPath []float64 // the model's recursive path, scaled, steps 1…H−1
	input     []float64 // scratch input vector
}

// hslot is what an origin forecast for its steps 2…H, kept until each
// step's actual arrives.
type hslot struct {
	valid bool
	scale float64   // the running scale at the origin
	v     float64   // the origin's value, scaled (persistence)
	cand  []float64 // per step h ≥ 2, n forecasters at cand[(h-2)·n:]
	comb  []float64 // per step h ≥ 2 at comb[h-2]: the combination before the guard
	yhat  []float64 // per step: the forecast, scaled
	half  []float64 // per step: the interval's half-width in scales, or −1
	steps []Step    // per step 1…H: as published (step 1 is the Series')
}

func newHorizon(cfg Config, n, modelDim int) *horizon {
	h := cfg.Horizon
	z := &horizon{
		h: h, n: n,
		comb: make([]*combiner, h), guard: make([]*combiner, h), conf: make([]*conformal, h),
		slots: make([]hslot, h), path: make([]Step, h), done: make([]Step, 0, h),
		modelPath: make([]float64, h), input: make([]float64, modelDim),
	}
	for k := 1; k < h; k++ {
		if n > 0 {
			z.comb[k], z.guard[k] = newCombiner(n), newGuard()
		}
		z.conf[k] = newConformal(cfg.IntervalWindow, cfg.Coverage, cfg.IntervalAdapt)
	}
	for i := range z.slots {
		z.slots[i] = hslot{
			cand: make([]float64, (h-1)*n), comb: make([]float64, h-1),
			yhat: make([]float64, h-1), half: make([]float64, h-1), steps: make([]Step, h),
		}
	}
	return z
}

// restart forgets every pending forecast (a gap: none will be scored).
func (z *horizon) restart() {
	for i := range z.slots {
		z.slots[i].valid = false
	}
}

// close scores, against the scaled value v, the forecasts made h = 2…H
// points before for this point, and records the closed steps (for
// Outcome.Path, after step1 if has).
func (z *horizon) close(v float64, step1 Step, has bool) {
	z.done = z.done[:0]
	if has {
		z.done = append(z.done, step1)
	}
	for h := 2; h <= z.h; h++ {
		sl := &z.slots[(z.pos-h+1+2*z.h)%z.h]
		if !sl.valid {
			continue
		}
		k := h - 2
		r := math.Min(math.Abs(v-sl.yhat[k])/sl.scale, maxResidual)
		c := z.conf[h-1]
		if sl.half[k] >= 0 {
			c.feedback(r > sl.half[k])
		}
		c.add(r)
		if z.n > 0 {
			copy(z.comb[h-1].f, sl.cand[k*z.n:(k+1)*z.n])
			z.comb[h-1].update(v, sl.scale)
			g := z.guard[h-1]
			g.f[0], g.f[1] = sl.comb[k], sl.v
			g.update(v, sl.scale)
		}
		z.done = append(z.done, sl.steps[h-1])
	}
}

// advance moves to the next origin's slot, invalid until forecast.
func (z *horizon) advance() {
	z.pos = (z.pos + 1) % z.h
	z.slots[z.pos].valid = false
}

// forecastAhead makes the path of the newest point, whose step-1 forecast
// is f (the Series' forecast, step 1 of the path), from the model's scaled
// change y1 (0 for a model that has learned nothing), at scale, the
// newest value v (scaled). It fills z.path and keeps the slot for scoring.
func (s *Series) forecastAhead(f Forecast, y1 float64, scale, v float64) {
	z, c := s.hor, s.chg
	sl := &z.slots[z.pos]
	sl.valid, sl.scale, sl.v = true, scale, v
	iv := s.Interval()
	z.path[0] = Step{Horizon: 1, Time: f.Time, Value: f.Value, Lower: f.Lower, Upper: f.Upper}
	sl.steps[0] = z.path[0]

	// The model's recursive path, in scaled values.
	prev := c.Unscale(y1)
	if math.IsNaN(prev) || math.IsInf(prev, 0) {
		prev = v
	}
	z.modelPath[0] = prev
	robust := c.Median(robustPoints) // the same flat path at every step
	for h := 2; h <= z.h; h++ {
		if s.learned > 0 {
			c.InputAhead(z.input, z.modelPath[:h-1])
			y, err := s.m.reg.Predict(z.input)
			if err == nil && !math.IsNaN(y) && !math.IsInf(y, 0) {
				if n := prev + y*scale; !math.IsNaN(n) && !math.IsInf(n, 0) {
					prev = n
				}
			}
		}
		z.modelPath[h-1] = prev
		yhat := prev
		k := h - 2
		if z.n > 0 {
			cf := z.comb[h-1].f
			cf[0], cf[1] = prev, robust
			i := 2
			for j := range defaultLevelRates {
				cf[i] = c.Level(j)
				i++
			}
			for j := range s.cfg.Seasons {
				cf[i] = v
				if sv, ok := c.SeasonalMedianAhead(j, h); ok {
					cf[i] = sv
				}
				i++
			}
			copy(sl.cand[k*z.n:], cf)
			sl.comb[k] = z.comb[h-1].forecast()
			g := z.guard[h-1]
			g.f[0], g.f[1] = sl.comb[k], v
			yhat = g.forecast()
		}
		if math.IsNaN(yhat) || math.IsInf(yhat, 0) {
			yhat = v
		}
		st := Step{Horizon: h, Time: f.Origin.Add(time.Duration(h) * iv), Value: s.bound(s.scaler.Unscale(yhat)), Lower: math.NaN(), Upper: math.NaN()}
		sl.yhat[k], sl.half[k] = yhat, -1
		if q, ok := z.conf[h-1].quantile(); ok {
			lo, hi := s.bound(s.scaler.Unscale(yhat-q*scale)), s.bound(s.scaler.Unscale(yhat+q*scale))
			if !math.IsInf(lo, 0) && !math.IsInf(hi, 0) {
				sl.half[k], st.Lower, st.Upper = q, lo, hi
			}
		}
		z.path[h-1], sl.steps[h-1] = st, st
	}
}
