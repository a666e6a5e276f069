package svr_test

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/forecastd/forecastd/lab/dataset"
	"github.com/forecastd/forecastd/lab/mackeyglass"
	"github.com/forecastd/forecastd/svr"
	"github.com/forecastd/forecastd/svr/svrtest"
)

var normaLosses = []svr.NORMALoss{svr.NORMASquared, svr.NORMAEpsilonNu, svr.NORMAHuber}

func newNORMA(t testing.TB, cfg svr.NORMAConfig) *svr.NORMA {
	t.Helper()
	m, err := svr.NewNORMA(cfg)
	if err != nil {
		t.Fatalf("NewNORMA(%+v): %v", cfg, err)
	}
	return m
}

func TestNORMAConformance(t *testing.T) {
	// linearTol per loss: the largest MSE on svrtest's linear target after
	// 400 samples. The squared loss fits it to ~0.003; the ε-insensitive
	// and Huber losses take sign steps of ηC on part of the samples and
	// are slower (~0.01).
	tols := map[svr.NORMALoss]float64{svr.NORMASquared: 0.01, svr.NORMAEpsilonNu: 0.025, svr.NORMAHuber: 0.025}
	for _, loss := range normaLosses {
		for _, sched := range []svr.NORMASchedule{svr.NORMAConstantRate, svr.NORMAInvSqrtRate} {
			t.Run(loss.String()+"/"+sched.String(), func(t *testing.T) {
				cfg := svr.NORMAConfig{Loss: loss, Schedule: sched}
				if sched == svr.NORMAInvSqrtRate {
					// η/√t decays: start higher, as Theorem 2 does.
					cfg.Eta = 4 * newNORMA(t, svr.NORMAConfig{Dim: 1, Loss: loss}).Config().Eta
				}
				svrtest.Test(t, func(dim int) svr.Regressor {
					c := cfg
					c.Dim = dim
					return newNORMA(t, c)
				}, tols[loss])
			})
		}
	}
}

func TestNORMADefaults(t *testing.T) {
	m := newNORMA(t, svr.NORMAConfig{Dim: 5})
	got := m.Config()
	want := svr.NORMAConfig{Dim: 5, Kernel: svr.RBF{Gamma: 1}, Loss: svr.NORMASquared, Eta: 0.25,
		Lambda: 0.003, C: 1, Nu: 0.3, Tau: svr.DefaultNORMATau}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("defaults:\n got %+v\nwant %+v", got, want)
	}
	if m.Len() != 0 || m.Steps() != 0 || m.Offset() != 0 || m.Width() != 0 {
		t.Errorf("new model not empty: len %d steps %d offset %v width %v", m.Len(), m.Steps(), m.Offset(), m.Width())
	}
	for _, s := range []string{"", "squared", "epsilon", "huber"} {
		l, err := svr.ParseNORMALoss(s)
		if err != nil || (s != "" && l.String() != s) {
			t.Errorf("ParseNORMALoss(%q) = %v, %v", s, l, err)
		}
	}
	for _, s := range []string{"", "constant", "inv_sqrt"} {
		l, err := svr.ParseNORMASchedule(s)
		if err != nil || (s != "" && l.String() != s) {
			t.Errorf("ParseNORMASchedule(%q) = %v, %v", s, l, err)
		}
	}
	if _, err := svr.ParseNORMALoss("hinge"); !errors.Is(err, svr.ErrBadConfig) || !strings.Contains(err.Error(), `unknown loss "hinge"`) {
		t.Errorf("ParseNORMALoss(hinge) = %v", err)
	}
	if _, err := svr.ParseNORMASchedule("1/t"); !errors.Is(err, svr.ErrBadConfig) || !strings.Contains(err.Error(), `unknown schedule "1/t"`) {
		t.Errorf("ParseNORMASchedule(1/t) = %v", err)
	}
}

