// Package embedding turns a stream of scalar values into the input vectors
// and targets an online regressor learns from: a delay (Takens) embedding
// with dimension B and delay τ, and a linear scaling of the values into
// [−1, 1].
//
// It follows the one-step-ahead protocol of the AOSVR paper (Ma, Theiler and
// Perkins, "Accurate On-line Support Vector Regression", section 5.2):
// X(t) = [x(t), x(t−τ), …, x(t−(B−1)τ)] with target y(t) = x(t+1); forecast
// x(t+1) from X(t) and learn (X(t), x(t+1)) when x(t+1) arrives. The paper
// uses τ = 1 and series scaled to [−1, 1].
//
// The package depends only on the standard library.
package embedding

import (
	"errors"
	"fmt"
)

var (
	// ErrBadConfig is wrapped by every error about an embedding's or a
	// scaler's configuration, including a scale spec that does not parse.
	ErrBadConfig = errors.New("embedding: bad configuration")
	// ErrBadState is wrapped by every error about a state given to SetState.
	ErrBadState = errors.New("embedding: bad state")
)

// MaxSpan is the largest span (B−1)·τ+1 a [Delay] accepts, so that a
// mistyped configuration gives an error instead of a huge allocation.
const MaxSpan = 1 << 20

// Delay is the delay embedding of one series with dimension B ≥ 1 and delay
// τ ≥ 1: X(t) = [x(t), x(t−τ), …, x(t−(B−1)τ)], whose target is x(t+1).
//
// It keeps the last span = (B−1)·τ+1 values in a ring, so X(t) exists once
// span values have been pushed since construction or the last Reset.
// [Delay.Step] does, for each new value, everything the per-series pipeline
// needs. A Delay is not safe for concurrent use.
type Delay struct {
	b, tau, span int
	ring         []float64 // the last min(n, span) values
	pos          int       // where the next value goes
	n            int       // values pushed since the last Reset
}

// NewDelay returns an empty delay embedding with dimension b and delay tau.
// It returns an error wrapping [ErrBadConfig] and naming the field when
// b < 1, tau < 1, or the span (b−1)·tau+1 exceeds [MaxSpan]. It allocates
// O(span) memory.
func NewDelay(b, tau int) (*Delay, error) {
	span, err := delaySpan(b, tau)
	if err != nil {
		return nil, err
	}
	return &Delay{b: b, tau: tau, span: span, ring: make([]float64, span)}, nil
}

func delaySpan(b, tau int) (int, error) {
	if b < 1 {
		return 0, fmt.Errorf("%w: embedding dimension B is %d, must be ≥ 1", ErrBadConfig, b)
	}
	if tau < 1 {
		return 0, fmt.Errorf("%w: delay τ is %d, must be ≥ 1", ErrBadConfig, tau)
	}
	if b > 1 && tau > (MaxSpan-1)/(b-1) {
		return 0, fmt.Errorf("%w: span (B−1)·τ+1 with B = %d and τ = %d exceeds %d values", ErrBadConfig, b, tau, MaxSpan)
	}
	return (b-1)*tau + 1, nil
}

// B returns the embedding dimension: the length of every vector.
func (d *Delay) B() int { return d.b }

// Tau returns the delay τ between the vector's components, in points.
func (d *Delay) Tau() int { return d.tau }

// Span returns (B−1)·τ+1, the number of values X(t) reaches back over, and
// so the number of values to push after a Reset before the first vector.
func (d *Delay) Span() int { return d.span }

// Count returns the number of values pushed since construction or the last
// Reset.
func (d *Delay) Count() int { return d.n }

// Ready reports whether the vector X of the newest value exists, that is
// whether Count ≥ Span.
func (d *Delay) Ready() bool { return d.n >= d.span }

