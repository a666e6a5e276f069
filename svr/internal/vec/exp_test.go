package vec

import (
	"math"
	"math/rand/v2"
	"testing"
)

// check fails t for every i where Exps differs from math.Exp by a bit.
func check(t *testing.T, x []float64) {
	t.Helper()
	got := make([]float64, len(x))
	Exps(got, x)
	for i, v := range x {
		want := math.Exp(v)
		if math.Float64bits(got[i]) != math.Float64bits(want) {
			t.Fatalf("Exp(%v) [%d of %d]: %v (%#x), math.Exp %v (%#x)", v, i, len(x), got[i], math.Float64bits(got[i]), want, math.Float64bits(want))
		}
	}
}

func TestExpsBits(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, span := range []float64{1e-300, 1e-12, 1e-3, 1, 10, 100, 745, 800} {
		x := make([]float64, 4099)
		for i := range x {
			x[i] = span * (2*r.Float64() - 1)
		}
		check(t, x)
		for i := range x { // an RBF kernel's arguments: −γ‖x−z‖²
			x[i] = -span * r.ExpFloat64()
		}
		check(t, x)
	}
}

func TestExpsSpecial(t *testing.T) {
	x := []float64{0, math.Copysign(0, -1), 1, -1, 700, -700, 700.0000001, -700.0000001,
		709.78, 709.79, -708.39, -745.13, -745.14, -746, math.Inf(1), math.Inf(-1), math.NaN(),
		math.SmallestNonzeroFloat64, -math.SmallestNonzeroFloat64, math.MaxFloat64, -math.MaxFloat64,
		0.5 * math.Ln2, -0.5 * math.Ln2, 1.5 * math.Ln2, 1e-320}
	for n := 0; n <= len(x); n++ { // every length: the tail and the blocks
		check(t, x[:n])
		check(t, x[len(x)-n:])
	}
	// In place.
	y := append([]float64(nil), x...)
	Exps(y, y)
	for i, v := range x {
		if a, b := math.Float64bits(y[i]), math.Float64bits(math.Exp(v)); a != b && !math.IsNaN(v) {
			t.Fatalf("in place Exp(%v) = %#x, want %#x", v, a, b)
		}
	}
}

// TestExpsRoundingTies: x·log2 e halfway between integers (k rounded to
// even by both codes), and next to such points.
func TestExpsRoundingTies(t *testing.T) {
	var x []float64
	for k := -1000; k <= 1000; k++ {
		v := (float64(k) + 0.5) / math.Log2E
		x = append(x, v, math.Nextafter(v, math.Inf(1)), math.Nextafter(v, math.Inf(-1)))
	}
	check(t, x)
}

func FuzzExps(f *testing.F) {
	f.Add(0.0, 1.0, -2.5, 700.0)
	f.Add(-745.0, 1e-300, math.Inf(1), 3.0)
	f.Fuzz(func(t *testing.T, a, b, c, d float64) {
		check(t, []float64{a, b, c, d, a * 0.5, b * 0.5, c * 0.5, d * 0.5, a})
	})
}

func BenchmarkExps(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	x := make([]float64, 100)
	for i := range x {
		x[i] = -r.ExpFloat64()
	}
	dst := make([]float64, len(x))
	b.Run("vector", func(b *testing.B) {
		for b.Loop() {
			Exps(dst, x)
		}
	})
	b.Run("math.Exp", func(b *testing.B) {
		for b.Loop() {
			for i, v := range x {
				dst[i] = math.Exp(v)
			}
		}
	})
}
