package window

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// fakeModel is a Model that remembers the samples it holds and every call it
// gets, and fails on request. It follows the Model contract: a failed call
// leaves it unchanged. The real model, svr.AOSVR, is exercised with Window in
// package svr.
type fakeModel struct {
	dim   int
	next  uint64
	live  map[uint64]fakeSample
	calls []string // "add y", "remove id"

	failAdds    int // fail this many of the next Add calls
	failRemoves int // fail this many of the next Remove calls
}

type fakeSample struct {
	x []float64
	y float64
}

var (
	errAdd    = errors.New("fake: add failed")
	errRemove = errors.New("fake: remove failed")
	errUnseen = errors.New("fake: no such handle")
)

var _ Model = (*fakeModel)(nil)

func newFake(dim int) *fakeModel {
	return &fakeModel{dim: dim, live: map[uint64]fakeSample{}}
}

func (f *fakeModel) Add(x []float64, y float64) (uint64, error) {
	f.calls = append(f.calls, fmt.Sprintf("add %v", y))
	if f.failAdds > 0 {
		f.failAdds--
		return 0, errAdd
	}
	if len(x) != f.dim {
		return 0, fmt.Errorf("fake: len(x) = %d, want %d", len(x), f.dim)
	}
	f.next++
	f.live[f.next] = fakeSample{x: slices.Clone(x), y: y}
	return f.next, nil
}

func (f *fakeModel) Remove(id uint64) error {
	f.calls = append(f.calls, fmt.Sprintf("remove %d", id))
	if f.failRemoves > 0 {
		f.failRemoves--
		return errRemove
	}
	if _, ok := f.live[id]; !ok {
		return fmt.Errorf("%w: %d", errUnseen, id)
	}
	delete(f.live, id)
	return nil
}

// samplingFake is a fakeModel that is also a Sampler: a Window over it keeps
// only handles and reads samples back from it.
type samplingFake struct{ *fakeModel }

var _ Sampler = samplingFake{}

func (f samplingFake) Sample(id uint64, x []float64) (float64, bool) {
	s, ok := f.live[id]
	if !ok {
		return 0, false
	}
	copy(x, s.x)
	return s.y, true
}

// models returns the two ways a window keeps samples: itself (a plain
// Model) or through the model (a Sampler).
func models(dim int) map[string]struct {
	f *fakeModel
	m Model
} {
	a, b := newFake(dim), newFake(dim)
	return map[string]struct {
		f *fakeModel
		m Model
	}{"copies": {a, a}, "sampler": {b, samplingFake{b}}}
}

// sample returns a distinct sample number k of dimension dim.
func sample(k, dim int) ([]float64, float64) {
	x := make([]float64, dim)
	for j := range x {
		x[j] = float64(k) + float64(j)/10
	}
	return x, float64(k)
}

// agree checks that the window and the fake model hold the same samples, each
// under the handle the window stored, and that At and Samples agree.
func agree(t *testing.T, w *Window, f *fakeModel) {
	t.Helper()
	if w.Cap() > 0 && w.Len() != len(f.live) {
		t.Fatalf("window holds %d samples, model %d", w.Len(), len(f.live))
	}
	i := 0
	seen := map[uint64]bool{}
	w.Samples(func(x []float64, y float64, id uint64) bool {
		ax, ay, aid := w.At(i)
		if !slices.Equal(ax, x) || ay != y || aid != id {
			t.Fatalf("At(%d) = %v %v %d, Samples gave %v %v %d", i, ax, ay, aid, x, y, id)
		}
		s, ok := f.live[id]
		if !ok {
			t.Fatalf("sample %d: handle %d not held by the model", i, id)
		}
		if seen[id] {
			t.Fatalf("sample %d: handle %d stored twice", i, id)
		}
		seen[id] = true
		if !slices.Equal(s.x, x) || s.y != y {
			t.Fatalf("sample %d (handle %d): window has %v %v, model %v %v", i, id, x, y, s.x, s.y)
		}
		i++
		return true
	})
	if i != w.Len() {
		t.Fatalf("Samples yielded %d samples, Len is %d", i, w.Len())
	}
	if id, ok := w.Oldest(); ok != (w.Len() > 0) {
		t.Fatalf("Oldest ok = %v with Len %d", ok, w.Len())
	} else if ok {
		if _, _, want := w.At(0); id != want {
			t.Fatalf("Oldest = %d, At(0) has handle %d", id, want)
		}
	}
}

