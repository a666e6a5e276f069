package embedding

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// ErrNonFinite is wrapped by the error for a NaN or Inf value given to a
// [Scaler] or [Warmup]: such a value cannot set a range.
var ErrNonFinite = errors.New("embedding: value is NaN or Inf")

// ScaleMode says how a [Scaler] finds the range it maps onto [−1, 1].
type ScaleMode int

const (
	// ScaleNone leaves values as they are.
	ScaleNone ScaleMode = iota
	// ScaleFixed maps a configured range [Min, Max] onto [−1, 1].
	ScaleFixed
	// ScaleWarmup maps [min, max] of the first N values onto [−1, 1],
	// the range being frozen after those N values.
	ScaleWarmup
)

// String returns the mode's name in a scale spec: "none", "fixed" or
// "warmup".
func (m ScaleMode) String() string {
	switch m {
	case ScaleNone:
		return "none"
	case ScaleFixed:
		return "fixed"
	case ScaleWarmup:
		return "warmup"
	}
	return fmt.Sprintf("ScaleMode(%d)", int(m))
}

// ScaleSpec configures a [Scaler]. Its zero value is ScaleNone. Its text
// form, read by [ParseScale] and written by String, is the command line's
// `--scale none|fixed:MIN,MAX|warmup:N`.
type ScaleSpec struct {
	// Mode selects the kind of scaling; the zero value is ScaleNone.
	Mode ScaleMode
	// Min and Max are the range mapped onto [−1, 1] with ScaleFixed: both
	// finite, Min < Max. Ignored by the other modes.
	Min, Max float64
	// N is the number of warm-up values with ScaleWarmup, at least 2.
	// Ignored by the other modes.
	N int
}

// String returns the spec's text form, which [ParseScale] reads back to an
// equal spec. Floats are written in their shortest exact form ('g', -1).
func (s ScaleSpec) String() string {
	switch s.Mode {
	case ScaleFixed:
		return "fixed:" + strconv.FormatFloat(s.Min, 'g', -1, 64) + "," + strconv.FormatFloat(s.Max, 'g', -1, 64)
	case ScaleWarmup:
		return "warmup:" + strconv.Itoa(s.N)
	}
	return s.Mode.String()
}

// Validate returns an error wrapping [ErrBadConfig] and naming the field at
// fault if s is not a usable configuration.
func (s ScaleSpec) Validate() error {
	switch s.Mode {
	case ScaleNone:
		return nil
	case ScaleFixed:
		if !isFinite(s.Min) {
			return fmt.Errorf("%w: scale Min is %v, must be finite", ErrBadConfig, s.Min)
		}
		if !isFinite(s.Max) {
			return fmt.Errorf("%w: scale Max is %v, must be finite", ErrBadConfig, s.Max)
		}
		if !(s.Min < s.Max) {
			return fmt.Errorf("%w: scale Min %v must be less than Max %v", ErrBadConfig, s.Min, s.Max)
		}
		return nil
	case ScaleWarmup:
		if s.N < 2 {
			return fmt.Errorf("%w: scale warm-up N is %d, must be ≥ 2", ErrBadConfig, s.N)
		}
		return nil
	}
	return fmt.Errorf("%w: unknown scale Mode %d", ErrBadConfig, int(s.Mode))
}

