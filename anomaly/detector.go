package anomaly

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"time"
)

// MaxN is the largest debounce window N a Detector keeps.
const MaxN = 64

// The history a Detector keeps for StepFloor, Surprise and ExtremeQuiet.
const (
	// StepMemory is the number of changes the mean absolute change of
	// StepFloor weighs: each new change has weight max(1/n, 1/StepMemory),
	// n the changes seen, so the mean is exact over the first StepMemory
	// changes and then forgets with a time constant of StepMemory points.
	StepMemory = 1000
	// PeakBlocks is the number of blocks whose highest scores a Detector
	// keeps for Surprise: the window of SurpriseWindow is cut into
	// PeakBlocks blocks of SurpriseWindow/PeakBlocks each, so that the
	// highest score over the window costs PeakBlocks numbers whatever
	// the series' spacing.
	PeakBlocks = 24
	// DefaultSurpriseWindow is the SurpriseWindow that 0 means: a day
	// and one block, so that a deviation the series makes every day at
	// the same time is compared with yesterday's.
	DefaultSurpriseWindow = 25 * time.Hour
	// MinSurpriseWindow and MaxSurpriseWindow bound SurpriseWindow.
	MinSurpriseWindow = time.Duration(PeakBlocks) * time.Second
	MaxSurpriseWindow = 366 * 24 * time.Hour
	// MaxExtremeQuiet bounds ExtremeQuiet.
	MaxExtremeQuiet = 366 * 24 * time.Hour
	// SeasonalMemory is the number of seasonal deviations the mean of
	// Seasonal weighs, as StepMemory does for the mean change: exact
	// over the first SeasonalMemory, then forgetting with that time
	// constant (in points).
	SeasonalMemory = 5000
	// SeasonalWarmup is how long a Detector must have seen seasonal
	// references before a run of seasonal deviations can open an event:
	// a day, so that the mean deviation has seen every hour of one.
	SeasonalWarmup = 24 * time.Hour
	// MaxSeasonalRun bounds SeasonalRun.
	MaxSeasonalRun = 1000
)

