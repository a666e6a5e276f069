package svr

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// Tolerances, named as in math/all_test.go.
const (
	sogClose     = 1e-9 // incremental against recomputation
	sogVeryClose = 1e-12
)

func sogClosef(a, b, tol float64) bool {
	return math.Abs(a-b) <= tol*math.Max(1, math.Max(math.Abs(a), math.Abs(b)))
}

func newTestSOG(t testing.TB, cfg SOGSVRConfig) *SOGSVR {
	t.Helper()
	s, err := NewSOGSVR(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// sogSnapshot copies every number of the model's state.
func sogSnapshot(s *SOGSVR) []float64 {
	m := s.m
	out := []float64{float64(m), s.wt, float64(s.learned), float64(s.evictions)}
	out = append(out, s.atoms[:m*s.dim]...)
	for _, mat := range [][]float64{s.kmat, s.kinv, s.ata} {
		if mat != nil {
			out = append(out, mat[:sogPacked(m)]...)
		}
	}
	for _, v := range [][]float64{s.aty, s.ate, s.astar, s.alpha} {
		out = append(out, v[:m]...)
	}
	return out
}

// sogBeta returns the prediction coefficients β̃ = α̃* − α̃.
func sogBeta(s *SOGSVR) []float64 {
	b := make([]float64, s.m)
	for i := range b {
		b[i] = s.astar[i] - s.alpha[i]
	}
	return b
}

// sogRandX draws a point in [−1, 1]^d.
func sogRandX(rng *rand.Rand, d int) []float64 {
	x := make([]float64, d)
	for i := range x {
		x[i] = 2*rng.Float64() - 1
	}
	return x
}

func sogTarget(x []float64) float64 { return 0.6*math.Sin(2*x[0]) + 0.3*x[len(x)-1] }

func TestSOGBadConfig(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	cases := []struct {
		field string
		cfg   SOGSVRConfig
	}{
		{"Dim", SOGSVRConfig{Dim: 0}},
		{"Dim", SOGSVRConfig{Dim: -2}},
		{"Kernel", SOGSVRConfig{Dim: 2, Kernel: RBF{Gamma: -1}}},
		{"Kernel", SOGSVRConfig{Dim: 2, Kernel: Poly{Gamma: 1, Degree: 0}}},
		{"Lambda", SOGSVRConfig{Dim: 2, Lambda: -0.1}},
		{"Lambda", SOGSVRConfig{Dim: 2, Lambda: nan}},
		{"Lambda", SOGSVRConfig{Dim: 2, Lambda: inf}},
		{"Nu", SOGSVRConfig{Dim: 2, Nu: -1}},
		{"Nu", SOGSVRConfig{Dim: 2, Nu: nan}},
		{"Nu", SOGSVRConfig{Dim: 2, Nu: inf}},
		{"Ridge", SOGSVRConfig{Dim: 2, Ridge: -1e-3}},
		{"Ridge", SOGSVRConfig{Dim: 2, Ridge: nan}},
		{"Ridge", SOGSVRConfig{Dim: 2, Ridge: inf}},
		{"C", SOGSVRConfig{Dim: 2, C: -1}},
		{"C", SOGSVRConfig{Dim: 2, C: nan}},
		{"Epsilon", SOGSVRConfig{Dim: 2, Epsilon: -0.1}},
		{"Epsilon", SOGSVRConfig{Dim: 2, Epsilon: nan}},
		{"Epsilon", SOGSVRConfig{Dim: 2, Epsilon: inf}},
		{"MaxDict", SOGSVRConfig{Dim: 2, MaxDict: -1}},
		{"MaxDict", SOGSVRConfig{Dim: 2, MaxDict: 1 << 20}},
		{"OnFull", SOGSVRConfig{Dim: 2, OnFull: SOGFullPolicy(7)}},
		{"Forget", SOGSVRConfig{Dim: 2, Forget: -0.5}},
		{"Forget", SOGSVRConfig{Dim: 2, Forget: 1.01}},
		{"Forget", SOGSVRConfig{Dim: 2, Forget: nan}},
		{"Steps", SOGSVRConfig{Dim: 2, Steps: -1}},
		{"Steps", SOGSVRConfig{Dim: 2, Steps: 5000}},
	}
	for _, c := range cases {
		s, err := NewSOGSVR(c.cfg)
		if err == nil {
			t.Errorf("%s: NewSOGSVR(%+v) accepted", c.field, c.cfg)
			continue
		}
		if s != nil {
			t.Errorf("%s: returned a model with the error", c.field)
		}
		if !errors.Is(err, ErrBadConfig) {
			t.Errorf("%s: error %v does not wrap ErrBadConfig", c.field, err)
		}
		if !strings.Contains(err.Error(), c.field) {
			t.Errorf("%s: error %q does not name the field", c.field, err)
		}
	}
	if _, err := ParseSOGFullPolicy("evict"); !errors.Is(err, ErrBadConfig) || !strings.Contains(err.Error(), `unknown policy "evict"`) {
		t.Errorf("ParseSOGFullPolicy(evict) = %v", err)
	}
	for _, p := range []SOGFullPolicy{SOGReplace, SOGProject} {
		if q, err := ParseSOGFullPolicy(p.String()); err != nil || q != p {
			t.Errorf("ParseSOGFullPolicy(%q) = %v, %v", p, q, err)
		}
	}
	// The zero values select the documented defaults; explicit valid
	// values pass through.
	s := newTestSOG(t, SOGSVRConfig{Dim: 2})
	lam := SOGDefaultLambda
	if s.kern != (RBF{Gamma: 1}) || s.lam2 != lam*lam || s.nu != SOGDefaultNu ||
		s.c != SOGDefaultC || s.max != SOGDefaultMaxDict || s.forget != SOGDefaultForget ||
		s.steps != SOGDefaultSteps || s.ridge != 0 || s.eps != 0 || s.onFull != SOGReplace {
		t.Errorf("defaults not applied: kernel %v λ² %v ν %v C̃ %v M %d ρ %v steps %d γ %v ε %v on full %v",
			s.kern, s.lam2, s.nu, s.c, s.max, s.forget, s.steps, s.ridge, s.eps, s.onFull)
	}
	if _, err := NewSOGSVR(SOGSVRConfig{Dim: 2, C: inf, Ridge: 1e-6, Epsilon: 0.1, Forget: 1, MaxDict: 1, Steps: 1}); err != nil {
		t.Errorf("valid config refused: %v", err)
	}
}

// TestSOGRefusedInputLeavesStateUnchanged checks every number of the state,
// not only predictions, after bad input and after a kernel overflow.
func TestSOGRefusedInputLeavesStateUnchanged(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for _, k := range []Kernel{RBF{Gamma: 1}, Poly{Gamma: 1, Coef0: 1, Degree: 40}} {
		s := newTestSOG(t, SOGSVRConfig{Dim: 3, Kernel: k, MaxDict: 8})
		for range 200 {
			x := sogRandX(rng, 3)
			if err := s.Learn(x, sogTarget(x)); err != nil {
				t.Fatal(err)
			}
		}
		before := sogSnapshot(s)
		bad := []struct {
			x    []float64
			y    float64
			want error
		}{
			{[]float64{1, math.NaN(), 0}, 0, ErrBadInput},
			{[]float64{1, 0}, 0, ErrBadInput},
			{[]float64{1, 0, 0}, math.Inf(-1), ErrBadInput},
		}
		if _, ok := k.(Poly); ok {
			// (1 + 3·1e300)^40 overflows: a numerical failure, not bad input.
			bad = append(bad, struct {
				x    []float64
				y    float64
				want error
			}{[]float64{1e300, 1e300, 1e300}, 1, ErrNumerical})
		}
		for _, c := range bad {
			err := s.Learn(c.x, c.y)
			if !errors.Is(err, c.want) {
				t.Errorf("%v: Learn(%v, %v) = %v, want %v", k, c.x, c.y, err, c.want)
			}
			if !slices.Equal(before, sogSnapshot(s)) {
				t.Fatalf("%v: Learn(%v, %v) changed the state", k, c.x, c.y)
			}
		}
	}
}

// sogJ is the training squared error J(β̃) up to the constant Σρ^(t−i)y_i²:
// −2 β̃ᵀK̃Aᵀy + β̃ᵀK̃ AᵀA K̃β̃.
func sogJ(s *SOGSVR, beta []float64) float64 {
	m := s.m
	kb := make([]float64, m)
	for i := range m {
		for j := range m {
			kb[i] += s.gram(i, j) * beta[j]
		}
	}
	var j float64
	for i := range m {
		j -= 2 * kb[i] * s.aty[i]
		for k := range m {
			j += kb[i] * s.ata[sogAt(i, k)] * kb[k]
		}
	}
	return j
}

// TestSOGLineSearchIsExact checks the learning rate: with Steps = 1, β̃
// moves along Table 2's direction g to the minimum of J on that line.
func TestSOGLineSearchIsExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	s := newTestSOG(t, SOGSVRConfig{Dim: 2, C: math.Inf(1), Steps: 1, Forget: 0.99, Kernel: RBF{Gamma: 2}, MaxDict: 64})
	checked := 0
	for i := range 300 {
		x := sogRandX(rng, 2)
		y := sogTarget(x) + 0.05*rng.NormFloat64()
		m0 := s.m
		old := sogBeta(s)
		if err := s.Learn(x, y); err != nil {
			t.Fatal(err)
		}
		if s.m != m0 || i < 5 {
			continue // a new atom changes the coordinates
		}
		nb := sogBeta(s)
		d := make([]float64, len(nb))
		for k := range d {
			d[k] = nb[k] - old[k]
		}
		at := func(f float64) float64 {
			b := slices.Clone(old)
			for k := range b {
				b[k] += f * d[k]
			}
			return sogJ(s, b)
		}
		j0, j1 := at(0), at(1)
		if j1 > j0+1e-12*math.Abs(j0) {
			t.Fatalf("sample %d: step raised J from %v to %v", i, j0, j1)
		}
		for _, f := range []float64{0.9, 1.1, 0.5, 2} {
			if jf := at(f); jf < j1-1e-9*math.Abs(j1) {
				t.Fatalf("sample %d: J(%v·step) = %.15g < J(step) = %.15g: not the line minimum", i, f, jf, j1)
			}
		}
		checked++
	}
	if checked < 100 {
		t.Fatalf("only %d steps checked", checked)
	}
}

// TestSOGConjugateStepsReachOptimum: with as many conjugate steps as atoms
// (and no box), one Learn lands on the minimiser of J, the solution of
// K̃ AᵀA K̃ β̃ = K̃ Aᵀy.
func TestSOGConjugateStepsReachOptimum(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 16))
	s := newTestSOG(t, SOGSVRConfig{Dim: 2, C: math.Inf(1), Steps: 40, Nu: 0.05, MaxDict: 12, OnFull: SOGProject})
	for range 400 {
		x := sogRandX(rng, 2)
		if err := s.Learn(x, sogTarget(x)+0.05*rng.NormFloat64()); err != nil {
			t.Fatal(err)
		}
	}
	m := s.m
	if m < 5 {
		t.Fatalf("dictionary of %d atoms: too small for the test", m)
	}
	// Solve AᵀA (K̃β̃) = Aᵀy: K̃ is invertible, so K̃β̃ = (AᵀA)⁻¹Aᵀy.
	ata := mat.NewSymDense(m, nil)
	kmat := mat.NewSymDense(m, nil)
	for i := range m {
		for j := range m {
			ata.SetSym(i, j, s.ata[sogAt(i, j)])
			kmat.SetSym(i, j, s.gram(i, j))
		}
	}
	var kb, want mat.VecDense
	if err := kb.SolveVec(ata, mat.NewVecDense(m, slices.Clone(s.aty[:m]))); err != nil {
		t.Fatal(err)
	}
	if err := want.SolveVec(kmat, &kb); err != nil {
		t.Fatal(err)
	}
	jWant, jGot := sogJ(s, want.RawVector().Data), sogJ(s, sogBeta(s))
	if !sogClosef(jGot, jWant, 1e-7) {
		t.Fatalf("J after Learn = %.12g, optimum %.12g", jGot, jWant)
	}
}

