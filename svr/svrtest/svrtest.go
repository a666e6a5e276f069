// Package svrtest is the conformance suite every regressor in svr runs, in
// the manner of gonum's lapack/testlapack: one set of behavioural tests that
// each implementation must pass.
package svrtest

import (
	"errors"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/forecastd/forecastd/svr"
)

// Factory returns a fresh regressor for inputs of length dim, configured
// for a target in roughly [−1, 1]. Two calls with the same dim must return
// identically configured models.
type Factory func(dim int) svr.Regressor

// Test runs the conformance suite against the regressors made by newModel.
//
// linearTol is the largest mean squared error the model may leave on a
// noise-free linear target y = ⟨w, x⟩ + c after 400 samples; it depends on
// the model's loss (an ε-insensitive model cannot do better than about ε²).
func Test(t *testing.T, newModel Factory, linearTol float64) {
	t.Run("Dim", func(t *testing.T) { testDim(t, newModel) })
	t.Run("BadInputRefused", func(t *testing.T) { testBadInput(t, newModel) })
	t.Run("InputNotRetained", func(t *testing.T) { testNotRetained(t, newModel) })
	t.Run("Deterministic", func(t *testing.T) { testDeterministic(t, newModel) })
	t.Run("FitsLinearTarget", func(t *testing.T) { testLinear(t, newModel, linearTol) })
	t.Run("FiniteOnExtremeInput", func(t *testing.T) { testExtreme(t, newModel) })
	t.Run("ExportImportRoundTrip", func(t *testing.T) { testExportImport(t, newModel) })
}

// stateMethods returns m's Export and Import methods, found by reflection
// since each regressor has its own state type: Export() S and
// Import(S) error. ok is false if m has no such pair.
func stateMethods(t *testing.T, m svr.Regressor) (export, imp reflect.Value, ok bool) {
	t.Helper()
	v := reflect.ValueOf(m)
	export, imp = v.MethodByName("Export"), v.MethodByName("Import")
	if !export.IsValid() && !imp.IsValid() {
		return export, imp, false
	}
	errType := reflect.TypeFor[error]()
	et, it := export.Type(), imp.Type()
	if !export.IsValid() || !imp.IsValid() || et.NumIn() != 0 || et.NumOut() != 1 ||
		it.NumIn() != 1 || it.In(0) != et.Out(0) || it.NumOut() != 1 || it.Out(0) != errType {
		t.Fatalf("%T: Export and Import must be Export() S and Import(S) error", m)
	}
	return export, imp, true
}

// exported returns m's state from Export, or an invalid Value.
func exported(t *testing.T, m svr.Regressor) reflect.Value {
	t.Helper()
	export, _, ok := stateMethods(t, m)
	if !ok {
		return reflect.Value{}
	}
	return export.Call(nil)[0]
}

const dim = 3

// sample draws an input in [−1, 1]^dim and a smooth nonlinear target.
func sample(rng *rand.Rand) ([]float64, float64) {
	x := make([]float64, dim)
	for i := range x {
		x[i] = 2*rng.Float64() - 1
	}
	return x, 0.6*math.Sin(2*x[0]) + 0.3*x[1]*x[2]
}

// probes are fixed inputs at which two models are compared.
func probes(rng *rand.Rand, n int) [][]float64 {
	p := make([][]float64, n)
	for i := range p {
		p[i], _ = sample(rng)
	}
	return p
}

func predictAll(t *testing.T, m svr.Regressor, ps [][]float64) []float64 {
	t.Helper()
	out := make([]float64, len(ps))
	for i, p := range ps {
		v, err := m.Predict(p)
		if err != nil {
			t.Fatalf("Predict(%v): %v", p, err)
		}
		if math.IsNaN(v) || math.IsInf(v, 0) {
			t.Fatalf("Predict(%v) = %v", p, v)
		}
		out[i] = v
	}
	return out
}

func train(t *testing.T, m svr.Regressor, rng *rand.Rand, n int) {
	t.Helper()
	for range n {
		x, y := sample(rng)
		if err := m.Learn(x, y); err != nil {
			t.Fatalf("Learn: %v", err)
		}
	}
}

func testDim(t *testing.T, newModel Factory) {
	for _, d := range []int{1, 3, 7} {
		if got := newModel(d).Dim(); got != d {
			t.Errorf("Dim() = %d, want %d", got, d)
		}
	}
}

