// Package ahead forecasts a series many steps ahead from its own recent
// values: a few classical forecasters, each a whole path, combined step by
// step with weights from their own recent errors at that step, and a
// prediction interval per step calibrated on the combination's errors.
//
// The forecasters (see [Candidate]) model the seasonal shape explicitly:
// seasonal naive at the short and the long period (a day and a week of
// points) and the median of the last short periods, autoregressions on
// seasonal differences (seasonal ARIMA in regression form, fitted online
// by weighted least squares), additive double-seasonal exponential
// smoothing, and the median of the last few values. They read the history
// through a cleaner that keeps one-off outliers out of every seasonal
// path (see cleaner).
//
// Which of them a series' shape is worth, and at which step, is decided on
// that series' own evidence. Each is scored against the actuals at anchor
// steps (2, 3, 4, 6, 8, 12, …, H). At an anchor, two combinations are
// formed: the inverse-MSE average (Bates and Granger, "The combination of
// forecasts", Operational Research Quarterly 20, 1969), which suits a
// series whose forecasters are all reasonable, and a near-selection of the
// one with the least mean absolute error, which suits a series where most
// are not; a guard then weighs those two and persistence by their own
// long-run errors. A step between two anchors takes their weights
// interpolated linearly, so that the weights, and the path, change
// smoothly from step to step.
//
// The package is a leaf: values are in whatever units the caller uses,
// errors are measured in units of a scale the caller passes (a running
// measure of the series' variability), and times are opaque labels. A
// Forecaster is not safe for concurrent use.
package ahead

import (
	"errors"
	"fmt"
	"math"
)

// History is a series' recent values, newest first. The Forecaster reads
// the values its forecasters need (the longest period plus the shorter
// one, back) and keeps none of its own.
type History interface {
	// At returns the value pushed k values ago (0: the newest); k < Held().
	At(k int) float64
	// Held returns the number of values At can return.
	Held() int
}

// MaxHorizon bounds Config.Horizon.
const MaxHorizon = 336

// ErrBadConfig is wrapped by the errors of New.
var ErrBadConfig = errors.New("ahead: bad config")

// ErrBadState is wrapped by the errors of SetState.
var ErrBadState = errors.New("ahead: bad state")

// Config configures a [Forecaster]. The zero value is not valid: Horizon
// and Coverage must be set.
type Config struct {
	// Horizon is H, the steps forecast, 2 ≤ H ≤ MaxHorizon.
	Horizon int
	// Coverage is the nominal coverage of the steps' intervals, in (0, 1).
	Coverage float64
	// Window is the number of recent forecast errors whose distribution,
	// relative to each step's mean error, Errors gives; 0 means
	// DefaultWindow.
	Window int
	// External is the number of the caller's forecasters, whose paths it
	// gives to Forecast, 0 ≤ External ≤ MaxExternal.
	External int
}

// DefaultWindow is Config.Window's default.
const DefaultWindow = 200

// Candidate indexes the forecasters.
type Candidate int

// The forecasters.
const (
	// Naive1 repeats the last short period (a day), or the last value
	// without periods.
	Naive1 Candidate = iota
	// Naive2 repeats the last long period (a week).
	Naive2
	// Median1 is the median of the last short periods (up to seven) at
	// the step's phase.
	Median1
	// Drift is the autoregression on first differences with a constant,
	// ARIMA(3, 1, 0) with drift, for a series without periods (with them,
	// SAR1 carries a trend).
	Drift
	// SAR1 is the autoregression on short-period differences, with the
	// short lags and a lag of each period.
	SAR1
	// SAR2 is the autoregression on long-period differences.
	SAR2
	// Profile is the double-seasonal exponential smoothing.
	Profile
	// Robust is the median of the last robustPoints values: persistence
	// that one spike cannot move.
	Robust
	// Candidates is the number of built-in forecasters; the caller's
	// follow them (Config.External).
	Candidates
)

// MaxExternal bounds Config.External.
const MaxExternal = 2

// maxCands is the most forecasters a Forecaster weighs.
const maxCands = int(Candidates) + MaxExternal

var candidateNames = [Candidates]string{"naive1", "naive2", "median1", "drift", "sar1", "sar2", "profile", "robust"}

// String returns the forecaster's name ("external1", … for the caller's).
func (c Candidate) String() string {
	switch {
	case c >= 0 && c < Candidates:
		return candidateNames[c]
	case c >= Candidates && int(c) < maxCands:
		return fmt.Sprintf("external%d", int(c-Candidates)+1)
	}
	return fmt.Sprintf("Candidate(%d)", int(c))
}

