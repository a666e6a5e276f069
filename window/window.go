// Package window keeps an online regressor over a sliding window of its most
// recent training samples: the "forgetting" window of the AOSVR paper (Ma,
// Theiler and Perkins, "Accurate On-line Support Vector Regression", section
// 5.2.2). When the window is full, the oldest sample leaves the model through
// its decremental removal before the new sample is learned, so the model never
// holds more than W samples.
//
// The package depends only on the standard library; the model side is the
// small [Model] interface, which svr.AOSVR implements.
package window

import (
	"errors"
	"fmt"
	"math"
)

// Model is a regressor that can unlearn any sample it holds by handle.
//
// Add learns the sample (x, y) and returns a handle for it. The model does not
// retain x after Add returns, and an Add that returns an error leaves the
// model unchanged. Remove unlearns the sample with the given handle, as if it
// had never been learned; a Remove that returns an error leaves the model
// unchanged.
type Model interface {
	Add(x []float64, y float64) (id uint64, err error)
	Remove(id uint64) error
}

// Sampler is a Model that can give back a sample it holds: Sample copies the
// input of the sample with handle id into x (of the model's input length)
// and returns its target, or ok false if the model holds no such sample.
// A Window over a Sampler stores only the handles and reads a sample back
// from the model when it needs it, so that each sample is stored once (the
// model keeps it anyway to evaluate its kernel).
type Sampler interface {
	Sample(id uint64, x []float64) (y float64, ok bool)
}

// Ordered is a Model that knows the order of its samples: Oldest returns
// the handle of the oldest it holds. A Window over a Sampler that is also
// Ordered stores no handles for as long as the model's Adds return
// consecutive handles (each one more than the last), as svr.AOSVR's do.
type Ordered interface {
	Oldest() (id uint64, ok bool)
}

var (
	// ErrBadConfig is wrapped by every error about a window's capacity,
	// dimension or model.
	ErrBadConfig = errors.New("window: bad configuration")
	// ErrBadInput is wrapped by every error about a sample given to the
	// window (wrong length, NaN or Inf).
	ErrBadInput = errors.New("window: bad input")
)

// Window is a fixed-capacity ring of training samples kept in step with a
// [Model]: every sample the window holds is held by the model under the
// handle stored next to it, and, once the window is full, learning a sample
// first removes the oldest one from the model.
//
// A Window with capacity 0 forgets nothing: Learn passes every sample to the
// model's Add and the window stores none of them.
//
// Storage grows with the samples held, doubling up to capacity: a handle
// per sample, and, unless the model is a [Sampler], its input and target
// (8 bytes each value); over a Sampler only one input's worth more. Over a
// model that is both a Sampler and [Ordered] and gives its handles in
// sequence (each one more than the last), the handles are not stored
// either: the i-th oldest sample's is the oldest's plus i. Once the window
// is full Learn does not allocate. A Window is not safe for concurrent
// use.
type Window struct {
	m   Model
	sm  Sampler // m, if it is one: then xs and ys are nil
	dim int
	cap int

	xs  []float64 // cap·dim inputs; slot i is xs[i·dim : (i+1)·dim]
	ys  []float64 // cap targets
	ids []uint64  // cap model handles, nil while seq
	buf []float64 // dim: a sample read back from sm

	// seq: the i-th oldest sample has handle base+i, so that no handle is
	// stored. It holds over a model that is both a Sampler and Ordered
	// for as long as the model gives consecutive handles (svr.AOSVR does);
	// the first handle that breaks the sequence makes the window store
	// them (unseq).
	seq  bool
	base uint64

	head int // slot of the oldest sample
	n    int // number of samples held
}

