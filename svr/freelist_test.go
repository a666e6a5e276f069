package svr

import (
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
)

func TestFreeListBoundAndKeys(t *testing.T) {
	f := freeList[[]float64]{max: 3}
	if n := f.put(2, make([]float64, 2), make([]float64, 2)); n != 2 {
		t.Fatalf("put kept %d of 2 with room for 3", n)
	}
	if n := f.put(5, make([]float64, 5), make([]float64, 5)); n != 1 { // one fits
		t.Fatalf("put kept %d of 2 with room for 1", n)
	}
	if f.n != 3 {
		t.Fatalf("holds %d buffers, want 3 (the bound)", f.n)
	}
	if _, ok := f.get(7); ok {
		t.Fatal("get(7) found a buffer of a key never put")
	}
	for _, k := range []int{5, 2, 2} {
		b, ok := f.get(k)
		if !ok || len(b) != k {
			t.Fatalf("get(%d) = buffer of length %d, %v", k, len(b), ok)
		}
	}
	if _, ok := f.get(2); ok || f.n != 0 {
		t.Fatalf("after taking all: n = %d", f.n)
	}
}

// TestAOSVRSharedPoolsConcurrent runs models in several goroutines at once,
// sharing the process's column and undo pools, and checks that each model's
// predictions equal, bit for bit, those of the same model run alone: the
// pools lend buffers, never state. Run it with -race.
func TestAOSVRSharedPoolsConcurrent(t *testing.T) {
	const d, w, steps, workers = 6, 40, 400, 4
	run := func(seed uint64) []float64 {
		r := rand.New(rand.NewPCG(seed, 7))
		m, err := NewAOSVR(AOSVRConfig{Dim: d, Kernel: RBF{Gamma: 0.5}, C: 3, Epsilon: 0.1, Capacity: w})
		if err != nil {
			t.Error(err)
			return nil
		}
		x := make([]float64, d)
		var out []float64
		for i := range steps {
			for j := range x {
				x[j] = r.NormFloat64()
			}
			if i >= w {
				if err := m.ForgetOldest(); err != nil {
					t.Error(err)
					return nil
				}
			}
			if err := m.Learn(x, math.Sin(3*x[0])+0.3*r.NormFloat64()); err != nil {
				t.Error(err)
				return nil
			}
			p, _ := m.Predict(x)
			out = append(out, p)
		}
		return out
	}
	want := make([][]float64, workers)
	for k := range want {
		want[k] = run(uint64(k))
	}
	got := make([][]float64, workers)
	var wg sync.WaitGroup
	for k := range got {
		wg.Go(func() { got[k] = run(uint64(k)) })
	}
	wg.Wait()
	for k := range got {
		for i := range want[k] {
			if math.Float64bits(got[k][i]) != math.Float64bits(want[k][i]) {
				t.Fatalf("model %d, step %d: %v concurrently, %v alone", k, i, got[k][i], want[k][i])
			}
		}
	}
}

// TestClassLen checks the size classes against the allocator's own
// rounding (slices.Grow): every small length, and large ones in pages.
func TestClassLen(t *testing.T) {
	check := func(n int) {
		if got, want := classLen(n), cap(slices.Grow([]float64(nil), n)); got != want {
			t.Fatalf("classLen(%d) = %d, the allocator gives %d", n, got, want)
		}
	}
	for n := 1; n <= maxSmallLen+pageLen+1; n++ {
		check(n)
	}
	for n := maxSmallLen; n < 200_000; n += 4099 {
		check(n)
	}
	if classLen(0) != 0 || allocBytes(0) != 0 {
		t.Fatal("nothing should take no memory")
	}
}

// TestAOSVRRInItsClass steps a model through a random sequence with a
// forgetting window and checks after every call that R's buffer is as
// long as its size class (what the allocator gives it anyway), so that
// S can grow and shrink within it without a new buffer.
func TestAOSVRRInItsClass(t *testing.T) {
	const d, w = 4, 60
	r := rand.New(rand.NewPCG(3, 9))
	m, err := NewAOSVR(AOSVRConfig{Dim: d, Kernel: RBF{Gamma: 0.5}, C: 3, Epsilon: 0.05, Capacity: w})
	if err != nil {
		t.Fatal(err)
	}
	x := make([]float64, d)
	moved := 0
	for i := range 600 {
		for j := range x {
			x[j] = r.NormFloat64()
		}
		if i >= w {
			if err := m.ForgetOldest(); err != nil {
				t.Fatal(err)
			}
		}
		before := cap(m.r)
		if err := m.Learn(x, math.Sin(3*x[0])+0.3*r.NormFloat64()); err != nil {
			t.Fatal(err)
		}
		if l := len(m.s); l > 0 && cap(m.r) != classLen((l+1)*(l+1)) {
			t.Fatalf("step %d: |S| = %d, R's buffer holds %d values, its class %d", i, l, cap(m.r), classLen((l+1)*(l+1)))
		}
		if cap(m.r) != before {
			moved++
		}
	}
	if moved == 0 {
		t.Fatal("R never changed buffers: the sequence did not move S across classes")
	}
}
