package svr

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/forecastd/forecastd/lab/dataset"
)

// closeTol is how near two exact solutions of the same problem must
// predict: they differ only by rounding.
const closeTol = 1e-9

type sampleSeq struct {
	x [][]float64
	y []float64
}

func randomSeq(rng *rand.Rand, n, dim int) sampleSeq {
	var s sampleSeq
	for range n {
		x := randVec(rng, dim)
		s.x = append(s.x, x)
		s.y = append(s.y, math.Sin(3*x[0])+0.5*x[dim-1]+0.1*rng.NormFloat64())
	}
	return s
}

func learnAll(t *testing.T, m *AOSVR, s sampleSeq, from, to int) []uint64 {
	t.Helper()
	var ids []uint64
	for i := from; i < to; i++ {
		id, err := m.Add(s.x[i], s.y[i])
		if err != nil {
			t.Fatalf("Add sample %d: %v", i, err)
		}
		ids = append(ids, id)
	}
	return ids
}

// samePredictions fails unless a and b predict within tol at the probes.
func samePredictions(t *testing.T, a, b *AOSVR, probes [][]float64, tol float64, what string) {
	t.Helper()
	for i, p := range probes {
		pa, err := a.Predict(p)
		if err != nil {
			t.Fatal(err)
		}
		pb, err := b.Predict(p)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(pa-pb) > tol {
			t.Fatalf("%s: probe %d: %.12g vs %.12g (diff %.3g)", what, i, pa, pb, pa-pb)
		}
	}
}

// TestAOSVRForgetEqualsFresh: learning a…z and then forgetting a predicts
// like a fresh model that learned b…z, for every step of a slide.
func TestAOSVRForgetEqualsFresh(t *testing.T) {
	for _, c := range []struct {
		n        int
		eps, cap float64
	}{{5, 0.1, 10}, {20, 0.1, 10}, {20, 0.01, 10}, {60, 0.05, 1}, {30, 0, 100}, {40, 0.1, 1e-3}} {
		t.Run(fmt.Sprintf("n=%d/eps=%g/C=%g", c.n, c.eps, c.cap), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(11, uint64(c.n)))
			s := randomSeq(rng, c.n+12, 2)
			probes := randomSeq(rng, 15, 2).x
			for start := 0; start < 12; start++ {
				full := newTestAOSVR(t, 2, c.cap, c.eps, RBF{Gamma: 2})
				learnAll(t, full, s, start, start+c.n)
				if err := full.ForgetOldest(); err != nil {
					t.Fatal(err)
				}
				checkKKT(t, full, "after forget")
				fresh := newTestAOSVR(t, 2, c.cap, c.eps, RBF{Gamma: 2})
				learnAll(t, fresh, s, start+1, start+c.n)
				samePredictions(t, full, fresh, probes, closeTol, fmt.Sprintf("start %d", start))
				if full.NumSupport() != fresh.NumSupport() {
					t.Errorf("start %d: %d support vectors after forgetting, fresh model has %d", start, full.NumSupport(), fresh.NumSupport())
				}
			}
		})
	}
}

// TestAOSVRRemoveAnyOrder removes samples by handle in random order and
// compares with a fresh model on the samples left, after every removal.
func TestAOSVRRemoveAnyOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	s := randomSeq(rng, 40, 3)
	probes := randomSeq(rng, 10, 3).x
	for _, eps := range []float64{0.1, 0.02} {
		m := newTestAOSVR(t, 3, 5, eps, RBF{Gamma: 1})
		ids := learnAll(t, m, s, 0, len(s.x))
		alive := make([]bool, len(ids))
		for i := range alive {
			alive[i] = true
		}
		for _, k := range rng.Perm(len(ids))[:30] {
			if err := m.Remove(ids[k]); err != nil {
				t.Fatal(err)
			}
			alive[k] = false
			checkKKT(t, m, fmt.Sprintf("remove %d", k))
			fresh := newTestAOSVR(t, 3, 5, eps, RBF{Gamma: 1})
			for i, a := range alive {
				if a {
					if err := fresh.Learn(s.x[i], s.y[i]); err != nil {
						t.Fatal(err)
					}
				}
			}
			samePredictions(t, m, fresh, probes, closeTol, fmt.Sprintf("after removing %d", k))
		}
		if err := m.Remove(ids[0]); err == nil && !alive[0] {
			t.Error("removing an absent handle succeeded")
		}
	}
}

