package svr_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/forecastd/forecastd/lab/dataset"
	"github.com/forecastd/forecastd/lab/mackeyglass"
	"github.com/forecastd/forecastd/svr"
	"github.com/forecastd/forecastd/svr/svrtest"
)

func TestSOGConformance(t *testing.T) {
	// On y = ⟨w, x⟩ + 0.1 the defaults reach an MSE of a few 1e-4 after
	// 400 samples.
	svrtest.Test(t, func(dim int) svr.Regressor {
		m, err := svr.NewSOGSVR(svr.SOGSVRConfig{Dim: dim})
		if err != nil {
			t.Fatal(err)
		}
		return m
	}, 2e-3)
}

// sogResult is the outcome of a one-step-ahead run.
type sogResult struct {
	mse, pers float64 // model and persistence MSE on the scored half
	m         int     // final dictionary size
	ev        int64   // evictions
}

// sogOneStep runs the project's one-step protocol (AOSVR paper §5.2): the
// series scaled to [−1, 1] by its min and max, X(t) = [x(t) … x(t−4)],
// target x(t+1); every sample is predicted before it is learned, and the
// squared errors on the second half of the series are averaged, for the
// model and for persistence x̂(t+1) = x(t).
func sogOneStep(t testing.TB, raw []float64, cfg svr.SOGSVRConfig) sogResult {
	const b = 5
	cfg.Dim = b
	s, err := svr.NewSOGSVR(cfg)
	if err != nil {
		t.Fatal(err)
	}
	xs, ys := dataset.Embed(dataset.Scaled(raw), b)
	var r sogResult
	var cnt int
	for i, x := range xs {
		if i+b >= len(raw)/2 { // the target x(t+1) lies in the second half
			p, err := s.Predict(x)
			if err != nil {
				t.Fatal(err)
			}
			r.mse += (p - ys[i]) * (p - ys[i])
			r.pers += (x[0] - ys[i]) * (x[0] - ys[i])
			cnt++
		}
		if err := s.Learn(x, ys[i]); err != nil {
			t.Fatal(err)
		}
	}
	r.mse /= float64(cnt)
	r.pers /= float64(cnt)
	r.m, r.ev = s.Len(), s.Evictions()
	return r
}

func sogSeries() map[string][]float64 {
	out := map[string][]float64{"mackey_glass_2000": mackeyglass.Generate(2000, mackeyglass.Config{})}
	for _, n := range dataset.Names {
		out[n] = dataset.MustLoad(n).Values
	}
	return out
}

// TestSOGOneStepAccuracy holds the defaults to the project's accuracy goal
// on the Santa Fe laser series (exact AOSVR with a 200-sample window: MSE
// 0.005–0.01; goal within 2×, below 0.012) and to beating persistence on
// the deterministic series. On the two random-walk-like series persistence
// is near optimal and no kernel model in [−1, 1] coordinates matches it;
// there the test only bounds the loss (measured: see the log).
func TestSOGOneStepAccuracy(t *testing.T) {
	series := sogSeries()
	for _, c := range []struct {
		name    string
		maxMSE  float64 // bound on the model's MSE
		vsPers  float64 // bound on MSE / persistence MSE
		comment string
	}{
		{"santafe_laser_a", 0.012, 0.1, "goal"},
		{"mackey_glass_2000", 1e-3, 0.2, ""},
		{"sensor_temperature_15min", 0.01, 2, "persistence near optimal"},
		{"market_price_daily", 0.01, 4, "random walk: persistence optimal"},
	} {
		r := sogOneStep(t, series[c.name], svr.SOGSVRConfig{})
		t.Logf("%-26s MSE %.5f  persistence %.5f  ratio %.3f  m=%d evictions=%d", c.name, r.mse, r.pers, r.mse/r.pers, r.m, r.ev)
		if !(r.mse <= c.maxMSE) || !(r.mse <= c.vsPers*r.pers) {
			t.Errorf("%s: MSE %.5f (persistence %.5f), want ≤ %v and ≤ %v× persistence", c.name, r.mse, r.pers, c.maxMSE, c.vsPers)
		}
	}
}