// Config configures a Detector. Its zero value is usable: both directions,
// outside beyond the bound (score > 1), no minimum deviation, an event
// opening on the first point outside and closing on the first point back
// inside.
type Config struct {
	// Direction is the side of the forecast whose deviations count; the
	// zero value is Both. Config key `direction`.
	Direction Direction
	// Threshold is the score above which a point is outside; 0 means 1,
	// the interval's bound. Config key `threshold`.
	Threshold float64
	// MinDeviation is the smallest absolute deviation |y − ŷ|, in the
	// series' units, that can count as outside, so that a tight interval
	// on a quiet series does not raise events over noise; 0 means none.
	// Config key `min_deviation`.
	MinDeviation float64
	// K and N debounce the opening of an event: it opens on a point
	// outside when at least K of the last N scored points (this one
	// among them) were outside and, with Surprise, one of those outside
	// was a surprise when it came, 1 ≤ K ≤ N ≤ MaxN; 0 means 1. A single
	// point off its forecast is most often noise, a deviation that lasts
	// is not. Config keys `open_k`, `open_n`.
	K, N int
	// M closes an open event once M scored points in a row were inside,
	// M ≥ 1; 0 means 1. Config key `close_m`.
	M int
	// StepFloor, when > 0, floors the interval's half-width at StepFloor
	// times the series' mean absolute change between consecutive observed
	// points when deciding whether a point is outside: a point is outside
	// when |y − ŷ| > Threshold · max(half-width, StepFloor · mean |Δy|).
	// A flat, quantised or perfectly periodic series has intervals of
	// zero width, on which every move, however small against the
	// series' own movements, would score MaxScore. The reported Score is
	// not floored. 0 means no floor. Config key `step_floor`.
	StepFloor float64
	// Surprise, when > 0, lets an event open only when one of the K
	// outside points of K and N was a surprise: its (floored) score
	// exceeded Surprise times the highest (floored) score of the points
	// of the SurpriseWindow before it. A series whose deviations are
	// often large (a daily batch job, a noisy hour) raises an event only
	// when one is larger than what it has recently done. 0 means off.
	// Config key `surprise`.
	Surprise float64
	// SurpriseWindow is the time whose highest score Surprise compares
	// with (at least that long and at most 1/PeakBlocks longer, once
	// seen), MinSurpriseWindow … MaxSurpriseWindow; 0 means
	// DefaultSurpriseWindow. Config key `surprise_window`.
	SurpriseWindow time.Duration
	// ExtremeQuiet, when > 0, also opens an event on a scored point
	// beyond every value the series has had since the detector began (a
	// new all-time high, or low), on a watched side (a high is above, a
	// low below), when the series' previous new high (or low) is older
	// than ExtremeQuiet, counting its first point as one. It catches
	// what a forecaster that follows the series does not miss: a slow
	// drift to a level never seen, a plateau above every past peak. The
	// quiet period keeps a trending series, which makes new highs all
	// the time, from raising events. Neither Threshold, MinDeviation nor
	// Surprise applies to such an opening. 0 means off; at most
	// MaxExtremeQuiet. Config key `extreme_quiet`.
	ExtremeQuiet time.Duration
	// ExtremeMargin, with ExtremeQuiet, is how far beyond the previous
	// high (or low) a new one must be to open an event, in units of the
	// series' mean absolute change between consecutive points (as
	// StepFloor's): a stationary noisy series makes new highs by a hair
	// now and then, a drift to a new level or a spike beyond every peak
	// clears them by whole steps. A smaller new high still counts as the
	// series' latest for ExtremeQuiet. 0 means any new high or low. Config
	// key `extreme_margin`.
	ExtremeMargin float64
	// Seasonal, when > 0, also opens an event when the series has left
	// its seasonal pattern: when SeasonalRun scored points in a row, on
	// the same watched side, each differ from their seasonal reference
	// (the series' value a season before, given by the caller of
	// ObserveSeasonal: the closer to y of a day and a week before) by
	// more than Seasonal times the mean such difference, once the
	// detector has seen references for SeasonalWarmup, and no event has
	// opened in the previous SurpriseWindow. It catches what a
	// forecaster that follows the series does not miss: a holiday, a
	// daily peak that does not come or comes at half its height. Neither
	// Threshold, MinDeviation nor Surprise applies to such an opening.
	// 0 means off. Config key `seasonal`.
	Seasonal float64
	// SeasonalRun is the number of points in a row of Seasonal, 1 …
	// MaxSeasonalRun; 0 means 1. Config key `seasonal_run`.
	SeasonalRun int
}

// withDefaults returns c with its zero values replaced by their meaning.
func (c Config) withDefaults() Config {
	if c.Threshold == 0 {
		c.Threshold = 1
	}
	if c.K == 0 {
		c.K = 1
	}
	if c.N == 0 {
		c.N = max(1, c.K)
	}
	if c.M == 0 {
		c.M = 1
	}
	if c.SurpriseWindow == 0 {
		c.SurpriseWindow = DefaultSurpriseWindow
	}
	if c.SeasonalRun == 0 {
		c.SeasonalRun = 1
	}
	return c
}

// blockSpan is the time each block of Surprise's window spans, in ns.
func (c Config) blockSpan() int64 { return int64(c.SurpriseWindow) / PeakBlocks }

