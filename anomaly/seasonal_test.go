package anomaly

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// seasonalDays is a series of 5-minute points with a daily pattern (a
// plateau of 80 from 08:00 to 18:00, 20 otherwise) and noise.
func seasonalDays(days int, seed uint64) []float64 {
	const day = 288
	rng := rand.New(rand.NewPCG(seed, 1))
	var ys []float64
	for i := 0; i < days*day; i++ {
		y := 20.0
		if h := i % day; h >= 96 && h < 216 {
			y = 80
		}
		ys = append(ys, y+rng.NormFloat64())
	}
	return ys
}

// seasonalRefs returns the seasonal references of ys as the pipeline
// makes them: of the values one and two days before (the pipeline's are a
// day and a week), the one closer to the point; NaN on the first day.
func seasonalRefs(ys []float64) []float64 {
	const day = 288
	refs := make([]float64, len(ys))
	for i, y := range ys {
		refs[i] = math.NaN()
		for _, lag := range []int{day, 2 * day} {
			if i >= lag && !(math.Abs(y-ys[i-lag]) >= math.Abs(y-refs[i])) {
				refs[i] = ys[i-lag]
			}
		}
	}
	return refs
}

// runSeasonal feeds ys with refs at 5-minute spacing, each forecast on
// the point with an interval so wide that no point is outside, and
// returns the points that opened events (each checked to be seasonal).
func runSeasonal(t *testing.T, cfg Config, ys, refs []float64) (opened []int) {
	t.Helper()
	d, err := NewDetector(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for i, y := range ys {
		o := d.ObserveSeasonal(t0.Add(time.Duration(i)*5*time.Minute), y, y, y-100, y+100, refs[i])
		if o.Event == Opened {
			if !o.Seasonal || o.Extreme || o.Outside {
				t.Fatalf("point %d opened an event that is not seasonal: %+v", i, o)
			}
			opened = append(opened, i)
		}
	}
	return opened
}

// TestSeasonal: a daily plateau that comes at half its height on day 5
// opens one event, on the SeasonalRun-th point of the plateau, although
// no point is outside its interval; the same days without the fault open
// none; a detector watching above only, or with Seasonal off, or a run
// longer than the fault, opens none; and a day whose deviations
// alternate in sign opens none.
func TestSeasonal(t *testing.T) {
	const day = 288
	cfg := Config{Threshold: 3, M: 10, Seasonal: 6, SeasonalRun: 6}
	ys := seasonalDays(8, 1)
	refs := seasonalRefs(ys)
	if got := runSeasonal(t, cfg, ys, refs); len(got) != 0 {
		t.Fatalf("a regular series opened events at %v", got)
	}
	fault := slicesClone(ys)
	for i := 5*day + 96; i < 5*day+216; i++ {
		fault[i] -= 30 // the plateau at 50 instead of 80
	}
	frefs := seasonalRefs(fault) // the next day's closer reference is the day before the fault
	want := 5*day + 96 + 5
	if got := runSeasonal(t, cfg, fault, frefs); len(got) != 1 || got[0] != want {
		t.Errorf("events at %v, want [%d]", got, want)
	}
	above := cfg
	above.Direction = Above
	if got := runSeasonal(t, above, fault, frefs); len(got) != 0 {
		t.Errorf("watching above: events at %v", got)
	}
	below := cfg
	below.Direction = Below
	if got := runSeasonal(t, below, fault, frefs); len(got) != 1 || got[0] != want {
		t.Errorf("watching below: events at %v, want [%d]", got, want)
	}
	off := cfg
	off.Seasonal = 0
	if got := runSeasonal(t, off, fault, frefs); len(got) != 0 {
		t.Errorf("seasonal off: events at %v", got)
	}
	long := cfg
	long.SeasonalRun = 121
	if got := runSeasonal(t, long, fault, frefs); len(got) != 0 {
		t.Errorf("a run longer than the fault: events at %v", got)
	}
	// Without references (Observe), nothing seasonal happens.
	d, _ := NewDetector(cfg)
	for i, y := range fault {
		if o := d.Observe(t0.Add(time.Duration(i)*5*time.Minute), y, y, y-100, y+100); o.Event == Opened {
			t.Fatalf("Observe without references opened an event at %d", i)
		}
	}
	if st := d.State(); st.SeasonalN != 0 {
		t.Errorf("Observe without references weighed %d deviations", st.SeasonalN)
	}
	alt := slicesClone(ys)
	for i := 5*day + 96; i < 5*day+216; i++ {
		alt[i] += float64(30 * (1 - 2*(i%2))) // ±30 in turn
	}
	if got := runSeasonal(t, cfg, alt, seasonalRefs(alt)); len(got) != 0 {
		t.Errorf("alternating deviations: events at %v", got)
	}
}

// TestSeasonalWarmupAndQuiet: a fault within the first day of references
// opens nothing; one within SurpriseWindow of another event opens
// nothing; one after it does.
func TestSeasonalWarmupAndQuiet(t *testing.T) {
	const day = 288
	cfg := Config{Threshold: 3, M: 10, Seasonal: 6, SeasonalRun: 6}
	ys := seasonalDays(8, 2)
	early := slicesClone(ys)
	for i := day + 96; i < day+216; i++ {
		early[i] -= 30 // day 2: the references began on day 2's first point
	}
	if got := runSeasonal(t, cfg, early, seasonalRefs(early)); len(got) != 0 {
		t.Errorf("a fault in the first day of references: events at %v", got)
	}
	// Two faults 20 hours apart: the second falls in the quiet period of
	// the first; 30 hours apart, it does not.
	for _, gap := range []int{240, 360} {
		f := slicesClone(ys)
		for i := 4*day + 96; i < 4*day+102; i++ {
			f[i] -= 30
		}
		for i := 4*day + 96 + gap; i < 4*day+102+gap; i++ {
			f[i] += 30
		}
		got := runSeasonal(t, cfg, f, seasonalRefs(f))
		want := []int{4*day + 101}
		if gap*5*int(time.Minute) > int(DefaultSurpriseWindow) {
			want = append(want, 4*day+101+gap)
		}
		if len(got) != len(want) || got[0] != want[0] || len(want) == 2 && got[1] != want[1] {
			t.Errorf("gap %d points: events at %v, want %v", gap, got, want)
		}
	}
}

// TestSeasonalAgainstReference checks the seasonal state and openings on
// random series, spacings and references (NaN now and then) against the
// definition recomputed from the whole history: the mean absolute
// deviation over the first SeasonalMemory deviations (exactly, as a plain
// mean), the signed run of deviations beyond Seasonal times the mean of
// those before, the warm-up from the first reference and the quiet
// period after the last opening.
func TestSeasonalAgainstReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	found := 0
	for trial := 0; trial < 200; trial++ {
		k := 1 + 4*rng.Float64()
		runLen := 1 + rng.IntN(6)
		dir := Direction(rng.IntN(3))
		cfg := Config{Threshold: 3, M: 1 + rng.IntN(5), Seasonal: k, SeasonalRun: runLen, Direction: dir,
			SurpriseWindow: time.Duration(1+rng.IntN(30)) * time.Hour}
		d, err := NewDetector(cfg)
		if err != nil {
			t.Fatal(err)
		}
		var devs []float64
		run := 0
		var since, lastOpen time.Time
		at := t0
		for i := 0; i < 800; i++ {
			at = at.Add(time.Duration(rng.ExpFloat64() * float64(10*time.Minute)))
			y := rng.NormFloat64()
			ref := y + rng.NormFloat64()*math.Exp(2*rng.NormFloat64())
			if rng.IntN(20) == 0 {
				ref = math.NaN()
			}
			// yhat = y, a wide interval: only seasonal runs open events.
			o := d.ObserveSeasonal(at, y, y, y-1, y+1, ref)
			want := false
			if math.IsNaN(ref) {
				run = 0
			} else {
				dev := y - ref
				var mean float64
				for _, v := range devs {
					mean += v
				}
				far := len(devs) > 0 && math.Abs(dev) > k*mean/float64(len(devs))
				switch {
				case !far:
					run = 0
				case dev > 0 && run >= 0:
					run++
				case dev > 0:
					run = 1
				case run <= 0:
					run--
				default:
					run = -1
				}
				if len(devs) == 0 {
					since = at
				}
				devs = append(devs, math.Abs(dev))
				side := Above
				if run < 0 {
					side = Below
				}
				want = max(run, -run) >= runLen && at.Sub(since) >= SeasonalWarmup &&
					(dir == Both || dir == side) && (lastOpen.IsZero() || at.Sub(lastOpen) > cfg.SurpriseWindow)
			}
			if o.Seasonal != want {
				t.Fatalf("trial %d point %d: seasonal %v, want %v (run %d)", trial, i, o.Seasonal, want, run)
			}
			if o.Event == Opened {
				lastOpen = at
				found++
			}
			st := d.State()
			if st.SeasonalRun != run || st.SeasonalN != len(devs) {
				t.Fatalf("trial %d point %d: run %d over %d, want %d over %d", trial, i, st.SeasonalRun, st.SeasonalN, run, len(devs))
			}
			if len(devs) > 0 {
				var mean float64
				for _, v := range devs {
					mean += v
				}
				mean /= float64(len(devs))
				if math.Abs(st.SeasonalMean-mean) > 1e-9*mean {
					t.Fatalf("trial %d point %d: mean %v, want %v", trial, i, st.SeasonalMean, mean)
				}
			}
		}
	}
	if found < 50 {
		t.Errorf("only %d seasonal openings in all trials: the test does not exercise them", found)
	}
}