func TestNORMABadConfig(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	cases := []struct {
		name  string
		cfg   svr.NORMAConfig
		field string
	}{
		{"zero Dim", svr.NORMAConfig{}, "Dim"},
		{"negative Dim", svr.NORMAConfig{Dim: -2}, "Dim"},
		{"negative Merge", svr.NORMAConfig{Dim: 3, Merge: -0.1}, "Merge"},
		{"Merge 1", svr.NORMAConfig{Dim: 3, Merge: 1}, "Merge"},
		{"negative C", svr.NORMAConfig{Dim: 3, C: -1}, "C"},
		{"NaN C", svr.NORMAConfig{Dim: 3, C: nan}, "C"},
		{"infinite C", svr.NORMAConfig{Dim: 3, C: inf}, "C"},
		{"negative Lambda", svr.NORMAConfig{Dim: 3, Lambda: -0.1}, "Lambda"},
		{"NaN Lambda", svr.NORMAConfig{Dim: 3, Lambda: nan}, "Lambda"},
		{"negative Eta", svr.NORMAConfig{Dim: 3, Eta: -0.5}, "Eta"},
		{"infinite Eta", svr.NORMAConfig{Dim: 3, Eta: inf}, "Eta"},
		{"Lambda·Eta = 1", svr.NORMAConfig{Dim: 3, Eta: 0.5, Lambda: 2}, "Lambda·Eta"},
		{"negative Nu", svr.NORMAConfig{Dim: 3, Nu: -0.1}, "Nu"},
		{"Nu above 1", svr.NORMAConfig{Dim: 3, Nu: 1.5}, "Nu"},
		{"NaN Nu", svr.NORMAConfig{Dim: 3, Nu: nan}, "Nu"},
		{"negative Tau", svr.NORMAConfig{Dim: 3, Tau: -1}, "Tau"},
		{"invalid kernel", svr.NORMAConfig{Dim: 3, Kernel: svr.RBF{Gamma: -1}}, "Kernel"},
		{"invalid poly kernel", svr.NORMAConfig{Dim: 3, Kernel: svr.Poly{Gamma: 1, Degree: 0}}, "Kernel"},
		{"unknown loss", svr.NORMAConfig{Dim: 3, Loss: 7}, "Loss"},
		{"unknown schedule", svr.NORMAConfig{Dim: 3, Schedule: -1}, "Schedule"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m, err := svr.NewNORMA(c.cfg)
			if err == nil {
				t.Fatalf("NewNORMA(%+v) accepted", c.cfg)
			}
			if m != nil {
				t.Errorf("NewNORMA returned a model with error %v", err)
			}
			if !errors.Is(err, svr.ErrBadConfig) {
				t.Errorf("error %v does not wrap ErrBadConfig", err)
			}
			if !hasFieldError(err, "norma", c.field) {
				t.Errorf("error %q has no *svr.FieldError of norma's %s", err, c.field)
			}
		})
	}
	// Every problem is reported at once.
	_, err := svr.NewNORMA(svr.NORMAConfig{Dim: 0, Eta: -1, Tau: -3})
	for _, f := range []string{"Dim", "Eta", "Tau"} {
		if !hasFieldError(err, "norma", f) {
			t.Errorf("joined error %v does not name %s", err, f)
		}
	}
	// The edges of the valid ranges are accepted.
	for _, cfg := range []svr.NORMAConfig{
		{Dim: 1, Nu: 1, Tau: 1},
		{Dim: 2, Loss: svr.NORMAHuber, Kernel: svr.Linear{}, Eta: 1e-9, Lambda: 1e6},
		{Dim: 2, Loss: svr.NORMAEpsilonNu, Kernel: svr.Poly{Gamma: 1, Degree: 2}, Schedule: svr.NORMAInvSqrtRate},
	} {
		if _, err := svr.NewNORMA(cfg); err != nil {
			t.Errorf("NewNORMA(%+v): %v", cfg, err)
		}
	}
}

// normaStationary returns n samples of a noisy nonlinear AR(2) process (seeded).
func normaStationary(n int, seed uint64) []float64 {
	rng := rand.New(rand.NewPCG(seed, 17))
	s := make([]float64, n)
	for t := 2; t < n; t++ {
		s[t] = 0.6*math.Sin(2.5*s[t-1]) - 0.3*s[t-2] + 0.15*rng.NormFloat64()
	}
	return s
}

