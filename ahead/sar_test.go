package ahead

import (
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// TestSARMatchesBatchFit: after every sample the coefficients equal the
// exponentially weighted ridge least-squares fit computed from scratch
// (gonum's dense solve of the weighted normal equations, built from the
// samples themselves), over a ladder of sizes.
func TestSARMatchesBatchFit(t *testing.T) {
	for _, tc := range []struct{ d, n int }{{4, 60}, {4, 200}, {7, 500}} {
		r := rand.New(rand.NewPCG(uint64(tc.d), uint64(tc.n)))
		s := newSAR(tc.d, 2, tc.d)
		h := &hist{}
		var xs [][]float64
		var zs []float64
		for i := range tc.n + s.span() + 1 {
			h.v = append(h.v, math.Sin(2*math.Pi*float64(i)/float64(tc.d))+0.3*r.NormFloat64()+0.01*float64(i))
			v := view{raw: h, c: &cleaner{}}
			if h.Held() > s.span() {
				x := []float64{1}
				for _, l := range s.lags {
					x = append(x, s.z(v, l))
				}
				xs, zs = append(xs, x), append(zs, s.z(v, 0))
			}
			s.learn(v)
			if len(xs) < 10 || len(xs)%17 != 0 && len(xs) != tc.n {
				continue
			}
			if !s.solve() {
				t.Fatalf("d %d, %d samples: the solve failed", tc.d, len(xs))
			}
			want := batchFit(xs, zs)
			for j := range want {
				if math.Abs(s.w[j]-want[j]) > 1e-9*(1+math.Abs(want[j])) {
					t.Fatalf("d %d, %d samples: w[%d] = %v, batch %v", tc.d, len(xs), j, s.w[j], want[j])
				}
			}
		}
		if s.n != len(xs) {
			t.Errorf("%d samples learned, %d made", s.n, len(xs))
		}
	}
}

// batchFit solves (XᵀΛX + ρI)w = XᵀΛz with Λ = diag(λ^(n−1−i)) and
// ρ = sarRidge·tr(XᵀΛX)/k + 1e-12.
func batchFit(xs [][]float64, zs []float64) []float64 {
	n, k := len(xs), len(xs[0])
	a := mat.NewDense(k, k, nil)
	b := mat.NewVecDense(k, nil)
	for i := range xs {
		w := math.Pow(sarForget, float64(n-1-i))
		for p := range k {
			for q := range k {
				a.Set(p, q, a.At(p, q)+w*xs[i][p]*xs[i][q])
			}
			b.SetVec(p, b.AtVec(p)+w*xs[i][p]*zs[i])
		}
	}
	rho := sarRidge*mat.Trace(a)/float64(k) + 1e-12
	for p := range k {
		a.Set(p, p, a.At(p, p)+rho)
	}
	var w mat.VecDense
	if err := w.SolveVec(a, b); err != nil {
		panic(err)
	}
	return w.RawVector().Data
}

// TestSARPathRecursion: the path follows ẑ(t+h) = c + Σ φ_l·z(t+h−l),
// forecasts in place of the values not yet seen, and
// ŷ(t+h) = ŷ(t+h−d) + ẑ(t+h), clipped at zClip mean |z|.
func TestSARPathRecursion(t *testing.T) {
	const d = 5
	s := newSAR(d, 1, d)
	h := &hist{}
	for i := range 40 {
		h.v = append(h.v, float64(i%d)+0.1*float64(i))
	}
	v := view{raw: h, c: &cleaner{}}
	for range 60 {
		s.learn(v)
	}
	// Coefficients of the test's own: a ridge-free system A = I, b = w.
	w := []float64{0.5, 0.3, -0.2}
	for i := range s.k {
		for j := range s.k {
			s.a[i*s.k+j] = 0
		}
		s.a[i*s.k+i] = 1e9
		s.b[i] = w[i] * 1e9
	}
	s.zabs = 100 // no clip
	out, zs := make([]float64, 12), make([]float64, 12)
	s.path(v, out, zs)
	y := append([]float64(nil), h.v...)
	z := func(i int) float64 { return y[i] - y[i-d] }
	for i := range w { // the ridge's shrinkage
		w[i] /= 1 + sarRidge
	}
	for k := 1; k <= 12; k++ {
		n := len(y)
		zh := w[0] + w[1]*z(n-1) + w[2]*z(n-d)
		y = append(y, y[n-d]+zh)
		if math.Abs(out[k-1]-y[len(y)-1]) > 1e-6 {
			t.Fatalf("step %d: %v, the recursion gives %v", k, out[k-1], y[len(y)-1])
		}
	}
	s.zabs = 0.01 // every ẑ clipped to ±0.06
	s.path(v, out, zs)
	for k, z := range zs {
		if math.Abs(z) > zClip*s.zabs+1e-12 {
			t.Fatalf("step %d: ẑ %v beyond the clip", k+1, z)
		}
	}
}