// TestAOSVRUpdateTarget changes stored targets and compares with a fresh
// model trained on the changed targets.
func TestAOSVRUpdateTarget(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 32))
	s := randomSeq(rng, 30, 2)
	probes := randomSeq(rng, 10, 2).x
	for _, eps := range []float64{0.1, 0.01, 0} {
		m := newTestAOSVR(t, 2, 3, eps, RBF{Gamma: 1})
		ids := learnAll(t, m, s, 0, len(s.x))
		for step := range 25 {
			k := rng.IntN(len(ids))
			s.y[k] += rng.NormFloat64()
			if err := m.UpdateTarget(ids[k], s.y[k]); err != nil {
				t.Fatal(err)
			}
			checkKKT(t, m, fmt.Sprintf("update %d", step))
			fresh := newTestAOSVR(t, 2, 3, eps, RBF{Gamma: 1})
			learnAll(t, fresh, s, 0, len(s.x))
			samePredictions(t, m, fresh, probes, closeTol, fmt.Sprintf("eps %g update %d", eps, step))
		}
		if err := m.UpdateTarget(ids[3], math.NaN()); !errors.Is(err, ErrBadInput) {
			t.Errorf("UpdateTarget(NaN) = %v", err)
		}
		if err := m.UpdateTarget(1<<40, 1); !errors.Is(err, ErrNotFound) {
			t.Errorf("UpdateTarget(unknown) = %v", err)
		}
	}
}

// TestAOSVREmptyMarginSet drives the model through states where no sample
// is a free margin vector, so that b moves alone, and checks that b is then
// the middle of its feasible interval, as a batch solver leaves it.
func TestAOSVREmptyMarginSet(t *testing.T) {
	// A wide tube: most samples fit inside it with θ = 0.
	m := newTestAOSVR(t, 1, 1, 0.5, RBF{Gamma: 1})
	xs := []float64{0, 0.5, 1, -0.3, 0.8, 2}
	ys := []float64{0.2, 0.4, 2.1, -0.1, 0.3, -1.5}
	sawEmpty := false
	for i := range xs {
		if err := m.Learn([]float64{xs[i]}, ys[i]); err != nil {
			t.Fatal(err)
		}
		checkKKT(t, m, fmt.Sprintf("sample %d", i))
		if s, _, _ := m.Sizes(); s == 0 {
			sawEmpty = true
			lo, hi := feasibleBias(m)
			if mid := (lo + hi) / 2; math.Abs(m.Bias()-mid) > 1e-12 {
				t.Errorf("sample %d: S empty, b = %v, want the middle %v of [%v, %v]", i, m.Bias(), mid, lo, hi)
			}
		}
	}
	if !sawEmpty {
		t.Fatal("the sequence never left S empty: the test does not exercise the path")
	}
	// One sample: b is its target (the middle of [y−ε, y+ε]).
	one := newTestAOSVR(t, 1, 1, 0.1, RBF{Gamma: 1})
	if err := one.Learn([]float64{3}, 7); err != nil {
		t.Fatal(err)
	}
	if one.Bias() != 7 {
		t.Errorf("one sample: b = %v, want 7", one.Bias())
	}
	// Two samples far apart in y: eq. 3.14.
	two := newTestAOSVR(t, 1, 10, 0.1, RBF{Gamma: 1})
	x1, x2 := []float64{0}, []float64{1}
	y1, y2 := 1.0, -1.0
	_ = two.Learn(x1, y1)
	_ = two.Learn(x2, y2)
	k11, k12 := 1.0, math.Exp(-1)
	theta1 := math.Max(0, math.Min(10, (y1-y2-2*0.1)/(2*(k11-k12))))
	f1, _ := two.Predict(x1)
	wantF1 := theta1*k11 - theta1*k12 + (y1+y2)/2
	if math.Abs(f1-wantF1) > 1e-12 || math.Abs(two.Bias()-(y1+y2)/2) > 1e-12 {
		t.Errorf("two samples: f(x1) = %v, b = %v; eq. 3.14 gives %v, %v", f1, two.Bias(), wantF1, (y1+y2)/2)
	}
}