func TestNORMARefusedLeavesModelUnchanged(t *testing.T) {
	xs, ys := dataset.Embed(normaStationary(200, 1), 3)
	for _, loss := range normaLosses {
		t.Run(loss.String(), func(t *testing.T) {
			m := newNORMA(t, svr.NORMAConfig{Dim: 3, Loss: loss, Tau: 50})
			for i := range xs {
				if err := m.Learn(xs[i], ys[i]); err != nil {
					t.Fatal(err)
				}
			}
			before := m.Export()
			nan := math.NaN()
			for _, bad := range []struct {
				x []float64
				y float64
			}{{[]float64{0, nan, 0}, 1}, {[]float64{0, 0}, 1}, {[]float64{0, 0, 0}, math.Inf(-1)}, {nil, 0}} {
				if err := m.Learn(bad.x, bad.y); !errors.Is(err, svr.ErrBadInput) {
					t.Errorf("Learn(%v, %v) = %v, want ErrBadInput", bad.x, bad.y, err)
				}
			}
			if after := m.Export(); !reflect.DeepEqual(before, after) {
				t.Fatal("refused input changed the model")
			}
		})
	}
	// A step whose coefficient would overflow is refused as a numerical
	// failure, and nothing non-finite enters the model.
	m := newNORMA(t, svr.NORMAConfig{Dim: 1, C: 1e300})
	if err := m.Learn([]float64{0}, 1e-300); err != nil {
		t.Fatal(err)
	}
	before := m.Export()
	if err := m.Learn([]float64{0.5}, 1e10); !errors.Is(err, svr.ErrNumerical) {
		t.Fatalf("Learn with an overflowing step = %v, want ErrNumerical", err)
	}
	if after := m.Export(); !reflect.DeepEqual(before, after) {
		t.Fatal("refused step changed the model")
	}
	if v, err := m.Predict([]float64{0.5}); err != nil || !normaIsFinite(v) {
		t.Fatalf("Predict = %v, %v", v, err)
	}
}

func normaIsFinite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// TestNORMANuFraction checks the ν-trick (eqs. 18 and 21, with the
// increments of the equation, not of the prose): the fraction of samples
// outside the tube ε (or Huber's σ), each measured before it is learned,
// converges to ν. With the prose's swapped increments it would be 1 − ν.
func TestNORMANuFraction(t *testing.T) {
	xs, ys := dataset.Embed(normaStationary(20_000+5, 2), 5)
	for _, loss := range []svr.NORMALoss{svr.NORMAEpsilonNu, svr.NORMAHuber} {
		for _, nu := range []float64{0.1, 0.3, 0.7} {
			t.Run(fmt.Sprintf("%v/nu=%g", loss, nu), func(t *testing.T) {
				m := newNORMA(t, svr.NORMAConfig{Dim: 5, Loss: loss, Nu: nu, Tau: 200})
				out := 0
				for i := range xs {
					p, err := m.Predict(xs[i])
					if err != nil {
						t.Fatal(err)
					}
					if math.Abs(ys[i]-p) > m.Width() {
						out++
					}
					if err := m.Learn(xs[i], ys[i]); err != nil {
						t.Fatal(err)
					}
				}
				frac := float64(out) / float64(len(xs))
				t.Logf("fraction outside over %d samples: %.4f (ν = %g), final width %.4f", len(xs), frac, nu, m.Width())
				if math.Abs(frac-nu) > 0.02 {
					t.Errorf("fraction outside = %.4f, want ν = %g ± 0.02", frac, nu)
				}
			})
		}
	}
}

// normaTerm is one term of the untruncated expansion, as born.
type normaTerm struct {
	x     []float64
	alpha float64 // α_t when it was added
	born  int64
}