// sogReference recomputes, from the stored atoms and the sample history,
// what Table 2 accumulates: (K̃+γI)⁻¹, K̃, and the ρ-weighted AᵀA, Aᵀy, Aᵀe
// with each a_t solved afresh against the dictionary of its time.
func sogCheckAgainstReference(t *testing.T, s *SOGSVR, xs [][]float64, ys []float64, added []int) {
	t.Helper()
	m := s.m
	kbar := func(a, b []float64) float64 { return s.kern.Eval(a, b) + s.lam2 }
	if s.kmat != nil { // a kept K̃ (MaxDict > 16)
		for i := range m {
			for j := range m {
				if got, want := s.kmat[sogAt(i, j)], kbar(s.atom(i), s.atom(j)); !sogClosef(got, want, sogVeryClose) {
					t.Fatalf("K̃[%d,%d] = %v, want %v", i, j, got, want)
				}
			}
		}
	}
	// (K̃+γI)⁻¹ (K̃+γI) = I.
	for i := range m {
		for j := range m {
			var v float64
			for k := range m {
				kk := s.gram(k, j)
				if k == j {
					kk += s.ridge
				}
				v += s.kinv[sogAt(i, k)] * kk
			}
			want := 0.0
			if i == j {
				want = 1
			}
			if math.Abs(v-want) > math.Max(1e-10, 1e-14*sogCond1(s)) {
				t.Fatalf("[(K̃+γI)⁻¹(K̃+γI)][%d,%d] = %v", i, j, v)
			}
		}
	}
	if added == nil {
		return
	}
	ata := make([]float64, m*m)
	aty := make([]float64, m)
	ate := make([]float64, m)
	w := 1.0
	for t0 := len(xs) - 1; t0 >= 0; t0-- {
		mt := added[t0] // dictionary size after sample t0
		a := make([]float64, mt)
		if t0 == 0 || added[t0-1] < mt {
			a[mt-1] = 1 // x_t0 joined the dictionary
		} else {
			g := mat.NewSymDense(mt, nil)
			k := mat.NewVecDense(mt, nil)
			for i := range mt {
				for j := range mt {
					v := kbar(s.atom(i), s.atom(j))
					if i == j {
						v += s.ridge
					}
					g.SetSym(i, j, v)
				}
				k.SetVec(i, kbar(s.atom(i), xs[t0]))
			}
			var av mat.VecDense
			if err := av.SolveVec(g, k); err != nil {
				t.Fatal(err)
			}
			copy(a, av.RawVector().Data)
		}
		for i := range mt {
			for j := range mt {
				ata[i*m+j] += w * a[i] * a[j]
			}
			aty[i] += w * a[i] * ys[t0]
			ate[i] += w * a[i]
		}
		w *= s.forget
	}
	// The model's sums carry the current sample's weight s.wt. The a_t are
	// solutions of systems in K̃ + γI, so both sides carry an error of
	// about cond(K̃ + γI)·u: compare normwise, with that tolerance.
	tol := math.Max(1e-10, 1e-14*sogCond1(s))
	got := make([]float64, 0, m*m)
	for i := range m {
		for j := range m {
			got = append(got, s.ata[sogAt(i, j)]/s.wt)
		}
	}
	for _, c := range []struct {
		name      string
		got, want []float64
	}{
		{"AᵀA", got, ata},
		{"Aᵀy", sogScale(s.aty[:m], 1/s.wt), aty},
		{"Aᵀe", sogScale(s.ate[:m], 1/s.wt), ate},
	} {
		var d, norm float64
		for i := range c.got {
			d = math.Max(d, math.Abs(c.got[i]-c.want[i]))
			norm = math.Max(norm, math.Abs(c.want[i]))
		}
		if d > tol*math.Max(1, norm) {
			t.Fatalf("%s: max deviation from recomputation %.3g (max entry %.3g, tolerance %.3g)\ngot  %v\nwant %v", c.name, d, norm, tol, c.got, c.want)
		}
	}
}