// feasibleBias recomputes, independently of the model's bookkeeping, the
// interval of b that keeps every sample's KKT conditions with θ fixed.
func feasibleBias(m *AOSVR) (lo, hi float64) {
	lo, hi = math.Inf(-1), math.Inf(1)
	for i := 0; i < m.n; i++ {
		xi := make([]float64, m.dim)
		m.rowInto(xi, i)
		f := 0.0
		for j := 0; j < m.n; j++ {
			f += m.theta[j] * m.kernel(j, xi)
		}
		r := f - m.y[i] // h_i − b
		switch t := m.theta[i]; {
		case t == 0:
			lo, hi = math.Max(lo, -m.eps-r), math.Min(hi, m.eps-r)
		case t > 0:
			hi = math.Min(hi, -m.eps-r)
		default:
			lo = math.Max(lo, m.eps-r)
		}
	}
	return lo, hi
}

// TestAOSVRDegenerateInputs: duplicate inputs with equal and different
// targets, a constant series, a window of identical vectors.
func TestAOSVRDegenerateInputs(t *testing.T) {
	t.Run("duplicates", func(t *testing.T) {
		for _, eps := range []float64{0.1, 0} {
			m := newTestAOSVR(t, 2, 10, eps, RBF{Gamma: 1})
			rng := rand.New(rand.NewPCG(41, 42))
			base := randomSeq(rng, 8, 2)
			for i := range 80 {
				k := rng.IntN(len(base.x))
				y := base.y[k]
				if i%3 == 0 {
					y += 0.5 * rng.NormFloat64() // same x, other target
				}
				if err := m.Learn(base.x[k], y); err != nil {
					t.Fatal(err)
				}
				checkKKT(t, m, fmt.Sprintf("eps %g duplicate %d", eps, i))
				if m.Len() > 30 {
					if err := m.ForgetOldest(); err != nil {
						t.Fatal(err)
					}
					checkKKT(t, m, fmt.Sprintf("eps %g forget %d", eps, i))
				}
			}
			if s, _, _ := m.Sizes(); s > len(base.x) {
				t.Errorf("|S| = %d with only %d distinct inputs: dependent samples entered S", s, len(base.x))
			}
		}
	})
	t.Run("constant series", func(t *testing.T) {
		m := newTestAOSVR(t, 5, 10, 0.1, RBF{Gamma: 1})
		x := []float64{0.3, 0.3, 0.3, 0.3, 0.3}
		for i := range 300 {
			if m.Len() == 50 {
				if err := m.ForgetOldest(); err != nil {
					t.Fatal(err)
				}
			}
			if err := m.Learn(x, 0.3); err != nil {
				t.Fatal(err)
			}
			if i%25 == 0 {
				checkKKT(t, m, fmt.Sprintf("step %d", i))
			}
		}
		if p, _ := m.Predict(x); math.Abs(p-0.3) > 1e-12 {
			t.Errorf("constant series predicts %v, want 0.3", p)
		}
		if s, _, _ := m.Sizes(); s != 0 {
			t.Errorf("constant series: |S| = %d, want 0", s)
		}
	})
	t.Run("identical inputs, spread targets", func(t *testing.T) {
		m := newTestAOSVR(t, 1, 2, 0.05, RBF{Gamma: 1})
		rng := rand.New(rand.NewPCG(43, 44))
		for i := range 100 {
			if err := m.Learn([]float64{1}, rng.NormFloat64()); err != nil {
				t.Fatal(err)
			}
			checkKKT(t, m, fmt.Sprintf("step %d", i))
		}
		if s, _, _ := m.Sizes(); s > 1 {
			t.Errorf("|S| = %d for one distinct input", s)
		}
	})
}