// Validate reports every invalid field of c at once, each error wrapping
// ErrBadConfig and naming its config key.
func (c Config) Validate() error {
	var errs []error
	bad := func(format string, a ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrBadConfig}, a...)...))
	}
	if c.Direction < Both || c.Direction > Below {
		bad("direction %d: want both, above or below", int(c.Direction))
	}
	if !(c.Threshold >= 0) || math.IsInf(c.Threshold, 0) {
		bad("threshold %v: want a finite score ≥ 0 (0 means 1, the interval's bound)", c.Threshold)
	}
	if !(c.MinDeviation >= 0) || math.IsInf(c.MinDeviation, 0) {
		bad("min_deviation %v: want a finite value ≥ 0", c.MinDeviation)
	}
	d := c.withDefaults()
	if c.K < 0 || c.N < 0 || d.N > MaxN || d.K > d.N {
		bad("open_k %d, open_n %d: want 1 ≤ open_k ≤ open_n ≤ %d (0 means 1)", c.K, c.N, MaxN)
	}
	if c.M < 0 {
		bad("close_m %d: want ≥ 1 (0 means 1)", c.M)
	}
	if !(c.StepFloor >= 0) || math.IsInf(c.StepFloor, 0) {
		bad("step_floor %v: want a finite factor ≥ 0 (0 means none)", c.StepFloor)
	}
	if !(c.Surprise >= 0) || math.IsInf(c.Surprise, 0) {
		bad("surprise %v: want a finite factor ≥ 0 (0 means off)", c.Surprise)
	}
	if c.SurpriseWindow != 0 && (c.SurpriseWindow < MinSurpriseWindow || c.SurpriseWindow > MaxSurpriseWindow) {
		bad("surprise_window %v: want %v … %v (0 means %v)", c.SurpriseWindow, MinSurpriseWindow, MaxSurpriseWindow, DefaultSurpriseWindow)
	}
	if c.ExtremeQuiet < 0 || c.ExtremeQuiet > MaxExtremeQuiet {
		bad("extreme_quiet %v: want 0 (off) … %v", c.ExtremeQuiet, MaxExtremeQuiet)
	}
	if !(c.ExtremeMargin >= 0) || math.IsInf(c.ExtremeMargin, 0) {
		bad("extreme_margin %v: want a finite factor ≥ 0 (0 means none)", c.ExtremeMargin)
	}
	if !(c.Seasonal >= 0) || math.IsInf(c.Seasonal, 0) {
		bad("seasonal %v: want a finite factor ≥ 0 (0 means off)", c.Seasonal)
	}
	if c.SeasonalRun < 0 || c.SeasonalRun > MaxSeasonalRun {
		bad("seasonal_run %d: want 1 … %d (0 means 1)", c.SeasonalRun, MaxSeasonalRun)
	}
	return errors.Join(errs...)
}

// Event is what a point did to a Detector's event.
type Event int

const (
	// None: the point neither opened nor closed an event.
	None Event = iota
	// Opened: the point opened an event.
	Opened
	// Closed: the point closed the open event.
	Closed
)

// String returns "none", "opened" or "closed".
func (e Event) String() string {
	switch e {
	case None:
		return "none"
	case Opened:
		return "opened"
	case Closed:
		return "closed"
	}
	return fmt.Sprintf("Event(%d)", int(e))
}

// Observation is what a Detector made of one point.
type Observation struct {
	// Score is the point's anomaly score (see Score); NaN when the
	// forecast had no interval, and then the point was not scored.
	Score float64
	// Side is the side of the forecast the actual fell on.
	Side Direction
	// Outside reports whether the point counted as outside.
	Outside bool
	// Extreme reports whether the point was a new high or low after
	// ExtremeQuiet without one, on a watched side (it opens an event
	// unless one is open).
	Extreme bool
	// Seasonal reports whether the point completed a run of seasonal
	// deviations that opens an event (see Config.Seasonal) unless one is
	// open.
	Seasonal bool
	// Event is what the point did to the event.
	Event Event
	// Open reports whether an event is open after this point (true on
	// the point that opened it, false on the one that closed it).
	Open bool
}

// State is a Detector's state, for checkpoints.
type State struct {
	// Recent holds whether each of the last N scored points was outside,
	// the newest in bit 0.
	Recent uint64
	// Surprised holds whether each of the last N scored points was
	// outside and a surprise (Config.Surprise), the newest in bit 0; a
	// subset of Recent.
	Surprised uint64
	// Open reports whether an event is open.
	Open bool
	// Inside counts the scored points in a row inside while the event is
	// open, < M.
	Inside int
	// Age counts the scored points since the open event opened (0 on the
	// point that opened it); 0 while no event is open.
	Age int

	// History, kept only when StepFloor, Surprise or ExtremeQuiet is
	// set (zero otherwise).
	//
	// LastY is the last observed actual, when HasLast; MeanStep the mean
	// absolute change between consecutive observed actuals, over Steps
	// changes (capped at StepMemory; see StepMemory).
	LastY    float64
	HasLast  bool
	MeanStep float64
	Steps    int
	// Peaks holds the highest floored score of each of the last
	// PeakBlocks blocks (a ring, next slot Block; 0 where no point was
	// scored), Peak the highest of the current block, which began at
	// BlockStart (Unix ns; 0 before the first scored point).
	Peaks      [PeakBlocks]float64
	Peak       float64
	BlockStart int64
	Block      int
	// Range (ExtremeQuiet): when HasRange, the lowest and highest
	// actuals seen, and the times (Unix ns) of the last new low and new
	// high, the first point's time before any.
	HasRange          bool
	Low, High         float64
	LowTime, HighTime int64
	// Seasonal: when SeasonalN > 0, the mean absolute seasonal deviation
	// over SeasonalN deviations (capped at SeasonalMemory), the run of
	// deviations beyond Seasonal times that mean (> 0 above the
	// reference, < 0 below) and the time (Unix ns) of the first
	// reference; LastOpen is the time an event last opened (0 before
	// any).
	SeasonalMean  float64
	SeasonalN     int
	SeasonalRun   int
	SeasonalSince int64
	LastOpen      int64
}

