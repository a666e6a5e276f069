package baseline

import (
	"math"
	"testing"
	"time"
)

// veryclose is the tolerance of values computed by a few float operations
// in another order than by hand.
const veryclose = 1e-12

var nan = math.NaN()

// same reports whether got equals want elementwise, NaN matching NaN.
func same(got, want []float64) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		g, w := got[i], want[i]
		if math.IsNaN(w) != math.IsNaN(g) || (!math.IsNaN(w) && math.Abs(g-w) > veryclose*math.Max(1, math.Abs(w))) {
			return false
		}
	}
	return true
}

func TestPersistence(t *testing.T) {
	for _, c := range []struct{ y, want []float64 }{
		{nil, []float64{}},
		{[]float64{7}, []float64{nan}},
		{[]float64{3, 5, 4, 4}, []float64{nan, 3, 5, 4}},
	} {
		if got := Persistence(c.y); !same(got, c.want) {
			t.Errorf("Persistence(%v) = %v, want %v", c.y, got, c.want)
		}
	}
}

func TestSeasonalNaive(t *testing.T) {
	for _, c := range []struct {
		y    []float64
		p    int
		want []float64
	}{
		{[]float64{1, 2, 3, 4, 5}, 2, []float64{nan, nan, 1, 2, 3}},
		{[]float64{1, 2, 3, 4, 5}, 1, []float64{nan, 1, 2, 3, 4}},
		{[]float64{1, 2}, 3, []float64{nan, nan}},
	} {
		if got := SeasonalNaive(c.y, c.p); !same(got, c.want) {
			t.Errorf("SeasonalNaive(%v, %d) = %v, want %v", c.y, c.p, got, c.want)
		}
	}
	defer func() {
		if recover() == nil {
			t.Error("SeasonalNaive with period 0 did not panic")
		}
	}()
	SeasonalNaive([]float64{1}, 0)
}

func TestSES(t *testing.T) {
	for _, c := range []struct {
		y     []float64
		alpha float64
		want  []float64
	}{
		// level 10 → 15 → 12.5 → 21.25
		{[]float64{10, 20, 10, 30}, 0.5, []float64{nan, 10, 15, 12.5}},
		// level 0 → 1 → 1.9 → 1.81
		{[]float64{0, 10, 10, 1}, 0.1, []float64{nan, 0, 1, 1.9}},
		// α = 1 is persistence
		{[]float64{3, 5, 4}, 1, []float64{nan, 3, 5}},
		{nil, 0.5, []float64{}},
	} {
		if got := SES(c.y, c.alpha); !same(got, c.want) {
			t.Errorf("SES(%v, %g) = %v, want %v", c.y, c.alpha, got, c.want)
		}
	}
}

func TestFitSES(t *testing.T) {
	for _, c := range []struct {
		name string
		y    []float64
		want float64
	}{
		// m = ⌊0.3·10⌋ = 3 fitted points 0, 2, 1: errors 2 and |2α − 1|,
		// least at α = 0.5. The points after the first 3 do not count.
		{"middle", []float64{0, 2, 1, 100, -100, 100, -100, 100, -100, 100}, 0.5},
		// A step: errors 0, 0, 6, 6(1−α), 6(1−α)², …: least at α = 1.
		{"step", []float64{0, 0, 0, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6}, 1},
		// Alternation 0, 4, 0, 4, 0, 4 (m = 6): errors 4, 4α, 4 − 4α(1−α),
		// …; the level follows the swings the less the smaller α, so the
		// smallest α of the grid wins.
		{"alternating", []float64{0, 4, 0, 4, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, 0.05},
		// A constant fits every α exactly: the first of the grid.
		{"constant", []float64{5, 5, 5, 5, 5, 5, 5, 5, 5, 5}, 0.05},
		// m = ⌊0.3·6⌋ = 1: nothing to fit on.
		{"short", []float64{1, 9, 1, 9, 1, 9}, 0.05},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := FitSES(c.y); got != c.want {
				t.Errorf("FitSES(%v) = %g, want %g", c.y, got, c.want)
			}
		})
	}
}

func TestMedianSpacing(t *testing.T) {
	at := func(secs ...int) []time.Time {
		ts := make([]time.Time, len(secs))
		for i, s := range secs {
			ts[i] = time.Unix(1_700_000_000+int64(s), 0)
		}
		return ts
	}
	for _, c := range []struct {
		times []time.Time
		want  time.Duration
	}{
		{nil, 0},
		{at(5), 0},
		{at(0, 60, 120, 300), time.Minute},         // 60 60 180
		{at(0, 60, 180, 181), time.Minute},         // 1 60 120
		{at(0, 10, 30, 60, 100), 25 * time.Second}, // 10 20 | 30 40
		{at(0, 0, 60), 30 * time.Second},           // a duplicate time counts as 0
		{at(0, 300, 200, 500), 300 * time.Second},  // −100 300 300
	} {
		if got := MedianSpacing(c.times); got != c.want {
			t.Errorf("MedianSpacing(%v) = %v, want %v", c.times, got, c.want)
		}
	}
}

func TestSeasonalPeriod(t *testing.T) {
	for _, c := range []struct {
		n       int
		spacing time.Duration
		want    int
	}{
		{1152, 5 * time.Minute, 288},           // 4 days of 5-minute points
		{1151, 5 * time.Minute, 0},             // shorter than 4 periods
		{4 * 96, 15 * time.Minute, 96},         //
		{7267, time.Hour, 24},                  //
		{100, 16 * time.Hour, 2},               // 1.5 rounds to even 2
		{100, 9*time.Hour + 36*time.Minute, 2}, // 2.5 rounds to even 2, as Python's round
		{100, 5*time.Hour + 20*time.Minute, 4}, // 4.5 → 4
		{100, 13 * time.Hour, 2},               // 1.85 → 2
		{100, 24 * time.Hour, 0},               // P = 1 < 2
		{100, 0, 0},                            // no spacing
		{100, -time.Minute, 0},                 //
		{1 << 20, time.Second, 86400},          //
	} {
		if got := SeasonalPeriod(c.n, c.spacing); got != c.want {
			t.Errorf("SeasonalPeriod(%d, %v) = %d, want %d", c.n, c.spacing, got, c.want)
		}
	}
}

func TestCompute(t *testing.T) {
	// Eight points an hour apart: P = 24 needs 96 points, so none.
	y := []float64{0, 2, 1, 3, 2, 4, 3, 5}
	s := Compute(y, time.Hour)
	if s.Period != 0 || s.SeasonalNaive != nil {
		t.Errorf("period %d, seasonal naive %v; want none", s.Period, s.SeasonalNaive)
	}
	// m = ⌊0.3·8⌋ = 2: one error, |y[1] − y[0]| = 2 whatever α: a tie
	// over the grid, won by its first, 0.05.
	if s.Alpha != 0.05 || !same(s.SES, SES(y, 0.05)) || !same(s.Persistence, Persistence(y)) {
		t.Errorf("alpha %g, SES %v, persistence %v", s.Alpha, s.SES, s.Persistence)
	}
	// Two points a day (spacing 12 h): P = 2, and 8 ≥ 4·2 points.
	s = Compute(y, 12*time.Hour)
	if s.Period != 2 || !same(s.SeasonalNaive, []float64{nan, nan, 0, 2, 1, 3, 2, 4}) {
		t.Errorf("period %d, seasonal naive %v; want 2, y shifted by 2", s.Period, s.SeasonalNaive)
	}
}
