package anomaly

import (
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC)

func TestScore(t *testing.T) {
	nan := math.NaN()
	for _, c := range []struct {
		name                  string
		y, yhat, lower, upper float64
		want                  float64
	}{
		{"on the forecast", 10, 10, 8, 14, 0},
		{"on the upper bound", 14, 10, 8, 14, 1},
		{"on the lower bound", 8, 10, 8, 14, 1},
		{"half way up", 12, 10, 8, 14, 0.5},
		{"half way down, asymmetric", 9, 10, 8, 14, 0.5},
		{"twice out above", 18, 10, 8, 14, 2},
		{"three times out below", 4, 10, 8, 14, 3},
		{"zero width, off", 11, 10, 10, 10, MaxScore},
		{"zero width, on", 10, 10, 10, 10, 0},
		{"no interval", 11, 10, nan, nan, nan},
		{"no interval, on", 10, 10, nan, nan, nan},
		{"NaN actual", nan, 10, 8, 14, nan},
	} {
		got := Score(c.y, c.yhat, c.lower, c.upper)
		if !(got == c.want || math.IsNaN(got) && math.IsNaN(c.want)) && math.Abs(got-c.want) > 1e-12 {
			t.Errorf("%s: Score(%v, %v, %v, %v) = %v, want %v", c.name, c.y, c.yhat, c.lower, c.upper, got, c.want)
		}
	}
}

// TestScoreProperties checks on random forecasts that the score is ≤ 1
// exactly inside the interval, grows with the distance from the forecast
// on each side, and does not depend on the series' units.
func TestScoreProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 10000; i++ {
		yhat := rng.NormFloat64() * 100
		lo, hi := yhat-rng.ExpFloat64()*5-1e-9, yhat+rng.ExpFloat64()*5+1e-9
		y := yhat + rng.NormFloat64()*10
		s := Score(y, yhat, lo, hi)
		if inside := lo <= y && y <= hi; inside != (s <= 1) {
			t.Fatalf("y %v in [%v, %v] is %v but score %v", y, lo, hi, inside, s)
		}
		y2 := yhat + (y-yhat)*1.5
		if s2 := Score(y2, yhat, lo, hi); s2 < s {
			t.Fatalf("farther y %v scores %v < %v of y %v", y2, s2, s, y)
		}
		const k = 37.5
		if sk := Score(k*y+3, k*yhat+3, k*lo+3, k*hi+3); math.Abs(sk-s) > 1e-9*math.Max(1, s) {
			t.Fatalf("score %v changed to %v in other units", s, sk)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	if err := (Config{}).Validate(); err != nil {
		t.Fatalf("zero config: %v", err)
	}
	err := Config{Direction: 7, Threshold: -1, MinDeviation: math.NaN(), K: 5, N: 3, M: -1}.Validate()
	if !errors.Is(err, ErrBadConfig) {
		t.Fatalf("err = %v, want ErrBadConfig", err)
	}
	for _, key := range []string{"direction", "threshold", "min_deviation", "open_k", "close_m"} {
		if !strings.Contains(err.Error(), key) {
			t.Errorf("error %q does not name %s", err, key)
		}
	}
	if err := (Config{N: MaxN + 1}).Validate(); err == nil {
		t.Errorf("open_n %d accepted", MaxN+1)
	}
	if _, err := ParseDirection("sideways"); !errors.Is(err, ErrBadConfig) {
		t.Errorf("ParseDirection(sideways) = %v", err)
	}
	for _, d := range []Direction{Both, Above, Below} {
		if got, err := ParseDirection(d.String()); err != nil || got != d {
			t.Errorf("ParseDirection(%q) = %v, %v", d, got, err)
		}
	}
}

// reference recomputes a detector's decisions from the whole history of
// outside flags, as the Config's definition reads: the event opens at the
// first point where ≥ K of the last N scored points since the last close
// were outside, and closes at the M-th point in a row inside.
func reference(cfg Config, outside []bool) (events []Event) {
	c := cfg.withDefaults()
	open, start, inside := false, 0, 0
	for i, o := range outside {
		e := None
		if !open {
			n := 0
			for j := max(start, i-c.N+1); j <= i; j++ {
				if outside[j] {
					n++
				}
			}
			if n >= c.K {
				open, inside, e = true, 0, Opened
			}
		} else if o {
			inside = 0
		} else if inside++; inside >= c.M {
			open, e, start = false, Closed, i+1
		}
		events = append(events, e)
	}
	return events
}

// TestDetectorAgainstReference runs detectors of random configs over random
// sequences (with gaps in the intervals) and compares every point's outside
// flag and event with the reference recomputed from the whole history; it
// also checks that events alternate, opened first, and that a detector
// restored from a mid-sequence State goes on exactly as the original.
func TestDetectorAgainstReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for trial := 0; trial < 300; trial++ {
		n := 1 + rng.IntN(MaxN)
		cfg := Config{
			Direction:    Direction(rng.IntN(3)),
			Threshold:    []float64{0, 0.5, 1, 2}[rng.IntN(4)],
			MinDeviation: []float64{0, 0.5}[rng.IntN(2)],
			N:            n,
			K:            1 + rng.IntN(n),
			M:            1 + rng.IntN(10),
		}
		d, err := NewDetector(cfg)
		if err != nil {
			t.Fatal(err)
		}
		c := d.Config()
		var outside []bool
		var got []Event
		var twin *Detector
		cut := rng.IntN(500)
		open, age := false, 0
		for i := 0; i < 500; i++ {
			if i == cut {
				twin, _ = NewDetector(cfg)
				if err := twin.Restore(d.State()); err != nil {
					t.Fatalf("restore: %v", err)
				}
			}
			yhat := rng.NormFloat64()
			lo, hi := yhat-rng.Float64(), yhat+rng.Float64()
			if rng.IntN(20) == 0 {
				lo, hi = math.NaN(), math.NaN()
			}
			p := 0.1
			if rng.IntN(100) < 10 { // bursts
				p = 0.8
			}
			y := yhat + rng.NormFloat64()*p*3
			at := t0.Add(time.Duration(i) * time.Minute)
			o := d.Observe(at, y, yhat, lo, hi)
			if twin != nil {
				if to := twin.Observe(at, y, yhat, lo, hi); to != o && !math.IsNaN(o.Score) {
					t.Fatalf("trial %d point %d: restored detector %+v, original %+v", trial, i, to, o)
				}
			}
			if math.IsNaN(o.Score) {
				if o.Event != None || o.Outside || o.Open != open {
					t.Fatalf("unscored point changed the detector: %+v", o)
				}
				continue
			}
			want := o.Score > c.Threshold && math.Abs(y-yhat) >= c.MinDeviation &&
				(c.Direction == Both || (c.Direction == Above) == (y > yhat))
			if o.Outside != want {
				t.Fatalf("trial %d point %d: outside %v, want %v (%+v, cfg %+v)", trial, i, o.Outside, want, o, c)
			}
			switch o.Event {
			case Opened:
				if open {
					t.Fatalf("opened twice")
				}
				open = true
			case Closed:
				if !open {
					t.Fatalf("closed while not open")
				}
				open = false
			}
			if o.Open != open || d.Open() != open {
				t.Fatalf("Open %v, want %v", o.Open, open)
			}
			if o.Event == Opened {
				age = 0
			} else if open {
				age++
			}
			if open && d.State().Age != age || !open && d.State().Age != 0 {
				t.Fatalf("trial %d point %d: age %d, want %d", trial, i, d.State().Age, age)
			}
			outside = append(outside, o.Outside)
			got = append(got, o.Event)
		}
		want := reference(cfg, outside)
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("trial %d (cfg %+v): scored point %d: event %v, reference %v", trial, c, i, got[i], want[i])
			}
		}
	}
}