const (
	// robustPoints is the values whose median Robust forecasts.
	robustPoints = 5
	// medianCycles is the short periods whose median Median1 forecasts.
	medianCycles = 7
)

// anchorSteps are the steps that may be anchors: about √2 apart, so that a
// horizon of H has about 2·log₂ H of them (with H itself).
var anchorSteps = [...]int{2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256}

// Anchors returns the anchor steps of a horizon H ≥ 2: the anchorSteps
// below H, and H.
func Anchors(h int) []int {
	var out []int
	for _, a := range anchorSteps {
		if a < h {
			out = append(out, a)
		}
	}
	return append(out, h)
}

// anchorPending bounds the forecasts an anchor waits for: an anchor a
// scores the forecasts of every ⌈a/anchorPending⌉-th origin (neighbouring
// origins' errors far ahead are nearly the same error, counted again).
const anchorPending = 16

const (
	// lossMemory is the memory, in origins, of the candidates' errors at
	// an anchor: two weeks of hours.
	lossMemory = 336
	// maeMemory is the memory, in origins, of the combination's mean
	// absolute error at an anchor, the intervals' unit: short enough to
	// follow the errors' level as it grows over a series' first weeks
	// and with its volatility, which the intervals' adaptation, slow to
	// narrow by design, would otherwise make up for with a width that
	// stays.
	maeMemory = 130
	// minScored is the forecasts a candidate must have had scored at an
	// anchor before it is weighed there.
	minScored = 8
	// lossClip bounds one error, in scales, in the losses.
	lossClip = 50
	// selectEta is η of the selection, w ∝ exp(−η·(m/min m − 1)) on the
	// mean absolute errors m: a candidate 10 % worse than the best
	// weighs e⁻¹ of it.
	selectEta = 10
	// The guard weighs the average, the selection and persistence by
	// their discounted absolute errors relative to the smallest,
	// w ∝ exp(−η·(L/min L − 1)), with a long memory (2 000 forecasts),
	// so that a path never does worse than persistence for long.
	guardEta      = 20
	guardBeta     = 0.9995
	guardLossClip = 1e12
	// intervalRate is γ of the half-width's adaptation: after each
	// forecast scored, the half-width in mean errors moves by
	// γ·(miss − α), as adaptive conformal inference moves a quantile's
	// level (Gibbs and Candès, "Adaptive conformal inference under
	// distribution shift", NeurIPS 2021), so that the long-run miss rate
	// is α at every anchor while the mean error follows the errors' scale.
	intervalRate = 0.05
	// residualClip bounds an error, in scales, in the intervals: finite
	// for any values. Not lower: after a long flat stretch the running
	// scale is tiny, and real errors of 10⁶–10¹⁰ scales happen.
	residualClip = 1e12
)

// The top level's members, which the guard weighs.
const (
	topAverage = iota
	topSelect
	topPersist
	nTop
)

// Forecaster forecasts steps 1…H of one series. Once made it does not
// allocate, but a few bytes when it first keeps a corrected outlier.
type Forecaster struct {
	h, n   int // the horizon and the forecasters weighed
	p1, p2 int
	t      uint64 // values pushed

	// ars are the autoregressions of Drift, SAR1 and SAR2, in that
	// order (nil without their period).
	ars    [3]*sar
	prof   *profile
	clean  cleaner
	window *residuals

	anchors  []anchor
	anchorAt []int32 // per step h ≥ 2 at [h−2]: the anchor at or above h
	slots    []float32
	alpha    float64 // the nominal miss rate, 1 − coverage
	q0       float64 // the intervals' half-width at start, in mean errors

	// prev1 is the path's step 1 made at the newest value, when has1.
	prev1 float64
	has1  bool

	path   []float64
	half   []float64
	unit   []float64 // per step: the combination's mean |error|, in scales
	scored []Scored

	// The candidates available at the newest forecast, and its scratch,
	// held only through Forecast.
	avail [maxCands]bool
	wk    *work
}

// anchor is one anchor step's scoring: the candidates' errors, the
// combination's, its interval, the guard's losses and the forecasts
// waiting for their actuals.
type anchor struct {
	step, every int
	beta        float64 // the losses' discount per scored forecast
	mse, abs    [maxCands]float64
	scored      [maxCands]uint32
	guard       [nTop]float64
	// nErr counts the combination's forecasts scored, mae is their mean
	// |error| in scales (memory maeMemory), and q the interval's
	// half-width in mae.
	nErr    uint32
	mae     float64
	q       float64
	pending []slot
}

