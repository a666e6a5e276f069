package pipeline

import (
	"math"
	"time"

	"github.com/forecastd/forecastd/embedding"
)

// MaxHorizon bounds Config.Horizon: two weeks of hourly points, or a day
// of 5-minute points. What a series keeps for its steps grows with the
// number of anchor steps (about 2·log₂ H), not with H.
const MaxHorizon = 336

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
	// the residuals of the anchor steps around it; NaN while too few were
	// seen.
	Lower, Upper float64
}

// HasInterval reports whether the step carries a prediction interval.
func (s Step) HasInterval() bool { return !math.IsNaN(s.Lower) }

// anchorSteps are the steps ≥ 2 that may be anchors: about √2 apart, so
// that a horizon of H has about 2·log₂ H of them (with H itself).
var anchorSteps = [...]int{2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256}

// horizonAnchors returns the anchor steps of a horizon H ≥ 2: the
// anchorSteps below H, and H.
func horizonAnchors(h int) []int {
	var out []int
	for _, a := range anchorSteps {
		if a < h {
			out = append(out, a)
		}
	}
	return append(out, h)
}

// anchorPending bounds the forecasts an anchor step keeps waiting for
// their actuals: an anchor a scores the forecasts of every ⌈a/16⌉-th
// origin, so that it keeps at most 17 (a long step's errors of
// neighbouring origins are nearly the same error, counted again).
const anchorPending = 16

// anchorAdapt is the adaptation rate of anchor step a's interval level:
// the series' rate (Config.IntervalAdapt) times √(2/a). Neighbouring
// origins' a-step errors overlap in a−1 steps, so a run of misses at a
// long step is one event told a times: at the full rate the level
// over-reacts and the interval swings wide; without adaptation the
// coverage of some series drifts. BENCHMARKS.md, "Hours to days ahead",
// compares the rates.
func anchorAdapt(rate float64, a int) float64 { return rate * math.Min(1, math.Sqrt(2/float64(a))) }

// horizon forecasts steps 2…H of a series with target change (step 1 is
// the Series' own forecast, unchanged). Each step h combines forecasters:
// the model's path by the recursive strategy (its own forecasts fed back
// as inputs through embedding.Changes.InputAhead), the robust persistence
// (the median of the last robustPoints values), the exponential smoothing
// levels and the seasonal median at h, weighted by their errors at that
// step and guarded against persistence at that step; each step's interval
// is split conformal on residuals of forecasts made h points before, with
// an adaptive level (anchorAdapt).
//
// The errors are measured at a few anchor steps (horizonAnchors: 2, 3, 4,
// 6, 8, 12, …, H), each with its own combination, guard and calibration
// window; a step between two anchors a < h < b takes their losses and
// their interval half-widths (in running scales) interpolated linearly in
// h. An h-step error grows smoothly with h, so the interpolation loses
// little, and memory is O(anchors·(interval_window + N)), not O(H²) as one
// calibration and one pending path per step would be.
//
// Cost per point: H−1 model predictions, O(H·N) for the combinations,
// O(anchors·interval_window) for the calibrations. No allocation once made.
type horizon struct {
	h        int // H ≥ 2
	n        int // forecasters combined (0: no combination)
	anchors  []anchor
	anchorAt []int32 // per step h ≥ 2 at anchorAt[h-2]: the anchor index at or above h
	t        uint64  // points seen: the counter of the newest point

	path       []Step    // the newest forecast's steps 1…H (Forecast.Path)
	done       []Step    // the steps closed by the newest point (Outcome.Path)
	modelPath  []float64 // the model's recursive path, scaled, steps 1…H−1
	scaled     []float64 // the newest path's forecasts ŷ, scaled, steps 1…H
	input      []float64 // scratch input vector
	candidates []float64 // scratch: the forecasters' values at a step
	loss, w    []float64 // scratch of the interpolated combination
	halfWidths []float64 // per anchor: this point's interval half-width, −1 if none
	ahead      embedding.Ahead
	// guardValues, guardLoss and guardWeights are the scratch of the
	// guard's interpolated combination (of the combination and persistence).
	guardValues             [2]float64
	guardLoss, guardWeights [2]float64
}

