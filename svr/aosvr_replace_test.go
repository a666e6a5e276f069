package svr

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestAOSVRReplaceIsRemoveThenAdd slides two models over the same samples,
// one by Remove(oldest) then Add, the other by Replace(oldest): after every
// step they are the same bit for bit (handles, θ, h, R, margin set,
// predictions).
func TestAOSVRReplaceIsRemoveThenAdd(t *testing.T) {
	for _, c := range []struct{ eps, cap float64 }{{0.1, 10}, {0.01, 10}, {0, 1}, {0.05, 1e3}} {
		t.Run(fmt.Sprintf("eps=%g/C=%g", c.eps, c.cap), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(97, uint64(1000*c.eps)))
			s := randomSeq(rng, 400, 2)
			probes := randomSeq(rng, 8, 2).x
			two := newTestAOSVR(t, 2, c.cap, c.eps, RBF{Gamma: 1})
			one := newTestAOSVR(t, 2, c.cap, c.eps, RBF{Gamma: 1})
			const w = 30
			for i := range s.x {
				if i < w {
					for _, m := range []*AOSVR{two, one} {
						if _, err := m.Add(s.x[i], s.y[i]); err != nil {
							t.Fatal(err)
						}
					}
					continue
				}
				old, _ := two.Oldest()
				if err := two.Remove(old); err != nil {
					t.Fatal(err)
				}
				idTwo, err := two.Add(s.x[i], s.y[i])
				if err != nil {
					t.Fatal(err)
				}
				old, _ = one.Oldest()
				idOne, err := one.Replace(old, s.x[i], s.y[i])
				if err != nil {
					t.Fatal(err)
				}
				if idOne != idTwo {
					t.Fatalf("step %d: handle %d, want %d", i, idOne, idTwo)
				}
				sameState(t, one, stateOf(two, probes), probes, fmt.Sprintf("step %d", i))
				checkKKT(t, one, fmt.Sprintf("step %d", i))
			}
		})
	}
}

// TestAOSVRReplaceRollbackRandomFaults injects a fault at a random stage
// into random Replace calls of a sliding window and checks after every
// failed call that the model is bit for bit as before (the old sample
// still held), and after every call the KKT conditions.
func TestAOSVRReplaceRollbackRandomFaults(t *testing.T) {
	rng := rand.New(rand.NewPCG(98, 99))
	s := randomSeq(rng, 2000, 3)
	probes := randomSeq(rng, 8, 3).x
	for _, eps := range []float64{0.1, 0.01} {
		m := newTestAOSVR(t, 3, 10, eps, RBF{Gamma: 1})
		const w = 40
		for i := range w {
			if _, err := m.Add(s.x[i], s.y[i]); err != nil {
				t.Fatal(err)
			}
		}
		var fails, rollbacks int
		for i := w; i < w+600; i++ {
			var fault stage = 255
			if rng.IntN(3) == 0 {
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
			// The oldest or a random sample.
			st := m.Export()
			old, _ := m.Oldest()
			if rng.IntN(2) == 0 {
				old = st.IDs[rng.IntN(len(st.IDs))]
			}
			_, err := m.Replace(old, s.x[i], s.y[i])
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
			if m.Len() != w {
				t.Fatalf("eps %g, call %d: model holds %d samples, want %d", eps, i, m.Len(), w)
			}
			checkKKT(t, m, fmt.Sprintf("eps %g, call %d", eps, i))
		}
		if fails == 0 || fails == rollbacks {
			t.Fatalf("eps %g: %d of %d faulty calls failed: want some to fail and some to be saved by a rebuild", eps, fails, rollbacks)
		}
		t.Logf("eps %g: %d failed calls, %+v", eps, fails, m.Stats())
	}
}
