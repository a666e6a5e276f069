package svr

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestAOSVRHandlesPast32Bits runs one sequence of calls on two models, the
// second's handles starting near 2³² ("rebase": they cross it, so their
// 32-bit offsets move to a new base) or jumping by 2³² + 7 after its first
// sample, which it keeps ("wide": the handles held span more than 2³², and
// are stored whole). Both must learn the same bits, and the second find
// every handle and export and import them unchanged.
func TestAOSVRHandlesPast32Bits(t *testing.T) {
	for _, tc := range []struct {
		name        string
		start, jump uint64
		keepFirst   bool
	}{{"rebase", 1<<32 - 4, 0, false}, {"wide", 0, 1<<32 + 7, true}} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(3, 4))
			a := newTestAOSVR(t, 3, 10, 0.05, RBF{Gamma: 1})
			b := newTestAOSVR(t, 3, 10, 0.05, RBF{Gamma: 1})
			b.next = tc.start
			var ha, hb []uint64 // the handles held, oldest first
			add := func(i int) {
				x := randVec(rng, 3)
				y := math.Sin(3*x[0]) + 0.5*x[1]*x[2]
				ia, err := a.Add(x, y)
				if err != nil {
					t.Fatal(err)
				}
				ib, err := b.Add(x, y)
				if err != nil {
					t.Fatal(err)
				}
				if i == 0 {
					b.next += tc.jump // as if that many samples had come and gone
				}
				ha, hb = append(ha, ia), append(hb, ib)
			}
			add(0)
			for i := 1; i < 60; i++ {
				add(i)
				if len(ha) > 8 {
					k := 0 // forget the oldest, or the second oldest to keep the first
					if tc.keepFirst {
						k = 1
					}
					if err := a.Remove(ha[k]); err != nil {
						t.Fatal(err)
					}
					if err := b.Remove(hb[k]); err != nil {
						t.Fatalf("step %d: remove %d: %v", i, hb[k], err)
					}
					ha, hb = slices.Delete(ha, k, k+1), slices.Delete(hb, k, k+1)
				}
				checkKKT(t, b, "past the jump")
				x := randVec(rng, 3)
				pa, _ := a.Predict(x)
				pb, _ := b.Predict(x)
				if math.Float64bits(pa) != math.Float64bits(pb) {
					t.Fatalf("step %d: predictions %v and %v", i, pa, pb)
				}
			}
			if b.idWide != tc.keepFirst {
				t.Fatalf("wide %v, want %v", b.idWide, tc.keepFirst)
			}
			if !tc.keepFirst && b.idBase == 0 {
				t.Fatalf("base %d: the offsets were not moved to a new base", b.idBase)
			}
			if old, _ := b.Oldest(); old != hb[0] {
				t.Fatalf("oldest %d, want %d", old, hb[0])
			}
			if hb[len(hb)-1] <= math.MaxUint32 {
				t.Fatalf("last handle %d: the jump was not taken", hb[len(hb)-1])
			}
			// The oldest goes, its slot taken by the newest.
			if err := a.Remove(ha[0]); err != nil {
				t.Fatal(err)
			}
			if err := b.Remove(hb[0]); err != nil {
				t.Fatal(err)
			}
			ha, hb = ha[1:], hb[1:]
			add(60)
			st := b.Export()
			got := slices.Clone(st.IDs)
			slices.Sort(got)
			if !slices.Equal(got, hb) {
				t.Fatalf("exported handles %v, want %v", got, hb)
			}
			c := newTestAOSVR(t, 3, 10, 0.05, RBF{Gamma: 1})
			if err := c.Import(st); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(c.Export().IDs, st.IDs) {
				t.Fatalf("imported handles %v, exported %v", c.Export().IDs, st.IDs)
			}
			for _, h := range hb {
				if c.find(h) < 0 {
					t.Fatalf("imported model lost handle %d", h)
				}
			}
			if c.find(hb[0]+1<<33) >= 0 || c.find(3) >= 0 && !slices.Contains(hb, 3) {
				t.Fatal("found a handle the model does not hold")
			}
		})
	}
}
