package embedding

import (
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
)

// cloneChanges returns an independent copy of c through its state.
func cloneChanges(t *testing.T, c *Changes) *Changes {
	t.Helper()
	d, err := NewChanges(c.spec)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.SetState(c.State()); err != nil {
		t.Fatal(err)
	}
	return d
}

// TestInputAheadIsPushingTheForecasts: on random series, InputAhead with k
// forecasts equals the input of a copy that was pushed those forecasts, up
// to the unit (InputAhead keeps the scale s(t), the copy's moved), and the
// receiver is unchanged. The clip is wide so that no entry is clipped.
func TestInputAheadIsPushingTheForecasts(t *testing.T) {
	const tol = 1e-9
	r := rand.New(rand.NewPCG(10, 1))
	for trial := range 50 {
		spec := ChangeSpec{Dim: 1 + r.IntN(6), LevelRates: []float64{0.05, 0.5}, Seasons: 2, Clip: 1e12}
		c := newChanges(t, spec)
		if err := c.SetSeasons([]int{2 + r.IntN(10), 2 + r.IntN(30)}); err != nil {
			t.Fatal(err)
		}
		n := 5 + r.IntN(80)
		x := 0.0
		for range n {
			x += r.NormFloat64()
			c.Push(x)
		}
		if !c.Ready() {
			continue
		}
		before := c.State()
		k := r.IntN(15)
		ahead := make([]float64, k)
		for i := range ahead {
			x += r.NormFloat64()
			ahead[i] = x
		}
		got := make([]float64, c.Len())
		c.InputAhead(got, ahead)
		if !reflect.DeepEqual(before, c.State()) {
			t.Fatalf("trial %d: InputAhead changed the receiver", trial)
		}
		d := cloneChanges(t, c)
		for _, y := range ahead {
			d.Push(y)
		}
		want := make([]float64, d.Len())
		d.Input(want)
		for i := range got {
			g, w := got[i]*c.Scale(), want[i]*d.Scale()
			if math.Abs(g-w) > tol*(1+math.Abs(w)) {
				t.Fatalf("trial %d (dim %d, seasons %v, %d points, k %d): entry %d is %v in series units, pushing gives %v",
					trial, spec.Dim, c.Seasons(), n, k, i, g, w)
			}
		}
		for j := range 2 {
			for h := 1; h <= k+1 && h <= c.Seasons()[j]; h++ {
				e := cloneChanges(t, c)
				for _, y := range ahead[:h-1] {
					e.Push(y)
				}
				g, gok := c.SeasonalAhead(j, h)
				w, wok := e.Seasonal(j)
				if gok != wok || (gok && g != w) {
					t.Fatalf("trial %d: SeasonalAhead(%d, %d) = %v, %v; Seasonal after %d pushes = %v, %v", trial, j, h, g, gok, h-1, w, wok)
				}
			}
		}
	}
}

// TestSeasonalAheadWraps: beyond one period the seasonal naive repeats the
// last period: x(t+h−P·⌈h/P⌉).
func TestSeasonalAheadWraps(t *testing.T) {
	c := newChanges(t, ChangeSpec{Dim: 1, Seasons: 1})
	if err := c.SetSeasons([]int{3}); err != nil {
		t.Fatal(err)
	}
	for _, x := range []float64{1, 2, 3, 4, 5, 6} { // x(t) = 6
		c.Push(x)
	}
	for h, want := range map[int]float64{1: 4, 2: 5, 3: 6, 4: 4, 5: 5, 6: 6, 7: 4} {
		if got, ok := c.SeasonalAhead(0, h); !ok || got != want {
			t.Errorf("h %d: %v, %v; want %v", h, got, ok, want)
		}
	}
}

// TestSeasonalMedianAhead checks SeasonalMedianAhead against the
// definition recomputed from the whole series pushed: for random periods,
// lengths (so that 0 to 7 cycles are in the history, the ring wrapped or
// not) and steps h, the median of the largest odd number ≤ 7 of values
// at x(t+h)'s phase that the kept history holds, newest first; and that
// one cycle's spike, however large, does not move it once three are held.
func TestSeasonalMedianAhead(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 42))
	checked := map[int]int{}
	for trial := 0; trial < 300; trial++ {
		p := 2 + rng.IntN(30)
		other := p * (1 + rng.IntN(9)) // a second period: the ring holds other+1 values
		c := newChanges(t, ChangeSpec{Dim: 1, Seasons: 2})
		if err := c.SetSeasons([]int{p, other}); err != nil {
			t.Fatal(err)
		}
		n := 1 + rng.IntN(12*p)
		xs := make([]float64, n)
		for i := range xs {
			xs[i] = math.Round(rng.NormFloat64() * 10)
			c.Push(xs[i])
		}
		held := min(n, max(p, other)+1)
		for h := 1; h <= 2*p+1; h++ {
			j := p*((h+p-1)/p) - h
			got, ok := c.SeasonalMedianAhead(0, h)
			if ok != (j < held) {
				t.Fatalf("trial %d h %d: ok %v with %d values held, newest at phase %d back", trial, h, ok, held, j)
			}
			if !ok {
				continue
			}
			var vals []float64
			for r := 0; r < SeasonalCycles && j+r*p < held; r++ {
				vals = append(vals, xs[n-1-j-r*p])
			}
			if len(vals)%2 == 0 {
				vals = vals[:len(vals)-1]
			}
			checked[len(vals)]++
			slices.Sort(vals)
			if want := vals[len(vals)/2]; got != want {
				t.Fatalf("trial %d h %d (P %d, %d held): %v, want the median %v of %d", trial, h, p, held, got, want, len(vals))
			}
		}
	}
	for _, m := range []int{1, 3, 5, 7} {
		if checked[m] < 20 {
			t.Errorf("medians of %d values checked %d times", m, checked[m])
		}
	}
	// A spike one day ago does not move the daily median of three (a
	// "week" of 4 days keeps the history).
	c := newChanges(t, ChangeSpec{Dim: 1, Seasons: 2})
	if err := c.SetSeasons([]int{4, 16}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 12; i++ {
		x := float64(i % 4)
		if i == 8 {
			x = 1e9 // at x(t+1)'s phase, a cycle ago (x(t) is i = 11)
		}
		c.Push(x)
	}
	if got, ok := c.SeasonalMedianAhead(0, 1); !ok || got != 0 {
		t.Errorf("after a spike a cycle ago: %v, %v; want 0", got, ok)
	}
	if got, _ := c.SeasonalAhead(0, 1); got != 1e9 {
		t.Errorf("SeasonalAhead %v, want the spike", got)
	}
}