// TestSeasonalRestore: a detector restored from another's state goes on
// exactly as it does; states out of range are refused, and the detector
// is left as it was.
func TestSeasonalRestore(t *testing.T) {
	const day = 288
	cfg := Config{Threshold: 3, M: 10, Seasonal: 6, SeasonalRun: 6}
	ys := seasonalDays(8, 3)
	for i := 5*day + 96; i < 5*day+216; i++ {
		ys[i] -= 30
	}
	refs := seasonalRefs(ys)
	a, _ := NewDetector(cfg)
	b, _ := NewDetector(cfg)
	for i, y := range ys {
		at := t0.Add(time.Duration(i) * 5 * time.Minute)
		if i == 5*day+98 { // in the middle of a run
			if err := b.Restore(a.State()); err != nil {
				t.Fatal(err)
			}
		}
		oa := a.ObserveSeasonal(at, y, y, y-100, y+100, refs[i])
		ob := b.ObserveSeasonal(at, y, y, y-100, y+100, refs[i])
		if i >= 5*day+98 && oa != ob {
			t.Fatalf("point %d: restored %+v, original %+v", i, ob, oa)
		}
	}
	for _, mod := range []func(*State){
		func(s *State) { s.SeasonalMean = -1 },
		func(s *State) { s.SeasonalMean = math.NaN() },
		func(s *State) { s.SeasonalN = SeasonalMemory + 1 },
		func(s *State) { s.SeasonalN = -1 },
		func(s *State) { s.SeasonalRun = MaxSeasonalRun + 1 },
		func(s *State) { s.SeasonalRun = -MaxSeasonalRun - 1 },
		func(s *State) { s.SeasonalN, s.SeasonalMean, s.SeasonalSince, s.SeasonalRun = 0, 1, 0, 0 },
	} {
		restoreRejects(t, a, mod)
	}
	err := Config{Seasonal: -1, SeasonalRun: MaxSeasonalRun + 1}.Validate()
	for _, key := range []string{"seasonal -1", "seasonal_run"} {
		if err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("error %v does not name %s", err, key)
		}
	}
	if err := (Config{Seasonal: math.Inf(1)}).Validate(); err == nil {
		t.Error("Seasonal +Inf accepted")
	}
}

func slicesClone(s []float64) []float64 { return append([]float64(nil), s...) }
