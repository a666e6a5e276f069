package svr

import (
	"math"
	"math/rand/v2"
	"testing"
)

// A model given Pools of its own lends its call buffers to them and not
// to the process's, and computes the same bits as a model on the
// process's; PooledBytes counts what its Pools keep; SetPools(nil) puts
// it back on the process's.
func TestAOSVRSetPools(t *testing.T) {
	const d, w = 5, 40
	r := rand.New(rand.NewPCG(7, 8))
	cfg := AOSVRConfig{Dim: d, Kernel: RBF{Gamma: 0.2}, C: 3, Epsilon: 0.1, Capacity: w}
	shared, err := NewAOSVR(cfg)
	if err != nil {
		t.Fatal(err)
	}
	own, err := NewAOSVR(cfg)
	if err != nil {
		t.Fatal(err)
	}
	p := NewPools(8)
	own.SetPools(p)
	if p.column.max != maxColumns/8 || p.undo.max != 16 {
		t.Fatalf("bounds %d columns, %d undo copies: want a share, at least 16", p.column.max, p.undo.max)
	}
	x := make([]float64, d)
	for i := range 6 * w {
		for j := range x {
			x[j] = r.NormFloat64()
		}
		y := math.Sin(x[0]) + 0.1*r.NormFloat64()
		for _, m := range []*AOSVR{shared, own} {
			if i >= w {
				if err := m.ForgetOldest(); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := m.Add(x, y); err != nil {
				t.Fatal(err)
			}
		}
		ps, _ := shared.Predict(x)
		po, _ := own.Predict(x)
		if math.Float64bits(ps) != math.Float64bits(po) {
			t.Fatalf("sample %d: prediction %v on its own Pools, %v on the process's", i, po, ps)
		}
	}
	if own.pools != p || p.records.n != 1 || p.column.n == 0 {
		t.Fatalf("its Pools hold %d undo records and %d columns, want 1 and some", p.records.n, p.column.n)
	}
	if b := p.bytes(); b == 0 || PooledBytes() < b {
		t.Fatalf("its Pools hold %d bytes, PooledBytes %d", b, PooledBytes())
	}
	before := PooledBytes()
	p.Release()
	if b := PooledBytes(); p.column.n != 0 || b > before-1 {
		t.Fatalf("after Release: %d columns kept, PooledBytes %d (before %d)", p.column.n, b, before)
	}
	if _, err := own.Add(x, 1); err != nil { // still works on released pools
		t.Fatal(err)
	}
	own.SetPools(nil)
	if own.pools != processPools {
		t.Fatal("SetPools(nil) did not restore the process's Pools")
	}
}