func TestAOSVROtherKernels(t *testing.T) {
	for _, k := range []Kernel{Linear{}, Poly{Gamma: 1, Coef0: 1, Degree: 2}, RBF{Gamma: 0.1}} {
		t.Run(k.String(), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(51, 52))
			s := randomSeq(rng, 200, 3)
			m := newTestAOSVR(t, 3, 10, 0.05, k)
			for i := range s.x {
				if m.Len() == 40 {
					if err := m.ForgetOldest(); err != nil {
						t.Fatal(err)
					}
					checkKKT(t, m, fmt.Sprintf("forget %d", i))
				}
				if err := m.Learn(s.x[i], s.y[i]); err != nil {
					t.Fatal(err)
				}
				checkKKT(t, m, fmt.Sprintf("learn %d", i))
			}
			if k, ok := k.(Linear); ok {
				// In 3 dimensions at most 4 samples can be affinely independent.
				if s, _, _ := m.Sizes(); s > 4 {
					t.Errorf("%v: |S| = %d > d+1", k, s)
				}
			}
		})
	}
}

func TestAOSVRBadConfig(t *testing.T) {
	for _, c := range []struct {
		cfg  AOSVRConfig
		want string
	}{
		{AOSVRConfig{Dim: 0, C: 1}, "Dim"},
		{AOSVRConfig{Dim: 2, C: 0}, "C must be positive"},
		{AOSVRConfig{Dim: 2, C: -1}, "C must be positive"},
		{AOSVRConfig{Dim: 2, C: math.NaN()}, "C must be positive"},
		{AOSVRConfig{Dim: 2, C: math.Inf(1)}, "C must be positive"},
		{AOSVRConfig{Dim: 2, C: 1, Epsilon: -0.1}, "Epsilon"},
		{AOSVRConfig{Dim: 2, C: 1, Epsilon: math.NaN()}, "Epsilon"},
		{AOSVRConfig{Dim: 2, C: 1, Kernel: RBF{Gamma: 0}}, "gamma"},
		{AOSVRConfig{Dim: 2, C: 1, Kernel: RBF{Gamma: -1}}, "gamma"},
		{AOSVRConfig{Dim: 2, C: 1, Kernel: Poly{Gamma: 1, Degree: 0}}, "degree"},
		{AOSVRConfig{Dim: 2, C: 1, Kernel: Poly{Gamma: 1, Coef0: -1, Degree: 2}}, "coef0"},
		{AOSVRConfig{Dim: 2, C: 1, Capacity: -5}, "Capacity"},
	} {
		_, err := NewAOSVR(c.cfg)
		if !errors.Is(err, ErrBadConfig) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("NewAOSVR(%+v) = %v, want an ErrBadConfig naming %q", c.cfg, err, c.want)
		}
	}
	if _, err := NewAOSVR(AOSVRConfig{Dim: 1, C: 1}); err != nil {
		t.Errorf("minimal config refused: %v", err)
	}
}

func TestAOSVREmptyModel(t *testing.T) {
	m := newTestAOSVR(t, 2, 1, 0.1, nil)
	if err := m.ForgetOldest(); !errors.Is(err, ErrEmpty) {
		t.Errorf("ForgetOldest on empty = %v", err)
	}
	if err := m.Remove(0); !errors.Is(err, ErrNotFound) {
		t.Errorf("Remove on empty = %v", err)
	}
	if p, err := m.Predict([]float64{1, 2}); err != nil || p != 0 {
		t.Errorf("Predict on empty = %v, %v", p, err)
	}
	if _, ok := m.Oldest(); ok {
		t.Error("Oldest on empty reports a sample")
	}
	// Learn everything, forget everything, learn again.
	rng := rand.New(rand.NewPCG(61, 62))
	s := randomSeq(rng, 20, 2)
	for round := range 3 {
		learnAll(t, m, s, 0, 20)
		for m.Len() > 0 {
			if err := m.ForgetOldest(); err != nil {
				t.Fatal(err)
			}
			checkKKT(t, m, fmt.Sprintf("round %d", round))
		}
	}
}

