package threshold

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

// veryclose is the tolerance of probabilities computed two ways.
const veryclose = 1e-8

// TestNeedMatchesProb: a forecast beyond the threshold by exactly Need(p)
// has the probability p, over a ladder of window sizes and probabilities
// (seeded), one step's distribution and two interpolated.
func TestNeedMatchesProb(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{1, 2, 9, 50, 200} {
		rs, rs2 := make([]float64, n), make([]float64, n+3)
		for i := range rs {
			rs[i] = rng.ExpFloat64()
		}
		for i := range rs2 {
			rs2[i] = 3 * rng.ExpFloat64()
		}
		slices.Sort(rs)
		slices.Sort(rs2)
		for _, p := range []float64{0.05, 0.3, 0.5, 0.7, 0.9, 0.99} {
			if got := Prob(rs, rs, 0, Need(rs, p)); math.Abs(got-p) > veryclose {
				t.Errorf("n=%d p=%v: Prob(Need) = %v", n, p, got)
			}
			const lam = 0.3
			need := (1-lam)*Need(rs, p) + lam*Need(rs2, p)
			if got := Prob(rs, rs2, lam, need); math.Abs(got-p) > veryclose {
				t.Errorf("n=%d p=%v interpolated: Prob(Need) = %v", n, p, got)
			}
		}
	}
}

// TestProbConstructed: probabilities on a hand-made window of the
// residuals 1…10 (the quantile function linear through (k/10, k)): on the
// threshold ½; beyond by 0.5, 1 − ½·0.95; by 9.5, 1 − ½·0.05; short by
// 5.5, ½·0.45; interpolation halfway between the window and its double is
// the window times 1.5.
func TestProbConstructed(t *testing.T) {
	rs := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	double := make([]float64, len(rs))
	for i, r := range rs {
		double[i] = 2 * r
	}
	for _, c := range []struct {
		lo, hi   []float64
		lam, m   float64
		want     float64
		describe string
	}{
		{rs, rs, 0, 0, 0.5, "on the threshold"},
		{rs, rs, 0, 0.5, 1 - 0.475, "beyond by 0.5"},
		{rs, rs, 0, 9.5, 1 - 0.025, "beyond by 9.5"},
		{rs, rs, 0, 11, 1, "beyond by more than any"},
		{rs, rs, 0, -5.5, 0.225, "short by 5.5"},
		{rs, rs, 0, -11, 0, "short by more than any"},
		{rs, double, 0.5, -8.25, 0.225, "interpolated: short by 1.5 × 5.5"},
	} {
		if got := Prob(c.lo, c.hi, c.lam, c.m); math.Abs(got-c.want) > veryclose {
			t.Errorf("%s: Prob = %v, want %v", c.describe, got, c.want)
		}
	}
	if got, want := Need(rs, 0.9), 8.0; got != want { // Q(0.8) = r₈
		t.Errorf("Need(0.9) = %v, want %v", got, want)
	}
	if got, want := Need(rs, 0.25), -5.0; got != want { // −Q(0.5)
		t.Errorf("Need(0.25) = %v, want %v", got, want)
	}
	if got := Need(rs, 0.5); got != 0 {
		t.Errorf("Need(0.5) = %v, want 0: the path's own crossing", got)
	}
}

// TestTracker: opened after Open crossings in a row; updated only when
// the crossing moves materially (its time and its ETA, each by more than
// Update of the time left) in Open forecasts in a row; closed after Close
// forecasts in a row without a crossing.
func TestTracker(t *testing.T) {
	tr, err := NewTracker(Config{Value: 90, Direction: Above, Open: 2, Close: 2, Update: 0.25})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC)
	obs := func(i int, cross bool, eta time.Duration) Event {
		o := Observation{Crossing: cross, Probability: 0.3}
		if cross {
			o.At, o.ETA, o.Step, o.Probability = t0.Add(time.Duration(i)*time.Hour+eta), eta, int(eta/time.Hour), 0.9
		}
		tr.Observe(&o)
		return o.Event
	}
	steps := []struct {
		cross bool
		eta   time.Duration
		want  Event
	}{
		{true, 10 * time.Hour, None},   // one crossing: not yet
		{false, 0, None},               // broken run
		{true, 10 * time.Hour, None},   // 1
		{true, 10 * time.Hour, Opened}, // 2 in a row: opened, crossing at 3+10 = 13h
		{true, 9 * time.Hour, None},    // at 4+9 = 13h: same time
		{true, 10 * time.Hour, None},   // at 15h: moved 2h ≤ 2.5h
		{true, 12 * time.Hour, None},   // at 18h: moved 5h, but the ETA 2h: receding with the clock
		{true, 16 * time.Hour, None},   // at 23h: moved 10h, the ETA 6h: material, once
		{true, 15 * time.Hour, Updated},
		{false, 0, None},
		{true, 11 * time.Hour, None}, // a crossing resets the closing run
		{false, 0, None},
		{false, 0, Closed},
		{false, 0, None},
	}
	for i, s := range steps {
		if got := obs(i, s.cross, s.eta); got != s.want {
			t.Fatalf("forecast %d: event %v, want %v", i, got, s.want)
		}
	}
}