func sogScale(v []float64, f float64) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = x * f
	}
	return out
}

// sogCond1 is the 1-norm condition number of K̃ + γI, from the kept inverse.
func sogCond1(s *SOGSVR) float64 {
	m := s.m
	var nk, ni float64
	for j := range m {
		var ck, ci float64
		for i := range m {
			v := s.gram(i, j)
			if i == j {
				v += s.ridge
			}
			ck += math.Abs(v)
			ci += math.Abs(s.kinv[sogAt(i, j)])
		}
		nk, ni = math.Max(nk, ck), math.Max(ni, ci)
	}
	return nk * ni
}

// TestSOGIncrementalMatchesRecomputation runs a ladder of sizes and
// checks the block-inverse updates and the accumulated sums against a
// recomputation from scratch after every sample.
func TestSOGIncrementalMatchesRecomputation(t *testing.T) {
	for _, tc := range []struct {
		dim, max int
		ridge    float64
		forget   float64
		kern     Kernel
	}{
		{1, 8, 0, 1, RBF{Gamma: 1}},
		{3, 16, 0, 0.98, RBF{Gamma: 2}},
		{5, 32, 1e-3, 0.995, RBF{Gamma: 1}},
		{2, 64, 0, 1, Poly{Gamma: 1, Coef0: 1, Degree: 3}}, // feature space of dimension 10 (+ λ²)
	} {
		rng := rand.New(rand.NewPCG(uint64(tc.dim), uint64(tc.max)))
		s := newTestSOG(t, SOGSVRConfig{Dim: tc.dim, MaxDict: tc.max, Ridge: tc.ridge, Forget: tc.forget,
			Kernel: tc.kern, Nu: 1e-3, OnFull: SOGProject})
		var xs [][]float64
		var ys []float64
		var added []int
		for i := range 150 {
			x := sogRandX(rng, tc.dim)
			y := sogTarget(x)
			if err := s.Learn(x, y); err != nil {
				t.Fatal(err)
			}
			xs, ys, added = append(xs, x), append(ys, y), append(added, s.m)
			if i%10 == 9 || i < 20 {
				sogCheckAgainstReference(t, s, xs, ys, added)
			}
		}
		if p, ok := tc.kern.(Poly); ok && p.Degree == 3 && s.m > 10 {
			t.Errorf("cubic kernel on R²: %d atoms, more than the feature-space dimension 10", s.m)
		}
		t.Logf("%+v: m = %d, cond₁(K̃+γI) = %.3g", tc, s.m, sogCond1(s))
	}
}