// TestNORMATruncationBound checks Proposition 1: the model's prediction is
// the expansion of its own history truncated to the newest terms, every
// dropped term is at least τ steps old, and the RKHS norm of the dropped
// part stays within Σ_{i ≤ t−τ} η(1 − λη)^{t−i}·C·X (eq. 11), where X = 1
// for the RBF kernel.
func TestNORMATruncationBound(t *testing.T) {
	const (
		tau    = 30
		eta    = 0.2
		lambda = 0.5
		c      = 1.0
		n      = 600
	)
	xs, ys := dataset.Embed(normaStationary(n+5, 3), 5)
	k := svr.RBF{Gamma: 1}
	m := newNORMA(t, svr.NORMAConfig{Dim: 5, Loss: svr.NORMAEpsilonNu, Eta: eta, Lambda: lambda, C: c, Nu: 0.5, Tau: tau})
	var hist []normaTerm
	shrink := 1 - lambda*eta
	probes := xs[:20]
	maxNorm := 0.0
	for i := range xs {
		step := int64(i + 1)
		if err := m.Learn(xs[i], ys[i]); err != nil {
			t.Fatal(err)
		}
		st := m.Export()
		if l := len(st.Born); l > 0 && st.Born[l-1] == step {
			hist = append(hist, normaTerm{slices.Clone(xs[i]), st.Scale * st.Coef[l-1], step})
		}
		if step%50 != 0 {
			continue
		}
		alpha := func(h normaTerm) float64 { return h.alpha * math.Pow(shrink, float64(step-h.born)) }
		// The ring holds exactly the newest len(st.Coef) terms of the history.
		kept := hist[len(hist)-len(st.Coef):]
		for j, h := range kept {
			if h.born != st.Born[j] {
				t.Fatalf("step %d: term %d born at %d, history says %d", step, j, st.Born[j], h.born)
			}
			if a := st.Scale * st.Coef[j]; math.Abs(a-alpha(h)) > 1e-12*math.Abs(alpha(h)) {
				t.Fatalf("step %d: term %d has α = %v, want %v", step, j, a, alpha(h))
			}
		}
		dropped := hist[:len(hist)-len(kept)]
		for _, h := range dropped {
			if h.born > step-tau {
				t.Fatalf("step %d: dropped a term born at %d, younger than τ = %d steps", step, h.born, tau)
			}
		}
		// The prediction is the truncated expansion.
		for _, p := range probes {
			want := st.Offset
			for _, h := range kept {
				want += alpha(h) * k.Eval(h.x, p)
			}
			got, err := m.Predict(p)
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(got-want) > 1e-12 {
				t.Fatalf("step %d: Predict = %v, truncated expansion = %v", step, got, want)
			}
		}
		// ‖f − f_trunc‖² = Σ_ij a_i a_j k(x_i, x_j) over the dropped terms.
		var norm2 float64
		for _, hi := range dropped {
			for _, hj := range dropped {
				norm2 += alpha(hi) * alpha(hj) * k.Eval(hi.x, hj.x)
			}
		}
		norm := math.Sqrt(max(0, norm2))
		var bound float64
		for i := int64(1); i <= step-tau; i++ {
			bound += eta * math.Pow(shrink, float64(step-i)) * c
		}
		loose := math.Pow(shrink, tau) * c / lambda
		if norm > bound || bound > loose*(1+1e-12) {
			t.Fatalf("step %d: ‖f − f_trunc‖ = %.3g, Proposition 1 bound %.3g (< %.3g)", step, norm, bound, loose)
		}
		maxNorm = max(maxNorm, norm/bound)
	}
	if maxNorm == 0 {
		t.Fatal("no term was ever dropped: the test checks nothing")
	}
	t.Logf("largest ‖f − f_trunc‖ / bound: %.3f", maxNorm)
}

// naiveNORMA is eqs. 6–10, 17, 18 and 21 applied literally: every
// coefficient is multiplied by (1 − λη_t) at every step.
type naiveNORMA struct {
	cfg   svr.NORMAConfig
	xs    [][]float64
	alpha []float64
	b, w  float64
	t     int
	// merged counts the terms added to a held one (Merge).
	merged int
}

func (m *naiveNORMA) predict(x []float64) float64 {
	g := m.b
	for i, xi := range m.xs {
		g += m.alpha[i] * m.cfg.Kernel.Eval(xi, x)
	}
	return g
}

func (m *naiveNORMA) learn(x []float64, y float64) {
	m.t++
	eta := m.cfg.Eta
	if m.cfg.Schedule == svr.NORMAInvSqrtRate {
		eta /= math.Sqrt(float64(m.t))
	}
	r := y - m.predict(x)
	var a float64
	switch m.cfg.Loss {
	case svr.NORMASquared:
		a = eta * m.cfg.C * r
	case svr.NORMAEpsilonNu, svr.NORMAHuber:
		if math.Abs(r) > m.w {
			a = eta * m.cfg.C * math.Copysign(1, r)
			m.w += eta * (1 - m.cfg.Nu)
		} else {
			if m.cfg.Loss == svr.NORMAHuber && m.w > 0 {
				a = eta * m.cfg.C * r / m.w
			}
			m.w = max(0, m.w-eta*m.cfg.Nu)
		}
	}
	for i := range m.alpha {
		m.alpha[i] *= 1 - m.cfg.Lambda*eta
	}
	near, best := -1, -math.Log(m.cfg.Merge)/m.cfg.Kernel.(svr.RBF).Gamma
	for i, xi := range m.xs {
		var d2 float64
		for j, v := range x {
			d2 += (v - xi[j]) * (v - xi[j])
		}
		if m.cfg.Merge > 0 && d2 <= best {
			near, best = i, d2
		}
	}
	switch {
	case a == 0:
	case near >= 0:
		m.alpha[near] += a
		m.merged++
	default:
		m.xs = append(m.xs, slices.Clone(x))
		m.alpha = append(m.alpha, a)
		if len(m.xs) > m.cfg.Tau {
			m.xs, m.alpha = m.xs[1:], m.alpha[1:]
		}
	}
	m.b += a
}

