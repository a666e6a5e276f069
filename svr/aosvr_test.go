package svr

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// kktTol is the largest KKT violation allowed after any step.
const kktTol = 1e-8

func newTestAOSVR(t testing.TB, dim int, c, eps float64, k Kernel) *AOSVR {
	t.Helper()
	m, err := NewAOSVR(AOSVRConfig{Dim: dim, Kernel: k, C: c, Epsilon: eps})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func randVec(rng *rand.Rand, d int) []float64 {
	x := make([]float64, d)
	for i := range x {
		x[i] = 2*rng.Float64() - 1
	}
	return x
}

func checkKKT(t *testing.T, m *AOSVR, what string) {
	t.Helper()
	if v := m.MaxKKTViolation(); !(v <= kktTol) {
		s, e, r := m.Sizes()
		t.Fatalf("%s: KKT violation %.3g (n=%d S=%d E=%d R=%d b=%v)", what, v, m.Len(), s, e, r, m.Bias())
	}
}

// TestAOSVRKKTRandomWindows slides windows of several sizes over random
// sequences and checks the KKT conditions after every add and remove.
func TestAOSVRKKTRandomWindows(t *testing.T) {
	for _, w := range []int{1, 2, 5, 20, 100} {
		for _, eps := range []float64{0.1, 0.01, 0} {
			for _, c := range []float64{1e-3, 10, 1e4} {
				t.Run(fmt.Sprintf("W=%d/eps=%g/C=%g", w, eps, c), func(t *testing.T) {
					rng := rand.New(rand.NewPCG(uint64(w), uint64(1000*eps)+uint64(c)))
					m := newTestAOSVR(t, 3, c, eps, RBF{Gamma: 1})
					steps := 300
					if w == 100 {
						steps = 250
					}
					for i := range steps {
						if m.Len() == w {
							if err := m.ForgetOldest(); err != nil {
								t.Fatal(err)
							}
							checkKKT(t, m, fmt.Sprintf("step %d forget", i))
						}
						x := randVec(rng, 3)
						y := math.Sin(3*x[0]) + 0.5*x[1]*x[2] + 0.1*rng.NormFloat64()
						if err := m.Learn(x, y); err != nil {
							t.Fatal(err)
						}
						checkKKT(t, m, fmt.Sprintf("step %d learn", i))
					}
				})
			}
		}
	}
}
