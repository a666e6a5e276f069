package vec

import (
	"math"
	"math/rand/v2"
	"testing"
)

// sqDistsRef is SqDists' definition, the scalar loop.
func sqDistsRef(dst, x []float64, at []int32, z, tt []float64, g float64) {
	d := len(z)
	for j := range dst {
		i := j
		if at != nil {
			i = int(at[j])
		}
		r := x[i*d : i*d+d]
		var s float64
		for k := range z {
			t := r[k] - z[k]
			s += t * t
		}
		for _, v := range tt {
			s += v
		}
		dst[j] = g * s
	}
}

func sameBits(a, b float64) bool {
	return math.Float64bits(a) == math.Float64bits(b) || (math.IsNaN(a) && math.IsNaN(b))
}

// TestSqDistsBits checks SqDists against its definition, bit for bit,
// for row counts around the vector code's blocks of 8, rows in order
// and picked (repeated, out of order), inputs of every magnitude.
func TestSqDistsBits(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, rows := range []int{0, 1, 7, 8, 9, 15, 16, 17, 100, 257} {
		for _, d := range []int{0, 1, 3, 4, 12, 13} {
			for _, nt := range []int{0, 1, 5} {
				x := make([]float64, (rows+3)*d)
				for i := range x {
					x[i] = r.NormFloat64() * math.Exp(8*r.NormFloat64())
				}
				z := make([]float64, d)
				for i := range z {
					z[i] = r.NormFloat64() * math.Exp(8*r.NormFloat64())
				}
				tt := make([]float64, nt)
				for i := range tt {
					tt[i] = r.Float64() * math.Exp(8*r.NormFloat64())
				}
				g := -r.Float64()
				at := make([]int32, rows)
				for i := range at {
					at[i] = int32(r.IntN(rows + 3))
				}
				for _, a := range [][]int32{nil, at} {
					got, want := make([]float64, rows), make([]float64, rows)
					SqDists(got, x, a, z, tt, g)
					sqDistsRef(want, x, a, z, tt, g)
					for i := range got {
						if !sameBits(got[i], want[i]) {
							t.Fatalf("rows=%d d=%d tt=%d picked=%v: [%d] = %v, want %v", rows, d, nt, a != nil, i, got[i], want[i])
						}
					}
				}
			}
		}
	}
}

func FuzzSqDists(f *testing.F) {
	f.Add(1.0, 2.0, -3.0, 0.5, 1e300, -1e-300, 7.0, 0.25, uint8(3))
	f.Fuzz(func(t *testing.T, a, b, c, e, z0, z1, tt0, g float64, pick uint8) {
		const d, rows = 2, 11
		x := make([]float64, rows*d)
		vals := [...]float64{a, b, c, e}
		for i := range x {
			x[i] = vals[i%4] * float64(i+1)
		}
		z := []float64{z0, z1}
		at := make([]int32, rows)
		for i := range at {
			at[i] = int32((int(pick) + 7*i) % rows)
		}
		for _, p := range [][]int32{nil, at} {
			got, want := make([]float64, rows), make([]float64, rows)
			SqDists(got, x, p, z, []float64{tt0}, g)
			sqDistsRef(want, x, p, z, []float64{tt0}, g)
			for i := range got {
				if !sameBits(got[i], want[i]) {
					t.Fatalf("[%d] = %v, want %v", i, got[i], want[i])
				}
			}
		}
	})
}

func BenchmarkSqDists(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	const rows, d = 100, 12
	x := make([]float64, rows*d)
	for i := range x {
		x[i] = r.NormFloat64()
	}
	z := x[:d]
	dst := make([]float64, rows)
	for b.Loop() {
		SqDists(dst, x, nil, z, nil, -0.5)
	}
}

// TestSqDistsRowOutsidePanics checks that a row outside x, below or
// above, panics on the vector path as on the scalar one, instead of
// being read.
func TestSqDistsRowOutsidePanics(t *testing.T) {
	x := make([]float64, 16*3)
	z := make([]float64, 3)
	for _, bad := range []int32{-1, 16} {
		at := make([]int32, 8)
		at[5] = bad
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("row %d of 16: no panic", bad)
				}
			}()
			SqDists(make([]float64, 8), x, at, z, nil, 1)
		}()
	}
}
