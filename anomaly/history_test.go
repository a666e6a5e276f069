package anomaly

import (
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// TestStepFloor: on a quantised series forecast exactly by persistence
// with zero-width intervals, every change scores MaxScore; with the floor
// at the mean absolute change, only a change several times the usual one
// is outside, and the reported score is still the unfloored one.
func TestStepFloor(t *testing.T) {
	for _, floor := range []float64{0, 1} {
		d, err := NewDetector(Config{Threshold: 3, StepFloor: floor})
		if err != nil {
			t.Fatal(err)
		}
		prev, outside := 10.0, 0
		for i := 0; i < 200; i++ {
			y := 10.0 + float64(i%2) // 10, 11, 10, 11, … : mean change 1
			if i == 150 {
				y = 16 // a jump of 5 or 6 changes
			}
			o := d.Observe(t0.Add(time.Duration(i)*time.Minute), y, prev, prev, prev)
			if y != prev && o.Score != MaxScore {
				t.Fatalf("floor %v point %d: score %v, want the unfloored MaxScore", floor, i, o.Score)
			}
			if o.Outside && i >= 2 { // the floor needs a change seen first
				outside++
				if floor > 0 && i != 150 && i != 151 { // the jump and the way back
					t.Fatalf("floor %v: ordinary change at point %d counted outside", floor, i)
				}
			}
			prev = y
		}
		if floor == 0 && outside < 190-2 || floor > 0 && outside != 2 {
			t.Errorf("floor %v: %d points outside", floor, outside)
		}
	}
	d, _ := NewDetector(Config{StepFloor: 1})
	for i, y := range []float64{1, 3, 2, math.NaN(), 6} {
		d.Observe(t0.Add(time.Duration(i)*time.Second), y, y, y-1, y+1)
	}
	if st := d.State(); st.Steps != 3 || st.MeanStep != (2+1+4)/3.0 || st.LastY != 6 {
		t.Errorf("mean step %v over %d (last %v), want 7/3 over 3 (a NaN skipped)", st.MeanStep, st.Steps, st.LastY)
	}
}

// TestSurpriseAgainstReference runs detectors with Surprise and a random
// debounce (K of the last N) over random spacings (with gaps longer than
// the window) and scores, and checks every opening against the highest
// score of the window recomputed from the whole history: a point is
// surprising if it beats Surprise times the highest over the longest span
// the blocks can cover (the window and one block), and not if it does not
// beat the highest over the window itself. A point outside must open an
// event if K of the last N points since the last closing were outside and
// one of those outside was surprising, and must not if fewer were outside
// or none was. A detector restored from a mid-sequence State goes on
// exactly as the original.
func TestSurpriseAgainstReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	decided := 0
	for trial := 0; trial < 300; trial++ {
		w := time.Duration(1+rng.IntN(120)) * time.Minute
		n := 1 + rng.IntN(4)
		cfg := Config{Threshold: 1, M: 1 + rng.IntN(3), Surprise: []float64{1, 1.25, 2}[rng.IntN(3)], SurpriseWindow: w,
			N: n, K: 1 + rng.IntN(n)}
		d, err := NewDetector(cfg)
		if err != nil {
			t.Fatal(err)
		}
		span := w / PeakBlocks
		type past struct {
			at  time.Time
			eff float64
		}
		var hist []past
		type seen struct{ outside, surprising, notSurprising bool }
		var pts []seen
		start := 0 // the first point after the last closing
		at := t0
		var twin *Detector
		cut := rng.IntN(400)
		for i := 0; i < 400; i++ {
			if i == cut {
				twin, _ = NewDetector(cfg)
				if err := twin.Restore(d.State()); err != nil {
					t.Fatal(err)
				}
			}
			at = at.Add(time.Duration(rng.ExpFloat64() * float64(w) / 30))
			if rng.IntN(100) == 0 {
				at = at.Add(2 * w) // a gap: the window empties
			}
			y := rng.NormFloat64() * []float64{0.5, 3}[rng.IntN(2)]
			wasOpen := d.Open()
			o := d.Observe(at, y, 0, -1, 1)
			if twin != nil {
				if to := twin.Observe(at, y, 0, -1, 1); to != o {
					t.Fatalf("trial %d point %d: restored %+v, original %+v", trial, i, to, o)
				}
			}
			maxOver := func(d time.Duration) float64 {
				m := 0.0
				for _, p := range hist {
					if !p.at.Before(at.Add(-d)) {
						m = math.Max(m, p.eff)
					}
				}
				return m
			}
			pts = append(pts, seen{o.Outside, o.Score > cfg.Surprise*maxOver(w+span), o.Score <= cfg.Surprise*maxOver(w)})
			if !wasOpen && o.Outside {
				outside, anySurprising, allNot := 0, false, true
				for j := max(start, i-cfg.N+1); j <= i; j++ {
					if p := pts[j]; p.outside {
						outside++
						anySurprising = anySurprising || p.surprising
						allNot = allNot && p.notSurprising
					}
				}
				must := outside >= cfg.K && anySurprising
				mustNot := outside < cfg.K || allNot
				opened := o.Event == Opened
				if must && !opened || mustNot && opened {
					t.Fatalf("trial %d point %d (K %d of N %d): %d outside, a surprise %v, none %v: opened %v",
						trial, i, cfg.K, cfg.N, outside, anySurprising, allNot, opened)
				}
				if must || mustNot {
					decided++
				}
			}
			if o.Event == Closed {
				start = i + 1
			}
			hist = append(hist, past{at, o.Score})
		}
	}
	if decided < 1000 {
		t.Errorf("only %d openings decided by the reference", decided)
	}
}

