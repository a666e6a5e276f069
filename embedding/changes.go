package embedding

import (
	"fmt"
	"math"
	"slices"
)

// Changes turns a stream of values into the inputs and targets of a model
// that learns the next change x(t+1) − x(t) rather than the next level, in
// units of a robust running estimate s(t) of the series' own one-step
// variability. A model that knows nothing predicts a change of 0, which is
// persistence (x̂(t+1) = x(t)), the forecast that is hard to beat on real
// metric streams; whatever it learns is a correction to it. The units do
// not depend on the series' units, its offset or its first points, and
// they follow changes of volatility.
//
// The input vector at time t, every entry divided by s(t) and clipped to
// [−Clip, Clip]:
//
//	x(t) − x(t−1), …, x(t−Dim+1) − x(t−Dim)        the last Dim changes
//	x(t) − L_k(t)   for each rate a_k of LevelRates  distance from a level
//	x(t+1−P) − x(t) for each period P of Seasons     the seasonal naive's change
//	x(t+1−P) − x(t−P) for each period P              the change one period ago
//
// where L_k(t) = L_k(t−1) + a_k·clip(x(t) − L_k(t−1), ±4·s(t)) is an
// exponentially weighted level, its steps winsorised so that one spike
// moves it little (mean reversion toward it is what exponential smoothing
// forecasts), and the seasonal entries are 0 until the history reaches
// back a whole period. The target of the input at t is
// (x(t+1) − x(t))/s(t), clipped to [−TargetClip, TargetClip].
//
// The scale s(t) is an exponentially weighted mean of |x(t) − x(t−1)| with
// rate ScaleRate, each change winsorised at 8·s(t−1) so that one spike moves
// it by a bounded amount (a change that overflows float64 counts as 8·s);
// it starts as the mean of the first changes. A level that overflows
// restarts at the value. Inputs and targets are clipped, so none is NaN or
// Inf for any finite values. While
// every change so far was 0 (a constant series) s is 1 — any positive
// scale serves a series that does not move.
//
// Changes keeps the last max(Dim + 1, max P + 1) values in a ring: O(Dim +
// max P) memory once that many values have been pushed, O(Len()) time per
// value. The ring grows with the values it holds, doubling up to its size,
// so that a young series (or one a publisher invents and forgets) holds
// memory for the values it has had, not a week of them: O(log(max P / Dim))
// allocations in all, none once the ring is full.
type Changes struct {
	spec    ChangeSpec
	seasons []int

	ring []float64 // the last min(n, len(ring)) values
	size int       // the values the ring holds when full: len(ring) ≤ size
	pos  int       // where the next value goes
	held int       // values held in the ring
	n    int       // values pushed since creation
	run  int       // values pushed since the last Restart (contiguous changes)

	scale  float64 // s(t); 0 while no non-zero change has been seen
	nScale int     // changes seen for the scale, up to scaleInit
	sumAbs float64 // their sum, during the start
	levels []float64
}

// ChangeSpec configures a [Changes].
type ChangeSpec struct {
	// Dim is the number of lagged changes, ≥ 1.
	Dim int
	// LevelRates are the rates a_k in (0, 1] of the levels the inputs
	// measure the distance from; empty for none.
	LevelRates []float64
	// Seasons is the number of seasonal slots, whose periods are set
	// later by SetSeasons (they depend on the series' spacing).
	Seasons int
	// ScaleRate is the rate in (0, 1) of the running scale; 0 means
	// [DefaultScaleRate].
	ScaleRate float64
	// Clip bounds every input in scaled units; 0 means [DefaultClip].
	Clip float64
	// TargetClip bounds every target in scaled units; 0 means
	// [DefaultTargetClip].
	TargetClip float64
	// PairHistory keeps, once the seasons are set, the values of the two
	// longest periods together (P₁ + P₂ + 1), which a seasonal
	// autoregression forecasting ahead reaches back (a lag of the long
	// period of the short period's differences), instead of the longest
	// period's alone.
	PairHistory bool
}

// Defaults of a [ChangeSpec].
const (
	DefaultScaleRate  = 0.01
	DefaultClip       = 8
	DefaultTargetClip = 8
	// scaleInit is the number of changes whose plain mean starts s.
	scaleInit = 10
	// winsor bounds a change's weight in the scale at winsor·s.
	winsor = 8
	// levelWinsor bounds the step of a level, x(t) − L_k, at
	// levelWinsor·s(t) before it is weighed by a_k, so that one spike
	// does not move the levels (and the exponential smoothing forecasts
	// the combination weighs) as far as it goes; chosen by measurement
	// (BENCHMARKS.md, "How the default's parts were chosen").
	levelWinsor = 4
	// maxScale bounds the scale so that winsor·s stays finite.
	maxScale = math.MaxFloat64 / 64
)