// targets returns the targets the window holds, oldest first.
func targets(w *Window) []float64 {
	var ys []float64
	w.Samples(func(_ []float64, y float64, _ uint64) bool {
		ys = append(ys, y)
		return true
	})
	return ys
}

func mustNew(t testing.TB, m Model, capacity, dim int) *Window {
	t.Helper()
	w, err := New(m, capacity, dim)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func TestNewBadConfig(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name          string
		m             Model
		capacity, dim int
		want          string
	}{
		{"nil model", nil, 3, 2, "model is nil"},
		{"negative capacity", newFake(2), -1, 2, "capacity is -1"},
		{"zero dim", newFake(2), 3, 0, "dim is 0"},
		{"negative dim", newFake(2), 3, -4, "dim is -4"},
		{"huge", newFake(2), 1 << 40, 2, "exceeds"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, err := New(tc.m, tc.capacity, tc.dim)
			if w != nil || !errors.Is(err, ErrBadConfig) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New = %v, %v; want nil and an ErrBadConfig naming %q", w, err, tc.want)
			}
		})
	}
}

func TestLearnForgetsOldestFirst(t *testing.T) {
	t.Parallel()
	const W, dim = 3, 2
	f := newFake(dim)
	w := mustNew(t, f, W, dim)
	for k := 1; k <= 8; k++ {
		f.calls = nil
		x, y := sample(k, dim)
		if err := w.Learn(x, y); err != nil {
			t.Fatalf("Learn %d: %v", k, err)
		}
		var want []string
		if k > W {
			// The fake hands out handles 1, 2, ..., so sample k-W has
			// handle k-W; it must leave before sample k arrives.
			want = append(want, fmt.Sprintf("remove %d", k-W))
		}
		want = append(want, fmt.Sprintf("add %d", k))
		if !slices.Equal(f.calls, want) {
			t.Fatalf("Learn %d: model calls %q, want %q", k, f.calls, want)
		}
		var wantYs []float64
		for j := max(1, k-W+1); j <= k; j++ {
			wantYs = append(wantYs, float64(j))
		}
		if got := targets(w); !slices.Equal(got, wantYs) {
			t.Fatalf("after Learn %d: window holds %v, want %v", k, got, wantYs)
		}
		if got, want := w.Full(), k >= W; got != want {
			t.Fatalf("after Learn %d: Full = %v", k, got)
		}
		agree(t, w, f)
	}
	if w.Len() != W || w.Cap() != W || w.Dim() != dim {
		t.Fatalf("Len, Cap, Dim = %d, %d, %d; want %d, %d, %d", w.Len(), w.Cap(), w.Dim(), W, W, dim)
	}
}

func TestLearnCapacityOne(t *testing.T) {
	t.Parallel()
	f := newFake(1)
	w := mustNew(t, f, 1, 1)
	for k := 1; k <= 4; k++ {
		f.calls = nil
		if err := w.Learn([]float64{float64(-k)}, float64(k)); err != nil {
			t.Fatal(err)
		}
		want := []string{fmt.Sprintf("add %d", k)}
		if k > 1 {
			want = append([]string{fmt.Sprintf("remove %d", k-1)}, want...)
		}
		if !slices.Equal(f.calls, want) {
			t.Fatalf("Learn %d: model calls %q, want %q", k, f.calls, want)
		}
		x, y, id := w.At(0)
		if w.Len() != 1 || x[0] != float64(-k) || y != float64(k) || id != uint64(k) {
			t.Fatalf("Learn %d: window holds %d samples, At(0) = %v %v %d", k, w.Len(), x, y, id)
		}
		agree(t, w, f)
	}
}