// TestSOGEvictionFoldsByProjection checks SOGReplace: the evicted atom is
// replaced by its projection on the others, so f changes by at most
// |β̃_j|·‖r_j‖·‖φ̄(x)‖ with ‖r_j‖² = 1/[(K̃)⁻¹]_jj, and the inverse stays exact.
func TestSOGEvictionFoldsByProjection(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 18))
	s := newTestSOG(t, SOGSVRConfig{Dim: 2, MaxDict: 10, Nu: 1e-3, Kernel: RBF{Gamma: 3}})
	probes := make([][]float64, 50)
	for i := range probes {
		probes[i] = sogRandX(rng, 2)
	}
	evicted := 0
	for range 500 {
		x := sogRandX(rng, 2)
		if s.m == s.max {
			// Evict on a copy, exactly as Learn would, and compare f.
			c := s.clone()
			j := c.weakest()
			bj, rj := c.astar[j]-c.alpha[j], math.Sqrt(1/c.kinv[sogAt(j, j)])
			before := make([]float64, len(probes))
			for i, p := range probes {
				before[i], _ = c.Predict(p)
			}
			c.borrow() // evict's scratch, as Learn lends it
			c.evict(j)
			c.giveBack()
			sogCheckAgainstReference(t, c, nil, nil, nil)
			for i, p := range probes {
				after, _ := c.Predict(p)
				bound := math.Abs(bj) * rj * math.Sqrt(1+c.lam2)
				if d := math.Abs(after - before[i]); d > bound*(1+1e-9)+1e-12 {
					t.Fatalf("eviction moved f(%v) by %v, bound %v", p, d, bound)
				}
			}
			evicted++
		}
		if err := s.Learn(x, sogTarget(x)); err != nil {
			t.Fatal(err)
		}
		if s.m > s.max {
			t.Fatalf("dictionary %d > cap %d", s.m, s.max)
		}
	}
	if evicted == 0 || s.evictions == 0 {
		t.Fatal("no eviction happened: the test is void")
	}
}