// MaxSeason is the longest seasonal period, in points, a [Changes] keeps
// history for: a week of 5-minute points. Longer periods cost more memory
// per series than their lag is worth; the caller drops them.
const MaxSeason = 2016

// NewChanges returns an empty Changes, or an error wrapping [ErrBadConfig]
// naming the field at fault.
func NewChanges(spec ChangeSpec) (*Changes, error) {
	if spec.Dim < 1 || spec.Dim > MaxSpan {
		return nil, fmt.Errorf("%w: changes Dim is %d, must be between 1 and %d", ErrBadConfig, spec.Dim, MaxSpan)
	}
	for _, a := range spec.LevelRates {
		if !(a > 0 && a <= 1) {
			return nil, fmt.Errorf("%w: level rate %v, must lie in (0, 1]", ErrBadConfig, a)
		}
	}
	if spec.Seasons < 0 || spec.Seasons > 8 {
		return nil, fmt.Errorf("%w: %d seasonal slots, must lie in [0, 8]", ErrBadConfig, spec.Seasons)
	}
	if spec.ScaleRate == 0 {
		spec.ScaleRate = DefaultScaleRate
	}
	if !(spec.ScaleRate > 0 && spec.ScaleRate < 1) {
		return nil, fmt.Errorf("%w: scale rate %v, must lie in (0, 1)", ErrBadConfig, spec.ScaleRate)
	}
	if spec.Clip == 0 {
		spec.Clip = DefaultClip
	}
	if spec.TargetClip == 0 {
		spec.TargetClip = DefaultTargetClip
	}
	if !(spec.Clip > 0) || !(spec.TargetClip > 0) {
		return nil, fmt.Errorf("%w: clip %v and target clip %v must be positive", ErrBadConfig, spec.Clip, spec.TargetClip)
	}
	spec.LevelRates = append([]float64(nil), spec.LevelRates...)
	return &Changes{
		spec:   spec,
		ring:   make([]float64, spec.Dim+1),
		size:   spec.Dim + 1,
		levels: make([]float64, len(spec.LevelRates)),
	}, nil
}

// SetSeasons sets the seasonal periods, in points: one for each of the
// spec's Seasons slots, each 0 (the slot stays empty: its inputs are 0) or
// between 2 and [MaxSeason]. It may be called once, before or after values
// were pushed (the history kept so far is kept).
func (c *Changes) SetSeasons(periods []int) error { return c.setSeasons(periods, false) }

// SetSeasonsKeeping is SetSeasons keeping the history reserved for
// DetectPeriods (ReserveHistory) until FillSeasons, so that a longer
// period can be detected later (a week needs three weeks of values, a day
// three days).
func (c *Changes) SetSeasonsKeeping(periods []int) error { return c.setSeasons(periods, true) }

// FillSeasons sets the periods of the slots still empty after
// SetSeasonsKeeping (periods' other entries are ignored) and gives up the
// history kept beyond what the periods need.
func (c *Changes) FillSeasons(periods []int) error {
	if c.seasons == nil || len(periods) != len(c.seasons) {
		return fmt.Errorf("%w: FillSeasons of %d periods, %v set", ErrBadConfig, len(periods), c.seasons)
	}
	all := slices.Clone(c.seasons)
	for k, p := range periods {
		if all[k] == 0 {
			all[k] = p
		}
	}
	c.seasons = nil
	return c.setSeasons(all, false)
}

func (c *Changes) setSeasons(periods []int, keep bool) error {
	if c.seasons != nil {
		return fmt.Errorf("%w: seasons already set", ErrBadConfig)
	}
	if len(periods) != c.spec.Seasons {
		return fmt.Errorf("%w: %d seasonal periods for %d slots", ErrBadConfig, len(periods), c.spec.Seasons)
	}
	maxP := 0
	for _, p := range periods {
		if p != 0 && (p < 2 || p > MaxSeason) {
			return fmt.Errorf("%w: seasonal period %d points, must lie in [2, %d]", ErrBadConfig, p, MaxSeason)
		}
		maxP = max(maxP, p)
	}
	c.seasons = append(make([]int, 0, len(periods)), periods...)
	// The ring holds the longest period's history; it grows to that as
	// values arrive. A ring that kept history for DetectPeriods keeps
	// SeasonalCycles cycles of the shortest period too (for its seasonal
	// median), the newest values, where it held them; until FillSeasons,
	// DetectLen of them.
	size, keepMin := c.seasonsSize(periods)
	if keep {
		size = max(size, DetectLen)
	} else if c.size > size {
		size = max(size, min(c.size, keepMin))
		c.shrink(size)
	}
	c.size = size
	return nil
}