func TestLearnNoForgetting(t *testing.T) {
	t.Parallel()
	f := newFake(2)
	w := mustNew(t, f, 0, 2)
	for k := 1; k <= 50; k++ {
		x, y := sample(k, 2)
		if err := w.Learn(x, y); err != nil {
			t.Fatal(err)
		}
	}
	if len(f.live) != 50 {
		t.Fatalf("model holds %d samples, want all 50", len(f.live))
	}
	for _, c := range f.calls {
		if strings.HasPrefix(c, "remove") {
			t.Fatalf("window with capacity 0 called %s", c)
		}
	}
	if w.Len() != 0 || w.Cap() != 0 || w.Full() {
		t.Fatalf("Len, Cap, Full = %d, %d, %v; want 0, 0, false", w.Len(), w.Cap(), w.Full())
	}
	if _, ok := w.Oldest(); ok {
		t.Fatal("Oldest ok with capacity 0")
	}
	w.Samples(func([]float64, float64, uint64) bool {
		t.Fatal("Samples yielded a sample with capacity 0")
		return false
	})
	// Bad input is still rejected before the model sees it, and a model
	// error is passed through.
	f.calls = nil
	if err := w.Learn([]float64{1}, 1); !errors.Is(err, ErrBadInput) || len(f.calls) != 0 {
		t.Fatalf("short input: err %v, model calls %q", err, f.calls)
	}
	f.failAdds = 1
	if err := w.Learn([]float64{1, 2}, 1); !errors.Is(err, errAdd) {
		t.Fatalf("failing Add: err %v, want %v", err, errAdd)
	}
}

// fill learns samples 1..n into w.
func fill(t *testing.T, w *Window, n int) {
	t.Helper()
	for k := 1; k <= n; k++ {
		x, y := sample(k, w.Dim())
		if err := w.Learn(x, y); err != nil {
			t.Fatalf("Learn %d: %v", k, err)
		}
	}
}

func TestLearnAddFailureRestoresOldest(t *testing.T) {
	t.Parallel()
	for name, fm := range models(2) {
		t.Run(name, func(t *testing.T) { testAddFailureRestoresOldest(t, fm.f, fm.m) })
	}
}

func testAddFailureRestoresOldest(t *testing.T, f *fakeModel, m Model) {
	w := mustNew(t, m, 3, 2)
	fill(t, w, 4) // holds 2, 3, 4 under handles 2, 3, 4
	f.calls = nil
	f.failAdds = 1
	x, y := sample(5, 2)
	err := w.Learn(x, y)
	if err != errAdd {
		t.Fatalf("Learn = %v, want Add's error %v unwrapped", err, errAdd)
	}
	// Remove the oldest, fail to add 5, add 2 back (handle 5).
	if want := []string{"remove 2", "add 5", "add 2"}; !slices.Equal(f.calls, want) {
		t.Fatalf("model calls %q, want %q", f.calls, want)
	}
	if got := targets(w); !slices.Equal(got, []float64{2, 3, 4}) {
		t.Fatalf("window holds %v after failed Learn, want [2 3 4]", got)
	}
	if id, _ := w.Oldest(); id != 5 {
		t.Fatalf("Oldest = %d, want the restored sample's new handle 5", id)
	}
	agree(t, w, f)

	// The restored sample is still the oldest: it leaves first, although the
	// model saw it last.
	f.calls = nil
	if err := w.Learn(x, y); err != nil {
		t.Fatal(err)
	}
	if want := []string{"remove 5", "add 5"}; !slices.Equal(f.calls, want) {
		t.Fatalf("model calls %q, want %q", f.calls, want)
	}
	if got := targets(w); !slices.Equal(got, []float64{3, 4, 5}) {
		t.Fatalf("window holds %v, want [3 4 5]", got)
	}
	agree(t, w, f)
}

func TestLearnRestoreFailure(t *testing.T) {
	t.Parallel()
	for name, fm := range models(2) {
		t.Run(name, func(t *testing.T) { testRestoreFailure(t, fm.f, fm.m) })
	}
}

func testRestoreFailure(t *testing.T, f *fakeModel, m Model) {
	w := mustNew(t, m, 3, 2)
	fill(t, w, 3)
	f.failAdds = 2 // the new sample and the restore of the oldest
	x, y := sample(4, 2)
	err := w.Learn(x, y)
	if !errors.Is(err, errAdd) || !strings.Contains(err.Error(), "restore oldest sample") {
		t.Fatalf("Learn = %v, want Add's error joined with a restore error", err)
	}
	if got := targets(w); !slices.Equal(got, []float64{2, 3}) {
		t.Fatalf("window holds %v, want [2 3]: the oldest is lost from the model and must leave the window", got)
	}
	agree(t, w, f)
	// The window is no longer full: the next Learn only adds.
	f.calls = nil
	if err := w.Learn(x, y); err != nil {
		t.Fatal(err)
	}
	if want := []string{"add 4"}; !slices.Equal(f.calls, want) {
		t.Fatalf("model calls %q, want %q", f.calls, want)
	}
	agree(t, w, f)
}