// New returns an empty window of capacity samples over model m, for inputs of
// length dim. A capacity of 0 means no forgetting (see [Window]).
//
// It returns an error wrapping [ErrBadConfig] when m is nil, capacity is
// negative or dim is less than 1. New allocates O(dim) memory; the window's
// storage grows as samples arrive, to O(capacity·dim), or O(capacity) when
// m is a [Sampler].
func New(m Model, capacity, dim int) (*Window, error) {
	if err := checkConfig(m, capacity, dim); err != nil {
		return nil, err
	}
	w := &Window{m: m, dim: dim, cap: capacity}
	if sm, ok := m.(Sampler); ok {
		w.sm, w.buf = sm, make([]float64, dim)
	}
	_, ordered := m.(Ordered)
	w.seq = w.sm != nil && ordered
	return w, nil
}

// firstSlots is the number of slots storage starts with.
const firstSlots = 8

// grow makes room for slot s: the slots grow by doubling, up to capacity.
// Before the window is first full its samples fill slots 0, 1, … in order
// (head moves only when it is full), so s is at most the number of slots.
// O(slots) when it grows.
func (w *Window) grow(s int) {
	if w.seq || s < len(w.ids) {
		return
	}
	n := min(w.cap, max(s+1, 2*len(w.ids), firstSlots))
	w.ids = resized(w.ids, n)
	if w.sm == nil {
		w.xs, w.ys = resized(w.xs, n*w.dim), resized(w.ys, n)
	}
}

// resized returns a copy of s of length and capacity n ≥ len(s).
func resized[T any](s []T, n int) []T {
	t := make([]T, n)
	copy(t, s)
	return t
}

// maxStorage bounds capacity·dim so that a bad configuration gives an error
// instead of an attempt to allocate an absurd amount of memory: 1<<28 values
// is 2 GiB of inputs.
const maxStorage = 1 << 28

func checkConfig(m Model, capacity, dim int) error {
	if m == nil {
		return fmt.Errorf("%w: model is nil", ErrBadConfig)
	}
	if capacity < 0 {
		return fmt.Errorf("%w: capacity is %d, must be ≥ 0 (0 means no forgetting)", ErrBadConfig, capacity)
	}
	if dim < 1 {
		return fmt.Errorf("%w: dim is %d, must be ≥ 1", ErrBadConfig, dim)
	}
	if capacity > maxStorage/dim {
		return fmt.Errorf("%w: capacity %d × dim %d exceeds %d stored values", ErrBadConfig, capacity, dim, maxStorage)
	}
	return nil
}

// Learn teaches the model the sample (x, y). If the window is full, the
// oldest sample is first removed from the model (Remove), then the new one is
// added (Add) and takes the oldest's slot.
//
// Learn is atomic: on any error the window and the model are as before the
// call. Input that is plainly bad (len(x) ≠ Dim, or a NaN or Inf in x or y)
// is rejected with an error wrapping [ErrBadInput] before the model is
// touched. An error from Remove is returned wrapped and nothing else is
// done.
// If Add fails after the oldest sample was removed, Learn adds the removed
// sample back, stores its new handle in the oldest slot, and returns Add's
// error unwrapped. Should that re-Add fail too, the window drops the oldest
// sample so that window and model still agree (both now lack it), and the
// error returned joins Add's error with the restore error.
//
// Learn copies x; the caller keeps ownership of it. It costs O(dim) plus one
// Remove and one Add of the model (one Remove and two Adds on the failure
// path), and does not allocate.
func (w *Window) Learn(x []float64, y float64) error {
	if err := w.check(x, y); err != nil {
		return err
	}
	if w.cap == 0 {
		_, err := w.m.Add(x, y)
		return err
	}
	if w.n < w.cap {
		id, err := w.m.Add(x, y)
		if err != nil {
			return err
		}
		w.push(x, y, id)
		return nil
	}

	// Full: forget the oldest, then learn the new sample in its slot.
	old := w.head
	ox, oy, ok := w.sample(old)
	if !ok {
		return fmt.Errorf("window: the model no longer holds the oldest sample (handle %d)", w.id(old))
	}
	if err := w.m.Remove(w.id(old)); err != nil {
		return fmt.Errorf("window: remove oldest sample (handle %d): %w", w.id(old), err)
	}
	id, err := w.m.Add(x, y)
	if err != nil {
		rid, rerr := w.m.Add(ox, oy)
		if rerr != nil {
			// The model has lost the oldest sample for good: drop it
			// from the window too, so that both hold the same samples.
			w.head = w.slot(1)
			w.n--
			if w.seq {
				w.base++
			}
			return errors.Join(err, fmt.Errorf("window: restore oldest sample after failed add: %w", rerr))
		}
		if w.seq {
			w.unseq() // the oldest sample now has the newest handle
		}
		w.ids[old] = rid
		return err
	}
	w.head = w.slot(1)
	w.n--
	if w.seq {
		w.base++
	}
	w.push(x, y, id)
	return nil
}