// seasonsSize returns the ring a Changes of periods needs, and what one
// that kept history for DetectPeriods keeps (SeasonalCycles cycles of the
// shortest period).
func (c *Changes) seasonsSize(periods []int) (need, keep int) {
	maxP, minP := 0, 0
	for _, p := range periods {
		maxP = max(maxP, p)
		if p > 0 && (minP == 0 || p < minP) {
			minP = p
		}
	}
	need = max(c.spec.Dim+1, maxP+1)
	if c.spec.PairHistory {
		second := 0
		for _, p := range periods {
			if p < maxP {
				second = max(second, p)
			}
		}
		need = max(need, maxP+second+1)
	}
	return need, max(need, SeasonalCycles*minP+1)
}

// Keeping reports whether the seasons are set and the ring keeps history
// for DetectPeriods beyond what they need (SetSeasonsKeeping, until
// FillSeasons).
func (c *Changes) Keeping() bool {
	if c.seasons == nil {
		return false
	}
	_, keep := c.seasonsSize(c.seasons)
	return c.size > keep
}

// ReserveHistory makes the ring keep up to n values (at most DetectLen)
// until SetSeasons, so that the periods can be detected from them
// ([History], [DetectPeriods]). O(1); the ring grows as values arrive.
func (c *Changes) ReserveHistory(n int) {
	if c.seasons == nil {
		c.size = max(c.size, min(n, DetectLen))
	}
}

// Held returns the number of values held.
func (c *Changes) Held() int { return c.held }

// History appends the values held, oldest first, to dst and returns it.
func (c *Changes) History(dst []float64) []float64 {
	for i := c.held - 1; i >= 0; i-- {
		dst = append(dst, c.at(i))
	}
	return dst
}

// shrink re-lays the ring into one of size, keeping the newest values.
func (c *Changes) shrink(size int) {
	k := min(c.held, size)
	ring := make([]float64, max(k, c.spec.Dim+1))
	for i := range k { // oldest first
		ring[i] = c.at(k - 1 - i)
	}
	c.ring, c.held, c.pos = ring, k, k%len(ring)
}

// grow re-lays the ring, full at its current length, oldest value first
// into one twice as long (at most size), so that the next value goes
// after the newest. O(len(ring)).
func (c *Changes) grow() {
	k := c.held
	ring := make([]float64, min(c.size, max(2*len(c.ring), k+1)))
	for i := range k { // oldest first
		ring[i] = c.at(k - 1 - i)
	}
	c.ring, c.pos = ring, k
}

// Seasons returns the seasonal periods set, in points (nil before
// SetSeasons).
func (c *Changes) Seasons() []int { return c.seasons }

// Len returns the length of an input vector: Dim + len(LevelRates) +
// 2·Seasons.
func (c *Changes) Len() int { return c.spec.Dim + len(c.spec.LevelRates) + 2*c.spec.Seasons }

// At returns the value pushed k values ago (0: the newest); k < Held().
func (c *Changes) At(k int) float64 { return c.at(k) }

// at returns the value pushed k steps ago (0: the newest); k < held.
func (c *Changes) at(k int) float64 {
	i := c.pos - 1 - k
	if i < 0 {
		i += len(c.ring)
	}
	return c.ring[i]
}

// scaleState is what the running scale s(t) is made of.
type scaleState struct {
	scale  float64
	nScale int
	sumAbs float64
}

// next returns the scale after a change of x − prev.
func (s scaleState) next(x, prev, rate float64) scaleState {
	d := math.Abs(x - prev)
	switch {
	case math.IsInf(d, 0): // a change beyond float64: no measure of scale
		if s.scale > 0 {
			s.scale += rate * (winsor - 1) * s.scale
		}
	case s.nScale < scaleInit:
		s.sumAbs = min(s.sumAbs+d, maxScale)
		s.nScale++
		s.scale = s.sumAbs / float64(s.nScale)
	default:
		if s.scale > 0 {
			d = min(d, winsor*s.scale)
		}
		s.scale += rate * (d - s.scale)
	}
	s.scale = min(s.scale, maxScale)
	return s
}