// slot is a forecast an anchor waits to score. The candidates' forecasts
// are in the Forecaster's slots array (float32: a loss needs no more).
type slot struct {
	valid  bool
	origin uint64
	label  int64 // the caller's: the target's time
	scale  float64
	top    [nTop]float64
	comb   float64
	half   float64 // the interval's half-width in scales, −1 for none
	unit   float64 // the anchor's mae at the origin
}

// Scored is a forecast of an anchor step scored by the newest value.
type Scored struct {
	// Step is the anchor step h.
	Step int
	// Label is what Forecast was given for the step's target.
	Label int64
	// Forecast is the path's value for the step, HalfWidth its interval's
	// half-width in scales (−1 for none) and Scale the scale it was made
	// at.
	Forecast, HalfWidth, Scale float64
	norm                       float64 // the error in the anchor's mean errors at the origin, NaN if none
}

// New returns a Forecaster with no seasonal periods (see SetPeriods).
func New(cfg Config) (*Forecaster, error) {
	if cfg.Horizon < 2 || cfg.Horizon > MaxHorizon {
		return nil, fmt.Errorf("%w: horizon %d, must lie in [2, %d]", ErrBadConfig, cfg.Horizon, MaxHorizon)
	}
	if !(cfg.Coverage > 0 && cfg.Coverage < 1) {
		return nil, fmt.Errorf("%w: coverage %v, must lie in (0, 1)", ErrBadConfig, cfg.Coverage)
	}
	if cfg.Window == 0 {
		cfg.Window = DefaultWindow
	}
	if cfg.External < 0 || cfg.External > MaxExternal {
		return nil, fmt.Errorf("%w: %d external forecasters, must lie in [0, %d]", ErrBadConfig, cfg.External, MaxExternal)
	}
	if cfg.Window < 2 || cfg.Window > 1<<16 {
		return nil, fmt.Errorf("%w: window %d, must lie in [2, %d]", ErrBadConfig, cfg.Window, 1<<16)
	}
	h := cfg.Horizon
	f := &Forecaster{h: h, n: int(Candidates) + cfg.External, alpha: 1 - cfg.Coverage, q0: math.SqrtPi * math.Erfinv(cfg.Coverage), window: newResiduals(cfg.Window),
		path: make([]float64, h), half: make([]float64, h), unit: make([]float64, h),
		anchorAt: make([]int32, h-1)}
	as := Anchors(h)
	f.anchors = make([]anchor, len(as))
	f.scored = make([]Scored, 0, len(as))
	nSlots := 0
	for i, a := range as {
		every := (a + anchorPending - 1) / anchorPending
		f.anchors[i] = anchor{step: a, every: every, beta: 1 - float64(every)/lossMemory,
			pending: make([]slot, a/every+1)}
		nSlots += len(f.anchors[i].pending)
	}
	f.slots = make([]float32, nSlots*f.n)
	i := 0
	for s := 2; s <= h; s++ {
		for as[i] < s {
			i++
		}
		f.anchorAt[s-2] = int32(i)
	}
	f.SetPeriods(0, 0, nil)
	return f, nil
}

// Horizon returns H.
func (f *Forecaster) Horizon() int { return f.h }

// SetPeriods sets the seasonal periods in points (0 for none; either
// order; a period below 2 is none). The forecasters start afresh, and so
// do their losses and the intervals; the forecasters then learn the
// values hist holds (nil for none), oldest first. O(n·k²) for n values
// held.
func (f *Forecaster) SetPeriods(p1, p2 int, hist History) {
	p1, p2 = normPeriods(p1, p2)
	f.p1, f.p2 = p1, p2
	const p = 3 // short lags
	switch {
	case p2 > 0:
		f.ars = [3]*sar{nil, newSAR(p1, p, p1, p2), newSAR(p2, p)}
	case p1 > 0:
		f.ars = [3]*sar{nil, newSAR(p1, p, p1), nil}
	default:
		f.ars = [3]*sar{newSAR(1, p), nil, nil}
	}
	f.prof = nil
	if p1 > 0 {
		f.prof = newProfile(p1, p2)
	}
	f.clean = cleaner{}
	f.Recalibrate()
	if hist != nil {
		for off := hist.Held() - 1; off >= 0; off-- {
			f.learn(view{raw: shifted{hist, off}, c: &f.clean, t: f.t - uint64(off)})
		}
	}
}