// push stores the sample (x, y), which the model holds under handle id, as
// the newest, in slot n. O(dim), or O(cap) when it leaves seq.
func (w *Window) push(x []float64, y float64, id uint64) {
	if w.seq {
		switch {
		case w.n == 0:
			w.base = id
		case id != w.base+uint64(w.n):
			w.unseq()
		}
	}
	w.store(w.slot(w.n), x, y, id)
	w.n++
}

// unseq makes the window store its handles: the model gave one out of
// sequence. It allocates the ring of handles once.
func (w *Window) unseq() {
	w.ids = make([]uint64, w.cap)
	for i := range w.n {
		w.ids[w.slot(i)] = w.base + uint64(i)
	}
	w.seq = false
}

// id returns the handle of the sample in slot s.
func (w *Window) id(s int) uint64 {
	if w.seq {
		i := s - w.head
		if i < 0 {
			i += w.cap
		}
		return w.base + uint64(i)
	}
	return w.ids[s]
}

// check validates a sample before anything is changed.
func (w *Window) check(x []float64, y float64) error {
	if len(x) != w.dim {
		return fmt.Errorf("%w: input has length %d, window expects %d", ErrBadInput, len(x), w.dim)
	}
	for i, v := range x {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("%w: x[%d] is %v", ErrBadInput, i, v)
		}
	}
	if math.IsNaN(y) || math.IsInf(y, 0) {
		return fmt.Errorf("%w: target is %v", ErrBadInput, y)
	}
	return nil
}

// slot returns the storage slot of the i-th oldest sample.
func (w *Window) slot(i int) int {
	s := w.head + i
	if s >= w.cap {
		s -= w.cap
	}
	return s
}

// sample returns the sample in slot s: a view into the window's storage, or
// over a Sampler the model's copy in w.buf (valid until the next call). ok
// is false if the model no longer holds it. O(1), or the cost of the
// model's Sample.
func (w *Window) sample(s int) (x []float64, y float64, ok bool) {
	if w.sm != nil {
		y, ok = w.sm.Sample(w.id(s), w.buf)
		return w.buf[:w.dim:w.dim], y, ok
	}
	return w.xs[s*w.dim : (s+1)*w.dim : (s+1)*w.dim], w.ys[s], true
}

func (w *Window) store(s int, x []float64, y float64, id uint64) {
	w.grow(s)
	if w.sm == nil {
		copy(w.xs[s*w.dim:(s+1)*w.dim], x)
		w.ys[s] = y
	}
	if !w.seq {
		w.ids[s] = id
	}
}

// Bytes returns the bytes the window's storage occupies (its buffers'
// capacities; the model's own storage not included).
func (w *Window) Bytes() int {
	return 8 * (cap(w.xs) + cap(w.ys) + cap(w.ids) + cap(w.buf))
}

// Len returns the number of samples the window holds: at most Cap, and
// always 0 when Cap is 0.
func (w *Window) Len() int { return w.n }

// Cap returns the window's capacity W in samples; 0 means no forgetting.
func (w *Window) Cap() int { return w.cap }

// Dim returns the length every input must have.
func (w *Window) Dim() int { return w.dim }