// nextLevel returns the level l moved toward x at rate a, its step
// winsorised at levelWinsor·scale (when scale > 0), or x when the level
// overflows or first is true.
func nextLevel(l, x, a, scale float64, first bool) float64 {
	d := x - l
	if scale > 0 { // a spike moves the levels as a levelWinsor·s change would
		d = max(-levelWinsor*scale, min(levelWinsor*scale, d))
	}
	n := l + a*d
	if first || math.IsInf(n, 0) || math.IsNaN(n) { // overflow: restart the level
		n = x
	}
	return n
}

// Push adds the series' next value, which must be finite.
func (c *Changes) Push(x float64) {
	if c.run > 0 {
		s := scaleState{c.scale, c.nScale, c.sumAbs}.next(x, c.at(0), c.spec.ScaleRate)
		c.scale, c.nScale, c.sumAbs = s.scale, s.nScale, s.sumAbs
	}
	for k, a := range c.spec.LevelRates {
		c.levels[k] = nextLevel(c.levels[k], x, a, c.scale, c.n == 0)
	}
	if c.held == len(c.ring) && len(c.ring) < c.size {
		c.grow()
	}
	c.ring[c.pos] = x
	c.pos++
	if c.pos == len(c.ring) {
		c.pos = 0
	}
	c.held = min(c.held+1, len(c.ring))
	c.n++
	c.run++
}

// Restart begins a new run of contiguous values after a gap: the lagged
// changes wait for Dim+1 new values, and the change across the gap is not
// taken as one. The scale, the levels and the seasonal history are kept.
func (c *Changes) Restart() { c.run = 0 }

// Ready reports whether an input vector can be made: Dim changes since the
// last restart.
func (c *Changes) Ready() bool { return c.run > c.spec.Dim }

// Scale returns s(t), the unit of the inputs and targets (1 while the
// series has not moved).
func (c *Changes) Scale() float64 {
	if c.scale > 0 && !math.IsInf(c.scale, 0) {
		return c.scale
	}
	return 1
}

// HasScale reports whether Scale measures the series' changes: false
// while no non-zero change has been seen, when Scale is the placeholder
// 1, in the series' own units.
func (c *Changes) HasScale() bool { return c.scale > 0 && !math.IsInf(c.scale, 0) }

// FirstMove reports whether x, pushed next, would be the first value to
// differ from the last while the series has no scale (see HasScale).
func (c *Changes) FirstMove(x float64) bool { return c.held > 0 && !c.HasScale() && x != c.at(0) }

// Median returns the median of the last m values, m the largest odd
// number ≤ n (at most 15) the history holds: a persistence forecast that
// one spike cannot move. O(n²) for these small n; no allocation.
func (c *Changes) Median(n int) float64 {
	m := min(n, c.held, 15)
	if m%2 == 0 {
		m--
	}
	if m < 1 {
		return math.NaN()
	}
	var buf [15]float64
	v := buf[:m]
	for r := range v {
		v[r] = c.at(r)
	}
	return median(v)
}

// median sorts v (odd length, a few values) in place and returns its
// middle value. Insertion sort: no allocation.
func median(v []float64) float64 {
	for r := 1; r < len(v); r++ {
		x, i := v[r], r
		for ; i > 0 && x < v[i-1]; i-- {
			v[i] = v[i-1]
		}
		v[i] = x
	}
	return v[len(v)/2]
}

// Last returns the newest value.
func (c *Changes) Last() float64 { return c.at(0) }

// Input writes the input vector at the newest value into x (length Len());
// it must be Ready.
func (c *Changes) Input(x []float64) {
	s := c.Scale()
	clip := c.spec.Clip
	f := func(v float64) float64 { return max(-clip, min(clip, v/s)) }
	i := 0
	for k := range c.spec.Dim {
		x[i] = f(c.at(k) - c.at(k+1))
		i++
	}
	now := c.at(0)
	for k := range c.levels {
		x[i] = f(now - c.levels[k])
		i++
	}
	for k := range c.spec.Seasons {
		x[i], x[i+1] = 0, 0
		if p := c.period(k); p > 0 && p < c.held { // x(t−P) is in the history
			x[i] = f(c.at(p-1) - now)
			x[i+1] = f(c.at(p-1) - c.at(p))
		}
		i += 2
	}
}

// Seasonal returns x(t+1−P) for the k-th seasonal period P, the seasonal
// naive forecast of the next value, and whether the history reaches back
// that far.
func (c *Changes) Seasonal(k int) (float64, bool) {
	p := c.period(k)
	if p == 0 || p-1 >= c.held {
		return 0, false
	}
	return c.at(p - 1), true
}

// period returns the k-th seasonal period, 0 if unset.
func (c *Changes) period(k int) int {
	if k < len(c.seasons) {
		return c.seasons[k]
	}
	return 0
}