// learn gives the newest value of v to the forecasters.
func (f *Forecaster) learn(v view) {
	for _, ar := range f.ars {
		if ar != nil {
			ar.learn(v)
		}
	}
	if f.prof != nil {
		f.prof.push(v)
	}
}

// shifted is a History off values older: its newest is the off-th.
type shifted struct {
	h   History
	off int
}

func (s shifted) At(k int) float64 { return s.h.At(k + s.off) }
func (s shifted) Held() int        { return s.h.Held() - s.off }

// normPeriods returns the periods short first, a period below 2 as 0, a
// single one as the short one.
func normPeriods(p1, p2 int) (int, int) {
	if p1 < 2 {
		p1 = 0
	}
	if p2 < 2 {
		p2 = 0
	}
	if p1 > p2 {
		p1, p2 = p2, p1
	}
	if p1 == 0 || p1 == p2 {
		p1, p2 = p2, 0
	}
	return p1, p2
}

// Periods returns the seasonal periods set, short first (0: none).
func (f *Forecaster) Periods() (p1, p2 int) { return f.p1, f.p2 }

// Reach returns how many values back the forecasters read: the history
// should hold that many.
func (f *Forecaster) Reach() int {
	return max(f.p1+f.p2+1, medianCycles*f.p1+1, robustPoints)
}

// Recalibrate forgets the losses, the intervals and the forecasts
// waiting to be scored.
func (f *Forecaster) Recalibrate() {
	for i := range f.anchors {
		an := &f.anchors[i]
		an.mse, an.abs, an.scored, an.guard = [maxCands]float64{}, [maxCands]float64{}, [maxCands]uint32{}, [nTop]float64{}
		an.mae, an.nErr, an.q = 0, 0, f.q0
	}
	f.window.reset()
	f.Restart()
}

// Restart forgets the forecasts waiting to be scored: after a gap, none
// will be.
func (f *Forecaster) Restart() {
	for i := range f.anchors {
		for k := range f.anchors[i].pending {
			f.anchors[i].pending[k].valid = false
		}
	}
	f.has1 = false
}

// Push takes the series' newest value, hist.At(0): it scores the forecasts
// made for it (Scored returns them) and the forecasters learn it. O(A·C)
// for A anchors and C forecasters, plus the autoregressions' O(k²).
func (f *Forecaster) Push(hist History) {
	y := hist.At(0)
	f.t++
	f.scored = f.scored[:0]
	for i := range f.anchors {
		an := &f.anchors[i]
		if s, ok := an.score(f.t, y, f.slotCands(i), f.alpha); ok {
			f.scored = append(f.scored, s)
			// At most one error per value enters the window, the
			// anchors' in turn, so that it covers as many values as it
			// holds.
			if i == int(f.t%uint64(len(f.anchors))) {
				f.window.add(s.norm)
			}
		}
	}
	if f.p1 > 0 && f.has1 {
		held := hist.Held()
		b1, b2 := math.NaN(), math.NaN()
		if held > f.p1 {
			b1 = hist.At(f.p1)
		}
		if f.p2 > 0 && held > f.p2 {
			b2 = hist.At(f.p2)
		}
		f.clean.observe(f.t, y, f.prev1, b1, b2, f.p1, f.Reach())
	}
	f.has1 = false
	f.learn(f.view(hist))
}

// Scored returns the anchor steps' forecasts the newest value scored, in
// increasing step; owned by the Forecaster and valid until the next Push.
func (f *Forecaster) Scored() []Scored { return f.scored }

// slotCands returns anchor i's slots' candidate forecasts, slot by slot.
func (f *Forecaster) slotCands(i int) []float32 {
	off := 0
	for j := range i {
		off += len(f.anchors[j].pending)
	}
	n := len(f.anchors[i].pending) * f.n
	return f.slots[off*f.n : off*f.n+n]
}

// view returns the history as the seasonal forecasters see it.
func (f *Forecaster) view(hist History) view { return view{raw: hist, c: &f.clean, t: f.t} }