// TestSurpriseDaily: a series that deviates by the same amount at the
// same time every day raises one event, the first day; a deviation twice
// as large on a later day raises another.
func TestSurpriseDaily(t *testing.T) {
	d, err := NewDetector(Config{Threshold: 3, M: 5, Surprise: 1.25})
	if err != nil {
		t.Fatal(err)
	}
	var opened []int
	for i := 0; i < 6*288; i++ { // 6 days of 5-minute points
		y := 0.5 * math.Sin(float64(i))
		if i%288 == 100 { // 08:20 every day
			y = 8
			if i/288 == 4 {
				y = 16
			}
		}
		if o := d.Observe(t0.Add(time.Duration(i)*5*time.Minute), y, 0, -1, 1); o.Event == Opened {
			opened = append(opened, i)
		}
	}
	if len(opened) != 2 || opened[0] != 100 || opened[1] != 4*288+100 {
		t.Errorf("events opened at points %v, want [100 %d]", opened, 4*288+100)
	}
}

func TestHistoryRestoreRejects(t *testing.T) {
	d, _ := NewDetector(Config{StepFloor: 1, Surprise: 1.5})
	d.Observe(t0, 3, 0, -1, 1)
	for _, mod := range []func(*State){
		func(s *State) { s.MeanStep = -1 },
		func(s *State) { s.MeanStep = math.NaN() },
		func(s *State) { s.Steps = StepMemory + 1 },
		func(s *State) { s.Block = PeakBlocks },
		func(s *State) { s.Peaks[3] = math.Inf(1) },
		func(s *State) { s.Peak = -2 },
		func(s *State) { s.HasLast, s.LastY = false, 3 },
		func(s *State) { s.LastY = math.NaN() },
		func(s *State) { s.HasRange, s.Low, s.High = true, 2, 1 },
		func(s *State) { s.HasRange, s.Low, s.High = true, math.Inf(-1), 1 },
		func(s *State) { s.HasRange, s.High = false, 4 },
		func(s *State) { s.HasRange, s.HighTime = false, 4 },
	} {
		restoreRejects(t, d, mod)
	}
	err := Config{StepFloor: -1, Surprise: math.Inf(1), SurpriseWindow: time.Second, ExtremeQuiet: -time.Hour}.Validate()
	for _, key := range []string{"step_floor", "surprise ", "surprise_window", "extreme_quiet"} {
		if err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("error %v does not name %s", err, key)
		}
	}
}

// TestExtremeQuiet: a series that keeps to its range for days raises an
// event on its first new high, even inside the interval; a second new
// high within the quiet period does not; a trending series, whose highs
// are all new, raises none; and a detector watching only below ignores
// new highs.
// restoreRejects checks that d refuses its own state changed by mod, with
// ErrBadConfig, and is left as it was.
func restoreRejects(t *testing.T, d *Detector, mod func(*State)) {
	t.Helper()
	before := d.State()
	st := before
	mod(&st)
	if err := d.Restore(st); !errors.Is(err, ErrBadConfig) {
		t.Errorf("Restore(%+v) = %v, want ErrBadConfig", st, err)
	}
	if d.State() != before {
		t.Fatalf("failed Restore changed the state")
	}
}