// TestNORMAMatchesNaive compares the lazily scaled ring with the literal
// update, with a shrinkage so strong (λη = 0.5) that the global scale
// would underflow after ~1075 steps if it were not renormalised, without
// and with merging (Merge), which must merge some terms.
func TestNORMAMatchesNaive(t *testing.T) {
	xs, ys := dataset.Embed(normaStationary(3000+5, 4), 5)
	for _, loss := range normaLosses {
		for _, sched := range []svr.NORMASchedule{svr.NORMAConstantRate, svr.NORMAInvSqrtRate} {
			for _, merge := range []float64{0, 0.6} {
				t.Run(fmt.Sprintf("%s/%s/merge=%v", loss, sched, merge), func(t *testing.T) {
					cfg := svr.NORMAConfig{Dim: 5, Loss: loss, Schedule: sched, Eta: 0.5, Lambda: 1, C: 1, Nu: 0.4, Tau: 20, Merge: merge}
					m := newNORMA(t, cfg)
					ref := &naiveNORMA{cfg: m.Config()}
					minScale := 1.0
					for i := range xs {
						want := ref.predict(xs[i])
						got, err := m.Predict(xs[i])
						if err != nil {
							t.Fatal(err)
						}
						if math.Abs(got-want) > 1e-9*(1+math.Abs(want)) {
							t.Fatalf("step %d: Predict = %v, literal update gives %v", i, got, want)
						}
						ref.learn(xs[i], ys[i])
						if err := m.Learn(xs[i], ys[i]); err != nil {
							t.Fatal(err)
						}
						st := m.Export()
						if !(st.Scale > 0 && st.Scale <= 1) {
							t.Fatalf("step %d: scale %v", i, st.Scale)
						}
						minScale = min(minScale, st.Scale)
						if m.Len() != len(ref.alpha) || math.Abs(m.Width()-ref.w) > 1e-9 {
							t.Fatalf("step %d: %d terms, width %v; literal: %d, %v", i, m.Len(), m.Width(), len(ref.alpha), ref.w)
						}
					}
					t.Logf("smallest scale %.3g after %d steps, %d terms merged", minScale, len(xs), ref.merged)
					if sched == svr.NORMAConstantRate && minScale > 1e-90 {
						t.Errorf("scale never came near renormalisation (min %.3g): the test is too weak", minScale)
					}
					if (merge > 0) != (ref.merged > 0) {
						t.Errorf("merge %v: %d terms merged", merge, ref.merged)
					}
				})
			}
		}
	}
}

// normaDrifting returns n samples of a series with a trend, a random walk and
// a slowly changing oscillation (seeded).
func normaDrifting(n int) []float64 {
	rng := rand.New(rand.NewPCG(5, 6))
	s := make([]float64, n)
	var walk float64
	for t := range s {
		walk += 0.01 * rng.NormFloat64()
		s[t] = 1e-5*float64(t) + walk + 0.5*math.Sin(float64(t)/(7+float64(t)/20_000)) + 0.05*rng.NormFloat64()
	}
	return s
}