// ParseScale reads a scale spec: "none", "fixed:MIN,MAX" (two finite
// numbers in Go's float syntax, MIN < MAX) or "warmup:N" (a decimal integer
// N ≥ 2). The syntax is exact: no spaces, lower-case mode names. Errors wrap
// [ErrBadConfig], quote the spec and say which part is wrong.
func ParseScale(spec string) (ScaleSpec, error) {
	bad := func(format string, a ...any) (ScaleSpec, error) {
		return ScaleSpec{}, fmt.Errorf("%w: scale spec %q: %s", ErrBadConfig, spec, fmt.Sprintf(format, a...))
	}
	mode, arg, hasArg := strings.Cut(spec, ":")
	var s ScaleSpec
	switch mode {
	case "none":
		if hasArg {
			return bad("none takes no argument")
		}
		return s, nil
	case "fixed":
		lo, hi, ok := strings.Cut(arg, ",")
		if !hasArg || !ok {
			return bad("want fixed:MIN,MAX")
		}
		var err error
		if s.Min, err = parseFinite(lo); err != nil {
			return bad("MIN %v", err)
		}
		if s.Max, err = parseFinite(hi); err != nil {
			return bad("MAX %v", err)
		}
		if !(s.Min < s.Max) {
			return bad("MIN %v must be less than MAX %v", s.Min, s.Max)
		}
		s.Mode = ScaleFixed
		return s, nil
	case "warmup":
		if !hasArg {
			return bad("want warmup:N")
		}
		n, err := strconv.Atoi(arg)
		if err != nil {
			if errors.Is(err, strconv.ErrRange) {
				return bad("N %q is out of range", arg)
			}
			return bad("N %q is not an integer", arg)
		}
		if n < 2 {
			return bad("N is %d, must be ≥ 2", n)
		}
		s.Mode, s.N = ScaleWarmup, n
		return s, nil
	}
	return bad("unknown mode %q, want none, fixed:MIN,MAX or warmup:N", mode)
}

// parseFinite parses a finite float64; its error completes a sentence that
// starts with the field's name.
func parseFinite(text string) (float64, error) {
	v, err := strconv.ParseFloat(text, 64)
	if err != nil {
		if errors.Is(err, strconv.ErrRange) {
			return 0, fmt.Errorf("%q is out of range", text)
		}
		return 0, fmt.Errorf("%q is not a number", text)
	}
	if !isFinite(v) {
		return 0, fmt.Errorf("%q is not finite", text)
	}
	return v, nil
}

func isFinite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// Scaler maps a series' values linearly onto [−1, 1] and back, following a
// [ScaleSpec]: with range [lo, hi], Scale(v) = (v − c)/h where c = (lo+hi)/2
// and h = (hi−lo)/2.
//
// Values outside the range scale linearly outside [−1, 1]; nothing is ever
// clipped, so Unscale(Scale(v)) = v up to rounding for every finite v whose
// scaled value does not overflow.
// A degenerate range (lo = hi, possible only in warm-up when the first N
// values are equal) maps lo to 0 with unit half-width: Scale(v) = v − lo.
//
// With ScaleNone the Scaler is the identity. With ScaleWarmup it has no
// range until N finite values have been given to Observe (or to a [Warmup]
// over it); Frozen reports when it has one, and Scale and Unscale must not be
// called before. A Scaler is not safe for concurrent use.
type Scaler struct {
	spec   ScaleSpec
	seen   int     // values observed in warm-up
	lo, hi float64 // range so far; meaningless while seen == 0 in warm-up
	frozen bool
	center float64
	half   float64
}

// NewScaler returns a Scaler for spec, or an error from spec.Validate.
func NewScaler(spec ScaleSpec) (*Scaler, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	s := &Scaler{spec: spec.normalize()}
	s.reset()
	return s, nil
}

// normalize zeroes the fields s's mode ignores, so that equal
// configurations compare equal.
func (s ScaleSpec) normalize() ScaleSpec {
	switch s.Mode {
	case ScaleNone:
		return ScaleSpec{}
	case ScaleFixed:
		return ScaleSpec{Mode: ScaleFixed, Min: s.Min, Max: s.Max}
	}
	return ScaleSpec{Mode: s.Mode, N: s.N}
}

// reset puts s in its initial state for its spec.
func (s *Scaler) reset() {
	s.seen = 0
	switch s.spec.Mode {
	case ScaleNone:
		s.lo, s.hi = -1, 1
		s.freeze()
	case ScaleFixed:
		s.lo, s.hi = s.spec.Min, s.spec.Max
		s.freeze()
	default:
		s.lo, s.hi = 0, 0
		s.frozen, s.center, s.half = false, 0, 0
	}
}

