// Package threshold finds when a forecast path will cross a threshold, and
// turns those estimates into debounced threshold events.
//
// A forecast path gives, at each step h, a point forecast ŷ_h and the
// empirical distribution of the absolute residuals |y − ŷ| of the
// forecasts made h points before (the split-conformal calibration window
// of that step, in running scales). With the residuals taken as symmetric
// about the forecast (only their absolute values are kept), the
// probability that the actual is beyond a threshold T at step h is
//
//	P = 1 − ½·P(|e| > m)   when the forecast is beyond T by m ≥ 0 scales,
//	P = ½·P(|e| ≥ |m|)     when it falls short by |m|,
//
// (at the threshold counts as beyond it), so that P ≥ p holds exactly when
// m ≥ Q(2p − 1) for p ≥ ½, and when m ≥ −Q(1 − 2p) for p < ½, Q being
// the residuals' quantile function,
// linear between the order statistics and 0 at level 0 ([Quantile],
// [Need]): p = ½ is the path's own crossing. A step between two calibrated steps takes their quantile
// functions interpolated linearly at the same level, as the forecast's
// intervals do ([Prob]).
//
// A [Tracker] debounces what each forecast says into events: opened after
// Config.Open forecasts in a row cross within the horizon, updated after
// Config.Open forecasts in a row find the crossing materially moved,
// closed after Config.Close forecasts in a row that do not cross. A
// forecast crosses only at a probability of at least Config.Probability.
// A move is material when the crossing's time and its time from the
// forecast (the ETA) have both changed, from what was published, by more
// than Config.Update of the time that was left and by more than a step
// of the path: a crossing that stays put while the clock nears it, or
// that recedes with the clock (a series sitting at the threshold,
// always a few steps from it), is not news. Nor is any move once the
// time published has come: the series is there, and the event stays
// open until it closes. So no event follows another of the same
// threshold by fewer forecasts than Open or Close.
//
// The package is a leaf: no I/O, no clock, no configuration files. A
// Tracker is owned by one goroutine. Nothing here allocates but Name
// (AppendName does not).
package threshold

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"
)

// ErrBadConfig is wrapped by the errors of Config.Validate.
var ErrBadConfig = errors.New("threshold: bad config")

// Direction says on which side of the threshold a value is beyond it.
type Direction int

const (
	// Above: values at or above the threshold are beyond it.
	Above Direction = iota + 1
	// Below: values at or below the threshold are beyond it.
	Below
)

// String returns "above" or "below".
func (d Direction) String() string {
	switch d {
	case Above:
		return "above"
	case Below:
		return "below"
	}
	return fmt.Sprintf("Direction(%d)", int(d))
}

// Defaults of Config's zero fields, chosen on the scenario set of
// testdata/thresholds (BENCHMARKS.md "Alerts before the threshold").
const (
	DefaultProbability = 0.49
	DefaultOpen        = 2
	DefaultClose       = 3
	DefaultUpdate      = 0.25
)

// Config is one threshold of a series.
type Config struct {
	// Value is the threshold, in the series' units. Config keys
	// `threshold_above`, `threshold_below`.
	Value float64
	// Direction is the side beyond the threshold.
	Direction Direction
	// Probability is the probability of being beyond the threshold at
	// which a step counts as crossed, in (0, 1); 0 means
	// DefaultProbability. Config key `threshold_probability`.
	Probability float64
	// Open is the number of forecasts in a row that must cross within
	// the horizon for an event to open; 0 means DefaultOpen. Config key
	// `threshold_open`.
	Open int
	// Close is the number of forecasts in a row that must not cross for
	// an open event to close; 0 means DefaultClose. Config key
	// `threshold_close`.
	Close int
	// Update is the fraction of the time left to the crossing by which
	// the crossing of an open event must move (its time and its ETA, for
	// Open forecasts in a row) for an update event; 0 means
	// DefaultUpdate.
	Update float64
	// Within, if positive, is how far ahead of the forecast's origin a
	// crossing counts for the event: a forecast crossing later than that
	// is treated as not crossing, so an event says "beyond the threshold
	// within 4h" as the node-mixin's rules do, however far the horizon
	// reaches. The observation still reports the crossing it found. 0
	// means the whole horizon. Config key `threshold_within`.
	Within time.Duration
}

// WithDefaults returns c with its zero fields set to the defaults.
func (c Config) WithDefaults() Config {
	if c.Probability == 0 {
		c.Probability = DefaultProbability
	}
	if c.Open == 0 {
		c.Open = DefaultOpen
	}
	if c.Close == 0 {
		c.Close = DefaultClose
	}
	if c.Update == 0 {
		c.Update = DefaultUpdate
	}
	return c
}