// Detector turns a series' points and forecasts into anomaly scores and
// debounced events (see Config). O(1) time and memory per point; no
// allocation.
type Detector struct {
	cfg   Config // with defaults
	mask  uint64 // the low N bits
	state State
}

// NewDetector returns a detector configured by cfg, or the error of
// cfg.Validate.
func NewDetector(cfg Config) (*Detector, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	c := cfg.withDefaults()
	mask := uint64(1)<<c.N - 1
	if c.N == 64 {
		mask = math.MaxUint64
	}
	return &Detector{cfg: c, mask: mask}, nil
}

// Config returns the detector's configuration, its zero values replaced
// by their meaning.
func (d *Detector) Config() Config { return d.cfg }

// Open reports whether an event is open.
func (d *Detector) Open() bool { return d.state.Open }

// State returns the detector's state.
func (d *Detector) State() State { return d.state }

// Restore replaces the detector's state with st, or returns an error
// wrapping ErrBadConfig (the detector unchanged) when st cannot be a state
// of this detector: outside points beyond its window N, surprises among
// points not outside, or an Inside count out of [0, M) or set while no
// event is open.
func (d *Detector) Restore(st State) error {
	if st.Recent&^d.mask != 0 {
		return fmt.Errorf("%w: detector state: recent points %#x beyond open_n %d", ErrBadConfig, st.Recent, d.cfg.N)
	}
	if st.Surprised&^st.Recent != 0 {
		return fmt.Errorf("%w: detector state: surprises %#x among points not outside %#x", ErrBadConfig, st.Surprised, st.Recent)
	}
	if st.Inside < 0 || st.Inside >= d.cfg.M || st.Age < 0 || (!st.Open && (st.Inside != 0 || st.Age != 0)) {
		return fmt.Errorf("%w: detector state: %d points inside (open %v, close_m %d)", ErrBadConfig, st.Inside, st.Open, d.cfg.M)
	}
	finite := func(v float64) bool { return v >= 0 && !math.IsInf(v, 0) }
	ok := finite(st.MeanStep) && finite(st.Peak) && st.Steps >= 0 && st.Steps <= StepMemory &&
		st.Block >= 0 && st.Block < PeakBlocks &&
		(st.HasLast && !math.IsNaN(st.LastY) && !math.IsInf(st.LastY, 0) || !st.HasLast && st.LastY == 0)
	for _, p := range st.Peaks {
		ok = ok && finite(p)
	}
	ok = ok && finite(st.SeasonalMean) && st.SeasonalN >= 0 && st.SeasonalN <= SeasonalMemory &&
		st.SeasonalRun >= -MaxSeasonalRun && st.SeasonalRun <= MaxSeasonalRun &&
		(st.SeasonalN > 0 || st.SeasonalMean == 0 && st.SeasonalRun == 0 && st.SeasonalSince == 0)
	isFinite := func(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
	ok = ok && (st.HasRange && isFinite(st.Low) && isFinite(st.High) && st.Low <= st.High ||
		!st.HasRange && st.Low == 0 && st.High == 0 && st.LowTime == 0 && st.HighTime == 0)
	if !ok {
		return fmt.Errorf("%w: detector state: history out of range (mean step %v over %d, block slot %d)",
			ErrBadConfig, st.MeanStep, st.Steps, st.Block)
	}
	d.state = st
	return nil
}

// Reset forgets the recent points and closes any open event silently.
func (d *Detector) Reset() { d.state = State{} }

// Observe scores the actual y at time t against the forecast yhat with
// interval [lower, upper] and advances the event: a point is outside when its
// score (its half-width floored by StepFloor) exceeds Threshold on a
// watched side and |y − yhat| ≥ MinDeviation. A point without an interval
// (NaN score) changes only the mean change of StepFloor. While no event
// is open, a point outside opens one when at least K of the last N scored
// points (this one included) were outside and, with Surprise, one of
// those had a score above Surprise times the highest of the scores of
// the SurpriseWindow before it; while one is open, it closes after M
// scored points in a row inside, and the recent points are then
// forgotten so that the next event needs K new points outside. With
// ExtremeQuiet, a scored point that is a new high or low (beyond the
// last by ExtremeMargin) after ExtremeQuiet without one opens an event
// too. Observe has no seasonal reference: with Seasonal, use
// ObserveSeasonal.
func (d *Detector) Observe(t time.Time, y, yhat, lower, upper float64) Observation {
	return d.ObserveSeasonal(t, y, yhat, lower, upper, math.NaN())
}

// ObserveSeasonal is Observe with the point's seasonal reference ref, the
// series' value a season before (NaN when the series has no such
// history), for Config.Seasonal. O(1).
func (d *Detector) ObserveSeasonal(t time.Time, y, yhat, lower, upper, ref float64) Observation {
	s := Score(y, yhat, lower, upper)
	o := Observation{Score: s, Side: Side(y, yhat), Open: d.state.Open}
	st := &d.state
	floor := 0.0
	if d.cfg.StepFloor > 0 && st.Steps > 0 {
		floor = d.cfg.StepFloor * st.MeanStep
	}
	margin := d.cfg.ExtremeMargin * st.MeanStep
	if d.cfg.StepFloor > 0 || d.cfg.Surprise > 0 || d.cfg.ExtremeMargin > 0 {
		d.step(y)
	}
	if math.IsNaN(s) {
		return o
	}
	if d.cfg.ExtremeQuiet > 0 {
		o.Extreme = d.extreme(t.UnixNano(), y, margin)
	}
	if d.cfg.Seasonal > 0 {
		o.Seasonal = d.seasonal(t.UnixNano(), y, ref)
	}
	eff := s
	if floor > 0 {
		eff = flooredScore(y, yhat, lower, upper, floor)
	}
	watched := d.cfg.Direction == Both || d.cfg.Direction == o.Side
	o.Outside = watched && eff > d.cfg.Threshold && math.Abs(y-yhat) >= d.cfg.MinDeviation
	surprising := true
	if d.cfg.Surprise > 0 {
		d.advance(t.UnixNano())
		peak := st.Peak
		for _, p := range st.Peaks {
			peak = max(peak, p)
		}
		surprising = o.Outside && eff > d.cfg.Surprise*peak
		d.addPeak(eff)
	}
	st.Recent = (st.Recent << 1) & d.mask
	st.Surprised = (st.Surprised << 1) & d.mask
	if o.Outside {
		st.Recent |= 1
		if surprising {
			st.Surprised |= 1
		}
	}
	deviates := o.Outside && bits.OnesCount64(st.Recent) >= d.cfg.K && (d.cfg.Surprise == 0 || st.Surprised != 0)
	switch {
	case !st.Open && (deviates || o.Extreme || o.Seasonal):
		st.Open, st.Inside, st.Age = true, 0, 0
		st.LastOpen = t.UnixNano()
		o.Event = Opened
	case st.Open && o.Outside:
		st.Inside = 0
		st.Age++
	case st.Open:
		st.Inside++
		st.Age++
		if st.Inside >= d.cfg.M {
			st.Recent, st.Surprised, st.Open, st.Inside, st.Age = 0, 0, false, 0, 0
			o.Event = Closed
		}
	}
	o.Open = st.Open
	return o
}

// extreme adds the actual y at time at (Unix ns) to the range of
// ExtremeQuiet and reports whether it is a new high or low on a watched
// side, beyond the previous by more than margin, after ExtremeQuiet
// without one.
func (d *Detector) extreme(at int64, y, margin float64) bool {
	st := &d.state
	if math.IsNaN(y) || math.IsInf(y, 0) {
		return false
	}
	if !st.HasRange {
		st.HasRange, st.Low, st.High, st.LowTime, st.HighTime = true, y, y, at, at
		return false
	}
	quiet := int64(d.cfg.ExtremeQuiet)
	ext := false
	if y > st.High {
		ext = at-st.HighTime > quiet && d.cfg.Direction != Below && y-st.High > margin
		st.High, st.HighTime = y, at
	}
	if y < st.Low {
		ext = at-st.LowTime > quiet && d.cfg.Direction != Above && st.Low-y > margin
		st.Low, st.LowTime = y, at
	}
	return ext
}

// seasonal adds the deviation of the actual y from its seasonal reference
// ref, at time at (Unix ns), to the mean and the run of Seasonal, and
// reports whether the run opens an event (see Config.Seasonal). A NaN
// reference (no history a season back) or an infinite deviation ends the
// run and adds nothing.
func (d *Detector) seasonal(at int64, y, ref float64) bool {
	st := &d.state
	dev := y - ref
	if math.IsNaN(dev) || math.IsInf(dev, 0) {
		st.SeasonalRun = 0
		return false
	}
	a := math.Abs(dev)
	far := st.SeasonalN > 0 && a > d.cfg.Seasonal*st.SeasonalMean
	switch {
	case !far:
		st.SeasonalRun = 0
	case dev > 0 && st.SeasonalRun >= 0:
		st.SeasonalRun = min(st.SeasonalRun+1, MaxSeasonalRun)
	case dev > 0:
		st.SeasonalRun = 1
	case st.SeasonalRun <= 0:
		st.SeasonalRun = max(st.SeasonalRun-1, -MaxSeasonalRun)
	default:
		st.SeasonalRun = -1
	}
	if st.SeasonalN == 0 {
		st.SeasonalSince = at
	}
	if st.SeasonalN < SeasonalMemory {
		st.SeasonalN++
	}
	st.SeasonalMean += (min(a, math.MaxFloat64/2) - st.SeasonalMean) / float64(st.SeasonalN)
	run, side := st.SeasonalRun, Above
	if run < 0 {
		run, side = -run, Below
	}
	return run >= d.cfg.SeasonalRun && at-st.SeasonalSince >= int64(SeasonalWarmup) &&
		(d.cfg.Direction == Both || d.cfg.Direction == side) &&
		(st.LastOpen == 0 || at-st.LastOpen > int64(d.cfg.SurpriseWindow))
}

// step adds the actual y to the mean absolute change of StepFloor; a NaN
// or infinite y is skipped.
func (d *Detector) step(y float64) {
	if math.IsNaN(y) || math.IsInf(y, 0) {
		return
	}
	st := &d.state
	if st.HasLast {
		if st.Steps < StepMemory {
			st.Steps++
		}
		st.MeanStep += (min(math.Abs(y-st.LastY), math.MaxFloat64/2) - st.MeanStep) / float64(st.Steps)
	}
	st.LastY, st.HasLast = y, true
}

// advance closes the blocks of Surprise's window that ended before time
// at (Unix ns). A time before the current block's start (a clock set
// back) counts in the current block.
func (d *Detector) advance(at int64) {
	st := &d.state
	span := d.cfg.blockSpan()
	if st.BlockStart == 0 {
		st.BlockStart = at
		return
	}
	if at-st.BlockStart < span {
		return
	}
	n := (at - st.BlockStart) / span // ≥ 1 blocks ended
	if n > PeakBlocks {
		st.Peaks = [PeakBlocks]float64{}
		st.Peak = 0
		st.BlockStart = at
		return
	}
	for i := int64(0); i < n; i++ {
		st.Peaks[st.Block] = st.Peak
		st.Block = (st.Block + 1) % PeakBlocks
		st.Peak = 0
	}
	st.BlockStart += n * span
}

// addPeak adds a point's floored score to the current block of Surprise.
func (d *Detector) addPeak(eff float64) {
	d.state.Peak = max(d.state.Peak, eff)
}

// flooredScore is Score with each half-width at least floor > 0.
func flooredScore(y, yhat, lower, upper, floor float64) float64 {
	var dev, half float64
	if y > yhat {
		dev, half = y-yhat, upper-yhat
	} else {
		dev, half = yhat-y, yhat-lower
	}
	return min(dev/max(half, floor), MaxScore)
}