// freeze fixes the range [s.lo, s.hi]. Halving before subtracting keeps
// c and h finite for any finite range.
func (s *Scaler) freeze() {
	s.center = s.lo/2 + s.hi/2
	s.half = s.hi/2 - s.lo/2
	if s.half == 0 {
		s.center, s.half = s.lo, 1
	}
	s.frozen = true
}

// Spec returns the configuration s was made with, with the fields its mode
// ignores set to zero.
func (s *Scaler) Spec() ScaleSpec { return s.spec }

// Frozen reports whether s has its range, so that Scale and Unscale may be
// called: always with ScaleNone and ScaleFixed, after N observed values with
// ScaleWarmup.
func (s *Scaler) Frozen() bool { return s.frozen }

// Seen returns the number of values observed in warm-up so far (at most N;
// always 0 with ScaleNone and ScaleFixed).
func (s *Scaler) Seen() int { return s.seen }

// Range returns the range s maps onto [−1, 1] and whether it is final
// (Frozen). With ScaleNone it is [−1, 1]. During warm-up it is the range of
// the values observed so far, or [0, 0] before the first.
func (s *Scaler) Range() (lo, hi float64, frozen bool) { return s.lo, s.hi, s.frozen }

// Observe takes the next raw value of the series. During warm-up it widens
// the range to include v and, at the N-th value, freezes it; once frozen, and
// with ScaleNone or ScaleFixed, it does nothing. It returns Frozen. A NaN or
// Inf v is not counted and gives an error wrapping [ErrNonFinite]. Observe
// costs O(1) and does not allocate (but for the error).
func (s *Scaler) Observe(v float64) (frozen bool, err error) {
	if !isFinite(v) {
		return s.frozen, fmt.Errorf("%w: %v", ErrNonFinite, v)
	}
	if s.frozen {
		return true, nil
	}
	if s.seen == 0 {
		s.lo, s.hi = v, v
	} else {
		s.lo, s.hi = min(s.lo, v), max(s.hi, v)
	}
	s.seen++
	if s.seen == s.spec.N {
		s.freeze()
	}
	return s.frozen, nil
}

// Scale maps the raw value v into the scaled space: the range onto [−1, 1],
// and values outside it linearly beyond (never clipped). It panics if s is
// not Frozen. It costs O(1).
func (s *Scaler) Scale(v float64) float64 {
	if !s.frozen {
		panic("embedding: Scale before the warm-up range is frozen")
	}
	return (v - s.center) / s.half
}

// Unscale maps a scaled value u, such as a forecast, back to the series'
// units: the inverse of Scale. It panics if s is not Frozen. It costs O(1).
func (s *Scaler) Unscale(u float64) float64 {
	if !s.frozen {
		panic("embedding: Unscale before the warm-up range is frozen")
	}
	return u*s.half + s.center
}

// ScalerState is the exportable state of a [Scaler], for checkpoints. With
// ScaleWarmup, the range is frozen when Seen = Spec.N.
type ScalerState struct {
	// Spec is the Scaler's configuration; SetState requires it to equal
	// the Scaler's.
	Spec ScaleSpec
	// Seen is the number of values observed in warm-up (0 with ScaleNone
	// and ScaleFixed).
	Seen int
	// Min and Max are the range: observed so far in warm-up (0 and 0 before
	// the first value), Spec's with ScaleFixed, −1 and 1 with ScaleNone.
	Min, Max float64
}

// State returns s's state. It costs O(1) and does not allocate.
func (s *Scaler) State() ScalerState {
	return ScalerState{Spec: s.spec, Seen: s.seen, Min: s.lo, Max: s.hi}
}