// sogDrift is a drifting test series: a sine whose level, amplitude and
// period wander over the run, plus noise.
func sogDrift(n int, seed uint64) []float64 {
	rng := rand.New(rand.NewPCG(seed, 1))
	out := make([]float64, n)
	phase := 0.0
	for i := range out {
		f := float64(i) / float64(n)
		phase += 2 * math.Pi / (20 + 15*math.Sin(2*math.Pi*3*f))
		out[i] = 0.5*math.Sin(2*math.Pi*2*f) + (0.3+0.2*f)*math.Sin(phase) + 0.02*rng.NormFloat64()
	}
	return out
}

// TestSOGBoundedMemory learns 100 000 samples of a drifting series: the
// dictionary never exceeds the cap, the state size is the configured bound
// from construction on, Learn and Predict do not allocate once warm, and
// the model keeps tracking the drift.
func TestSOGBoundedMemory(t *testing.T) {
	const n, b = 100_000, 5
	cfg := svr.SOGSVRConfig{Dim: b, MaxDict: 32}
	s, err := svr.NewSOGSVR(cfg)
	if err != nil {
		t.Fatal(err)
	}
	// The bound, as documented on StateBytes (M = 32 keeps K̃):
	// 8·(M·d + 3M(M+1)/2 + 4M) + 384.
	bound := 8*(32*b+3*32*33/2+4*32) + 384
	if got := s.StateBytes(); got > bound {
		t.Fatalf("StateBytes() = %d at construction, bound %d", got, bound)
	}
	xs, ys := dataset.Embed(sogDrift(n+b, 1), b)
	var sq, pers float64
	var cnt int
	for i, x := range xs {
		if i >= len(xs)-2000 {
			p, err := s.Predict(x)
			if err != nil {
				t.Fatal(err)
			}
			sq += (p - ys[i]) * (p - ys[i])
			pers += (x[0] - ys[i]) * (x[0] - ys[i])
			cnt++
		}
		if err := s.Learn(x, ys[i]); err != nil {
			t.Fatal(err)
		}
		if s.Len() > s.Cap() || s.StateBytes() > bound {
			t.Fatalf("sample %d: Len %d (cap %d), StateBytes %d (bound %d)", i, s.Len(), s.Cap(), s.StateBytes(), bound)
		}
	}
	if s.Evictions() == 0 {
		t.Fatal("the cap was never reached: the test is void")
	}
	allocs := testing.AllocsPerRun(1000, func() {
		i := len(xs) - 1 - rand.IntN(1000)
		if _, err := s.Predict(xs[i]); err != nil {
			t.Fatal(err)
		}
		if err := s.Learn(xs[i], ys[i]); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("Predict+Learn allocate %v times per call once warm", allocs)
	}
	sq /= float64(cnt)
	pers /= float64(cnt)
	t.Logf("after %d samples: m=%d, %d evictions, StateBytes %d, last-2000 MSE %.5f (persistence %.5f)", n, s.Len(), s.Evictions(), s.StateBytes(), sq, pers)
	if sq > 0.5*pers {
		t.Errorf("drifting series: MSE %.5f not well below persistence %.5f", sq, pers)
	}
}

// sogSinc is one run of the sinc experiment of Engel et al. §5: ℓ noisy
// training samples of sin(x)/x on [−10, 10], tested on 1000 noise-free
// points. Test error is the mean squared error.
func sogSinc(t testing.TB, ell int, seed uint64) (m int, mse float64) {
	rng := rand.New(rand.NewPCG(seed, uint64(ell)))
	sinc := func(x float64) float64 {
		if x == 0 {
			return 1
		}
		return math.Sin(x) / x
	}
	s, err := svr.NewSOGSVR(svr.SOGSVRConfig{
		Dim:     1,
		Kernel:  svr.RBF{Gamma: 1.0 / (2 * 3 * 3)}, // Gaussian, σ = 3
		Lambda:  0.1,
		Nu:      0.01,
		Ridge:   0,    // γ = 0
		Epsilon: 0.01, // ε
		C:       1e4,  // C̃ = C·ℓ with the paper's C = 10⁴/ℓ
		Forget:  1,    // the paper: no forgetting
		Steps:   1,    // the paper: one step per sample, single pass
		MaxDict: 64,   // far above what the test expects: the ALD test, not the cap, keeps m small
	})
	if err != nil {
		t.Fatal(err)
	}
	x := []float64{0}
	for range ell {
		x[0] = -10 + 20*rng.Float64()
		if err := s.Learn(x, sinc(x[0])+0.1*rng.NormFloat64()); err != nil {
			t.Fatal(err)
		}
	}
	for range 1000 {
		x[0] = -10 + 20*rng.Float64()
		p, err := s.Predict(x)
		if err != nil {
			t.Fatal(err)
		}
		mse += (p - sinc(x[0])) * (p - sinc(x[0]))
	}
	return s.Len(), mse / 1000
}

// TestSOGSinc reproduces the sinc experiment of §5 (Fig. 1, left half):
// the paper reports at most 12 support vectors for ℓ = 5 … 5000.
func TestSOGSinc(t *testing.T) {
	const reps = 20 // the paper averages 50 runs
	// Bounds on the mean test MSE over the seeded runs: about 1.5× what
	// was measured for ℓ ≤ 10 (where the error is the sinc's own
	// variance, ≈ 0.1), 3× beyond. Measured: 0.109, 0.077, 3.6e-3,
	// 1.1e-3, 2.2e-4, 1.1e-4, 3.2e-5.
	for _, c := range []struct {
		ell    int
		maxMSE float64
	}{
		{5, 0.16}, {10, 0.12}, {50, 0.011}, {100, 3.5e-3}, {500, 6.5e-4}, {1000, 3.5e-4}, {5000, 1e-4},
	} {
		var mse float64
		maxM := 0
		for r := range reps {
			m, e := sogSinc(t, c.ell, uint64(r))
			mse += e / reps
			maxM = max(maxM, m)
		}
		t.Logf("ℓ = %4d  max m = %2d  mean test MSE = %.2e", c.ell, maxM, mse)
		if maxM > 12 {
			t.Errorf("ℓ = %d: dictionary of %d atoms, the paper reports at most 12", c.ell, maxM)
		}
		if !(mse <= c.maxMSE) {
			t.Errorf("ℓ = %d: mean test MSE %.3g > %.3g", c.ell, mse, c.maxMSE)
		}
	}
}

// BenchmarkSOGStep measures one forecasting step, Predict then Learn, on the
// embedded Santa Fe laser series (dimension 5), over a ladder of caps.
func BenchmarkSOGStep(b *testing.B) {
	xs, ys := dataset.Embed(dataset.Scaled(dataset.MustLoad("santafe_laser_a").Values), 5)
	for _, c := range []struct {
		max, steps int
	}{{16, 3}, {32, 3}, {64, 1}, {64, 3}, {128, 3}} {
		b.Run(fmt.Sprintf("dim=5/max=%d/steps=%d", c.max, c.steps), func(b *testing.B) {
			s, err := svr.NewSOGSVR(svr.SOGSVRConfig{Dim: 5, MaxDict: c.max, Steps: c.steps, Nu: 1e-3})
			if err != nil {
				b.Fatal(err)
			}
			for i := range xs { // warm: fill the dictionary
				_ = s.Learn(xs[i], ys[i])
			}
			benchSOGSteps(b, s, xs, ys)
			b.ReportMetric(float64(s.Len()), "atoms")
		})
	}
}

// BenchmarkSOGDefaults is the per-step cost on the defaults, the figure
// held to the ≤ 20 µs goal at dimension 5.
func BenchmarkSOGDefaults(b *testing.B) {
	xs, ys := dataset.Embed(dataset.Scaled(dataset.MustLoad("santafe_laser_a").Values), 5)
	s, err := svr.NewSOGSVR(svr.SOGSVRConfig{Dim: 5})
	if err != nil {
		b.Fatal(err)
	}
	for i := range xs {
		_ = s.Learn(xs[i], ys[i])
	}
	benchSOGSteps(b, s, xs, ys)
	b.ReportMetric(float64(s.Len()), "atoms")
	b.ReportMetric(float64(s.StateBytes()), "state-bytes")
}

// benchSOGSteps times forecast-then-learn steps over xs, ys, cycling, on a
// model already warmed on them.
func benchSOGSteps(b *testing.B, s *svr.SOGSVR, xs [][]float64, ys []float64) {
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, err := s.Predict(xs[i]); err != nil {
			b.Fatal(err)
		}
		if err := s.Learn(xs[i], ys[i]); err != nil {
			b.Fatal(err)
		}
		if i++; i == len(xs) {
			i = 0
		}
	}
}