// Step takes the series' next value v = x(t) and does, in this order:
//
//  1. if X(t−1) exists, writes it to train and sets trained: (train, v) is the
//     training sample whose target v arrived just now;
//  2. pushes v, and if X(t) now exists, writes it to input and sets ready:
//     input is the vector from which to forecast x(t+1).
//
// So an input vector never contains its own target. train and input must
// each have length B (Step panics otherwise) and must not overlap; Step does
// not retain them, and leaves a slice it does not write to unchanged.
//
// Step does not inspect v: a NaN or Inf enters the vectors like any other
// value. A caller that treats such a point as a gap should call Reset
// instead. Step costs O(B) and does not allocate.
func (d *Delay) Step(v float64, train, input []float64) (trained, ready bool) {
	if len(train) != d.b || len(input) != d.b {
		panic(fmt.Sprintf("embedding: Step with vectors of length %d and %d, B is %d", len(train), len(input), d.b))
	}
	if d.n >= d.span {
		d.vector(train)
		trained = true
	}
	d.ring[d.pos] = v
	d.pos++
	if d.pos == d.span {
		d.pos = 0
	}
	d.n++
	if d.n >= d.span {
		d.vector(input)
		ready = true
	}
	return trained, ready
}

// Vector writes X of the newest value to dst and reports whether it exists
// (Ready); dst is left unchanged when it does not. After restoring a state,
// it gives the input for the next forecast without a new value. dst must have
// length B (Vector panics otherwise). It costs O(B) and does not allocate.
func (d *Delay) Vector(dst []float64) bool {
	if len(dst) != d.b {
		panic(fmt.Sprintf("embedding: Vector with a vector of length %d, B is %d", len(dst), d.b))
	}
	if d.n < d.span {
		return false
	}
	d.vector(dst)
	return true
}

// vector writes [x(t), x(t−τ), …] for the newest value x(t).
func (d *Delay) vector(dst []float64) {
	i := d.pos - 1 // index of x(t); j·τ ≤ span−1, so one wrap suffices
	for j := range dst {
		k := i - j*d.tau
		if k < 0 {
			k += d.span
		}
		dst[j] = d.ring[k]
	}
}

// Reset forgets every value pushed so far, as after a gap in the data: the
// next vector is formed after Span new values. It restarts the embedding
// only; the model learned so far is the caller's to keep. Reset costs
// O(Span).
func (d *Delay) Reset() {
	clear(d.ring)
	d.pos, d.n = 0, 0
}

// DelayState is the exportable state of a [Delay], for checkpoints.
type DelayState struct {
	// B and Tau are the embedding's configuration; SetState requires them
	// to match the Delay's.
	B, Tau int
	// Count is the number of values pushed since the last Reset.
	Count int
	// Values holds the last min(Count, (B−1)·Tau+1) values pushed, oldest
	// first.
	Values []float64
}

// State returns d's state. Values is a new slice the caller owns. State
// costs O(Span) and allocates.
func (d *Delay) State() DelayState {
	k := min(d.n, d.span)
	vals := make([]float64, k)
	for i := range k {
		j := d.pos - k + i
		if j < 0 {
			j += d.span
		}
		vals[i] = d.ring[j]
	}
	return DelayState{B: d.b, Tau: d.tau, Count: d.n, Values: vals}
}

// SetState replaces d's state with st, which must come from a Delay with the
// same B and τ and be consistent (len(Values) = min(Count, Span)). On error,
// which wraps [ErrBadState], d is unchanged. SetState copies st.Values; it
// costs O(Span) and does not allocate.
func (d *Delay) SetState(st DelayState) error {
	if st.B != d.b || st.Tau != d.tau {
		return fmt.Errorf("%w: state is for B = %d, τ = %d; the embedding has B = %d, τ = %d", ErrBadState, st.B, st.Tau, d.b, d.tau)
	}
	if st.Count < 0 {
		return fmt.Errorf("%w: Count is %d, must be ≥ 0", ErrBadState, st.Count)
	}
	if want := min(st.Count, d.span); len(st.Values) != want {
		return fmt.Errorf("%w: %d values for Count %d, want %d", ErrBadState, len(st.Values), st.Count, want)
	}
	clear(d.ring)
	copy(d.ring, st.Values)
	d.n = st.Count
	d.pos = len(st.Values)
	if d.pos == d.span {
		d.pos = 0
	}
	return nil
}