// TestTrackerMaterial: an open event is not updated by a crossing that
// stays put as the clock nears it, nor by one that recedes with the
// clock (always the same ETA), nor once the time published has come,
// nor by a move of one step; it is by a move that holds.
func TestTrackerMaterial(t *testing.T) {
	t0 := time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		name   string
		eta    func(i int) int // the crossing's step (hours) at forecast i; 0: none
		update bool
	}{
		{"a fixed time neared", func(i int) int { return 40 - i }, false},
		{"a constant ETA", func(int) int { return 3 }, false},
		{"a constant long ETA", func(int) int { return 30 }, false},
		{"a step either way", func(i int) int { return 3 + i%3 - 1 }, false},
		{"brought forward", func(i int) int {
			if i < 5 {
				return 40 - i
			}
			return 10
		}, true},
	} {
		tr, _ := NewTracker(Config{Value: 1, Direction: Above, Open: 2, Close: 3})
		updates := 0
		for i := range 30 {
			h := c.eta(i)
			o := Observation{Crossing: h > 0, Probability: 0.9, Step: h, ETA: time.Duration(h) * time.Hour,
				At: t0.Add(time.Duration(i+h) * time.Hour)}
			tr.Observe(&o)
			if i == 1 && o.Event != Opened {
				t.Fatalf("%s: forecast 1: %v, want opened", c.name, o.Event)
			}
			if o.Event == Updated {
				updates++
			}
		}
		if (updates > 0) != c.update || updates > 1 {
			t.Errorf("%s: %d updates, want %v", c.name, updates, c.update)
		}
	}
}

// TestTrackerProbability: an observation that says it crosses at a
// probability below the threshold's opens nothing.
func TestTrackerProbability(t *testing.T) {
	tr, _ := NewTracker(Config{Value: 1, Direction: Above, Probability: 0.49, Open: 1})
	t0 := time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC)
	for _, p := range []float64{0, 0.48, math.NaN()} {
		o := Observation{Crossing: true, Probability: p, Step: 2, ETA: 2 * time.Hour, At: t0.Add(2 * time.Hour)}
		if tr.Observe(&o); o.Event != None || tr.Open() {
			t.Fatalf("probability %v: %v, want none", p, o.Event)
		}
	}
	o := Observation{Crossing: true, Probability: 0.49, Step: 2, ETA: 2 * time.Hour, At: t0.Add(2 * time.Hour)}
	if tr.Observe(&o); o.Event != Opened {
		t.Fatalf("probability 0.49: %v, want opened", o.Event)
	}
}

