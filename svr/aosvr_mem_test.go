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
