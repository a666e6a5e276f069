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

// TestTracker: opened after Open crossings in a row, updated only when the
// crossing time moves by more than Update of the time left, closed after
// Close forecasts in a row without a crossing.
func TestTracker(t *testing.T) {
	tr, err := NewTracker(Config{Value: 90, Direction: Above, Open: 2, Close: 2, Update: 0.25})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC)
	obs := func(i int, cross bool, eta time.Duration) Event {
		o := Observation{Crossing: cross}
		if cross {
			o.At, o.ETA = t0.Add(time.Duration(i)*time.Hour+eta), eta
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
		{true, 12 * time.Hour, Updated},
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
		o := Observation{Crossing: s.eta > 0}
		if s.eta > 0 {
			o.At, o.ETA = t0.Add(time.Duration(i)*time.Hour+s.eta), s.eta
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