// Full reports whether the next Learn will first remove the oldest sample.
// It is always false when Cap is 0.
func (w *Window) Full() bool { return w.cap > 0 && w.n == w.cap }

// Oldest returns the model handle of the oldest sample the window holds, the
// one the next Learn removes when the window is full. ok is false when the
// window is empty.
func (w *Window) Oldest() (id uint64, ok bool) {
	if w.n == 0 {
		return 0, false
	}
	return w.id(w.head), true
}

// At returns the i-th sample the window holds, oldest first (0 ≤ i < Len):
// its input, target and model handle. It panics if i is out of range.
//
// x is a view into the window's storage: the caller must not modify it, and it
// is valid only until the next call to At, Samples or Learn. At costs O(1),
// or over a [Sampler] the model's Sample. It panics if the model no longer
// holds the sample (the model was changed behind the window's back).
func (w *Window) At(i int) (x []float64, y float64, id uint64) {
	if i < 0 || i >= w.n {
		panic(fmt.Sprintf("window: At(%d) out of range [0, %d)", i, w.n))
	}
	s := w.slot(i)
	x, y, ok := w.sample(s)
	if !ok {
		panic(fmt.Sprintf("window: the model no longer holds sample %d (handle %d)", i, w.id(s)))
	}
	return x, y, w.id(s)
}

// Samples calls yield for each sample the window holds, oldest to newest,
// until yield returns false. It is meant for writing checkpoints; see
// [Restore] for reading them back.
//
// x is a view into the window's storage (or, over a [Sampler], a buffer
// the next sample overwrites): yield must not modify or retain it and must
// not call Learn. Samples costs O(Len) (O(Len) Sample calls over a
// Sampler) and does not allocate. It panics as At does.
func (w *Window) Samples(yield func(x []float64, y float64, id uint64) bool) {
	for i := range w.n {
		if !yield(w.At(i)) {
			return
		}
	}
}

// Restore rebuilds a window from saved samples (inputs xs[i] and targets
// ys[i], oldest first) by adding them in order to m, which should be a fresh
// model. The returned window holds them, with the handles m gave, as if they
// had been learned one by one without forgetting.
//
// If there are more samples than capacity (capacity > 0), only the newest
// capacity samples are added. With capacity 0 every sample is added to m and
// the window holds none, as with [Window.Learn].
//
// Every sample to be added is validated before the first Add (errors wrap [ErrBadConfig]
// or [ErrBadInput] and name the sample). If an Add fails, Restore removes the
// samples it had added, newest first, and returns the error (joined with any
// removal errors); m is then as before the call. Restore copies the inputs; it
// costs the Adds plus O(len(xs)·dim) and allocates the window's storage.
func Restore(m Model, capacity, dim int, xs [][]float64, ys []float64) (*Window, error) {
	w, err := New(m, capacity, dim)
	if err != nil {
		return nil, err
	}
	if len(xs) != len(ys) {
		return nil, fmt.Errorf("%w: %d inputs but %d targets", ErrBadInput, len(xs), len(ys))
	}
	first := 0
	if capacity > 0 && len(xs) > capacity {
		first = len(xs) - capacity
	}
	for i := first; i < len(xs); i++ {
		if err := w.check(xs[i], ys[i]); err != nil {
			return nil, fmt.Errorf("window: restore sample %d: %w", i, err)
		}
	}
	added := make([]uint64, 0, len(xs)-first)
	for i := first; i < len(xs); i++ {
		id, err := m.Add(xs[i], ys[i])
		if err != nil {
			for j := len(added) - 1; j >= 0; j-- {
				if rerr := m.Remove(added[j]); rerr != nil {
					err = errors.Join(err, fmt.Errorf("window: roll back restore: remove handle %d: %w", added[j], rerr))
				}
			}
			return nil, fmt.Errorf("window: restore sample %d: %w", i, err)
		}
		added = append(added, id)
		if capacity > 0 {
			w.push(xs[i], ys[i], id)
		}
	}
	return w, nil
}