// Forecast makes the path of the newest value (hist.At(0), pushed last),
// at the scale its errors will be measured in (> 0); label(h) is kept with
// step h's forecast and returned with it when it is scored (the caller's
// time of the target, say), and may be nil. ext are the caller's
// forecasters' paths (Config.External of them, steps 1…H each; a missing
// or nil one has no forecast now). The path and its intervals are then
// Path, HalfWidth and Errors.
//
// Cost: O(H·(C + k)) for the paths and the combination, O(A·C) for the
// weights (exponentials only per anchor), and a k×k solve per
// autoregression. No allocation.
func (f *Forecaster) Forecast(hist History, scale float64, label func(h int) int64, ext ...[]float64) {
	f.wk = getWork(f.h, f.n, len(f.anchors))
	defer f.putWork()
	last := hist.At(0)
	f.candidates(f.view(hist), last)
	for i := int(Candidates); i < f.n; i++ {
		f.avail[i] = false
		if k := i - int(Candidates); k < len(ext) && len(ext[k]) == f.h {
			copy(f.wk.cand[i], ext[k])
			f.avail[i] = true
		}
	}
	ws := f.wk.w
	for i := range f.anchors {
		w := &ws[i]
		f.anchors[i].weigh(&f.avail, w)
		// An anchor without evidence yet (a step further ahead than the
		// series has been scored at) takes the weights of the step
		// before it that has: what wins nearer ahead is the best guess
		// further, better than the mean of all.
		if i > 0 {
			if prev := &ws[i-1]; !w.hasAvg && prev.hasAvg {
				w.avg, w.hasAvg = prev.avg, true
			}
			if prev := &ws[i-1]; !w.hasSel && prev.hasSel {
				w.sel, w.hasSel = prev.sel, true
			}
		}
	}
	for h := 1; h <= f.h; h++ {
		il, ih, lam := f.around(h)
		lo, hi := &f.anchors[il], &f.anchors[ih]
		wl, wh := &ws[il], &ws[ih]
		f.wk.top[topAverage][h-1] = f.mix(h, wl.hasAvg && wh.hasAvg, &wl.avg, &wh.avg, lam, last)
		f.wk.top[topSelect][h-1] = f.mix(h, wl.hasSel && wh.hasSel, &wl.sel, &wh.sel, lam, last)
		f.wk.top[topPersist][h-1] = last
		v := f.guarded(h, lo, hi, lam)
		if math.IsNaN(v) || math.IsInf(v, 0) {
			v = last
		}
		f.path[h-1] = v
		f.unit[h-1] = (1-lam)*lo.mae + lam*hi.mae
		f.half[h-1] = -1
		if ql, qh := f.halfWidth(lo), f.halfWidth(hi); ql >= 0 && qh >= 0 {
			f.half[h-1] = (1-lam)*ql + lam*qh
		}
	}
	f.prev1, f.has1 = f.path[0], true
	for i := range f.anchors {
		an := &f.anchors[i]
		if f.t%uint64(an.every) != 0 {
			continue
		}
		k := int((f.t / uint64(an.every)) % uint64(len(an.pending)))
		p := &an.pending[k]
		p.valid, p.origin, p.scale = true, f.t, scale
		p.label = 0
		if label != nil {
			p.label = label(an.step)
		}
		cs := f.slotCands(i)[k*f.n : (k+1)*f.n]
		for c := range cs {
			cs[c] = float32(math.NaN())
			if f.avail[c] {
				cs[c] = float32(f.wk.cand[c][an.step-1])
			}
		}
		for k := range p.top {
			p.top[k] = f.wk.top[k][an.step-1]
		}
		p.comb, p.half, p.unit = f.path[an.step-1], f.half[an.step-1], an.mae
	}
}

// Path returns the newest forecast's steps 1…H, owned by the Forecaster
// and valid until the next Forecast.
func (f *Forecaster) Path() []float64 { return f.path }

// HalfWidth returns the interval half-width of step h (1…H) of the newest
// forecast in scales, or −1 while the anchors around it have scored too
// few forecasts.
func (f *Forecaster) HalfWidth(h int) float64 { return f.half[h-1] }

// Errors returns the distribution of step h's absolute errors as the
// errors seen make it: sorted holds recent errors of every anchor step in
// units of their step's mean error, ascending, and unit is step h's mean
// error in scales, so that unit·sorted[i] are the step's; nil while too
// few were seen. The slice is owned by the Forecaster and valid until
// the next Push.
func (f *Forecaster) Errors(h int) (sorted []float64, unit float64) {
	if f.half[h-1] < 0 || !(f.unit[h-1] > 0) {
		return nil, 0
	}
	return f.window.sorted, f.unit[h-1]
}