// TestAOSVRZeroAllocsWarm: once storage has grown to the window, a
// forget-and-learn step allocates nothing.
func TestAOSVRZeroAllocsWarm(t *testing.T) {
	xs, ys := mackeyGlassSamples(3000)
	for _, eps := range []float64{0.1, 0.01} {
		m, err := NewAOSVR(AOSVRConfig{Dim: 5, C: 10, Epsilon: eps, Capacity: 200})
		if err != nil {
			t.Fatal(err)
		}
		next := 0
		step := func() {
			if m.Len() == 200 {
				if err := m.ForgetOldest(); err != nil {
					t.Fatal(err)
				}
			}
			if err := m.Learn(xs[next], ys[next]); err != nil {
				t.Fatal(err)
			}
			next = (next + 1) % len(xs)
		}
		for range 1500 {
			step()
		}
		if a := testing.AllocsPerRun(1000, step); a != 0 {
			t.Errorf("eps %g: %v allocations per warm step", eps, a)
		}
		if _, err := m.Predict(xs[0]); err != nil {
			t.Fatal(err)
		}
		if a := testing.AllocsPerRun(100, func() { _, _ = m.Predict(xs[7]) }); a != 0 {
			t.Errorf("Predict allocates %v", a)
		}
	}
}

// TestAOSVRExportImport checkpoints a sliding model mid-stream, restores
// it into a fresh model, and runs both on: their forecasts agree within
// 1e-9 at once and after every later step.
func TestAOSVRExportImport(t *testing.T) {
	xs, ys := mackeyGlassSamples(1200)
	for _, eps := range []float64{0.1, 0.01} {
		cfg := AOSVRConfig{Dim: 5, C: 10, Epsilon: eps, Capacity: 100}
		a, _ := NewAOSVR(cfg)
		step := func(m *AOSVR, i int) {
			if m.Len() == 100 {
				if err := m.ForgetOldest(); err != nil {
					t.Fatal(err)
				}
			}
			if err := m.Learn(xs[i], ys[i]); err != nil {
				t.Fatal(err)
			}
		}
		for i := range 400 {
			step(a, i)
		}
		st := a.Export()
		b, _ := NewAOSVR(cfg)
		if err := b.Import(st); err != nil {
			t.Fatal(err)
		}
		checkKKT(t, b, "after import")
		// Without the incremental state: recomputed, equal to rounding.
		approx := st
		approx.H, approx.R, approx.Ops, approx.RefreshPending = nil, nil, 0, false
		c, _ := NewAOSVR(cfg)
		if err := c.Import(approx); err != nil {
			t.Fatal(err)
		}
		for i := 400; i < 1100; i++ {
			pa, _ := a.Predict(xs[i])
			pb, _ := b.Predict(xs[i])
			pc, _ := c.Predict(xs[i])
			if pa != pb {
				t.Fatalf("eps %g step %d: uninterrupted %.17g, exactly restored %.17g", eps, i, pa, pb)
			}
			if math.Abs(pa-pc) > 1e-9 {
				t.Fatalf("eps %g step %d: uninterrupted %.15g, recomputed %.15g", eps, i, pa, pc)
			}
			step(a, i)
			step(b, i)
			step(c, i)
		}
		if a.Len() != b.Len() || a.NumSupport() != b.NumSupport() {
			t.Errorf("eps %g: %d/%d samples, %d/%d support vectors", eps, a.Len(), b.Len(), a.NumSupport(), b.NumSupport())
		}
		// Handles survive: the oldest is the same sample.
		oa, _ := a.Oldest()
		ob, _ := b.Oldest()
		if oa != ob {
			t.Errorf("oldest handle %d vs %d", oa, ob)
		}
	}
}