// Validate returns nil if c is usable, or every problem joined.
func (c Config) Validate() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrBadConfig}, args...)...))
	}
	if math.IsNaN(c.Value) || math.IsInf(c.Value, 0) {
		bad("threshold_%s must be a finite number, got %v", c.Direction, c.Value)
	}
	if c.Direction != Above && c.Direction != Below {
		bad("direction must be above or below, got %v", c.Direction)
	}
	if c.Probability != 0 && !(c.Probability > 0 && c.Probability < 1) {
		bad("threshold_probability must lie in (0, 1), got %v", c.Probability)
	}
	if c.Open < 0 || c.Open > 1000 {
		bad("threshold_open must be between 1 and 1000, got %d", c.Open)
	}
	if c.Close < 0 || c.Close > 1000 {
		bad("threshold_close must be between 1 and 1000, got %d", c.Close)
	}
	if c.Within < 0 {
		bad("threshold_within must be ≥ 0, got %v", c.Within)
	}
	if !(c.Update >= 0) || math.IsInf(c.Update, 0) {
		bad("update fraction must be ≥ 0 and finite, got %v", c.Update)
	}
	return errors.Join(errs...)
}

// String names the threshold as its events and InfluxDB tag do: the
// direction and the value, "above 90".
func (c Config) String() string { return Name(c.Direction, c.Value) }

// Name returns "above 90" for (Above, 90), "below 1073741824" for
// (Below, 1 GiB): the value in decimal without an exponent from 10⁻⁴ to
// 10¹⁵, as short as reads back exactly.
func Name(d Direction, v float64) string { return string(AppendName(nil, d, v)) }

// AppendName appends Name(d, v) to b.
func AppendName(b []byte, d Direction, v float64) []byte {
	b = append(append(b, d.String()...), ' ')
	if a := math.Abs(v); v == 0 || (a >= 1e-4 && a < 1e15) {
		return strconv.AppendFloat(b, v, 'f', -1, 64)
	}
	return strconv.AppendFloat(b, v, 'g', -1, 64)
}

// Quantile returns the u-quantile, u ∈ [0, 1], of the distribution of
// the ascending values sorted (≥ 0, not empty), its quantile function
// taken linear between the order statistics and 0 at u = 0: with
// r₀ = 0 and r₁ ≤ … ≤ rₙ the values, Q(k/n) = r_k. Continuous at 0, it
// gives the forecast itself probability ½ of being beyond (a step
// function would put ½ on a plateau as wide as the smallest residual,
// and call a path still that far short of the threshold an even
// chance). O(1).
func Quantile(sorted []float64, u float64) float64 {
	n := len(sorted)
	x := u * float64(n)
	if !(x > 0) {
		return 0
	}
	if x >= float64(n) {
		return sorted[n-1]
	}
	k := int(x) // r_k ≤ Q < r_{k+1}
	f := x - float64(k)
	lo := 0.0
	if k > 0 {
		lo = sorted[k-1]
	}
	return lo + f*(sorted[k]-lo)
}

// Need returns the margin m, in the residuals' units, by which a forecast
// must be beyond the threshold for the probability of the actual being
// beyond it to reach p, under residuals symmetric about the forecast whose
// absolute values are sorted (ascending, not empty): Q(2p − 1) for p ≥ ½,
// −Q(1 − 2p) below. O(1).
func Need(sorted []float64, p float64) float64 {
	if p >= 0.5 {
		return Quantile(sorted, 2*p-1)
	}
	return -Quantile(sorted, 1-2*p)
}

// Prob returns the probability that the actual is beyond the threshold
// (or on it) when the forecast is beyond it by m (in the residuals'
// units; m < 0: short of it), under the distribution of absolute
// residuals whose quantile function is (1 − lam)·Q_lo + lam·Q_hi (see
// Quantile), lo and hi ascending and not empty (lo = hi, lam = 0 for one
// step's): 1 − ½·P(|e| > m) for m ≥ 0, ½·P(|e| ≥ |m|) below, so that
// Prob(Need(p)) ≥ p, equal where the residuals are not tied at |m|. The
// level is found by bisection, 52 halvings of two Quantile calls each,
// and the bound kept is the one on the side of the higher probability:
// a margin m ≥ Need(p) has Prob ≥ p, never a rounding below.
func Prob(lo, hi []float64, lam, m float64) float64 {
	a := math.Abs(m)
	q := func(u float64) float64 { return (1-lam)*Quantile(lo, u) + lam*Quantile(hi, u) }
	if m >= 0 {
		// F = P(|e| ≤ a) = sup{u ∈ [0, 1]: q(u) ≤ a}, q being
		// nondecreasing: q(l) ≤ a < q(r).
		if q(1) <= a {
			return 1
		}
		l, r := 0.0, 1.0
		for range 52 {
			if mid := (l + r) / 2; q(mid) <= a {
				l = mid
			} else {
				r = mid
			}
		}
		return 1 - (1-r)/2
	}
	// G = P(|e| < a) = inf{u ∈ [0, 1]: q(u) ≥ a}: q(l) < a ≤ q(r). A
	// residual of exactly a puts the actual on the threshold, which
	// counts as beyond it.
	if q(1) < a {
		return 0
	}
	l, r := 0.0, 1.0
	for range 52 {
		if mid := (l + r) / 2; q(mid) < a {
			l = mid
		} else {
			r = mid
		}
	}
	return (1 - l) / 2
}

