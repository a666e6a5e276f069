package svr

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"
	"time"
)

// slideModel learns n samples of r through a sliding window of w by
// Replace, from a fresh model of cfg.
func slideModel(t *testing.T, cfg AOSVRConfig, r *rand.Rand, n, w int) *AOSVR {
	t.Helper()
	m, err := slid(cfg, r, n, w)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// slid is slideModel without a *testing.T, for other goroutines.
func slid(cfg AOSVRConfig, r *rand.Rand, n, w int) (*AOSVR, error) {
	m, err := NewAOSVR(cfg)
	if err != nil {
		return nil, err
	}
	x := make([]float64, cfg.Dim)
	for i := range n {
		for j := range x {
			x[j] = r.NormFloat64()
		}
		y := math.Sin(2*x[0]) + 0.1*r.NormFloat64()
		if i >= w {
			old, _ := m.Oldest()
			if _, err := m.Replace(old, x, y); err != nil {
				return nil, err
			}
		} else if _, err := m.Add(x, y); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// TestAOSVRCacheImport: a model that keeps its columns in the cache and
// then imports another model's state goes on bit for bit as the model it
// imported, under the same charge.
func TestAOSVRCacheImport(t *testing.T) {
	const d, w = 3, 30
	cfg := AOSVRConfig{Dim: d, Kernel: RBF{Gamma: 0.5}, C: 3, Epsilon: 0.05, Capacity: w}
	a := slideModel(t, cfg, rand.New(rand.NewPCG(11, 12)), 3*w, w)
	b := slideModel(t, cfg, rand.New(rand.NewPCG(13, 14)), 3*w, w)
	if a.charge == nil || *a.charge == 0 {
		t.Fatal("a warm model keeps no columns in the cache")
	}
	charge := a.charge
	if err := a.Import(b.Export()); err != nil {
		t.Fatal(err)
	}
	if a.charge != charge {
		t.Fatal("import changed the model's charge")
	}
	r := rand.New(rand.NewPCG(15, 16))
	probes := randomSeq(r, 8, d).x
	x := make([]float64, d)
	for i := range 2 * w {
		for j := range x {
			x[j] = r.NormFloat64()
		}
		y := math.Cos(x[1])
		for _, m := range []*AOSVR{a, b} {
			old, _ := m.Oldest()
			if _, err := m.Replace(old, x, y); err != nil {
				t.Fatal(err)
			}
		}
		sameState(t, a, stateOf(b, probes), probes, fmt.Sprintf("step %d after import", i))
	}
}

// TestAOSVRCacheConcurrent: models learning in parallel goroutines share
// the column cache (run with -race) and each ends bit for bit as the same model learnt
// alone.
func TestAOSVRCacheConcurrent(t *testing.T) {
	const d, w, models = 3, 25, 8
	cfg := AOSVRConfig{Dim: d, Kernel: RBF{Gamma: 0.5}, C: 3, Epsilon: 0.05, Capacity: w}
	alone := make([]aosvrState, models)
	probes := randomSeq(rand.New(rand.NewPCG(17, 18)), 8, d).x
	for k := range models {
		alone[k] = stateOf(slideModel(t, cfg, rand.New(rand.NewPCG(uint64(k), 19)), 6*w, w), probes)
	}
	got := make([]*AOSVR, models)
	errs := make([]error, models)
	var wg sync.WaitGroup
	for k := range models {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[k], errs[k] = slid(cfg, rand.New(rand.NewPCG(uint64(k), 19)), 6*w, w)
		}()
	}
	wg.Wait()
	for k := range models {
		if errs[k] != nil {
			t.Fatalf("model %d: %v", k, errs[k])
		}
		sameState(t, got[k], alone[k], probes, fmt.Sprintf("model %d", k))
	}
}

// withColumnCache runs f under a column cache limit of bytes, restoring
// the limit after.
func withColumnCache(t *testing.T, bytes int64, f func()) {
	t.Helper()
	old := ColumnCache().Limit
	SetColumnCache(bytes)
	defer SetColumnCache(old)
	f()
}

// TestAOSVRCacheBudgets: models learning round robin give the same
// predictions and states bit for bit whatever the column cache holds
// (none, some of them, all), the cache keeps within its limit, and it
// misses when it holds nothing and hits when it holds everything. A model
// under the smallest limit computes its columns at every call that needs
// them; this is the test that cached and recomputed columns are the same
// floats.
func TestAOSVRCacheBudgets(t *testing.T) {
	const d, w, models, steps = 4, 30, 12, 200
	cfg := AOSVRConfig{Dim: d, Kernel: RBF{Gamma: 0.5}, C: 3, Epsilon: 0.05, Capacity: w}
	probes := randomSeq(rand.New(rand.NewPCG(21, 22)), 6, d).x
	run := func(limit int64) ([][]float64, ColumnCacheStats) {
		var preds [][]float64
		var st0, st1 ColumnCacheStats
		// Models of earlier tests may still hold columns: the limit is
		// over what they hold (0 stays 0).
		base := ColumnCache().Bytes
		if limit == 0 {
			base = 0
		}
		withColumnCache(t, base+limit, func() {
			st0 = ColumnCache()
			ms := make([]*AOSVR, models)
			rs := make([]*rand.Rand, models)
			for k := range ms {
				var err error
				if ms[k], err = NewAOSVR(cfg); err != nil {
					t.Fatal(err)
				}
				rs[k] = rand.New(rand.NewPCG(uint64(k), 23))
			}
			x := make([]float64, d)
			for i := range steps {
				for k, m := range ms {
					for j := range x {
						x[j] = rs[k].NormFloat64()
					}
					y := math.Sin(2*x[0]) + 0.1*rs[k].NormFloat64()
					if i >= w {
						old, _ := m.Oldest()
						if _, err := m.Replace(old, x, y); err != nil {
							t.Fatal(err)
						}
					} else if _, err := m.Add(x, y); err != nil {
						t.Fatal(err)
					}
					if b := ColumnCache().Bytes - st0.Bytes; b > limit {
						t.Fatalf("limit %d: the cache holds %d bytes", limit, b)
					}
					p := make([]float64, 0, len(probes)+1)
					for _, q := range probes {
						v, _ := m.Predict(q)
						p = append(p, v)
					}
					preds = append(preds, append(p, m.Bias()))
				}
			}
			st1 = ColumnCache()
			runtime.KeepAlive(ms)
		})
		st1.Hits -= st0.Hits
		st1.Misses -= st0.Misses
		return preds, st1
	}
	all, stAll := run(1 << 30)
	for _, limit := range []int64{0, 4 << 10, 40 << 10} {
		got, st := run(limit)
		t.Logf("limit %d: %d hits, %d misses", limit, st.Hits, st.Misses)
		for i := range all {
			if !sameBits(got[i], all[i]) {
				t.Fatalf("limit %d: call %d predicts %v, %v with every column kept", limit, i, got[i], all[i])
			}
		}
		if limit == 0 && (st.Hits != 0 || st.Misses == 0) {
			t.Errorf("limit 0: %d hits, %d misses", st.Hits, st.Misses)
		}
		if limit == 40<<10 && (st.Hits == 0 || st.Misses == 0) {
			t.Errorf("a limit that holds some of the models' columns: %d hits, %d misses", st.Hits, st.Misses)
		}
	}
	if stAll.Misses != 0 || stAll.Hits == 0 {
		t.Errorf("every column kept: %d hits, %d misses", stAll.Hits, stAll.Misses)
	}
}

// settledCache returns the column cache's bytes once the models earlier
// tests dropped have given their charges back: the count unchanged over a
// collection and its finalizers, twice running.
func settledCache(t *testing.T) int64 {
	t.Helper()
	stable := 0
	for deadline := time.Now().Add(5 * time.Second); ; {
		b := ColumnCache().Bytes
		runtime.GC()
		time.Sleep(2 * time.Millisecond) // the finalizers run on their own goroutine
		if ColumnCache().Bytes != b {
			stable = 0
		} else if stable++; stable == 2 {
			return b
		}
		if time.Now().After(deadline) {
			t.Fatalf("the column cache's bytes still change after 5 s of collections")
		}
	}
}

// TestAOSVRCacheRelease: a model dropped while it keeps columns gives
// their charge back once the collector frees it.
func TestAOSVRCacheRelease(t *testing.T) {
	const d, w = 3, 30
	cfg := AOSVRConfig{Dim: d, Kernel: RBF{Gamma: 0.5}, C: 3, Epsilon: 0.05, Capacity: w}
	before := settledCache(t)
	m := slideModel(t, cfg, rand.New(rand.NewPCG(31, 32)), 3*w, w)
	if *m.charge == 0 || ColumnCache().Bytes-before != *m.charge {
		t.Fatalf("charge %d, the cache grew by %d", *m.charge, ColumnCache().Bytes-before)
	}
	m = nil
	for deadline := time.Now().Add(5 * time.Second); ColumnCache().Bytes > before; {
		if time.Now().After(deadline) {
			t.Fatalf("the cache holds %d bytes after the model was freed, %d before it", ColumnCache().Bytes, before)
		}
		runtime.GC()
		time.Sleep(time.Millisecond)
	}
}

// TestAOSVRReleaseColumns: a warm model's columns given up between calls
// (ReleaseColumns) leave the cache's account at once, and the model goes
// on bit for bit as its twin that kept them; a model keeping none gives
// back nothing.
func TestAOSVRReleaseColumns(t *testing.T) {
	const d, w, steps = 3, 30, 300
	cfg := AOSVRConfig{Dim: d, Kernel: RBF{Gamma: 0.5}, C: 3, Epsilon: 0.05, Capacity: w}
	probes := randomSeq(rand.New(rand.NewPCG(41, 42)), 5, d).x
	settledCache(t) // no other model's charge given back during the checks
	withColumnCache(t, 1<<30, func() {
		a, err := NewAOSVR(cfg)
		if err != nil {
			t.Fatal(err)
		}
		b, err := NewAOSVR(cfg)
		if err != nil {
			t.Fatal(err)
		}
		r := rand.New(rand.NewPCG(43, 44))
		x := make([]float64, d)
		released := 0
		for i := range steps {
			for j := range x {
				x[j] = r.NormFloat64()
			}
			y := math.Sin(2*x[0]) + 0.1*r.NormFloat64()
			for _, m := range []*AOSVR{a, b} {
				if i >= w {
					old, _ := m.Oldest()
					if _, err := m.Replace(old, x, y); err != nil {
						t.Fatal(err)
					}
				} else if _, err := m.Add(x, y); err != nil {
					t.Fatal(err)
				}
			}
			if i%3 == 0 {
				before := ColumnCache().Bytes
				got := b.ReleaseColumns()
				if after := ColumnCache().Bytes; after != before-got {
					t.Fatalf("step %d: released %d, the cache went %d -> %d", i, got, before, after)
				}
				if got > 0 {
					released++
					if again := b.ReleaseColumns(); again != 0 {
						t.Fatalf("step %d: released %d more after releasing all", i, again)
					}
				}
			}
			for _, q := range probes {
				pa, _ := a.Predict(q)
				pb, _ := b.Predict(q)
				if math.Float64bits(pa) != math.Float64bits(pb) {
					t.Fatalf("step %d: %v, the twin that kept its columns %v", i, pb, pa)
				}
			}
			if math.Float64bits(a.Bias()) != math.Float64bits(b.Bias()) {
				t.Fatalf("step %d: bias %v, the twin's %v", i, b.Bias(), a.Bias())
			}
		}
		if released < steps/10 {
			t.Errorf("columns released at %d of %d tries", released, steps/3)
		}
		runtime.KeepAlive(a)
	})
}