// Level returns the k-th level L_k(t).
func (c *Changes) Level(k int) float64 { return c.levels[k] }

// Target returns the target, in scaled units, of the input made at the
// previous value, now that x arrived (before x is pushed): (x − x(t))/s(t),
// clipped.
func (c *Changes) Target(x float64) float64 {
	t := (x - c.at(0)) / c.Scale()
	return max(-c.spec.TargetClip, min(c.spec.TargetClip, t))
}

// Unscale returns the level forecast for a predicted scaled change y.
func (c *Changes) Unscale(y float64) float64 { return c.at(0) + y*c.Scale() }

// ChangesState is the whole state of a [Changes], for checkpoints: plain
// data sharing nothing with the Changes it came from.
type ChangesState struct {
	// Values are the values held, oldest first: the last values pushed,
	// as many as the ring holds.
	Values []float64
	// N counts the values pushed since creation, Run those since the last
	// Restart.
	N, Run int
	// Scale is s(t) (0 while no change was non-zero), NScale the changes
	// averaged into it during the start and SumAbs their sum.
	Scale  float64
	NScale int
	SumAbs float64
	// Levels are the levels L_k(t).
	Levels []float64
	// Seasons are the seasonal periods in points; nil while unset.
	Seasons []int
}

// State returns a deep copy of c's state. O(len(ring)).
func (c *Changes) State() ChangesState {
	k := c.held
	vals := make([]float64, k)
	for i := range k {
		vals[i] = c.at(k - 1 - i)
	}
	return ChangesState{
		Values: vals, N: c.n, Run: c.run,
		Scale: c.scale, NScale: c.nScale, SumAbs: c.sumAbs,
		Levels:  append([]float64(nil), c.levels...),
		Seasons: append([]int(nil), c.seasons...),
	}
}

// SetState replaces the state of c, a fresh Changes of the same spec, with
// st (from State). It returns an error wrapping [ErrBadState] for a state
// that is inconsistent or does not fit the spec, and leaves c unchanged
// then.
func (c *Changes) SetState(st ChangesState) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: changes: "+format, append([]any{ErrBadState}, args...)...)
	}
	if c.n != 0 || c.seasons != nil {
		return bad("SetState needs a fresh Changes")
	}
	if st.N < 0 || st.Run < 0 || st.Run > st.N || st.NScale < 0 || st.NScale > scaleInit {
		return bad("counts N %d, Run %d, NScale %d", st.N, st.Run, st.NScale)
	}
	if !(st.Scale >= 0) || math.IsInf(st.Scale, 0) || !(st.SumAbs >= 0) || math.IsInf(st.SumAbs, 0) {
		return bad("scale %v, sum %v", st.Scale, st.SumAbs)
	}
	if len(st.Levels) != len(c.levels) {
		return bad("%d levels, want %d", len(st.Levels), len(c.levels))
	}
	for _, v := range append(append([]float64(nil), st.Levels...), st.Values...) {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return bad("value %v", v)
		}
	}
	fresh := &Changes{spec: c.spec, size: c.spec.Dim + 1, levels: make([]float64, len(c.levels))}
	if c.spec.Seasons > 0 {
		// periods still to detect, detected once and to detect again
		// (SetSeasonsKeeping), or detected and holding the cycles of
		// the shortest: the history held is kept (Keeping tells)
		fresh.ReserveHistory(len(st.Values))
	}
	if st.Seasons != nil {
		// Holding more values than the periods keep, it was detecting
		// (SetSeasonsKeeping): it goes on keeping DetectLen of them.
		_, keep := fresh.seasonsSize(st.Seasons)
		if err := fresh.setSeasons(st.Seasons, len(st.Values) > keep); err != nil {
			return fmt.Errorf("%w: %w", ErrBadState, err)
		}
	}
	if len(st.Values) > min(st.N, fresh.size) || st.Run > 0 && len(st.Values) < min(st.Run, c.spec.Dim+1) {
		return bad("%d values for %d pushed into a ring of %d", len(st.Values), st.N, fresh.size)
	}
	fresh.ring = make([]float64, max(len(st.Values), c.spec.Dim+1))
	copy(fresh.ring, st.Values)
	fresh.held = len(st.Values)
	fresh.pos = len(st.Values) % len(fresh.ring)
	fresh.n, fresh.run = st.N, st.Run
	fresh.scale, fresh.nScale, fresh.sumAbs = st.Scale, st.NScale, st.SumAbs
	copy(fresh.levels, st.Levels)
	*c = *fresh
	return nil
}