// anchor is one anchor step's calibration, combination and the forecasts
// it is waiting to score.
type anchor struct {
	step  int
	every int // origins whose counter is a multiple of every are scored
	comb  *combiner
	guard *combiner
	conf  *conformal
	// pending are the forecasts made for this anchor's step waiting for
	// their actual: a ring indexed by origin/every.
	pending []anchorForecast
}

// anchorForecast is one forecast of an anchor step waiting for its actual.
type anchorForecast struct {
	valid      bool
	origin     uint64    // the counter of the point it was made at
	scale      float64   // the running scale at the origin
	v          float64   // the origin's value, scaled (persistence)
	candidates []float64 // the forecasters' values at the step
	comb       float64   // the combination before the guard
	yhat       float64   // the forecast, scaled
	half       float64   // the interval's half-width in scales, or −1
	step       Step      // as published
}

func newHorizon(cfg Config, n, modelDim int) *horizon {
	h := cfg.Horizon
	as := horizonAnchors(h)
	z := &horizon{
		h: h, n: n, anchors: make([]anchor, len(as)), anchorAt: make([]int32, h-1),
		path: make([]Step, h), done: make([]Step, 0, len(as)+1),
		modelPath: make([]float64, h), scaled: make([]float64, h), input: make([]float64, modelDim),
		candidates: make([]float64, n), loss: make([]float64, n), w: make([]float64, n), halfWidths: make([]float64, len(as)),
	}
	for i, a := range as {
		every := (a + anchorPending - 1) / anchorPending
		an := anchor{step: a, every: every, conf: newConformal(cfg.IntervalWindow, cfg.Coverage, anchorAdapt(cfg.IntervalAdapt, a)),
			pending: make([]anchorForecast, a/every+1)}
		if n > 0 {
			an.comb, an.guard = newCombiner(n), newGuard()
		}
		for k := range an.pending {
			an.pending[k].candidates = make([]float64, n)
		}
		z.anchors[i] = an
	}
	i := 0
	for s := 2; s <= h; s++ {
		for as[i] < s {
			i++
		}
		z.anchorAt[s-2] = int32(i)
	}
	return z
}

// restart forgets every pending forecast (a gap: none will be scored).
func (z *horizon) restart() {
	for i := range z.anchors {
		for k := range z.anchors[i].pending {
			z.anchors[i].pending[k].valid = false
		}
	}
}

// closeAt counts the point of scaled value v and scores against it the
// anchor steps' forecasts made for it; z.done is then its closed steps,
// step 1 (step1, if has) first.
func (z *horizon) closeAt(v float64, step1 Step, has bool) {
	z.t++
	z.done = z.done[:0]
	if has {
		z.done = append(z.done, step1)
	}
	for i := range z.anchors {
		an := &z.anchors[i]
		if z.t < uint64(an.step) {
			continue
		}
		o := z.t - uint64(an.step)
		if o%uint64(an.every) != 0 {
			continue
		}
		p := &an.pending[(o/uint64(an.every))%uint64(len(an.pending))]
		if !p.valid || p.origin != o {
			continue
		}
		p.valid = false
		r := math.Min(math.Abs(v-p.yhat)/p.scale, maxResidual)
		if p.half >= 0 {
			an.conf.feedback(r > p.half)
		}
		an.conf.add(r)
		if z.n > 0 {
			copy(an.comb.f, p.candidates)
			an.comb.update(v, p.scale)
			an.guard.f[0], an.guard.f[1] = p.comb, p.v
			an.guard.update(v, p.scale)
		}
		z.done = append(z.done, p.step)
	}
}

