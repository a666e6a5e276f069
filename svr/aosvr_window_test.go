package svr_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/forecastd/forecastd/svr"
	"github.com/forecastd/forecastd/window"
)

// TestWindowOverAOSVR runs the real pair: a sliding window of W samples
// over an AOSVR is, after every step, the same function as a fresh AOSVR
// trained on the last W samples, and its KKT conditions hold.
func TestWindowOverAOSVR(t *testing.T) {
	rng := rand.New(rand.NewPCG(71, 72))
	const dim = 3
	var xs [][]float64
	var ys []float64
	for range 160 {
		x := []float64{2*rng.Float64() - 1, 2*rng.Float64() - 1, 2*rng.Float64() - 1}
		xs = append(xs, x)
		ys = append(ys, math.Cos(2*x[0])*x[1]+0.05*rng.NormFloat64())
	}
	probe := [][]float64{{0.1, 0.2, 0.3}, {-0.5, 0.5, 0}, {0.9, -0.9, 0.4}}
	cfg := svr.AOSVRConfig{Dim: dim, C: 10, Epsilon: 0.05}
	for _, w := range []int{1, 2, 5, 20, 100} {
		t.Run(fmt.Sprintf("W=%d", w), func(t *testing.T) {
			cfg.Capacity = w
			m, err := svr.NewAOSVR(cfg)
			if err != nil {
				t.Fatal(err)
			}
			win, err := window.New(m, w, dim)
			if err != nil {
				t.Fatal(err)
			}
			for i := range xs {
				if err := win.Learn(xs[i], ys[i]); err != nil {
					t.Fatal(err)
				}
				if m.Len() != min(i+1, w) || win.Len() != m.Len() {
					t.Fatalf("step %d: model holds %d, window %d, want %d", i, m.Len(), win.Len(), min(i+1, w))
				}
				if v := m.MaxKKTViolation(); v > 1e-8 {
					t.Fatalf("step %d: KKT violation %g", i, v)
				}
				if i%10 != 9 {
					continue
				}
				fresh, _ := svr.NewAOSVR(cfg)
				for j := max(0, i+1-w); j <= i; j++ {
					if err := fresh.Learn(xs[j], ys[j]); err != nil {
						t.Fatal(err)
					}
				}
				for _, p := range probe {
					a, _ := m.Predict(p)
					b, _ := fresh.Predict(p)
					if math.Abs(a-b) > 1e-9 {
						t.Fatalf("step %d: windowed model %v, fresh model on the window %v", i, a, b)
					}
				}
			}
		})
	}
}