// TestNORMABoundedMemory learns 100 000 samples of a drifting series and
// checks that the state never outgrows the bound τ sets, and that the
// global scale is renormalised (λη = 0.01 takes it below 1e-100 every
// ~23 000 steps).
func TestNORMABoundedMemory(t *testing.T) {
	const d, tau, n = 5, 200, 100_000
	s := normaDrifting(n + d)
	m := newNORMA(t, svr.NORMAConfig{Dim: d, Tau: tau, Eta: 0.25, Lambda: 0.04})
	bound := 8 * (tau*(d+2) + d)
	if m.MaxStateBytes() != bound {
		t.Fatalf("MaxStateBytes = %d, want 8·(τ(d+2)+d) = %d", m.MaxStateBytes(), bound)
	}
	x := make([]float64, d)
	var atHalf int
	for i := d - 1; i < n+d-1; i++ {
		for j := range x {
			x[j] = s[i-j]
		}
		p, err := m.Predict(x)
		if err != nil || !normaIsFinite(p) {
			t.Fatalf("step %d: Predict = %v, %v", i, p, err)
		}
		if err := m.Learn(x, s[i+1]); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if m.StateBytes() > bound || m.Len() > tau {
			t.Fatalf("step %d: %d bytes, %d terms; bound %d bytes, τ = %d", i, m.StateBytes(), m.Len(), bound, tau)
		}
		if i == n/2 {
			atHalf = m.StateBytes()
		}
	}
	if m.StateBytes() != atHalf || m.Len() != tau {
		t.Errorf("state grew from %d to %d bytes in the second half; %d terms", atHalf, m.StateBytes(), m.Len())
	}
	if sc := m.Export().Scale; !(sc > 1e-100 && sc <= 1) {
		t.Errorf("scale %v", sc)
	}
	t.Logf("after %d samples: %d terms, %d state bytes (bound %d)", n, m.Len(), m.StateBytes(), bound)
}

func TestNORMAZeroAllocs(t *testing.T) {
	xs, ys := dataset.Embed(normaStationary(600, 7), 5)
	for _, loss := range normaLosses {
		t.Run(loss.String(), func(t *testing.T) {
			m := newNORMA(t, svr.NORMAConfig{Dim: 5, Loss: loss, Tau: 100})
			for i := range 400 {
				if err := m.Learn(xs[i], ys[i]); err != nil {
					t.Fatal(err)
				}
			}
			i := 400
			allocs := testing.AllocsPerRun(150, func() {
				if _, err := m.Predict(xs[i]); err != nil {
					t.Fatal(err)
				}
				if err := m.Learn(xs[i], ys[i]); err != nil {
					t.Fatal(err)
				}
				i++
			})
			if allocs != 0 {
				t.Errorf("%v allocations per Predict+Learn, want 0", allocs)
			}
		})
	}
}

func TestNORMAExportImport(t *testing.T) {
	xs, ys := dataset.Embed(normaStationary(700, 8), 4)
	for _, loss := range normaLosses {
		t.Run(loss.String(), func(t *testing.T) {
			cfg := svr.NORMAConfig{Dim: 4, Loss: loss, Tau: 60, Lambda: 0.5, Eta: 0.3}
			a := newNORMA(t, cfg)
			for i := range 300 {
				if err := a.Learn(xs[i], ys[i]); err != nil {
					t.Fatal(err)
				}
			}
			st := a.Export()
			b := newNORMA(t, cfg)
			if err := b.Import(st); err != nil {
				t.Fatal(err)
			}
			// The export is a copy: scribbling on it changes neither model.
			for _, x := range st.X {
				x[0] = 1e9
			}
			st.Coef[0] = 1e9
			for i := 300; i < len(xs); i++ {
				pa, err1 := a.Predict(xs[i])
				pb, err2 := b.Predict(xs[i])
				if err1 != nil || err2 != nil || pa != pb {
					t.Fatalf("step %d: original predicts %v (%v), imported %v (%v)", i, pa, err1, pb, err2)
				}
				if err := a.Learn(xs[i], ys[i]); err != nil {
					t.Fatal(err)
				}
				if err := b.Learn(xs[i], ys[i]); err != nil {
					t.Fatal(err)
				}
			}
			if !reflect.DeepEqual(a.Export(), b.Export()) {
				t.Fatal("states differ after continuing")
			}
		})
	}
}

