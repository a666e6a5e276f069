package svr

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// poisonKernel is RBF{Gamma: 1} but for one input, whose kernel value with
// anything is NaN: a sample at poison can never be learnt, by the
// incremental step or by a rebuild. It is symmetric bit for bit, as
// rollback requires of a kernel.
type poisonKernel struct{ poison []float64 }

func (k poisonKernel) Eval(a, b []float64) float64 {
	if slices.Equal(a, k.poison) || slices.Equal(b, k.poison) {
		return math.NaN()
	}
	return RBF{Gamma: 1}.Eval(a, b)
}

func (poisonKernel) Validate() error  { return nil }
func (k poisonKernel) String() string { return fmt.Sprintf("poison(%v)", k.poison) }

// aosvrState is everything a rollback must restore, internal state
// included, for bit-for-bit comparison.
type aosvrState struct {
	st    AOSVRState
	cols  [][]float64
	spos  []int32
	set   []uint8
	kkt   float64
	preds []float64
}

func stateOf(m *AOSVR, probes [][]float64) aosvrState {
	s := aosvrState{st: m.Export(), kkt: m.MaxKKTViolation()}
	for _, c := range m.cols {
		s.cols = append(s.cols, slices.Clone(c[:m.n]))
	}
	s.spos = slices.Clone(m.spos[:m.n])
	s.set = slices.Clone(m.set[:m.n])
	for _, p := range probes {
		v, err := m.Predict(p)
		if err != nil {
			panic(err)
		}
		s.preds = append(s.preds, v)
	}
	return s
}

// sameBits reports whether a and b hold the same float64 values bit for bit.
func sameBits(a, b []float64) bool {
	return slices.EqualFunc(a, b, func(x, y float64) bool { return math.Float64bits(x) == math.Float64bits(y) })
}

// sameState fails unless the model's state is bit for bit want.
func sameState(t *testing.T, m *AOSVR, want aosvrState, probes [][]float64, what string) {
	t.Helper()
	got := stateOf(m, probes)
	a, b := got.st, want.st
	switch {
	case a.Dim != b.Dim || a.Next != b.Next || a.Ops != b.Ops || a.RefreshPending != b.RefreshPending:
		t.Fatalf("%s: dim/next/ops/refresh %v %v %v %v, want %v %v %v %v", what,
			a.Dim, a.Next, a.Ops, a.RefreshPending, b.Dim, b.Next, b.Ops, b.RefreshPending)
	case !slices.Equal(a.IDs, b.IDs):
		t.Fatalf("%s: handles %v, want %v", what, a.IDs, b.IDs)
	case len(a.X) != len(b.X):
		t.Fatalf("%s: %d samples, want %d", what, len(a.X), len(b.X))
	case !sameBits(a.Y, b.Y) || !sameBits(a.Theta, b.Theta) || !sameBits(a.H, b.H) || !sameBits(a.R, b.R):
		t.Fatalf("%s: targets, θ, h or R changed", what)
	case math.Float64bits(a.Bias) != math.Float64bits(b.Bias):
		t.Fatalf("%s: bias %v, want %v", what, a.Bias, b.Bias)
	case !slices.Equal(a.Margin, b.Margin):
		t.Fatalf("%s: margin set %v, want %v", what, a.Margin, b.Margin)
	case !slices.Equal(got.spos, want.spos) || !slices.Equal(got.set, want.set):
		t.Fatalf("%s: set bookkeeping changed", what)
	case len(got.cols) != len(want.cols):
		t.Fatalf("%s: %d kernel columns, want %d", what, len(got.cols), len(want.cols))
	case !sameBits(got.preds, want.preds):
		t.Fatalf("%s: predictions %v, want %v", what, got.preds, want.preds)
	case math.Float64bits(got.kkt) != math.Float64bits(want.kkt):
		t.Fatalf("%s: KKT violation %v, want %v", what, got.kkt, want.kkt)
	}
	for i := range a.X {
		if !sameBits(a.X[i], b.X[i]) {
			t.Fatalf("%s: input %d is %v, want %v", what, i, a.X[i], b.X[i])
		}
	}
	for k := range got.cols {
		if !sameBits(got.cols[k], want.cols[k]) {
			t.Fatalf("%s: kernel column %d changed", what, k)
		}
	}
}

