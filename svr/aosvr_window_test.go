package svr_test

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
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

// nanAt is RBF{Gamma: 1} but NaN for any pair involving the input bad: a
// model can never learn a sample there.
type nanAt struct{ bad []float64 }

func (k nanAt) Eval(a, b []float64) float64 {
	if slices.Equal(a, k.bad) || slices.Equal(b, k.bad) {
		return math.NaN()
	}
	return svr.RBF{Gamma: 1}.Eval(a, b)
}
func (nanAt) Validate() error { return nil }
func (nanAt) String() string  { return "nan-at" }

// TestWindowOverAOSVRNumericalFailure: a full window over an AOSVR is given
// samples the model cannot learn (ErrNumerical from Add, after the oldest
// was removed). Every such Learn fails, the window and the model still hold
// the same samples under the same handles, and the series keeps learning:
// later samples are learnt and the model is the solution on the window.
func TestWindowOverAOSVRNumericalFailure(t *testing.T) {
	const dim, w = 2, 20
	bad := []float64{0.5, 0.5}
	cfg := svr.AOSVRConfig{Dim: dim, Kernel: nanAt{bad: bad}, C: 10, Epsilon: 0.05, Capacity: w}
	m, err := svr.NewAOSVR(cfg)
	if err != nil {
		t.Fatal(err)
	}
	win, err := window.New(m, w, dim)
	if err != nil {
		t.Fatal(err)
	}
	agree := func(what string) {
		t.Helper()
		var wids []uint64
		var xs [][]float64
		var ys []float64
		win.Samples(func(x []float64, y float64, id uint64) bool {
			wids = append(wids, id)
			xs, ys = append(xs, slices.Clone(x)), append(ys, y)
			return true
		})
		st := m.Export()
		mids := slices.Clone(st.IDs)
		slices.Sort(mids)
		sorted := slices.Clone(wids)
		slices.Sort(sorted)
		if !slices.Equal(sorted, mids) {
			t.Fatalf("%s: window handles %v, model handles %v", what, wids, st.IDs)
		}
		for i, id := range st.IDs {
			k := slices.Index(wids, id)
			if !slices.Equal(xs[k], st.X[i]) || ys[k] != st.Y[i] {
				t.Fatalf("%s: handle %d: window (%v, %v), model (%v, %v)", what, id, xs[k], ys[k], st.X[i], st.Y[i])
			}
		}
		if v := m.MaxKKTViolation(); v > 1e-8 {
			t.Fatalf("%s: KKT violation %g", what, v)
		}
		// The model is the solution on the window's samples.
		fresh, _ := svr.NewAOSVR(cfg)
		for i := range xs {
			if err := fresh.Learn(xs[i], ys[i]); err != nil {
				t.Fatal(err)
			}
		}
		for _, p := range [][]float64{{0.1, 0.2}, {-0.5, 0.5}, {0.9, -0.9}} {
			a, _ := m.Predict(p)
			b, _ := fresh.Predict(p)
			if math.Abs(a-b) > 1e-9 {
				t.Fatalf("%s: model %v, fresh model on the window %v", what, a, b)
			}
		}
	}
	rng := rand.New(rand.NewPCG(73, 74))
	learnt, failed := 0, 0
	for i := range 200 {
		x := []float64{2*rng.Float64() - 1, 2*rng.Float64() - 1}
		y := math.Sin(3*x[0]) * x[1]
		poisoned := i >= w && i%7 == 0
		if poisoned {
			x, y = bad, 2
		}
		err := win.Learn(x, y)
		switch {
		case poisoned && !errors.Is(err, svr.ErrNumerical):
			t.Fatalf("step %d: Learn of an unlearnable sample = %v, want ErrNumerical", i, err)
		case poisoned:
			failed++
		case err != nil:
			t.Fatalf("step %d: Learn = %v", i, err)
		default:
			learnt++
		}
		if win.Len() != m.Len() || win.Len() != min(learnt, w) {
			t.Fatalf("step %d: window holds %d, model %d, want %d", i, win.Len(), m.Len(), min(learnt, w))
		}
		if i%5 == 0 || poisoned {
			agree(fmt.Sprintf("step %d", i))
		}
	}
	if st := m.Stats(); st.Failures != uint64(failed) {
		t.Fatalf("Stats().Failures = %d, want %d", st.Failures, failed)
	}
}