// SetState replaces s's state with st, which must come from a Scaler with an
// equal spec (ignoring fields the mode does not use) and be consistent. With ScaleNone and ScaleFixed only the spec
// is used (Seen must be 0). On error, which wraps [ErrBadState], s is
// unchanged. SetState costs O(1).
func (s *Scaler) SetState(st ScalerState) error {
	if st.Spec.normalize() != s.spec {
		return fmt.Errorf("%w: state is for scale %s; the scaler has %s", ErrBadState, st.Spec, s.spec)
	}
	if s.spec.Mode != ScaleWarmup {
		if st.Seen != 0 {
			return fmt.Errorf("%w: Seen is %d with scale %s, must be 0", ErrBadState, st.Seen, s.spec)
		}
		return nil
	}
	if st.Seen < 0 || st.Seen > s.spec.N {
		return fmt.Errorf("%w: Seen is %d, must be in [0, %d]", ErrBadState, st.Seen, s.spec.N)
	}
	if st.Seen > 0 && !(isFinite(st.Min) && isFinite(st.Max) && st.Min <= st.Max) {
		return fmt.Errorf("%w: range [%v, %v] is not a finite range", ErrBadState, st.Min, st.Max)
	}
	s.reset()
	if st.Seen == 0 {
		return nil
	}
	s.seen, s.lo, s.hi = st.Seen, st.Min, st.Max
	if s.seen == s.spec.N {
		s.freeze()
	}
	return nil
}

// Warmup feeds a [Scaler] and holds back the points seen while its range is
// being learned, so that none is lost: they are handed back, oldest first,
// by the call that freezes the range, to be scaled and processed in order.
// P is the caller's point type (a value with its timestamp, say). With
// ScaleNone and ScaleFixed, and once frozen, every point is handed back at
// once.
//
// A Warmup should be the only thing that feeds its Scaler. To checkpoint it,
// save the Scaler's State and a copy of Pending; to restore, SetState the
// Scaler, then SetPending. A Warmup is not safe for concurrent use.
type Warmup[P any] struct {
	s       *Scaler
	buf     []P
	pending int // buf[:pending] are held back
}

// NewWarmup returns a Warmup over s. It preallocates room for
// min(N, 1024) points in warm-up (more grows the buffer as needed) and for
// one point otherwise.
func NewWarmup[P any](s *Scaler) *Warmup[P] {
	n := 1
	if s.spec.Mode == ScaleWarmup {
		n = min(s.spec.N, 1024)
	}
	return &Warmup[P]{s: s, buf: make([]P, 0, n)}
}

// Scaler returns the Scaler the Warmup feeds.
func (w *Warmup[P]) Scaler() *Scaler { return w.s }

// Add takes the next point p, whose raw value is v, observes v, and returns
// the points to process now, oldest first: none while the range is not
// frozen, every held-back point and p on the call that freezes it, and p
// alone afterwards. A NaN or Inf v gives an error wrapping [ErrNonFinite]
// and p is neither kept nor returned.
//
// The returned slice belongs to the Warmup and is valid until the next call
// to Add or SetPending. Once frozen, Add costs O(1) and does not allocate.
func (w *Warmup[P]) Add(p P, v float64) ([]P, error) {
	frozen, err := w.s.Observe(v)
	if err != nil {
		return nil, err
	}
	w.buf = append(w.buf[:w.pending], p)
	if !frozen {
		w.pending++
		return nil, nil
	}
	w.pending = 0
	return w.buf, nil
}

// Pending returns the points held back so far, oldest first. The slice
// belongs to the Warmup and is valid until the next call to Add or
// SetPending; copy it to keep it.
func (w *Warmup[P]) Pending() []P { return w.buf[:w.pending] }

// SetPending replaces the held-back points with a copy of ps, as saved from
// Pending, after the Scaler's state has been restored: len(ps) must equal
// the Scaler's Seen while it is not frozen, and be 0 once it is. On error,
// which wraps [ErrBadState], w is unchanged.
func (w *Warmup[P]) SetPending(ps []P) error {
	want := w.s.seen
	if w.s.frozen {
		want = 0
	}
	if len(ps) != want {
		return fmt.Errorf("%w: %d pending points, the scaler has seen %d values of its warm-up (frozen: %v)", ErrBadState, len(ps), w.s.seen, w.s.frozen)
	}
	w.buf = append(w.buf[:0], ps...)
	w.pending = len(ps)
	return nil
}
