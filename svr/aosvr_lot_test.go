package svr

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"testing"
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

// TestAOSVRLotImport: a model whose columns are parked in the lot and
// which then imports another model's state does not take the parked
// columns back: it goes on bit for bit as the model it imported, and so
// does a model rebuilt over parked columns.
func TestAOSVRLotImport(t *testing.T) {
	const d, w = 3, 30
	cfg := AOSVRConfig{Dim: d, Kernel: RBF{Gamma: 0.5}, C: 3, Epsilon: 0.05, Capacity: w}
	a := slideModel(t, cfg, rand.New(rand.NewPCG(11, 12)), 3*w, w)
	b := slideModel(t, cfg, rand.New(rand.NewPCG(13, 14)), 3*w, w)
	if a.parkGen == 0 {
		t.Fatal("a warm model's columns are not parked")
	}
	if err := a.Import(b.Export()); err != nil {
		t.Fatal(err)
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

// TestAOSVRLotConcurrent: models learning in parallel goroutines share the
// lot (run with -race) and each ends bit for bit as the same model learnt
// alone.
func TestAOSVRLotConcurrent(t *testing.T) {
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
