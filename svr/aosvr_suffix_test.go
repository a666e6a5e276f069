package svr

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// rbfAsAny is RBF behind another type: an AOSVR does not recognise it as
// an RBF, so it stores every input and evaluates the kernel through Eval.
type rbfAsAny struct{ RBF }

// TestAOSVRConstantInputs: an RBF model stores the trailing inputs that
// every sample it holds shares once, and gives the same bits as a model
// that stores them all (the same kernel through Eval): θ, b, margins, R
// and predictions after every call, through the stride's growth (an input
// that starts to vary, a −0 against a +0), a window sliding over them, a
// model emptied and filled again, and Import.
func TestAOSVRConstantInputs(t *testing.T) {
	const d, w = 6, 30
	cfg := AOSVRConfig{Dim: d, Kernel: RBF{Gamma: 0.5}, C: 3, Epsilon: 0.1, Capacity: w}
	a, err := NewAOSVR(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Kernel = rbfAsAny{RBF{Gamma: 0.5}}
	b, err := NewAOSVR(cfg)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(7, 8))
	probe := make([]float64, d)
	same := func(step int) {
		t.Helper()
		sa, sb := a.Export(), b.Export()
		if !bitsEqual(sa.Theta, sb.Theta) || !bitsEqual(sa.H, sb.H) || !bitsEqual(sa.R, sb.R) ||
			math.Float64bits(sa.Bias) != math.Float64bits(sb.Bias) || !slices.Equal(sa.IDs, sb.IDs) {
			t.Fatalf("step %d: the models differ", step)
		}
		for i := range sa.X {
			if !bitsEqual(sa.X[i], sb.X[i]) {
				t.Fatalf("step %d: sample %d is %v, want %v", step, i, sa.X[i], sb.X[i])
			}
		}
		for j := range probe {
			probe[j] = r.NormFloat64()
		}
		pa, _ := a.Predict(probe)
		pb, _ := b.Predict(probe)
		if math.Float64bits(pa) != math.Float64bits(pb) {
			t.Fatalf("step %d: f = %v, want %v", step, pa, pb)
		}
		if v := a.MaxKKTViolation(); v > 1e-9 {
			t.Fatalf("step %d: KKT violated by %v", step, v)
		}
	}
	x := make([]float64, d)
	var ids []uint64
	for step := range 400 {
		for j := range x {
			x[j] = 0
		}
		x[0], x[1] = r.NormFloat64(), r.NormFloat64()
		switch {
		case step >= 300:
			x[4] = r.NormFloat64() // a late input starts to vary
		case step >= 200:
			x[2] = math.Copysign(0, -1) // −0 is not +0's bits
		}
		y := math.Sin(x[0]) + x[1]*x[1]/4
		if len(ids) == w {
			if err := a.Remove(ids[0]); err != nil {
				t.Fatal(err)
			}
			if err := b.Remove(ids[0]); err != nil {
				t.Fatal(err)
			}
			ids = ids[1:]
		}
		ia, err := a.Add(x, y)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := b.Add(x, y); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, ia)
		same(step)
		if step == 100 {
			// Empty both, then go on: the stride starts again.
			for _, id := range ids {
				if err := a.Remove(id); err != nil {
					t.Fatal(err)
				}
				if err := b.Remove(id); err != nil {
					t.Fatal(err)
				}
			}
			ids = ids[:0]
		}
		switch step {
		case 150:
			if a.xs != 2 || len(a.xsuf) != d-2 {
				t.Fatalf("%d inputs stored, %d constant; want 2 and %d", a.xs, len(a.xsuf), d-2)
			}
			if got, want := cap(a.x), 2*len(a.y); got != want {
				t.Fatalf("inputs buffer holds %d values, want %d", got, want)
			}
		case 250:
			if a.xs != 3 {
				t.Fatalf("%d inputs stored after −0 entered, want 3", a.xs)
			}
		case 399:
			if a.xs != 5 {
				t.Fatalf("%d inputs stored after input 4 varied, want 5", a.xs)
			}
		}
	}
	// Import gives the stride of the state's samples.
	c, err := NewAOSVR(AOSVRConfig{Dim: d, Kernel: RBF{Gamma: 0.5}, C: 3, Epsilon: 0.1, Capacity: w})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Import(a.Export()); err != nil {
		t.Fatal(err)
	}
	if c.xs != a.xs {
		t.Fatalf("imported model stores %d inputs, the exporting one %d", c.xs, a.xs)
	}
	pa, _ := a.Predict(probe)
	pc, _ := c.Predict(probe)
	if math.Float64bits(pa) != math.Float64bits(pc) {
		t.Fatalf("imported model predicts %v, want %v", pc, pa)
	}
}

