package svr

import (
	"math"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// fuzzKKTTol is the KKT tolerance under fuzzing, scaled by max(1, C) and
// grown with the conditioning of the margin set (kktBound), as a
// backward-stable solver's error is. It is looser than the 1e-8 the
// property tests hold (TestAOSVRKKTRandomWindows, the LIBSVM test): the
// fuzzer's inputs sit on a grid of step 1/8 with ε > 0, so it piles up
// exact duplicates with equal and with different targets and degenerate
// points where many samples sit exactly on the tube's edge. There,
// refused dependent samples and zero-step pivots leave violations that
// the refresh and repair do not always remove: up to 1e-5 was seen after
// minutes of fuzzing (and up to 1e-4 on a grid of 1/64, where
// near-duplicate clusters are also ill-conditioned). Gross errors, such as
// the 0.15 a bounced sample once caused, are what this test is for.
const fuzzKKTTol = 1e-4

// kktBound is the KKT tolerance for m's current margin set, scaled by
// max(1, C) as θ and the margins are.
func kktBound(m *AOSVR) float64 {
	l := len(m.s)
	cond := 1.0
	if l > 0 {
		a := mat.NewSymDense(l+1, nil)
		for j := 0; j < l; j++ {
			a.SetSym(0, j+1, 1)
			for k := j; k < l; k++ {
				xj := make([]float64, m.dim)
				m.rowInto(xj, int(m.s[j]))
				a.SetSym(j+1, k+1, m.kernel(int(m.s[k]), xj))
			}
		}
		cond = mat.Cond(a, 2)
	}
	return (fuzzKKTTol + 1e-15*cond) * math.Max(1, m.c)
}

// FuzzAOSVROps interprets the input as a sequence of operations on an
// AOSVR (add, remove by handle, forget the oldest, update a target) and
// checks after each one that nothing panics, no NaN or Inf leaves the
// model, and the KKT conditions hold.
func FuzzAOSVROps(f *testing.F) {
	f.Add([]byte{0, 10, 20, 30, 0, 40, 50, 60, 0, 10, 20, 30, 1, 0, 3, 5})
	f.Add([]byte{0, 1, 1, 1, 0, 1, 1, 1, 0, 1, 1, 2, 2, 0, 3, 0, 9, 9, 2, 0})
	f.Add([]byte{4, 200, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) < 2 {
			return
		}
		// The first byte picks ε and C, so both edges are explored.
		epss := []float64{0.05, 0.01, 0.1, 0.5}
		cs := []float64{1e-3, 1, 10, 1e3}
		eps, c := epss[data[0]&3], cs[(data[0]>>2)&3]
		m, err := NewAOSVR(AOSVRConfig{Dim: 2, Kernel: RBF{Gamma: 1}, C: c, Epsilon: eps})
		if err != nil {
			t.Fatal(err)
		}
		var ids []uint64
		// A grid of step 1/8 on [−2, 2]: exact duplicates are likely, near
		// duplicates no closer than 1/8 (see fuzzKKTTol).
		val := func(b byte) float64 { return float64(int(b%32)-16) / 8 }
		ops := 0
		for p := 1; p < len(data) && ops < 200; ops++ {
			op := data[p] % 4
			p++
			switch op {
			case 0: // add
				if p+3 > len(data) {
					return
				}
				x := []float64{val(data[p]), val(data[p+1])}
				y := val(data[p+2])
				p += 3
				id, err := m.Add(x, y)
				if err != nil {
					t.Fatalf("add %v %v: %v", x, y, err)
				}
				ids = append(ids, id)
			case 1: // remove by handle
				if len(ids) == 0 || p >= len(data) {
					continue
				}
				k := int(data[p]) % len(ids)
				p++
				if err := m.Remove(ids[k]); err != nil {
					t.Fatalf("remove %d: %v", ids[k], err)
				}
				ids = append(ids[:k], ids[k+1:]...)
			case 2: // forget the oldest
				if len(ids) == 0 {
					if err := m.ForgetOldest(); err == nil {
						t.Fatal("forget on an empty model succeeded")
					}
					continue
				}
				if err := m.ForgetOldest(); err != nil {
					t.Fatal(err)
				}
				ids = ids[1:]
			case 3: // update a target
				if len(ids) == 0 || p+2 > len(data) {
					continue
				}
				k := int(data[p]) % len(ids)
				y := val(data[p+1])
				p += 2
				if err := m.UpdateTarget(ids[k], y); err != nil {
					t.Fatalf("update %d: %v", ids[k], err)
				}
			}
			if m.Len() != len(ids) {
				t.Fatalf("model holds %d samples, %d expected", m.Len(), len(ids))
			}
			if v, bound := m.MaxKKTViolation(), kktBound(m); !(v <= bound) {
				t.Fatalf("op %d: KKT violation %g > %g", ops, v, bound)
			}
			for _, x := range [][]float64{{0, 0}, {1, -1}, {-2, 2}} {
				if p, err := m.Predict(x); err != nil || math.IsNaN(p) || math.IsInf(p, 0) {
					t.Fatalf("Predict(%v) = %v, %v", x, p, err)
				}
			}
		}
	})
}