// Event is what a forecast did to a threshold's event.
type Event int

const (
	// None: no event opened, moved or closed.
	None Event = iota
	// Opened: the forecast opened an event.
	Opened
	// Updated: the forecast moved an open event's crossing time.
	Updated
	// Closed: the forecast closed the open event.
	Closed
)

// String returns "none", "opened", "updated" or "closed".
func (e Event) String() string {
	switch e {
	case None:
		return "none"
	case Opened:
		return "opened"
	case Updated:
		return "updated"
	case Closed:
		return "closed"
	}
	return fmt.Sprintf("Event(%d)", int(e))
}

// Observation is what one forecast says of one threshold.
type Observation struct {
	// Value and Direction are the threshold's.
	Value     float64
	Direction Direction
	// Crossing is true when some step of the path reaches the
	// probability; Step is then the first (h ≥ 1), At its target time
	// and ETA the time from the forecast's origin to At. Step is 0, At
	// zero and ETA 0 otherwise.
	Crossing bool
	Step     int
	At       time.Time
	ETA      time.Duration
	// Probability is the probability of being beyond the threshold at
	// Step, or, without a crossing, at the step of the path closest to it
	// (NaN while no step is calibrated).
	Probability float64
	// Forecast, Lower and Upper are that step's forecast and interval
	// (NaN when none).
	Forecast, Lower, Upper float64
	// Event is set by Tracker.Observe.
	Event Event
}

// Tracker debounces a threshold's observations into events.
type Tracker struct {
	cfg     Config
	open    bool
	run     int       // forecasts in a row crossing (closed) or not (open)
	moved   int       // forecasts in a row, open, whose crossing moved materially
	pubAt   time.Time // the crossing time last published
	pubLeft time.Duration
}

// NewTracker returns a tracker of c (defaults filled in), or c's problems.
func NewTracker(c Config) (*Tracker, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return &Tracker{cfg: c.WithDefaults()}, nil
}

// Config returns the tracker's configuration, defaults filled in.
func (t *Tracker) Config() Config { return t.cfg }

// Open reports whether an event is open.
func (t *Tracker) Open() bool { return t.open }

// Observe sets o.Event from o.Crossing and o.Probability (against
// Config.Probability), o.ETA (against Config.Within), o.At and o.Step,
// and the tracker's state. O(1).
func (t *Tracker) Observe(o *Observation) {
	o.Event = None
	crossing := o.Crossing && o.Probability >= t.cfg.Probability && (t.cfg.Within <= 0 || o.ETA <= t.cfg.Within)
	if !t.open {
		if !crossing {
			t.run = 0
			return
		}
		t.run++
		if t.run >= t.cfg.Open {
			t.open, t.run = true, 0
			t.pubAt, t.pubLeft = o.At, o.ETA
			o.Event = Opened
		}
		return
	}
	if !crossing {
		t.run, t.moved = t.run+1, 0
		if t.run >= t.cfg.Close {
			t.open, t.run = false, 0
			o.Event = Closed
		}
		return
	}
	t.run = 0
	if !t.movedMaterially(o) {
		t.moved = 0
		return
	}
	t.moved++
	if t.moved >= t.cfg.Open {
		t.moved = 0
		t.pubAt, t.pubLeft = o.At, o.ETA
		o.Event = Updated
	}
}

// movedMaterially reports whether the crossing o found, the event being
// open, differs materially from the one published (see the package's
// doc).
func (t *Tracker) movedMaterially(o *Observation) bool {
	origin := o.At.Add(-o.ETA)
	if !origin.Before(t.pubAt) {
		return false // the time published has come
	}
	if o.Step == 1 && !o.At.Before(t.pubAt) {
		return false // beyond already, as published: the crossing is not moving
	}
	least := time.Duration(t.cfg.Update * float64(t.pubLeft))
	if o.Step > 0 {
		least = max(least, o.ETA/time.Duration(o.Step)) // a step of the path
	}
	return abs(o.At.Sub(t.pubAt)) > least && abs(o.ETA-t.pubLeft) > least
}

func abs(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}