func bitsEqual(a, b []float64) bool {
	return slices.EqualFunc(a, b, func(x, y float64) bool { return math.Float64bits(x) == math.Float64bits(y) })
}

// TestAOSVRConstantInputsRollback: a call that fails, every stage and the
// rebuild made to fail, on a model storing constant trailing inputs once,
// leaves it bit for bit as before, though the call's sample widened the
// stored inputs (Add, and Replace of a model's only sample, which starts
// them afresh); the model then goes on as a twin never given the calls.
func TestAOSVRConstantInputsRollback(t *testing.T) {
	const d, w = 4, 20
	newM := func() *AOSVR {
		m, err := NewAOSVR(AOSVRConfig{Dim: d, Kernel: RBF{Gamma: 0.5}, C: 3, Epsilon: 0.05, Capacity: w})
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	r := rand.New(rand.NewPCG(9, 10))
	sample := func() ([]float64, float64) {
		x := []float64{r.NormFloat64(), r.NormFloat64(), 0, 0}
		return x, math.Sin(2*x[0]) + x[1]
	}
	probes := make([][]float64, 6)
	for i := range probes {
		probes[i] = []float64{r.NormFloat64(), r.NormFloat64(), r.NormFloat64(), r.NormFloat64()}
	}
	fail := func(stage) bool { return true }
	check := func(m *AOSVR, what string, f func() error) {
		t.Helper()
		before := stateOf(m, probes)
		m.fault = fail
		err := f()
		m.fault = nil
		if !errors.Is(err, ErrNumerical) {
			t.Fatalf("%s: %v, want ErrNumerical", what, err)
		}
		sameState(t, m, before, probes, what)
	}

	// A model of one sample: Replace drops it, the new sample starts the
	// stored inputs afresh, and the rollback restores the old ones.
	one, twin := newM(), newM()
	x, y := sample()
	for _, m := range []*AOSVR{one, twin} {
		if _, err := m.Add(x, y); err != nil {
			t.Fatal(err)
		}
	}
	old, _ := one.Oldest()
	check(one, "replace the only sample", func() error {
		_, err := one.Replace(old, []float64{1, 2, 3, 4}, 1)
		return err
	})
	if one.xs != 0 || !bitsEqual(one.xsuf, x) {
		t.Fatalf("after the rollback: %d inputs stored, constant %v; want 0 and %v", one.xs, one.xsuf, x)
	}

	// A full window: Add and Replace with a sample whose constant inputs
	// differ, which widens the stored inputs before the failure.
	for i := range 3 * w {
		x, y := sample()
		for _, m := range []*AOSVR{one, twin} {
			if m.Len() == w {
				if err := m.ForgetOldest(); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := m.Add(x, y); err != nil {
				t.Fatal(err)
			}
		}
		if i == w {
			if one.xs != 2 {
				t.Fatalf("%d inputs stored, want 2", one.xs)
			}
			check(one, "add widening", func() error {
				_, err := one.Add([]float64{0.1, 0.2, 0, 7}, 3)
				return err
			})
			if one.xs != d {
				t.Fatalf("the failed Add left %d inputs stored, want %d: it did not widen them", one.xs, d)
			}
			old, _ := one.Oldest()
			check(one, "replace widening", func() error {
				_, err := one.Replace(old, []float64{0.1, 0.2, -1, 0}, 3)
				return err
			})
		}
	}
	sameState(t, one, stateOf(twin, probes), probes, "model against its twin")
}