// slide keeps m at w samples and learns steps more from s, starting at
// from, checking the KKT conditions after each step.
func slide(t *testing.T, m *AOSVR, s sampleSeq, from, steps, w int, what string) {
	t.Helper()
	for i := from; i < from+steps; i++ {
		if m.Len() >= w {
			if err := m.ForgetOldest(); err != nil {
				t.Fatalf("%s: forget at %d: %v", what, i, err)
			}
			checkKKT(t, m, fmt.Sprintf("%s: forget at %d", what, i))
		}
		if err := m.Learn(s.x[i], s.y[i]); err != nil {
			t.Fatalf("%s: learn %d: %v", what, i, err)
		}
		checkKKT(t, m, fmt.Sprintf("%s: learn %d", what, i))
	}
}

// TestAOSVRNumericalFailureLeavesModelUnchanged learns a sample whose
// kernel values are NaN: the incremental step and the rebuild both fail,
// the call returns ErrNumerical, the model is bit for bit as before
// (samples, handles, θ, h, R, kernel columns, predictions, KKT) and goes
// on learning, bit for bit as a twin that was never given the sample.
func TestAOSVRNumericalFailureLeavesModelUnchanged(t *testing.T) {
	poison := []float64{0.25, -0.5}
	for _, c := range []struct {
		eps, cap float64
	}{{0.1, 10}, {0.01, 10}, {0, 1}, {0.05, 1e3}} {
		t.Run(fmt.Sprintf("eps=%g/C=%g", c.eps, c.cap), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(91, uint64(1000*c.eps)))
			s := randomSeq(rng, 200, 2)
			probes := randomSeq(rng, 10, 2).x
			k := poisonKernel{poison: poison}
			m := newTestAOSVR(t, 2, c.cap, c.eps, k)
			twin := newTestAOSVR(t, 2, c.cap, c.eps, k)
			const w = 30
			slide(t, m, s, 0, 60, w, "warm")
			slide(t, twin, s, 0, 60, w, "twin warm")
			for try := range 3 {
				before := stateOf(m, probes)
				st0 := m.Stats()
				for _, y := range []float64{5, -5, 0} {
					_, err := m.Add(poison, y)
					if !errors.Is(err, ErrNumerical) {
						t.Fatalf("try %d: Add(poison, %v) = %v, want ErrNumerical", try, y, err)
					}
					sameState(t, m, before, probes, fmt.Sprintf("try %d, after failed Add(poison, %v)", try, y))
				}
				st := m.Stats()
				if st.Failures != st0.Failures+3 || st.Rollbacks != st0.Rollbacks+3 || st.Rebuilds != st0.Rebuilds+3 {
					t.Fatalf("stats after 3 failed adds: %+v, before %+v", st, st0)
				}
				from := 60 + 40*try
				slide(t, m, s, from, 40, w, "after failure")
				slide(t, twin, s, from, 40, w, "twin")
				sameState(t, m, stateOf(twin, probes), probes, "model against its twin")
			}
		})
	}
}