func TestLearnRemoveFailure(t *testing.T) {
	t.Parallel()
	f := newFake(2)
	w := mustNew(t, f, 3, 2)
	fill(t, w, 3)
	f.calls = nil
	f.failRemoves = 1
	x, y := sample(4, 2)
	err := w.Learn(x, y)
	if !errors.Is(err, errRemove) || !strings.Contains(err.Error(), "handle 1") {
		t.Fatalf("Learn = %v, want a wrapped %v naming handle 1", err, errRemove)
	}
	if want := []string{"remove 1"}; !slices.Equal(f.calls, want) {
		t.Fatalf("model calls %q, want %q: nothing may be added after a failed remove", f.calls, want)
	}
	if got := targets(w); !slices.Equal(got, []float64{1, 2, 3}) {
		t.Fatalf("window holds %v, want [1 2 3]", got)
	}
	agree(t, w, f)
}

func TestLearnAddFailureNotFull(t *testing.T) {
	t.Parallel()
	f := newFake(1)
	w := mustNew(t, f, 3, 1)
	fill(t, w, 1)
	f.failAdds = 1
	if err := w.Learn([]float64{2}, 2); err != errAdd {
		t.Fatalf("Learn = %v, want %v", err, errAdd)
	}
	if got := targets(w); !slices.Equal(got, []float64{1}) {
		t.Fatalf("window holds %v, want [1]", got)
	}
	agree(t, w, f)
}

func TestLearnBadInput(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		x    []float64
		y    float64
		want string
	}{
		{"short", []float64{1, 2}, 0, "length 2, window expects 3"},
		{"long", []float64{1, 2, 3, 4}, 0, "length 4, window expects 3"},
		{"nil", nil, 0, "length 0, window expects 3"},
		{"NaN in x", []float64{1, math.NaN(), 3}, 0, "x[1] is NaN"},
		{"Inf in x", []float64{1, 2, math.Inf(-1)}, 0, "x[2] is -Inf"},
		{"NaN target", []float64{1, 2, 3}, math.NaN(), "target is NaN"},
		{"Inf target", []float64{1, 2, 3}, math.Inf(1), "target is +Inf"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFake(3)
			w := mustNew(t, f, 2, 3)
			fill(t, w, 2) // full: a Learn would start with a Remove
			f.calls = nil
			err := w.Learn(tc.x, tc.y)
			if !errors.Is(err, ErrBadInput) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Learn = %v, want an ErrBadInput saying %q", err, tc.want)
			}
			if len(f.calls) != 0 {
				t.Fatalf("model calls %q for bad input, want none", f.calls)
			}
			if got := targets(w); !slices.Equal(got, []float64{1, 2}) {
				t.Fatalf("window holds %v, want [1 2]", got)
			}
		})
	}
}

func TestLearnCopiesInput(t *testing.T) {
	t.Parallel()
	f := newFake(2)
	w := mustNew(t, f, 2, 2)
	x := []float64{1, 2}
	if err := w.Learn(x, 3); err != nil {
		t.Fatal(err)
	}
	x[0] = 99
	if got, _, _ := w.At(0); !slices.Equal(got, []float64{1, 2}) {
		t.Fatalf("window input changed with the caller's slice: %v", got)
	}
}