func TestAOSVRImportRejectsBadState(t *testing.T) {
	rng := rand.New(rand.NewPCG(81, 82))
	s := randomSeq(rng, 30, 2)
	src := newTestAOSVR(t, 2, 1, 0.05, nil)
	learnAll(t, src, s, 0, 30)
	good := src.Export()
	probe := []float64{0.3, -0.2}
	for _, c := range []struct {
		name   string
		break_ func(st *AOSVRState)
		want   string
	}{
		{"dimension", func(st *AOSVRState) { st.Dim = 3 }, "dimension"},
		{"lengths", func(st *AOSVRState) { st.Y = st.Y[1:] }, "targets"},
		{"NaN input", func(st *AOSVRState) { st.X[3] = []float64{math.NaN(), 0} }, "sample 3"},
		{"coefficient out of box", func(st *AOSVRState) { st.Theta[0] = 5 }, "outside"},
		{"unbalanced", func(st *AOSVRState) {
			for i := range st.Theta {
				if st.Theta[i] == 0 {
					st.Theta[i] = 0.5
					return
				}
			}
		}, "sum"},
		{"repeated handle", func(st *AOSVRState) { st.IDs[1] = st.IDs[0] }, "handle"},
		{"margin out of range", func(st *AOSVRState) { st.Margin = append(st.Margin, 99) }, "margin"},
		{"bias", func(st *AOSVRState) { st.Bias = math.Inf(1) }, "bias"},
		{"margins length", func(st *AOSVRState) { st.H = st.H[1:] }, "margins"},
		{"R length", func(st *AOSVRState) { st.R = st.R[1:] }, "entries of R"},
		{"NaN in R", func(st *AOSVRState) { st.R[0] = math.NaN() }, "R entry"},
		{"NaN margin", func(st *AOSVRState) { st.H[2] = math.NaN() }, "margin 2"},
	} {
		dst := newTestAOSVR(t, 2, 1, 0.05, nil)
		learnAll(t, dst, s, 0, 5)
		before, _ := dst.Predict(probe)
		st := src.Export()
		c.break_(&st)
		err := dst.Import(st)
		if !errors.Is(err, ErrBadInput) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: Import = %v, want ErrBadInput naming %q", c.name, err, c.want)
		}
		if after, _ := dst.Predict(probe); after != before {
			t.Errorf("%s: refused import changed the model", c.name)
		}
	}
	dst := newTestAOSVR(t, 2, 1, 0.05, nil)
	if err := dst.Import(good); err != nil {
		t.Fatal(err)
	}
	samePredictions(t, src, dst, [][]float64{probe, {1, 1}, {-1, 0.5}}, 1e-12, "good import")
}

// TestAOSVRQuantizedStreams: real-looking and heavily quantized streams,
// where exact duplicate inputs are common (an integer random walk on
// 0…8, embedded with B = 5, repeats its vectors constantly), keep the KKT
// conditions at rounding level over thousands of window steps.
func TestAOSVRQuantizedStreams(t *testing.T) {
	rng := rand.New(rand.NewPCG(91, 92))
	walk := make([]float64, 4000)
	v := 4.0
	for i := range walk {
		v = math.Max(0, math.Min(8, v+float64(rng.IntN(3)-1)))
		walk[i] = v
	}
	sensor := dataset.MustLoad("sensor_temperature_15min").Values
	for _, c := range []struct {
		name string
		vals []float64
		eps  float64
	}{{"integer walk", walk, 0.1}, {"integer walk", walk, 0.01}, {"sensor", sensor, 0.01}} {
		xs, ys := dataset.Embed(dataset.Scaled(c.vals), 5)
		m, err := NewAOSVR(AOSVRConfig{Dim: 5, C: 10, Epsilon: c.eps, Capacity: 200})
		if err != nil {
			t.Fatal(err)
		}
		worst := 0.0
		for i := range xs {
			if m.Len() == 200 {
				if err := m.ForgetOldest(); err != nil {
					t.Fatal(err)
				}
			}
			if err := m.Learn(xs[i], ys[i]); err != nil {
				t.Fatal(err)
			}
			if i%25 == 0 {
				worst = math.Max(worst, m.MaxKKTViolation())
			}
		}
		if !(worst <= kktTol) {
			t.Errorf("%s, ε = %g: KKT violation %.3g over %d steps", c.name, c.eps, worst, len(xs))
		}
		t.Logf("%s, ε = %g: %d steps, worst KKT violation %.2g, %+v", c.name, c.eps, len(xs), worst, m.Stats())
	}
}