// TestAOSVRRollbackEveryStage makes each stage of the ladder fail in turn,
// through a fault hook, inside every kind of call: Add outside and inside
// the tube, Remove of a margin and of a remaining sample, ForgetOldest,
// UpdateTarget. With the rebuild failing too, the call returns
// ErrNumerical and the model is bit for bit as before; with the rebuild
// allowed, the call succeeds and the model is the solution on the samples
// the call should leave. Either way it goes on learning.
func TestAOSVRRollbackEveryStage(t *testing.T) {
	type call struct {
		name string
		// pick picks the sample the call acts on (nil: none needed).
		pick func(m *AOSVR) (uint64, bool)
		do   func(m *AOSVR, id uint64, x []float64) error
		// noStep: the call takes no incremental step.
		noStep bool
	}
	inSet := func(set uint8) func(m *AOSVR) (uint64, bool) {
		return func(m *AOSVR) (uint64, bool) {
			for i := 0; i < m.n; i++ {
				if m.set[i] == set {
					return m.id(i), true
				}
			}
			return 0, false
		}
	}
	calls := []call{
		{"add", nil, func(m *AOSVR, _ uint64, x []float64) error { _, err := m.Add(x, 3); return err }, false},
		{"add inside tube", nil, func(m *AOSVR, _ uint64, x []float64) error {
			y, _ := m.Predict(x)
			_, err := m.Add(x, y)
			return err
		}, true},
		{"remove margin sample", inSet(inS), func(m *AOSVR, id uint64, _ []float64) error { return m.Remove(id) }, false},
		{"remove error sample", inSet(inE), func(m *AOSVR, id uint64, _ []float64) error { return m.Remove(id) }, false},
		{"remove remaining sample", inSet(inR), func(m *AOSVR, id uint64, _ []float64) error { return m.Remove(id) }, true},
		{"forget oldest", nil, func(m *AOSVR, _ uint64, _ []float64) error { return m.ForgetOldest() }, false},
		{"update target", inSet(inR), func(m *AOSVR, id uint64, _ []float64) error { return m.UpdateTarget(id, 4) }, false},
		{"replace margin sample", inSet(inS), func(m *AOSVR, id uint64, x []float64) error { _, err := m.Replace(id, x, 3); return err }, false},
		{"replace error sample", inSet(inE), func(m *AOSVR, id uint64, x []float64) error { _, err := m.Replace(id, x, 3); return err }, false},
		{"replace remaining sample", inSet(inR), func(m *AOSVR, id uint64, x []float64) error { _, err := m.Replace(id, x, 3); return err }, false},
		{"replace remaining sample inside tube", inSet(inR), func(m *AOSVR, id uint64, x []float64) error {
			y, _ := m.Predict(x)
			_, err := m.Replace(id, x, y)
			return err
		}, true},
	}
	stages := []struct {
		name string
		s    stage
	}{{"step", stageStep}, {"refresh", stageRefresh}}
	rng := rand.New(rand.NewPCG(93, 94))
	s := randomSeq(rng, 400, 2)
	probes := randomSeq(rng, 10, 2).x
	for _, c := range calls {
		for _, sg := range stages {
			for _, rebuild := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/%s/rebuild=%v", c.name, sg.name, rebuild), func(t *testing.T) {
					m := newTestAOSVR(t, 2, 1, 0.1, RBF{Gamma: 1})
					const w = 40
					slide(t, m, s, 0, 80, w, "warm")
					var id uint64
					if c.pick != nil {
						var ok bool
						if id, ok = c.pick(m); !ok {
							t.Skip("no sample in the set wanted")
						}
					}
					if sg.s == stageRefresh {
						m.ops = refreshEvery - 1 // the call ends with a periodic refresh
					}
					before := stateOf(m, probes)
					// The stage fails once: in the call, not again in the
					// rebuild, which fails on its own if it is not allowed.
					failed := 0
					m.fault = func(at stage) bool {
						if (at == sg.s && failed == 0) || (at == stageRebuild && !rebuild) {
							failed++
							return true
						}
						return false
					}
					x := []float64{0.3, -0.7}
					err := c.do(m, id, x)
					m.fault = nil
					if failed == 0 {
						if !(c.noStep && sg.s == stageStep) {
							t.Fatal("the call did not reach the stage")
						}
						if err != nil {
							t.Fatalf("call = %v", err)
						}
						slide(t, m, s, 80, 120, w, "after the call")
						return
					}
					if !rebuild {
						if !errors.Is(err, ErrNumerical) {
							t.Fatalf("call = %v, want ErrNumerical", err)
						}
						sameState(t, m, before, probes, "after the failed call")
						if st := m.Stats(); st.Failures != 1 || st.Rollbacks != 1 {
							t.Fatalf("stats %+v, want one rollback and one failure", st)
						}
					} else {
						if err != nil {
							t.Fatalf("call with a working rebuild = %v", err)
						}
						checkKKT(t, m, "after the rebuild")
						if st := m.Stats(); st.Failures != 0 || st.Rollbacks != 1 || st.Rebuilds != 1 {
							t.Fatalf("stats %+v, want one rollback and one rebuild", st)
						}
						// The rebuilt model is the solution on its samples.
						fresh := newTestAOSVR(t, 2, 1, 0.1, RBF{Gamma: 1})
						st := m.Export()
						order := make([]int, len(st.IDs))
						for i := range order {
							order[i] = i
						}
						slices.SortFunc(order, func(a, b int) int { return int(st.IDs[a]) - int(st.IDs[b]) })
						for _, i := range order {
							if _, err := fresh.Add(st.X[i], st.Y[i]); err != nil {
								t.Fatal(err)
							}
						}
						samePredictions(t, m, fresh, probes, closeTol, "rebuilt model against a fresh one")
					}
					slide(t, m, s, 80, 120, w, "after the call")
				})
			}
		}
	}
}