func testBadInput(t *testing.T, newModel Factory) {
	m := newModel(dim)
	rng := rand.New(rand.NewPCG(1, 2))
	train(t, m, rng, 50)
	ps := probes(rng, 20)
	before := predictAll(t, m, ps)

	nan, inf := math.NaN(), math.Inf(1)
	bad := []struct {
		name string
		x    []float64
		y    float64
	}{
		{"NaN in x", []float64{0.1, nan, 0.2}, 0.5},
		{"+Inf in x", []float64{inf, 0.1, 0.2}, 0.5},
		{"-Inf in x", []float64{0.1, 0.2, -inf}, 0.5},
		{"NaN target", []float64{0.1, 0.2, 0.3}, nan},
		{"Inf target", []float64{0.1, 0.2, 0.3}, -inf},
		{"short x", []float64{0.1, 0.2}, 0.5},
		{"long x", []float64{0.1, 0.2, 0.3, 0.4}, 0.5},
		{"nil x", nil, 0.5},
	}
	for _, c := range bad {
		err := m.Learn(c.x, c.y)
		if err == nil {
			t.Errorf("Learn(%s) accepted", c.name)
			continue
		}
		if !errors.Is(err, svr.ErrBadInput) {
			t.Errorf("Learn(%s) = %v, want an error wrapping ErrBadInput", c.name, err)
		}
		if err.Error() == svr.ErrBadInput.Error() {
			t.Errorf("Learn(%s) error %q does not say what was wrong", c.name, err)
		}
		if c.name != "NaN target" && c.name != "Inf target" {
			if _, err := m.Predict(c.x); !errors.Is(err, svr.ErrBadInput) {
				t.Errorf("Predict(%s) = %v, want an error wrapping ErrBadInput", c.name, err)
			}
		}
	}
	after := predictAll(t, m, ps)
	for i := range before {
		if before[i] != after[i] {
			t.Fatalf("model changed by refused input: probe %d %v -> %v", i, before[i], after[i])
		}
	}
	// The model still learns normally afterwards.
	train(t, m, rng, 10)
}

func testNotRetained(t *testing.T, newModel Factory) {
	a, b := newModel(dim), newModel(dim)
	rng := rand.New(rand.NewPCG(3, 4))
	buf := make([]float64, dim)
	for range 200 {
		x, y := sample(rng)
		copy(buf, x)
		if err := a.Learn(buf, y); err != nil {
			t.Fatal(err)
		}
		if err := b.Learn(x, y); err != nil {
			t.Fatal(err)
		}
		for i := range buf { // scribble over the caller's slice
			buf[i] = 1e6
		}
	}
	ps := probes(rng, 20)
	pa, pb := predictAll(t, a, ps), predictAll(t, b, ps)
	for i := range pa {
		if pa[i] != pb[i] {
			t.Fatalf("model retained a caller's slice: probe %d: %v vs %v", i, pa[i], pb[i])
		}
	}
}

func testDeterministic(t *testing.T, newModel Factory) {
	run := func() []float64 {
		m := newModel(dim)
		rng := rand.New(rand.NewPCG(5, 6))
		train(t, m, rng, 300)
		return predictAll(t, m, probes(rng, 30))
	}
	p1, p2 := run(), run()
	for i := range p1 {
		if p1[i] != p2[i] {
			t.Fatalf("two runs differ at probe %d: %v vs %v", i, p1[i], p2[i])
		}
	}
}

func testLinear(t *testing.T, newModel Factory, tol float64) {
	m := newModel(dim)
	rng := rand.New(rand.NewPCG(7, 8))
	w := []float64{0.5, -0.3, 0.2}
	target := func(x []float64) float64 { return w[0]*x[0] + w[1]*x[1] + w[2]*x[2] + 0.1 }
	for range 400 {
		x, _ := sample(rng)
		if err := m.Learn(x, target(x)); err != nil {
			t.Fatal(err)
		}
	}
	var mse float64
	ps := probes(rng, 200)
	for i, p := range predictAll(t, m, ps) {
		d := p - target(ps[i])
		mse += d * d
	}
	mse /= float64(len(ps))
	if mse > tol {
		t.Fatalf("MSE on a linear target = %.3g, want ≤ %.3g", mse, tol)
	}
	// A constant predictor (the mean) is far worse: the bound means something.
	var v float64
	for _, p := range ps {
		d := target(p) - 0.1
		v += d * d
	}
	if v/float64(len(ps)) < 4*tol {
		t.Fatalf("test is too weak: the constant predictor's MSE %.3g is within 4× the bound", v/float64(len(ps)))
	}
}