func TestExtremeQuiet(t *testing.T) {
	run := func(cfg Config, ys []float64) (opened []int) {
		d, err := NewDetector(cfg)
		if err != nil {
			t.Fatal(err)
		}
		for i, y := range ys {
			// A forecast on the point and an interval so wide that no
			// point is outside: only extremes can open events.
			o := d.Observe(t0.Add(time.Duration(i)*5*time.Minute), y, y, y-100, y+100)
			if o.Event == Opened {
				if !o.Extreme {
					t.Fatalf("point %d opened an event without being extreme", i)
				}
				opened = append(opened, i)
			}
		}
		return opened
	}
	cfg := Config{Threshold: 3, M: 3, ExtremeQuiet: 48 * time.Hour}
	const day = 288
	var ys []float64
	for i := 0; i < 6*day; i++ {
		ys = append(ys, math.Sin(float64(i)*2*math.Pi/day)) // [−1, 1], highs made the first day
	}
	ys[4*day] = 1.5       // day 4: a new high after three days without one
	ys[4*day+day/2] = 1.6 // half a day later: another, not after a quiet period
	ys[5*day+10] = -1.2   // a new low, the first since day 1
	if got := run(cfg, ys); len(got) != 2 || got[0] != 4*day || got[1] != 5*day+10 {
		t.Errorf("events at %v, want [%d %d]", got, 4*day, 5*day+10)
	}
	below := cfg
	below.Direction = Below
	if got := run(below, ys); len(got) != 1 || got[0] != 5*day+10 {
		t.Errorf("watching below: events at %v, want [%d]", got, 5*day+10)
	}
	off := cfg
	off.ExtremeQuiet = 0
	if got := run(off, ys); len(got) != 0 {
		t.Errorf("extremes off: events at %v", got)
	}
	trend := make([]float64, 10*day)
	for i := range trend {
		trend[i] = float64(i)*0.01 + math.Sin(float64(i)*2*math.Pi/day)
	}
	if got := run(cfg, trend); len(got) != 0 {
		t.Errorf("trending series: events at %v", got)
	}
}

// TestExtremeAgainstReference checks Observation.Extreme on random
// series and spacings against the definition recomputed from the whole
// history of scored points: a new high (or low) beyond the last by more
// than the margin times the mean absolute change of every point before
// (scored or not), after the quiet period since the last new high of
// any size.
func TestExtremeAgainstReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	found, blocked := 0, 0
	for trial := 0; trial < 150; trial++ {
		quiet := time.Duration(1+rng.IntN(48)) * time.Hour
		dir := Direction(rng.IntN(3))
		margin := []float64{0, 0.1, 0.5}[rng.IntN(3)]
		d, err := NewDetector(Config{ExtremeQuiet: quiet, Direction: dir, ExtremeMargin: margin})
		if err != nil {
			t.Fatal(err)
		}
		type pt struct {
			at time.Time
			y  float64
		}
		var hist []pt
		var all []float64 // every actual, scored or not, for the mean change
		at := t0
		level := 0.0
		for i := 0; i < 600; i++ {
			at = at.Add(time.Duration(rng.ExpFloat64() * float64(20*time.Minute)))
			level += rng.NormFloat64() * 0.05
			y := level + rng.NormFloat64()
			lo, hi := y-1, y+1
			if rng.IntN(10) == 0 {
				lo, hi = math.NaN(), math.NaN() // not scored: not in the range
			}
			meanStep := 0.0
			for j := 1; j < len(all); j++ {
				meanStep += math.Abs(all[j]-all[j-1]) / float64(len(all)-1)
			}
			all = append(all, y)
			o := d.Observe(at, y, y, lo, hi)
			if math.IsNaN(o.Score) {
				if o.Extreme {
					t.Fatal("an unscored point was extreme")
				}
				continue
			}
			want := false
			if len(hist) > 0 {
				high, low := hist[0].y, hist[0].y
				highAt, lowAt := hist[0].at, hist[0].at
				for _, p := range hist[1:] {
					if p.y > high {
						high, highAt = p.y, p.at
					}
					if p.y < low {
						low, lowAt = p.y, p.at
					}
				}
				m := margin * meanStep
				if math.Abs(y-high-m) < 1e-9 || math.Abs(low-y-m) < 1e-9 {
					hist = append(hist, pt{at, y}) // too close to call
					continue
				}
				quietHigh := y > high && at.Sub(highAt) > quiet && dir != Below
				quietLow := y < low && at.Sub(lowAt) > quiet && dir != Above
				want = quietHigh && y-high > m || quietLow && low-y > m
				if (quietHigh || quietLow) && !want {
					blocked++
				}
			}
			if o.Extreme != want {
				t.Fatalf("trial %d point %d: extreme %v, want %v", trial, i, o.Extreme, want)
			}
			if want {
				found++
			}
			hist = append(hist, pt{at, y})
		}
	}
	if blocked < 10 {
		t.Errorf("only %d new extremes within the margin", blocked)
	}
	if found < 20 {
		t.Errorf("only %d extremes in the random series", found)
	}
}