// TestSOGFullPolicies contrasts the two policies once the cap is reached.
func TestSOGFullPolicies(t *testing.T) {
	for _, p := range []SOGFullPolicy{SOGProject, SOGReplace} {
		rng := rand.New(rand.NewPCG(19, 20))
		s := newTestSOG(t, SOGSVRConfig{Dim: 1, MaxDict: 4, Nu: 1e-4, OnFull: p, Kernel: RBF{Gamma: 10}, Forget: 0.95})
		var atoms []float64
		for i := range 400 {
			// A drifting input: the series moves from −1 to 3.
			x := []float64{-1 + 4*float64(i)/400 + 0.05*rng.NormFloat64()}
			if err := s.Learn(x, math.Sin(3*x[0])); err != nil {
				t.Fatal(err)
			}
			if s.Len() > 4 {
				t.Fatalf("%v: Len() = %d > MaxDict", p, s.Len())
			}
			if s.Len() == 4 && atoms == nil {
				atoms = slices.Clone(s.atoms[:4])
			}
		}
		last := slices.Clone(s.atoms[:4])
		f, _ := s.Predict([]float64{2.9})
		t.Logf("%v: atoms %.2f, %d evictions, f(2.9) = %.4f, sin(8.7) = %.4f", p, last, s.evictions, f, math.Sin(8.7))
		switch p {
		case SOGProject:
			if !slices.Equal(atoms, last) || s.evictions != 0 {
				t.Errorf("project: dictionary changed once full: %v -> %v", atoms, last)
			}
		case SOGReplace:
			if s.evictions == 0 || slices.Max(last) < 2 {
				t.Errorf("replace: dictionary %v did not follow the drift (%d evictions)", last, s.evictions)
			}
			// Recent inputs are predicted well only if it followed.
			f, _ := s.Predict([]float64{2.9})
			if d := math.Abs(f - math.Sin(8.7)); d > 0.05 {
				t.Errorf("replace: f(2.9) = %v, want ≈ %v", f, math.Sin(8.7))
			}
		}
	}
}