// testExtreme feeds inputs and targets of extreme magnitude. Learn may
// refuse one with ErrNumerical, but then the model must be as before the
// call (Regressor's contract): the same predictions bit for bit, the same
// number of samples and, for a model with Export, the same state.
func testExtreme(t *testing.T, newModel Factory) {
	m := newModel(dim)
	xs := [][]float64{{0, 0, 0}, {0, 0, 0}, {1e-300, 0, 0}, {1e6, -1e6, 1e6}, {-1e6, 1e6, 0}, {0, 0, 0}}
	ys := []float64{1, -1, 1e6, -1e6, 0, 1e-300}
	ps := append(probes(rand.New(rand.NewPCG(9, 10)), 5), xs...)
	for i, x := range xs {
		before := predictBits(t, m, ps)
		state := exported(t, m)
		n := -1
		if f, ok := m.(svr.Forgetter); ok {
			n = f.Len()
		}
		err := m.Learn(x, ys[i])
		if err != nil && !errors.Is(err, svr.ErrNumerical) {
			t.Fatalf("Learn(%v, %v): %v", x, ys[i], err)
		}
		if err != nil {
			if after := predictBits(t, m, ps); !reflect.DeepEqual(before, after) {
				t.Fatalf("Learn(%v, %v) failed (%v) but changed the predictions: %v -> %v", x, ys[i], err, before, after)
			}
			if f, ok := m.(svr.Forgetter); ok && f.Len() != n {
				t.Fatalf("Learn(%v, %v) failed (%v) but the model holds %d samples, %d before", x, ys[i], err, f.Len(), n)
			}
			if state.IsValid() && !reflect.DeepEqual(state.Interface(), exported(t, m).Interface()) {
				t.Fatalf("Learn(%v, %v) failed (%v) but changed the model's state", x, ys[i], err)
			}
		}
		for _, p := range xs {
			v, err := m.Predict(p)
			if err != nil {
				t.Fatal(err)
			}
			if math.IsNaN(v) || math.IsInf(v, 0) {
				t.Fatalf("after %d samples Predict(%v) = %v", i+1, p, v)
			}
		}
	}
}

// predictBits returns m's predictions at ps as bits, NaN included, for
// exact comparison.
func predictBits(t *testing.T, m svr.Regressor, ps [][]float64) []uint64 {
	t.Helper()
	out := make([]uint64, len(ps))
	for i, p := range ps {
		v, err := m.Predict(p)
		if err != nil {
			t.Fatalf("Predict(%v): %v", p, err)
		}
		out[i] = math.Float64bits(v)
	}
	return out
}

// testExportImport checkpoints a trained model by its Export, imports the
// state into a model that has learnt other samples, and checks that the
// two predict the same bit for bit, at once and after every one of 100
// further samples learnt by both (each regressor documents that the
// restored model goes on exactly as the exported one). The state must be
// a copy: training the exporting model further does not change it. Every
// regressor in svr has Export and Import, for checkpoints; a regressor
// without them skips the test.
func testExportImport(t *testing.T, newModel Factory) {
	a := newModel(dim)
	if _, _, ok := stateMethods(t, a); !ok {
		t.Skipf("%T has no Export and Import", a)
	}
	rng := rand.New(rand.NewPCG(11, 12))
	train(t, a, rng, 150)
	st := exported(t, a)
	b := newModel(dim)
	train(t, b, rand.New(rand.NewPCG(13, 14)), 40) // Import replaces this
	_, imp, _ := stateMethods(t, b)
	if err, _ := imp.Call([]reflect.Value{st})[0].Interface().(error); err != nil {
		t.Fatalf("Import of an exported state: %v", err)
	}
	if fa, ok := a.(svr.Forgetter); ok {
		if fb := b.(svr.Forgetter); fa.Len() != fb.Len() {
			t.Fatalf("imported model holds %d samples, the exporting one %d", fb.Len(), fa.Len())
		}
	}
	ps := probes(rng, 20)
	p0 := predictBits(t, a, ps)
	if pb := predictBits(t, b, ps); !reflect.DeepEqual(p0, pb) {
		t.Fatalf("after Import: predictions differ from the exporting model's")
	}
	again := exported(t, b)
	if !reflect.DeepEqual(st.Interface(), again.Interface()) {
		t.Fatalf("Export of the imported model differs from the imported state")
	}
	for i := range 100 {
		x, y := sample(rng)
		if err := a.Learn(x, y); err != nil {
			t.Fatal(err)
		}
		if err := b.Learn(x, y); err != nil {
			t.Fatal(err)
		}
		if pa, pb := predictBits(t, a, ps), predictBits(t, b, ps); !reflect.DeepEqual(pa, pb) {
			t.Fatalf("%d samples after Import: predictions differ from the exporting model's", i+1)
		}
	}
	// Both models have moved on; the state exported before must not have.
	c := newModel(dim)
	_, imp, _ = stateMethods(t, c)
	if err, _ := imp.Call([]reflect.Value{st})[0].Interface().(error); err != nil {
		t.Fatalf("Import of the state again: %v", err)
	}
	if pc := predictBits(t, c, ps); !reflect.DeepEqual(p0, pc) {
		t.Fatalf("the exported state changed as the model learnt on: Export or Import kept a reference")
	}
}