func TestNORMAImportRefusesBadState(t *testing.T) {
	xs, ys := dataset.Embed(normaStationary(200, 9), 3)
	m := newNORMA(t, svr.NORMAConfig{Dim: 3, Tau: 20})
	for i := range xs {
		if err := m.Learn(xs[i], ys[i]); err != nil {
			t.Fatal(err)
		}
	}
	good := m.Export()
	edit := func(f func(*svr.NORMAState)) svr.NORMAState {
		st := m.Export()
		f(&st)
		return st
	}
	bad := map[string]svr.NORMAState{
		"too many terms": edit(func(s *svr.NORMAState) {
			s.X, s.Coef, s.Born = append(s.X, s.X[0]), append(s.Coef, 1), append(s.Born, s.Steps+1)
			s.Steps++
		}),
		"length mismatch": edit(func(s *svr.NORMAState) { s.Coef = s.Coef[1:] }),
		"short input":     edit(func(s *svr.NORMAState) { s.X[3] = s.X[3][:2] }),
		"NaN input":       edit(func(s *svr.NORMAState) { s.X[3][1] = math.NaN() }),
		"Inf coefficient": edit(func(s *svr.NORMAState) { s.Coef[2] = math.Inf(1) }),
		"NaN offset":      edit(func(s *svr.NORMAState) { s.Offset = math.NaN() }),
		"negative width":  edit(func(s *svr.NORMAState) { s.Width = -1 }),
		"zero scale":      edit(func(s *svr.NORMAState) { s.Scale = 0 }),
		"scale above 1":   edit(func(s *svr.NORMAState) { s.Scale = 2 }),
		"unordered birth": edit(func(s *svr.NORMAState) { s.Born[4], s.Born[5] = s.Born[5], s.Born[4] }),
		"born after now":  edit(func(s *svr.NORMAState) { s.Born[len(s.Born)-1] = s.Steps + 1 }),
		"negative steps":  edit(func(s *svr.NORMAState) { s.Steps = -1 }),
	}
	for name, st := range bad {
		if err := m.Import(st); !errors.Is(err, svr.ErrBadInput) {
			t.Errorf("Import(%s) = %v, want ErrBadInput", name, err)
		}
		if !reflect.DeepEqual(m.Export(), good) {
			t.Fatalf("Import(%s) changed the model", name)
		}
	}
	if err := m.Import(svr.NORMAState{Scale: 1}); err != nil || m.Len() != 0 {
		t.Errorf("Import(empty) = %v, %d terms", err, m.Len())
	}
}

// normaOneStepMSE runs the protocol of the AOSVR paper's section 5.2: embed
// with B = 5, τ = 1; predict each sample before learning it; average the
// squared errors over the second half of the series. It returns the
// model's MSE and persistence's (x̂(t+1) = x(t)).
func normaOneStepMSE(t *testing.T, s []float64, cfg svr.NORMAConfig) (mse, persistence float64) {
	xs, ys := dataset.Embed(s, 5)
	cfg.Dim = 5
	m := newNORMA(t, cfg)
	n := 0
	for i := range xs {
		p, err := m.Predict(xs[i])
		if err != nil {
			t.Fatal(err)
		}
		if i+5 >= len(s)/2 { // target index i+5 is in the second half
			mse += (p - ys[i]) * (p - ys[i])
			persistence += (xs[i][0] - ys[i]) * (xs[i][0] - ys[i])
			n++
		}
		if err := m.Learn(xs[i], ys[i]); err != nil {
			t.Fatal(err)
		}
	}
	return mse / float64(n), persistence / float64(n)
}