// clone returns a deep copy (tests only).
func (s *SOGSVR) clone() *SOGSVR {
	c := *s
	for _, p := range []*[]float64{&c.atoms, &c.kmat, &c.kinv, &c.ata, &c.aty, &c.ate, &c.astar, &c.alpha} {
		*p = slices.Clone(*p)
	}
	return &c
}

// TestSOGExportImport checks that a model imported from a checkpoint
// continues exactly as the exporting model does, evictions included.
func TestSOGExportImport(t *testing.T) {
	cfg := SOGSVRConfig{Dim: 3, MaxDict: 12, Nu: 1e-3, Forget: 0.99}
	a := newTestSOG(t, cfg)
	rng := rand.New(rand.NewPCG(21, 22))
	for range 300 {
		x := sogRandX(rng, 3)
		if err := a.Learn(x, sogTarget(x)); err != nil {
			t.Fatal(err)
		}
	}
	st := a.Export()
	b := newTestSOG(t, cfg)
	if err := b.Import(st); err != nil {
		t.Fatal(err)
	}
	st.AtY[0] = 1e9 // the imported model must not retain the state's slices
	st.Atoms[0][0] = 1e9
	ev := a.Evictions()
	for i := range 300 {
		x := sogRandX(rng, 3)
		pa, errA := a.Predict(x)
		pb, errB := b.Predict(x)
		if errA != nil || errB != nil || pa != pb {
			t.Fatalf("sample %d: predictions %v (%v) and %v (%v) differ", i, pa, errA, pb, errB)
		}
		y := sogTarget(x)
		if err := a.Learn(x, y); err != nil {
			t.Fatal(err)
		}
		if err := b.Learn(x, y); err != nil {
			t.Fatal(err)
		}
	}
	if a.Evictions() == ev {
		t.Error("no eviction after the import: the test covers less than it should")
	}
	if !slices.Equal(sogSnapshot(a), sogSnapshot(b)) {
		t.Fatal("states differ after continuing")
	}

	// A state that does not fit is refused and leaves the model unchanged.
	before := sogSnapshot(b)
	for name, mutate := range map[string]func(*SOGSVRState){
		"dim":     func(s *SOGSVRState) { s.Dim = 4 },
		"too big": func(s *SOGSVRState) { s.Atoms = append(s.Atoms, make([][]float64, 20)...) },
		"short K": func(s *SOGSVRState) { s.K = s.K[1:] },
		"NaN":     func(s *SOGSVRState) { s.KInv[3] = math.NaN() },
		"atom":    func(s *SOGSVRState) { s.Atoms[1] = []float64{1, 2} },
		"weight":  func(s *SOGSVRState) { s.Weight = 0 },
	} {
		st := a.Export()
		mutate(&st)
		if err := b.Import(st); !errors.Is(err, ErrBadInput) {
			t.Errorf("%s: Import = %v, want ErrBadInput", name, err)
		}
		if !slices.Equal(before, sogSnapshot(b)) {
			t.Fatalf("%s: refused Import changed the model", name)
		}
	}
}

