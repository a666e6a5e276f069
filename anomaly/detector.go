package anomaly

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
)

// MaxN is the largest debounce window N a Detector keeps.
const MaxN = 64

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
	// K and N debounce the opening of an event: it opens when at least K
	// of the last N scored points were outside, 1 ≤ K ≤ N ≤ MaxN; 0 means
	// 1. Config keys `open_k`, `open_n`.
	K, N int
	// M closes an open event once M scored points in a row were inside,
	// M ≥ 1; 0 means 1. Config key `close_m`.
	M int
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
	return c
}

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
	// Open reports whether an event is open.
	Open bool
	// Inside counts the scored points in a row inside while the event is
	// open, < M.
	Inside int
	// Age counts the scored points since the open event opened (0 on the
	// point that opened it); 0 while no event is open.
	Age int
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
// of this detector: outside points beyond its window N, or an Inside count
// out of [0, M) or set while no event is open.
func (d *Detector) Restore(st State) error {
	if st.Recent&^d.mask != 0 {
		return fmt.Errorf("%w: detector state: recent points %#x beyond open_n %d", ErrBadConfig, st.Recent, d.cfg.N)
	}
	if st.Inside < 0 || st.Inside >= d.cfg.M || st.Age < 0 || (!st.Open && (st.Inside != 0 || st.Age != 0)) {
		return fmt.Errorf("%w: detector state: %d points inside (open %v, close_m %d)", ErrBadConfig, st.Inside, st.Open, d.cfg.M)
	}
	d.state = st
	return nil
}

// Reset forgets the recent points and closes any open event silently.
func (d *Detector) Reset() { d.state = State{} }

// Observe scores the actual y against the forecast yhat with interval
// [lower, upper] and advances the event: a point is outside when its
// score exceeds Threshold on a watched side and |y − yhat| ≥ MinDeviation.
// A point without an interval (NaN score) leaves the detector unchanged.
// While no event is open, the point opens one when at least K of the last
// N scored points (this one included) were outside; while one is open, it
// closes after M scored points in a row inside, and the recent points are
// then forgotten so that the next event needs K new points outside.
func (d *Detector) Observe(y, yhat, lower, upper float64) Observation {
	s := Score(y, yhat, lower, upper)
	o := Observation{Score: s, Side: Side(y, yhat), Open: d.state.Open}
	if math.IsNaN(s) {
		return o
	}
	watched := d.cfg.Direction == Both || d.cfg.Direction == o.Side
	o.Outside = watched && s > d.cfg.Threshold && math.Abs(y-yhat) >= d.cfg.MinDeviation
	st := &d.state
	st.Recent = (st.Recent << 1) & d.mask
	if o.Outside {
		st.Recent |= 1
	}
	switch {
	case !st.Open && bits.OnesCount64(st.Recent) >= d.cfg.K:
		st.Open, st.Inside, st.Age = true, 0, 0
		o.Event = Opened
	case st.Open && o.Outside:
		st.Inside = 0
		st.Age++
	case st.Open:
		st.Inside++
		st.Age++
		if st.Inside >= d.cfg.M {
			*st = State{}
			o.Event = Closed
		}
	}
	o.Open = st.Open
	return o
}