// TestNORMAForecast checks the defaults' one-step accuracy. On the Santa
// Fe laser the goal is within 2× of the exact AOSVR (MSE 0.005–0.01 with a
// 200-sample window), i.e. below 0.012, and far below persistence.
func TestNORMAForecast(t *testing.T) {
	series := map[string][]float64{"mackey_glass": mackeyglass.Generate(1000, mackeyglass.Config{})}
	for _, name := range dataset.Names {
		series[name] = dataset.MustLoad(name).Values
	}
	// maxMSE and maxRatio (to persistence) per series and loss, a margin
	// above what each measured (go test -run NORMAForecast -v ./svr):
	// squared 0.0114 (0.105× persistence) on the laser, 0.0023 (0.44×) on
	// Mackey-Glass, 1.6–1.7× persistence on the sensor and market series,
	// where persistence is hard to beat (on raw scaled levels; the
	// daemon's default learns changes); ε-insensitive with the ν-trick
	// and Huber within a few per cent of squared on the chaotic series,
	// and up to 3.4× persistence on the sensor series, whose tube of ν =
	// 0.5 is wide for its small steps; on the yearly sunspots (309 points)
	// 0.0424 (0.54×) squared, 0.0480 (0.61×) ε-insensitive, 0.0456 (0.58×)
	// Huber.
	type limit struct{ maxMSE, maxRatio float64 }
	limits := map[svr.NORMALoss]map[string]limit{
		svr.NORMASquared: {
			"santafe_laser_a":          {0.012, 0.2},
			"mackey_glass":             {0.003, 0.6},
			"sensor_temperature_15min": {0.007, 2},
			"market_price_daily":       {0.0016, 2},
			"sunspots_yearly":          {0.045, 0.58},
		},
		svr.NORMAEpsilonNu: {
			"santafe_laser_a":          {0.013, 0.2},
			"mackey_glass":             {0.0027, 0.5},
			"sensor_temperature_15min": {0.014, 4},
			"market_price_daily":       {0.0026, 3.3},
			"sunspots_yearly":          {0.051, 0.65},
		},
		svr.NORMAHuber: {
			"santafe_laser_a":          {0.012, 0.2},
			"mackey_glass":             {0.0022, 0.45},
			"sensor_temperature_15min": {0.007, 2.1},
			"market_price_daily":       {0.0024, 3},
			"sunspots_yearly":          {0.048, 0.62},
		},
	}
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for k := range series {
			if !yield(k) {
				return
			}
		}
	}) {
		s := dataset.Scaled(series[name])
		for _, loss := range normaLosses {
			mse, pers := normaOneStepMSE(t, s, svr.NORMAConfig{Loss: loss})
			t.Logf("%-25s %-8v MSE %.5f  persistence %.5f  ratio %.3f", name, loss, mse, pers, mse/pers)
			lim := limits[loss][name]
			if mse > lim.maxMSE || mse > lim.maxRatio*pers {
				t.Errorf("%s, %v loss: MSE %.5f, want ≤ %g and ≤ %g× persistence (%.5f)", name, loss, mse, lim.maxMSE, lim.maxRatio, pers)
			}
		}
	}
}

// TestNORMARBFAccuracy checks the inline RBF kernel (with its own
// exponential) against math.Exp through a one-term model: Predict(u) =
// exp(−u²), over the whole range down to underflow. 3 ulp is the bound
// the implementation documents.
func TestNORMARBFAccuracy(t *testing.T) {
	m := newNORMA(t, svr.NORMAConfig{Dim: 1, Tau: 1})
	if err := m.Import(svr.NORMAState{Steps: 1, Scale: 1, X: [][]float64{{0}}, Coef: []float64{1}, Born: []int64{1}}); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(10, 11))
	worst := 0.0
	for i := range 200_000 {
		u := math.Sqrt(760 * rng.Float64())
		if i%2 == 0 {
			u = rng.Float64() // the range a scaled series lives in
		}
		got, err := m.Predict([]float64{u})
		if err != nil {
			t.Fatal(err)
		}
		want := math.Exp(-(u * u))
		if want < 0x1p-1022 { // subnormal: absolute error of an ulp
			if math.Abs(got-want) > 0x1p-1074 {
				t.Fatalf("exp(−%v) = %v, want %v", u*u, got, want)
			}
			continue
		}
		ulps := math.Abs(got-want) / (math.Nextafter(want, 2) - want)
		if ulps > 3 {
			t.Fatalf("exp(−%v) = %v, want %v: %.1f ulp", u*u, got, want, ulps)
		}
		worst = max(worst, ulps)
	}
	for _, u := range []float64{0, 1e-300, 26.5, 27.3, 1e10, math.MaxFloat64} {
		got, _ := m.Predict([]float64{u})
		if want := math.Exp(-(u * u)); got != want {
			t.Errorf("exp(−%v) = %v, want %v", u*u, got, want)
		}
	}
	t.Logf("worst error %.2f ulp", worst)
}

// hasFieldError reports whether err joins a *svr.FieldError of model's
// field.
func hasFieldError(err error, model, field string) bool {
	if err == nil {
		return false
	}
	if fe, ok := err.(*svr.FieldError); ok {
		return fe.Model == model && fe.Field == field
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range j.Unwrap() {
			if hasFieldError(e, model, field) {
				return true
			}
		}
	}
	return false
}