// TestProbTies: residuals tied at the margin put the actual on the
// threshold, which is beyond it: a forecast short by exactly the one
// residual all 200 had (a flat series on the threshold, a rounding
// error short of it) has the probability ½·(1 − 1/200), not 0 (the
// quantile function is linear from 0 to the smallest residual over the
// first 1/200); and every margin that Need calls crossing has a
// probability at least p, ties or not.
func TestProbTies(t *testing.T) {
	const r = 5.551115123125783e-17 // a residual left by rounding
	tied := make([]float64, 200)
	for i := range tied {
		tied[i] = r
	}
	if got, want := Prob(tied, tied, 0, -r), (1-1.0/200)/2; math.Abs(got-want) > veryclose {
		t.Errorf("short by the tied residual: %v, want %v", got, want)
	}
	if m, need := -r, Need(tied, 0.49); m < need {
		t.Errorf("short by the tied residual: not crossing at 0.49 (need %v)", need)
	}
	rng := rand.New(rand.NewPCG(5, 6))
	for range 2000 {
		n := 1 + rng.IntN(20)
		lo, hi := make([]float64, n), make([]float64, n+rng.IntN(3))
		for i := range lo {
			lo[i] = float64(rng.IntN(4)) // ties
		}
		for i := range hi {
			hi[i] = float64(rng.IntN(4)) * 1.5
		}
		slices.Sort(lo)
		slices.Sort(hi)
		lam := []float64{0, 0.3, 1}[rng.IntN(3)]
		p := rng.Float64()*0.98 + 0.01
		need := (1-lam)*Need(lo, p) + lam*Need(hi, p)
		for _, m := range []float64{need, need + 1e-9, need + 0.5} {
			if got := Prob(lo, hi, lam, m); got < p {
				t.Fatalf("lo %v hi %v lam %v p %v: Prob(%v) = %v < p", lo, hi, lam, p, m, got)
			}
		}
	}
}

// TestTrackerWithin: with Within, a crossing further ahead counts as none,
// for opening and for closing, while the observation keeps it.
func TestTrackerWithin(t *testing.T) {
	tr, err := NewTracker(Config{Value: 0, Direction: Below, Open: 2, Close: 2, Within: 4 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC)
	steps := []struct {
		eta  time.Duration // 0: no crossing
		want Event
	}{
		{10 * time.Hour, None},
		{5 * time.Hour, None}, // beyond 4h: the run stays at 0
		{4 * time.Hour, None}, // at the bound: 1
		{3 * time.Hour, Opened},
		{6 * time.Hour, None}, // beyond again: 1 toward closing
		{1 * time.Hour, None}, // inside, at the time published: the closing run resets
		{5 * time.Hour, None},
		{0, Closed},
	}
	for i, s := range steps {
		o := Observation{Crossing: s.eta > 0, Probability: 0.9}
		if s.eta > 0 {
			o.At, o.ETA, o.Step = t0.Add(time.Duration(i)*time.Hour+s.eta), s.eta, int(s.eta/time.Hour)
		}
		tr.Observe(&o)
		if o.Event != s.want {
			t.Fatalf("forecast %d (ETA %v): event %v, want %v", i, s.eta, o.Event, s.want)
		}
		if o.Crossing != (s.eta > 0) || o.ETA != s.eta {
			t.Fatalf("forecast %d: the observation's crossing changed to %v %v", i, o.Crossing, o.ETA)
		}
	}
	if err := (Config{Value: 1, Direction: Above, Within: -time.Second}).Validate(); err == nil || !strings.Contains(err.Error(), "threshold_within") {
		t.Fatalf("negative Within: %v, want an error naming threshold_within", err)
	}
}

// TestConfigValidate: every problem is named by its key.
func TestConfigValidate(t *testing.T) {
	err := Config{Value: math.NaN(), Direction: Above, Probability: 1, Open: -1, Close: 2000, Update: -1}.Validate()
	if !errors.Is(err, ErrBadConfig) {
		t.Fatalf("err = %v, want ErrBadConfig", err)
	}
	for _, want := range []string{"threshold_above must be a finite number", "threshold_probability must lie in (0, 1)", "threshold_open", "threshold_close", "update fraction"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if err := (Config{Value: 1 << 30, Direction: Below}).Validate(); err != nil {
		t.Errorf("valid config: %v", err)
	}
	for _, c := range []struct {
		v    float64
		want string
	}{{1 << 30, "below 1073741824"}, {0, "below 0"}, {-0.25, "below -0.25"}, {1e-9, "below 1e-09"}, {2e20, "below 2e+20"}} {
		if got := (Config{Value: c.v, Direction: Below}).String(); got != c.want {
			t.Errorf("String of %v = %q, want %q", c.v, got, c.want)
		}
	}
}

// TestNoAllocs: Need, Prob and Observe allocate nothing.
func TestNoAllocs(t *testing.T) {
	rs := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	tr, _ := NewTracker(Config{Value: 1, Direction: Above})
	var o Observation
	if a := testing.AllocsPerRun(100, func() {
		_ = Need(rs, 0.9)
		_ = Prob(rs, rs, 0.3, -4)
		o.Crossing = !o.Crossing
		tr.Observe(&o)
	}); a != 0 {
		t.Errorf("%v allocations per call", a)
	}
}
