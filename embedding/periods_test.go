package embedding

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// hourly returns n hourly values: a daily cycle (and, with weekend < 1, a
// weekly one: Saturday and Sunday's cycle scaled by weekend), a trend and
// Gaussian noise of sd noise.
func hourly(n int, weekend, trend, noise float64, seed uint64) []float64 {
	rng := rand.New(rand.NewPCG(seed, 7))
	x := make([]float64, n)
	for i := range x {
		w := 1.0
		if (i/24)%7 >= 5 {
			w = weekend
		}
		x[i] = 100 + trend*float64(i) + 10*w*math.Sin(2*math.Pi*float64(i%24)/24) + noise*rng.NormFloat64()
	}
	return x
}

func TestDetectPeriods(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	white := make([]float64, DetectLen)
	walk := make([]float64, DetectLen)
	for i := range white {
		white[i] = rng.NormFloat64()
		if i > 0 {
			walk[i] = walk[i-1] + rng.NormFloat64()
		}
	}
	for _, c := range []struct {
		name string
		x    []float64
		n    int
		want []int
	}{
		{"daily", hourly(DetectLen, 1, 0, 1, 1), 2, []int{24}},
		{"daily, trend", hourly(DetectLen, 1, 0.5, 1, 2), 2, []int{24}},
		{"daily and weekly", hourly(DetectLen, 0.2, 0, 1, 3), 2, []int{24, 168}},
		{"daily and weekly, one slot", hourly(DetectLen, 0.2, 0, 1, 3), 1, []int{24}},
		{"white noise", white, 2, nil},
		{"random walk", walk, 2, nil},
		{"constant", make([]float64, DetectLen), 2, nil},
		{"too short", hourly(10, 1, 0, 0, 4), 2, nil},
	} {
		if got := DetectPeriods(c.x, c.n); !slices.Equal(got, c.want) {
			t.Errorf("%s: DetectPeriods = %v, want %v", c.name, got, c.want)
		}
	}
}

// TestDetectPeriodsNoiseFalseAlarms: on white noise and random walks,
// which have no cycle, a period is found rarely.
func TestDetectPeriodsNoiseFalseAlarms(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	found := 0
	const runs = 200
	x := make([]float64, DetectLen)
	for r := range runs {
		for i := range x {
			x[i] = rng.NormFloat64()
			if r%2 == 1 && i > 0 {
				x[i] += x[i-1]
			}
		}
		if DetectPeriods(x, 2) != nil {
			found++
		}
	}
	if found > runs/50 {
		t.Errorf("a period found in %d of %d series without one", found, runs)
	}
}

// TestChangesDetectedSeasons: a Changes that reserved history keeps
// DetectLen values, and SetSeasons then keeps only what the periods need,
// the newest values.
func TestChangesDetectedSeasons(t *testing.T) {
	c, err := NewChanges(ChangeSpec{Dim: 3, Seasons: 2})
	if err != nil {
		t.Fatal(err)
	}
	c.ReserveHistory(DetectLen)
	x := hourly(DetectLen+50, 0.2, 0, 0.5, 5)
	for _, v := range x {
		c.Push(v)
	}
	if c.Held() != DetectLen {
		t.Fatalf("held %d values, want %d", c.Held(), DetectLen)
	}
	h := c.History(nil)
	if !slices.Equal(h, x[len(x)-DetectLen:]) {
		t.Fatal("History is not the newest values, oldest first")
	}
	st := c.State()
	ps := DetectPeriods(h, 2)
	if err := c.SetSeasons(ps); err != nil {
		t.Fatal(err)
	}
	if want := ps[1] + 1; c.Held() != want {
		t.Fatalf("after SetSeasons(%v) held %d values, want %d", ps, c.Held(), want)
	}
	if got, _ := c.Seasonal(1); got != x[len(x)-ps[1]] {
		t.Fatalf("Seasonal(1) = %v, want x(t+1−P) = %v", got, x[len(x)-ps[1]])
	}
	// A checkpoint taken while detecting restores with its history.
	r, _ := NewChanges(ChangeSpec{Dim: 3, Seasons: 2})
	if err := r.SetState(st); err != nil {
		t.Fatalf("restoring a detecting state: %v", err)
	}
	if r.Held() != DetectLen {
		t.Fatalf("restored %d values, want %d", r.Held(), DetectLen)
	}
}