// TestLearnRandomAgainstReference drives windows of several sizes with random
// samples and random model failures, and after every step compares the
// window with a plain slice of the samples it should hold.
func TestLearnRandomAgainstReference(t *testing.T) {
	t.Parallel()
	for _, W := range []int{1, 2, 5, 17} {
		for _, dim := range []int{1, 3} {
			for name, fm := range models(dim) {
				t.Run(fmt.Sprintf("W=%d/dim=%d/%s", W, dim, name), func(t *testing.T) {
					t.Parallel()
					rng := rand.New(rand.NewPCG(uint64(W), uint64(dim)))
					f := fm.f
					w := mustNew(t, fm.m, W, dim)
					var ref []float64 // targets the window should hold, oldest first
					for step := range 400 {
						x := make([]float64, dim)
						for j := range x {
							x[j] = rng.NormFloat64()
						}
						y := float64(step)
						full := len(ref) == W
						switch r := rng.IntN(20); {
						case r == 0:
							f.failRemoves = 1
						case r == 1:
							f.failAdds = 1
						case r == 2:
							f.failAdds = 2
						}
						failRemove, failAdds := f.failRemoves, f.failAdds
						err := w.Learn(x, y)
						switch {
						case full && failRemove > 0:
							// Nothing changes.
						case failAdds == 0:
							ref = append(ref, y)
							if full {
								ref = ref[1:]
							}
						case full && failAdds == 2:
							ref = ref[1:] // the oldest could not be restored
						}
						if (err != nil) != (failRemove > 0 && full || failAdds > 0) {
							t.Fatalf("step %d: Learn = %v with %d remove and %d add failures (full %v)", step, err, failRemove, failAdds, full)
						}
						f.failAdds, f.failRemoves = 0, 0
						if got := targets(w); !slices.Equal(got, ref) {
							t.Fatalf("step %d: window holds %v, want %v", step, got, ref)
						}
						agree(t, w, f)
					}
					// Storage grew to the capacity, not beyond, and holds
					// the inputs only when the model cannot give them back.
					if len(w.ids) != W || cap(w.ids) != W || (w.xs == nil) != (name == "sampler") || (w.xs != nil && cap(w.xs) != W*dim) {
						t.Fatalf("window over a %s model: %d handles (capacity %d), %d inputs stored", name, len(w.ids), cap(w.ids), cap(w.xs))
					}
				})
			}
		}
	}
}

func TestAtOutOfRange(t *testing.T) {
	t.Parallel()
	w := mustNew(t, newFake(1), 3, 1)
	fill(t, w, 2)
	for _, i := range []int{-1, 2, 3} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("At(%d) with Len 2 did not panic", i)
				}
			}()
			w.At(i)
		}()
	}
}

func TestSamplesStops(t *testing.T) {
	t.Parallel()
	w := mustNew(t, newFake(1), 5, 1)
	fill(t, w, 5)
	n := 0
	w.Samples(func([]float64, float64, uint64) bool {
		n++
		return n < 2
	})
	if n != 2 {
		t.Fatalf("Samples called yield %d times after it returned false on the 2nd, want 2", n)
	}
}

// save returns the window's samples, as a checkpoint would hold them.
func save(w *Window) (xs [][]float64, ys []float64) {
	w.Samples(func(x []float64, y float64, _ uint64) bool {
		xs = append(xs, slices.Clone(x))
		ys = append(ys, y)
		return true
	})
	return xs, ys
}

func TestRestore(t *testing.T) {
	t.Parallel()
	const W, dim = 4, 2
	f1 := newFake(dim)
	w1 := mustNew(t, f1, W, dim)
	fill(t, w1, 6)
	xs, ys := save(w1)

	f2 := newFake(dim)
	w2, err := Restore(f2, W, dim, xs, ys)
	if err != nil {
		t.Fatal(err)
	}
	agree(t, w2, f2)
	if got := targets(w2); !slices.Equal(got, []float64{3, 4, 5, 6}) {
		t.Fatalf("restored window holds %v, want [3 4 5 6]", got)
	}
	// Both windows go on identically: same samples, same removal order.
	for k := 7; k <= 12; k++ {
		x, y := sample(k, dim)
		if err := w1.Learn(x, y); err != nil {
			t.Fatal(err)
		}
		if err := w2.Learn(x, y); err != nil {
			t.Fatal(err)
		}
		a, b := targets(w1), targets(w2)
		if !slices.Equal(a, b) {
			t.Fatalf("after sample %d: original holds %v, restored %v", k, a, b)
		}
		for i := range w1.Len() {
			x1, _, _ := w1.At(i)
			x2, _, _ := w2.At(i)
			if !slices.Equal(x1, x2) {
				t.Fatalf("after sample %d: At(%d) inputs %v and %v", k, i, x1, x2)
			}
		}
		agree(t, w2, f2)
	}
}