// TestAOSVRRollbackRandomFaults injects a fault at a random stage into
// random calls of a long random sequence of adds, removes and target
// updates, and checks after every failed call that the model is bit for
// bit as before, and after every call the KKT conditions.
func TestAOSVRRollbackRandomFaults(t *testing.T) {
	rng := rand.New(rand.NewPCG(95, 96))
	s := randomSeq(rng, 3000, 3)
	probes := randomSeq(rng, 8, 3).x
	for _, eps := range []float64{0.1, 0.01} {
		m := newTestAOSVR(t, 3, 10, eps, RBF{Gamma: 1})
		var ids []uint64
		var fails, rollbacks int
		for i := range 800 {
			var fault stage = 255
			if rng.IntN(4) == 0 {
				fault = stage(rng.IntN(4))
			}
			rebuildOK := rng.IntN(2) == 0
			fired := false
			m.fault = func(at stage) bool {
				if at == fault && !fired {
					fired = true
					return true
				}
				return at == stageRebuild && !rebuildOK && fired
			}
			before := stateOf(m, probes)
			var err error
			var id uint64
			op := rng.IntN(10)
			switch {
			case op < 5 || len(ids) < 5:
				id, err = m.Add(s.x[i], s.y[i])
				if err == nil {
					ids = append(ids, id)
				}
			case op < 8:
				k := rng.IntN(len(ids))
				if err = m.Remove(ids[k]); err == nil {
					ids = slices.Delete(ids, k, k+1)
				}
			default:
				err = m.UpdateTarget(ids[rng.IntN(len(ids))], s.y[rng.IntN(len(s.y))])
			}
			m.fault = nil
			if fired {
				rollbacks++
			}
			if err != nil {
				if !errors.Is(err, ErrNumerical) {
					t.Fatalf("eps %g, call %d: %v", eps, i, err)
				}
				fails++
				sameState(t, m, before, probes, fmt.Sprintf("eps %g, call %d", eps, i))
			}
			if m.Len() != len(ids) {
				t.Fatalf("eps %g, call %d: model holds %d samples, want %d", eps, i, m.Len(), len(ids))
			}
			checkKKT(t, m, fmt.Sprintf("eps %g, call %d", eps, i))
		}
		if fails == 0 || fails == rollbacks {
			t.Fatalf("eps %g: %d of %d faulty calls failed: want some to fail and some to be saved by a rebuild", eps, fails, rollbacks)
		}
		t.Logf("eps %g: %d failed calls, %+v", eps, fails, m.Stats())
	}
}
