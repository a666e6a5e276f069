package embedding

import (
	"math"
	"math/rand/v2"
	"reflect"
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
