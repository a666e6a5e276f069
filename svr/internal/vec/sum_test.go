package vec

import (
	"math"
	"math/rand/v2"
	"testing"
)

// sumScaledRef is SumScaled's definition, the scalar loop.
func sumScaledRef(dst, base []float64, b float64, a []float64, cols [][]float64) {
	for i := range dst {
		g := base[i] + b
		for k := range a {
			g += a[k] * cols[k][i]
		}
		dst[i] = g
	}
}

func TestSumScaledBits(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{0, 1, 3, 4, 5, 8, 31, 100, 257} {
		for _, l := range []int{0, 1, 2, 7, 40} {
			base := make([]float64, n+3)
			cols := make([][]float64, l)
			a := make([]float64, l)
			for i := range base {
				base[i] = r.NormFloat64() * math.Exp(20*r.NormFloat64())
			}
			for k := range cols {
				a[k] = r.NormFloat64() * math.Exp(10*r.NormFloat64())
				cols[k] = make([]float64, n+1)
				for i := range cols[k] {
					cols[k][i] = r.Float64()
				}
			}
			b := r.NormFloat64()
			got, want := make([]float64, n), make([]float64, n)
			SumScaled(got, base, b, a, cols)
			sumScaledRef(want, base, b, a, cols)
			for i := range got {
				if math.Float64bits(got[i]) != math.Float64bits(want[i]) {
					t.Fatalf("n=%d l=%d: [%d] = %v, want %v", n, l, i, got[i], want[i])
				}
			}
			// In place over base.
			inPlace := append([]float64(nil), base[:n]...)
			SumScaled(inPlace, inPlace, b, a, cols)
			for i := range inPlace {
				if math.Float64bits(inPlace[i]) != math.Float64bits(want[i]) {
					t.Fatalf("in place n=%d l=%d: [%d] = %v, want %v", n, l, i, inPlace[i], want[i])
				}
			}
		}
	}
}

func FuzzSumScaled(f *testing.F) {
	f.Add(1.0, 2.0, 3.0, -1.0, 0.5, 1e300, 5.0)
	f.Fuzz(func(t *testing.T, b, a0, a1, c0, c1, x, y float64) {
		base := []float64{x, y, c0, c1, a0, x, y}
		cols := [][]float64{{c0, c1, x, y, b, a1, a0}, {y, x, c1, c0, a0, b, a1}}
		a := []float64{a0, a1}
		got, want := make([]float64, 7), make([]float64, 7)
		SumScaled(got, base, b, a, cols)
		sumScaledRef(want, base, b, a, cols)
		for i := range got {
			if math.Float64bits(got[i]) != math.Float64bits(want[i]) && !(math.IsNaN(got[i]) && math.IsNaN(want[i])) {
				t.Fatalf("[%d] = %v, want %v", i, got[i], want[i])
			}
		}
	})
}

func BenchmarkSumScaled(b *testing.B) {
	r := rand.New(rand.NewPCG(3, 4))
	const n, l = 100, 20
	base, dst, a := make([]float64, n), make([]float64, n), make([]float64, l)
	cols := make([][]float64, l)
	for k := range cols {
		a[k] = r.NormFloat64()
		cols[k] = make([]float64, n)
		for i := range cols[k] {
			cols[k][i] = r.Float64()
		}
	}
	b.Run("vector", func(b *testing.B) {
		for b.Loop() {
			SumScaled(dst, base, 0.5, a, cols)
		}
	})
	b.Run("scalar", func(b *testing.B) {
		for b.Loop() {
			sumScaledRef(dst, base, 0.5, a, cols)
		}
	})
}