// TestSOGGramComputedEqualsKept: a model that computes K̃ from its atoms
// in each call (MaxDict ≤ 16) learns and predicts the same bits as one
// that keeps it, through growth, evictions and forgetting: a model of 24
// atoms, and its copy made to compute K̃, learn the same samples.
func TestSOGGramComputedEqualsKept(t *testing.T) {
	kept := newTestSOG(t, SOGSVRConfig{Dim: 3, MaxDict: 24, Nu: 1e-3, Forget: 0.99})
	if kept.kmat == nil {
		t.Fatal("a dictionary of 24 does not keep K̃")
	}
	rng := rand.New(rand.NewPCG(31, 32))
	var computed *SOGSVR
	for i := range 600 {
		if i == 5 {
			computed = kept.clone()
			computed.kmat = nil
		}
		x := sogRandX(rng, 3)
		y := sogTarget(x) + 0.05*rng.NormFloat64()
		if computed != nil {
			if err := computed.Learn(x, y); err != nil {
				t.Fatal(err)
			}
			if computed.kmat != nil {
				t.Fatal("computed model gained a K̃")
			}
		}
		if err := kept.Learn(x, y); err != nil {
			t.Fatal(err)
		}
		if computed == nil {
			continue
		}
		p := sogRandX(rng, 3)
		fk, _ := kept.Predict(p)
		fc, _ := computed.Predict(p)
		if math.Float64bits(fk) != math.Float64bits(fc) {
			t.Fatalf("sample %d: f = %v computing K̃, %v keeping it", i, fc, fk)
		}
		ka := kept.Export()
		ca := computed.Export()
		if !slices.Equal(ka.K, ca.K) || !slices.Equal(ka.KInv, ca.KInv) || !slices.Equal(ka.AtA, ca.AtA) || !slices.Equal(ka.AStar, ca.AStar) {
			t.Fatalf("sample %d: states differ", i)
		}
	}
	if kept.Evictions() == 0 {
		t.Fatal("no eviction: the test does not reach the full dictionary")
	}
}