func TestRestoreMoreThanCapacity(t *testing.T) {
	t.Parallel()
	xs := [][]float64{{1}, {2}, {3}, {4}, {5}}
	ys := []float64{1, 2, 3, 4, 5}
	f := newFake(1)
	w, err := Restore(f, 2, 1, xs, ys)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"add 4", "add 5"}; !slices.Equal(f.calls, want) {
		t.Fatalf("model calls %q, want %q: only the newest Cap samples", f.calls, want)
	}
	if got := targets(w); !slices.Equal(got, []float64{4, 5}) {
		t.Fatalf("window holds %v, want [4 5]", got)
	}
	agree(t, w, f)

	f0 := newFake(1)
	w0, err := Restore(f0, 0, 1, xs, ys)
	if err != nil {
		t.Fatal(err)
	}
	if w0.Len() != 0 || len(f0.live) != 5 {
		t.Fatalf("capacity 0: window holds %d, model %d; want 0 and 5", w0.Len(), len(f0.live))
	}
}

func TestRestoreErrors(t *testing.T) {
	t.Parallel()
	good := [][]float64{{1, 1}, {2, 2}, {3, 3}}
	for _, tc := range []struct {
		name     string
		capacity int
		xs       [][]float64
		ys       []float64
		want     error
		wantMsg  string
	}{
		{"count mismatch", 3, good, []float64{1, 2}, ErrBadInput, "3 inputs but 2 targets"},
		{"short row", 3, [][]float64{{1, 1}, {2}, {3, 3}}, []float64{1, 2, 3}, ErrBadInput, "sample 1"},
		{"NaN target", 3, good, []float64{1, 2, math.NaN()}, ErrBadInput, "sample 2"},
		{"bad config", -1, good, []float64{1, 2, 3}, ErrBadConfig, "capacity is -1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(2)
			w, err := Restore(f, tc.capacity, 2, tc.xs, tc.ys)
			if w != nil || !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.wantMsg) {
				t.Fatalf("Restore = %v, %v; want nil and %v saying %q", w, err, tc.want, tc.wantMsg)
			}
			if len(f.calls) != 0 {
				t.Fatalf("model calls %q for bad input, want none", f.calls)
			}
		})
	}
}

// failingOn fails the n-th Add call.
type failingOn struct {
	*fakeModel
	n, adds int
}

func (f *failingOn) Add(x []float64, y float64) (uint64, error) {
	f.adds++
	if f.adds == f.n {
		f.failAdds = 1
	}
	return f.fakeModel.Add(x, y)
}

func TestRestoreRollsBack(t *testing.T) {
	t.Parallel()
	for _, capacity := range []int{0, 5} {
		t.Run(fmt.Sprint("capacity=", capacity), func(t *testing.T) {
			t.Parallel()
			f := &failingOn{fakeModel: newFake(1), n: 3}
			xs := [][]float64{{1}, {2}, {3}, {4}}
			w, err := Restore(f, capacity, 1, xs, []float64{1, 2, 3, 4})
			if w != nil || !errors.Is(err, errAdd) || !strings.Contains(err.Error(), "sample 2") {
				t.Fatalf("Restore = %v, %v; want nil and %v naming sample 2", w, err, errAdd)
			}
			if want := []string{"add 1", "add 2", "add 3", "remove 2", "remove 1"}; !slices.Equal(f.calls, want) {
				t.Fatalf("model calls %q, want %q", f.calls, want)
			}
			if len(f.live) != 0 {
				t.Fatalf("model holds %d samples after a failed Restore, want 0", len(f.live))
			}
		})
	}
}

// countingModel hands out handles 1, 2, ... and insists that they are
// removed in the same order. It does not allocate.
type countingModel struct {
	next, nextRemove uint64
}

func (m *countingModel) Add([]float64, float64) (uint64, error) {
	m.next++
	return m.next, nil
}

var errOrder = errors.New("counting: removal out of order")

func (m *countingModel) Remove(id uint64) error {
	if id != m.nextRemove+1 {
		return errOrder
	}
	m.nextRemove++
	return nil
}

