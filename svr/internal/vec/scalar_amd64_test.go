package vec

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestScalarPath runs the tests of the bits on the path a CPU without
// AVX2 and FMA takes (useVector false), which this machine would not.
func TestScalarPath(t *testing.T) {
	saved := useVector
	useVector = false
	defer func() { useVector = saved }()
	t.Run("ExpsBits", TestExpsBits)
	t.Run("ExpsSpecial", TestExpsSpecial)
	t.Run("SumScaledBits", TestSumScaledBits)
	t.Run("SqDistsBits", TestSqDistsBits)
	r := rand.New(rand.NewPCG(5, 6))
	x := make([]float64, 37)
	for i := range x {
		x[i] = -10 * r.Float64()
	}
	got := make([]float64, len(x))
	Exps(got, x)
	for i, v := range x {
		if got[i] != math.Exp(v) {
			t.Fatalf("Exp(%v) = %v on the scalar path", v, got[i])
		}
	}
}
