package svr

import (
	"math"
	"math/rand/v2"
	"runtime"
	"testing"
)

func liveHeap() uint64 {
	var ms runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// TestAOSVRMemoryParts checks that MemoryParts (and so StateBytes) accounts
// for the heap a model holds: the collector frees about their sum when the
// models are dropped (allocation size classes round up by up to 1/8).
func TestAOSVRMemoryParts(t *testing.T) {
	if testing.Short() {
		t.Skip("measures the heap of 100 models")
	}
	const n, d, w = 100, 13, 100
	r := rand.New(rand.NewPCG(3, 4))
	ms := make([]*AOSVR, n)
	h0 := liveHeap()
	x := make([]float64, d)
	for k := range ms {
		m, err := NewAOSVR(AOSVRConfig{Dim: d, Kernel: RBF{Gamma: 0.01}, C: 3, Epsilon: 0.6, Capacity: w})
		if err != nil {
			t.Fatal(err)
		}
		for i := range 2 * w {
			for j := range x {
				x[j] = r.NormFloat64()
			}
			if i >= w {
				if err := m.ForgetOldest(); err != nil {
					t.Fatal(err)
				}
			}
			if err := m.Learn(x, math.Sin(x[0])+r.NormFloat64()); err != nil {
				t.Fatal(err)
			}
		}
		ms[k] = m
	}
	h1 := liveHeap()
	var parts float64
	for _, m := range ms {
		parts += float64(m.StateBytes())
	}
	parts /= n
	clear(ms)
	h2 := liveHeap()
	freed := (float64(h1) - float64(h2)) / n
	held := (float64(h1) - float64(h0)) / n
	t.Logf("per model: parts %.0f B, freed %.0f B, held %.0f B", parts, freed, held)
	if !(freed >= parts && freed <= 1.15*parts) {
		t.Fatalf("MemoryParts add up to %.0f B per model, dropping a model frees %.0f B", parts, freed)
	}
}

// TestAOSVRLendsScratch: a model at its capacity holds no scratch column
// (kc, γ) and no spare column between calls, a young one keeps its own;
// and lending changes nothing: two models fed the same samples, one of
// them made to keep its scratch (as before lending) by a window it never
// reaches, give the same predictions bit for bit.
func TestAOSVRLendsScratch(t *testing.T) {
	const d, w = 5, 40
	r := rand.New(rand.NewPCG(5, 6))
	cfg := AOSVRConfig{Dim: d, Kernel: RBF{Gamma: 0.2}, C: 3, Epsilon: 0.1, Capacity: w}
	lend, err := NewAOSVR(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Capacity = 10 * w // never reached: the model stays young and keeps its columns
	keep, err := NewAOSVR(cfg)
	if err != nil {
		t.Fatal(err)
	}
	x := make([]float64, d)
	for i := range 6 * w {
		for j := range x {
			x[j] = r.NormFloat64()
		}
		y := math.Sin(x[0]) + 0.1*r.NormFloat64()
		for _, m := range []*AOSVR{lend, keep} {
			if i >= w {
				if err := m.ForgetOldest(); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := m.Add(x, y); err != nil {
				t.Fatal(err)
			}
		}
		pl, _ := lend.Predict(x)
		pk, _ := keep.Predict(x)
		if math.Float64bits(pl) != math.Float64bits(pk) {
			t.Fatalf("sample %d: prediction %v lending, %v keeping", i, pl, pk)
		}
		warm := len(lend.y) >= w
		if held := lend.kc != nil || lend.gam != nil || len(lend.pool) > 0; held == warm {
			t.Fatalf("sample %d (capacity %d of %d): holds scratch %v, spare columns %d", i, len(lend.y), w, lend.kc != nil, len(lend.pool))
		}
		if keep.kc == nil || keep.gam == nil {
			t.Fatalf("sample %d: a young model gave its scratch away", i)
		}
	}
	if v := lend.MaxKKTViolation(); v > 1e-9 {
		t.Errorf("KKT violation %v after lending", v)
	}
}

// TestAOSVRKeepsScratchWhenPoolFull: when the shared column pool is full
// (of columns of other lengths, say), a model at its capacity keeps its
// two scratch columns instead of dropping them, so that its next calls do
// not allocate them again.
func TestAOSVRKeepsScratchWhenPoolFull(t *testing.T) {
	const d, w = 4, 30
	m, err := NewAOSVR(AOSVRConfig{Dim: d, Kernel: RBF{Gamma: 0.3}, C: 3, Epsilon: 0.05, Capacity: w})
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(7, 8))
	x := make([]float64, d)
	learn := func() {
		for j := range x {
			x[j] = r.NormFloat64()
		}
		if m.Len() == w {
			if err := m.ForgetOldest(); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := m.Add(x, math.Cos(x[1])); err != nil {
			t.Fatal(err)
		}
	}
	for range 3 * w {
		learn()
	}
	// Fill the pool with columns of another length, then restore it.
	processPools.column.mu.Lock()
	savedK, saved, savedN := processPools.column.keys, processPools.column.lists, processPools.column.n
	processPools.column.keys, processPools.column.lists, processPools.column.n = []int{w + 1}, [][][]float64{make([][]float64, processPools.column.max)}, processPools.column.max
	processPools.column.mu.Unlock()
	t.Cleanup(func() {
		processPools.column.mu.Lock()
		processPools.column.keys, processPools.column.lists, processPools.column.n = savedK, saved, savedN
		processPools.column.mu.Unlock()
	})
	learn() // takes its scratch from the model's own (none) or allocates, then keeps it
	if len(m.pool) != 2 {
		t.Fatalf("with the pool full the model holds %d spare columns, want its 2 scratch columns", len(m.pool))
	}
	allocs := testing.AllocsPerRun(20, learn)
	if allocs > 0.5 {
		t.Errorf("%.1f allocations per call with the pool full", allocs)
	}
}

// TestAOSVRKeepColumns: a model that keeps its margin set's kernel columns
// between calls holds them (and lends nothing), even with no column cache,
// and gives the same predictions bit for bit as one that lends them.
func TestAOSVRKeepColumns(t *testing.T) {
	const d, w = 5, 40
	defer SetColumnCache(ColumnCache().Limit)
	SetColumnCache(0)
	r := rand.New(rand.NewPCG(9, 10))
	cfg := AOSVRConfig{Dim: d, Kernel: RBF{Gamma: 0.2}, C: 3, Epsilon: 0.1, Capacity: w}
	lend, err := NewAOSVR(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cfg.KeepColumns = true
	keep, err := NewAOSVR(cfg)
	if err != nil {
		t.Fatal(err)
	}
	x := make([]float64, d)
	for i := range 6 * w {
		for j := range x {
			x[j] = r.NormFloat64()
		}
		y := math.Sin(x[0]) + 0.1*r.NormFloat64()
		for _, m := range []*AOSVR{lend, keep} {
			if i >= w {
				old, _ := m.Oldest()
				if _, err := m.Replace(old, x, y); err != nil {
					t.Fatal(err)
				}
			} else if _, err := m.Add(x, y); err != nil {
				t.Fatal(err)
			}
		}
		pl, _ := lend.Predict(x)
		pk, _ := keep.Predict(x)
		if math.Float64bits(pl) != math.Float64bits(pk) {
			t.Fatalf("sample %d: prediction %v lending, %v keeping", i, pl, pk)
		}
		if i >= w && len(keep.s) > 0 && len(keep.cols) != len(keep.s) {
			t.Fatalf("sample %d: keeps %d columns for |S| = %d", i, len(keep.cols), len(keep.s))
		}
		if i >= w && len(lend.cols) != 0 {
			t.Fatalf("sample %d: a lending model holds %d columns", i, len(lend.cols))
		}
	}
}