func TestLearnZeroAllocs(t *testing.T) {
	for _, W := range []int{0, 1, 64} {
		t.Run(fmt.Sprint("W=", W), func(t *testing.T) {
			m := &countingModel{}
			w := mustNew(t, m, W, 5)
			x := make([]float64, 5)
			for range W + 1 { // warm: full
				if err := w.Learn(x, 1); err != nil {
					t.Fatal(err)
				}
			}
			var err error
			allocs := testing.AllocsPerRun(1000, func() {
				x[0]++
				if e := w.Learn(x, x[0]); e != nil {
					err = e
				}
			})
			if err != nil {
				t.Fatal(err)
			}
			if allocs != 0 {
				t.Fatalf("Learn allocates %v times per call, want 0", allocs)
			}
			if W > 0 && m.nextRemove != m.next-uint64(W) {
				t.Fatalf("model holds %d samples, want %d", m.next-m.nextRemove, W)
			}
		})
	}
}

func BenchmarkLearn(b *testing.B) {
	for _, W := range []int{16, 256, 4096} {
		b.Run(fmt.Sprint("W=", W), func(b *testing.B) {
			m := &countingModel{}
			w := mustNew(b, m, W, 5)
			x := make([]float64, 5)
			b.ReportAllocs()
			for b.Loop() {
				x[0]++
				if err := w.Learn(x, x[0]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// orderedFake is a samplingFake that is also Ordered: a Window over it
// stores no handles while they come in sequence.
type orderedFake struct{ samplingFake }

var _ Ordered = orderedFake{}

func (f orderedFake) Oldest() (uint64, bool) {
	var old uint64
	ok := false
	for id := range f.live {
		if !ok || id < old {
			old, ok = id, true
		}
	}
	return old, ok
}

// TestLearnSequential: a window over a Sampler that is Ordered stores no
// handles while the model gives them in sequence; a failed Add, after
// which the oldest sample is learnt again under a new handle, makes it
// store them, and it goes on agreeing with the model.
func TestLearnSequential(t *testing.T) {
	t.Parallel()
	f := newFake(2)
	w := mustNew(t, orderedFake{samplingFake{f}}, 3, 2)
	fill(t, w, 5) // holds 3, 4, 5 under handles 3, 4, 5
	if w.xs != nil || w.ys != nil || w.ids != nil {
		t.Fatal("a window over an Ordered Sampler giving handles in sequence stores inputs or handles")
	}
	if got := targets(w); !slices.Equal(got, []float64{3, 4, 5}) {
		t.Fatalf("window holds %v, want [3 4 5]", got)
	}
	agree(t, w, f)
	f.calls = nil
	f.failAdds = 1
	x, y := sample(6, 2)
	if err := w.Learn(x, y); err != errAdd {
		t.Fatalf("Learn = %v, want Add's error %v", err, errAdd)
	}
	if want := []string{"remove 3", "add 6", "add 3"}; !slices.Equal(f.calls, want) {
		t.Fatalf("model calls %q, want %q", f.calls, want)
	}
	if w.ids == nil {
		t.Fatal("a handle out of sequence not stored")
	}
	if got := targets(w); !slices.Equal(got, []float64{3, 4, 5}) {
		t.Fatalf("window holds %v after failed Learn, want [3 4 5]", got)
	}
	agree(t, w, f)
	for k := 6; k <= 8; k++ {
		x, y := sample(k, 2)
		if err := w.Learn(x, y); err != nil {
			t.Fatal(err)
		}
		if got, want := targets(w), []float64{float64(k - 2), float64(k - 1), float64(k)}; !slices.Equal(got, want) {
			t.Fatalf("window holds %v, want %v", got, want)
		}
		agree(t, w, f)
	}

	// The oldest dropped when it cannot be learnt again: still in
	// sequence.
	g := newFake(2)
	v := mustNew(t, orderedFake{samplingFake{g}}, 3, 2)
	fill(t, v, 3)
	g.failAdds = 2
	if err := v.Learn(x, y); err == nil {
		t.Fatal("Learn succeeded with Add failing twice")
	}
	if v.ids != nil {
		t.Fatal("handles stored though still in sequence")
	}
	if got := targets(v); !slices.Equal(got, []float64{2, 3}) {
		t.Fatalf("window holds %v, want [2 3]", got)
	}
	agree(t, v, g)
	x, y = sample(9, 2)
	if err := v.Learn(x, y); err != nil {
		t.Fatal(err)
	}
	if got := targets(v); !slices.Equal(got, []float64{2, 3, 9}) {
		t.Fatalf("window holds %v, want [2 3 9]", got)
	}
	agree(t, v, g)
}