// forecastAhead makes the path of the newest point, whose step-1 forecast
// is f (the Series' forecast, step 1 of the path), from the model's scaled
// change y1 (0 for a model that has learned nothing), at scale, the
// newest value v (scaled). It fills z.path and keeps the anchor steps'
// forecasts for scoring.
func (s *Series) forecastAhead(f Forecast, y1 float64, scale, v float64) {
	z, c := s.horizon, s.changes
	iv := s.Interval()
	z.path[0] = Step{Horizon: 1, Time: f.Time, Value: f.Value, Lower: f.Lower, Upper: f.Upper}
	for i := range z.anchors {
		z.halfWidths[i] = -1
		if q, ok := z.anchors[i].conf.quantile(); ok {
			z.halfWidths[i] = q
		}
	}
	c.ResetAhead(&z.ahead)

	// The model's recursive path, in scaled values.
	prev := c.Unscale(y1)
	if math.IsNaN(prev) || math.IsInf(prev, 0) {
		prev = v
	}
	z.modelPath[0] = prev
	robust := c.Median(robustPoints) // the same flat path at every step
	for h := 2; h <= z.h; h++ {
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

		// The anchors around h: hi at or above, lo below (or hi itself).
		ih := int(z.anchorAt[h-2])
		il, lam := ih, 0.0
		if hi := z.anchors[ih].step; hi != h { // ih > 0: step 2 is an anchor
			il = ih - 1
			lo := z.anchors[il].step
			lam = float64(h-lo) / float64(hi-lo)
		}
		anLo, anHi := &z.anchors[il], &z.anchors[ih]

		yhat, comb := prev, prev
		if z.n > 0 {
			cf := z.candidates
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
			comb = anLo.comb.mixBetween(anHi.comb, lam, cf, z.loss, z.w)
			z.guardValues[0], z.guardValues[1] = comb, v
			yhat = anLo.guard.mixBetween(anHi.guard, lam, z.guardValues[:], z.guardLoss[:], z.guardWeights[:])
		}
		if math.IsNaN(yhat) || math.IsInf(yhat, 0) {
			yhat = v
		}
		st := Step{Horizon: h, Time: f.Origin.Add(time.Duration(h) * iv), Value: s.bound(s.scaler.Unscale(yhat)), Lower: math.NaN(), Upper: math.NaN()}
		half := -1.0
		if ql, qh := z.halfWidths[il], z.halfWidths[ih]; ql >= 0 && qh >= 0 {
			q := (1-lam)*ql + lam*qh
			lo, hi := s.bound(s.scaler.Unscale(yhat-q*scale)), s.bound(s.scaler.Unscale(yhat+q*scale))
			if !math.IsInf(lo, 0) && !math.IsInf(hi, 0) {
				half, st.Lower, st.Upper = q, lo, hi
			}
		}
		z.path[h-1] = st
		z.scaled[h-1] = yhat
		if anHi.step == h && z.t%uint64(anHi.every) == 0 {
			p := &anHi.pending[(z.t/uint64(anHi.every))%uint64(len(anHi.pending))]
			p.valid, p.origin, p.scale, p.v = true, z.t, scale, v
			p.comb, p.yhat, p.half, p.step = comb, yhat, half, st
			copy(p.candidates, z.candidates)
		}
	}
}

// around returns the anchors of step h ≥ 2 and its place between them, as
// forecastAhead interpolates: ih at or above h, il below it (or ih
// itself), lam = (h − lo)/(hi − lo) (0 on an anchor).
func (z *horizon) around(h int) (il, ih int, lam float64) {
	ih = int(z.anchorAt[h-2])
	il = ih
	if hi := z.anchors[ih].step; hi != h {
		il = ih - 1
		lo := z.anchors[il].step
		lam = float64(h-lo) / float64(hi-lo)
	}
	return il, ih, lam
}

// recalibrate forgets the anchor steps' residuals and their combinations'
// losses: what they measured no longer describes the forecasts, whose
// seasonal forecasters have just been found (the errors of the weeks
// without them would widen the intervals for a window's length).
func (z *horizon) recalibrate() {
	for i := range z.anchors {
		an := &z.anchors[i]
		an.conf.reset()
		if an.comb != nil {
			clear(an.comb.loss)
			clear(an.guard.loss)
		}
	}
}