func TestDetectorDebounce(t *testing.T) {
	d, err := NewDetector(Config{K: 2, N: 3, M: 2})
	if err != nil {
		t.Fatal(err)
	}
	// Scores: inside (0.5) or outside (3) of [−1, 1] around 0.
	seq := []struct {
		y    float64
		want Event
	}{
		{3, None}, {0.5, None}, {0.5, None}, // 1 of 3: no event
		{3, None}, {0.5, None}, {-3, Opened}, // 2 of the last 3 (3, 0.5, −3)
		{0.5, None}, {3, None}, {0.5, None}, {0.5, Closed}, // closes after 2 inside in a row
		{3, None}, {3, Opened},
	}
	for i, s := range seq {
		if o := d.Observe(t0.Add(time.Duration(i)*time.Second), s.y, 0, -1, 1); o.Event != s.want {
			t.Fatalf("point %d (y %v): event %v, want %v", i, s.y, o.Event, s.want)
		}
	}
}

// TestDebounceSurprise: with two points in a row outside and a surprise,
// a lone spike opens nothing; a deviation that lasts opens an event on its
// second point, though that point is smaller than its first (the
// surprise), and not when neither beat the window's highest.
func TestDebounceSurprise(t *testing.T) {
	d, err := NewDetector(Config{Threshold: 1, K: 2, N: 2, M: 3, Surprise: 1.5, SurpriseWindow: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	seq := []struct {
		y    float64
		want Event
	}{
		{0.5, None}, {4, None}, {0.5, None}, {0.5, None}, {0.5, None}, // a spike to 4, alone
		{8, None}, {5, Opened}, // 8 beats 1.5·4; 5 does not, but is the second outside
		{0.5, None}, {0.5, None}, {0.5, Closed},
		{9, None}, {9, None}, // within the hour of 8: 9 is no surprise, twice
	}
	for i, s := range seq {
		if o := d.Observe(t0.Add(time.Duration(i)*time.Minute), s.y, 0, -1, 1); o.Event != s.want {
			t.Fatalf("point %d (y %v): event %v, want %v", i, s.y, o.Event, s.want)
		}
	}
}

func TestDetectorRestoreRejects(t *testing.T) {
	d, _ := NewDetector(Config{K: 2, N: 3, M: 2})
	d.Observe(t0, 3, 0, -1, 1)
	before := d.State()
	for _, st := range []State{
		{Recent: 1 << 3},
		{Recent: 1, Surprised: 2}, // a surprise at a point not outside
		{Open: true, Inside: 2},
		{Open: false, Inside: 1},
		{Open: false, Age: 3},
		{Open: true, Age: -1},
		{Inside: -1},
	} {
		if err := d.Restore(st); !errors.Is(err, ErrBadConfig) {
			t.Errorf("Restore(%+v) = %v, want ErrBadConfig", st, err)
		}
		if d.State() != before {
			t.Fatalf("failed Restore changed the state to %+v", d.State())
		}
	}
}

func TestDetectorNoAlloc(t *testing.T) {
	d, _ := NewDetector(Config{K: 3, N: 10, M: 4, StepFloor: 1, Surprise: 1.25, SurpriseWindow: time.Minute})
	l, _ := NewLikelihood(100, 5, 10)
	y := 0.0
	if n := testing.AllocsPerRun(1000, func() {
		y += 0.37
		o := d.Observe(t0.Add(time.Duration(y*1e9)), math.Mod(y, 4), 0, -1, 1)
		l.Update(o.Score)
	}); n != 0 {
		t.Errorf("%v allocations per point", n)
	}
}
