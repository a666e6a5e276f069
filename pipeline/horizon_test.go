package pipeline

import (
	"errors"
	"fmt"
	"github.com/forecastd/forecastd/ahead"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

// arSeries is a noisy AR(1) around a daily-looking sine, n points.
func arSeries(seed uint64, n int) []float64 {
	r := rand.New(rand.NewPCG(seed, 7))
	out := make([]float64, n)
	x := 0.0
	for i := range out {
		x = 0.8*x + r.NormFloat64()
		out[i] = 50 + 10*math.Sin(2*math.Pi*float64(i)/40) + x
	}
	return out
}

func horizonConfig(h int) Config {
	cfg := DefaultConfig()
	cfg.Horizon = h
	cfg.Window = 100
	cfg.Seasons = []time.Duration{40 * time.Second}
	return cfg
}

// TestHorizonPathInvariants: on random series with gaps, every forecast's
// path has H steps dated origin + h·interval, step 1 is the forecast, every
// interval holds its forecast, and every outcome's closed steps are step 1
// and anchor steps h, each exactly the step h of the path forecast h
// points before.
func TestHorizonPathInvariants(t *testing.T) {
	for seed := range uint64(4) {
		const H = 6
		s := mustNew(t, horizonConfig(H))
		vals := arSeries(seed, 700)
		r := rand.New(rand.NewPCG(seed, 3))
		paths := map[int][]Step{} // by origin index
		tm := 1000
		idx := map[int64]int{}
		closed := 0
		for i, v := range vals {
			tm++
			if r.IntN(150) == 0 {
				tm += 30 // a gap: the embedding restarts, pending paths are dropped
			}
			res, err := s.Push(Point{Time: time.Unix(int64(tm), 0), Value: v})
			if err != nil {
				t.Fatal(err)
			}
			idx[int64(tm)] = i
			if res.HasOutcome {
				p := res.Outcome.Path
				if len(p) == 0 || p[0].Horizon != 1 || p[0].Value != res.Outcome.Forecast.Value {
					t.Fatalf("seed %d point %d: outcome path %v does not start with the 1-step forecast %v", seed, i, p, res.Outcome.Forecast)
				}
				for k, st := range p {
					if k > 0 && st.Horizon <= p[k-1].Horizon {
						t.Fatalf("point %d: horizons not increasing: %v", i, p)
					}
					if k > 0 && !slices.Contains(ahead.Anchors(H), st.Horizon) {
						t.Fatalf("point %d: closed step %d is not an anchor step %v", i, st.Horizon, ahead.Anchors(H))
					}
					want, ok := paths[i-st.Horizon]
					if !ok || want[st.Horizon-1] != st && !(math.IsNaN(st.Lower) && sameStep(want[st.Horizon-1], st)) {
						t.Fatalf("seed %d point %d: closed step %+v, the path made %d points before holds %+v", seed, i, st, st.Horizon, want)
					}
					closed++
				}
			}
			if res.HasForecast {
				f := res.Forecast
				if len(f.Path) != H {
					t.Fatalf("point %d: path of %d steps, want %d", i, len(f.Path), H)
				}
				if !sameStep(f.Path[0], Step{1, f.Time, f.Value, f.Lower, f.Upper}) {
					t.Fatalf("point %d: step 1 %+v is not the forecast %+v", i, f.Path[0], f)
				}
				for h, st := range f.Path {
					if st.Horizon != h+1 || !st.Time.Equal(f.Origin.Add(time.Duration(h+1)*s.Interval())) {
						t.Fatalf("point %d: step %d is %+v (origin %v, interval %v)", i, h+1, st, f.Origin, s.Interval())
					}
					if st.HasInterval() && !(st.Lower <= st.Value && st.Value <= st.Upper) {
						t.Fatalf("point %d: step %d's interval [%v, %v] misses its forecast %v", i, h+1, st.Lower, st.Upper, st.Value)
					}
				}
				paths[i] = slices.Clone(f.Path)
			}
		}
		if closed < 4*len(vals) {
			t.Fatalf("seed %d: only %d steps closed over %d points", seed, closed, len(vals))
		}
	}
}

func sameStep(a, b Step) bool {
	return a.Horizon == b.Horizon && a.Time.Equal(b.Time) && same(a.Value, b.Value) && same(a.Lower, b.Lower) && same(a.Upper, b.Upper)
}

// TestHorizonKeepsStepOne: the 1-step forecasts and outcomes with H = 12
// are those with H = 1, bit for bit: the path ahead touches nothing step 1
// reads.
func TestHorizonKeepsStepOne(t *testing.T) {
	vals := arSeries(9, 800)
	a, b := mustNew(t, horizonConfig(1)), mustNew(t, horizonConfig(12))
	ra, rb := run(t, a, vals), run(t, b, vals)
	n := 0
	for i := range ra {
		x, y := ra[i], rb[i]
		if x.HasForecast != y.HasForecast || x.HasOutcome != y.HasOutcome {
			t.Fatalf("point %d: has forecast/outcome %v/%v with H=1, %v/%v with H=12", i, x.HasForecast, x.HasOutcome, y.HasForecast, y.HasOutcome)
		}
		if x.Forecast.Path != nil || x.Outcome.Path != nil {
			t.Fatalf("point %d: H=1 has a path", i)
		}
		y.Forecast.Path = nil
		if x.HasForecast && !sameForecast(x.Forecast, y.Forecast) {
			t.Fatalf("point %d: forecast %+v with H=1, %+v with H=12", i, x.Forecast, y.Forecast)
		}
		if x.HasForecast {
			n++
		}
	}
	if n < 500 {
		t.Fatalf("only %d forecasts", n)
	}
}

// TestHorizonCoverageByStep: on a stationary noisy series each step's
// interval covers near nominal, the anchor steps' and those interpolated
// between them, and the interval widens with the step (an h-step error
// grows with h on an AR(1)); a single calibration shared by the steps
// would not.
func TestHorizonCoverageByStep(t *testing.T) {
	for _, H := range []int{8, 40} {
		vals := arSeries(5, 6000)
		s := mustNew(t, horizonConfig(H))
		hit, n, width := make([]int, H), make([]int, H), make([]float64, H)
		paths := map[int][]Step{}
		for i, v := range vals {
			res, err := s.Push(Point{Time: at(i), Value: v})
			if err != nil {
				t.Fatal(err)
			}
			if i >= 2000 {
				for h := 1; h <= H; h++ { // the steps forecast for this point
					p, ok := paths[i-h]
					if !ok || !p[h-1].HasInterval() {
						continue
					}
					st := p[h-1]
					n[h-1]++
					width[h-1] += st.Upper - st.Lower
					if st.Lower <= v && v <= st.Upper {
						hit[h-1]++
					}
				}
			}
			delete(paths, i-H)
			if res.HasForecast {
				paths[i] = slices.Clone(res.Forecast.Path)
			}
		}
		for h := range H {
			c := float64(hit[h]) / float64(n[h])
			if h < 8 || h%8 == 7 {
				t.Logf("H %d step %d: coverage %.3f on %d, mean width %.3f", H, h+1, c, n[h], width[h]/float64(n[h]))
			}
			if n[h] < 3500 || math.Abs(c-0.9) > 0.03 {
				t.Errorf("H %d step %d: coverage %.3f on %d intervals, want 0.90 ± 0.03", H, h+1, c, n[h])
			}
			if h > 0 && width[h] < 0.95*width[h-1] {
				t.Errorf("H %d step %d: mean width %.3f narrower than step %d's %.3f", H, h+1, width[h]/float64(n[h]), h, width[h-1]/float64(n[h-1]))
			}
		}
		if !(width[H-1] > 1.2*width[0]) {
			t.Errorf("H %d: step %d's mean width %v is not wider than step 1's %v", H, H, width[H-1]/float64(n[H-1]), width[0]/float64(n[0]))
		}
	}
}

// TestHorizonConfig: a horizon out of range or without target change is
// refused, naming the key.
func TestHorizonConfig(t *testing.T) {
	for _, tc := range []struct {
		h      int
		target Target
		want   string
	}{
		{-1, TargetChange, "horizon must be between 1 and 336, got -1"},
		{MaxHorizon + 1, TargetChange, "horizon must be between 1 and 336, got 337"},
		{2, TargetLevel, `horizon 2 needs target = "change"`},
	} {
		cfg := DefaultConfig()
		cfg.Horizon, cfg.Target = tc.h, tc.target
		err := cfg.Validate()
		if !errors.Is(err, ErrBadConfig) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("horizon %d target %v: %v, want %q", tc.h, tc.target, err, tc.want)
		}
	}
	for _, h := range []int{0, 1, 12, MaxHorizon} {
		cfg := DefaultConfig()
		cfg.Horizon = h
		if err := cfg.Validate(); err != nil {
			t.Errorf("horizon %d: %v", h, err)
		}
	}
}

// TestHorizonNoAllocationsOnceWarm: the path costs no allocation per point.
func TestHorizonNoAllocationsOnceWarm(t *testing.T) {
	vals := arSeries(2, 1500)
	s := mustNew(t, horizonConfig(12))
	i := 0
	push := func() {
		if _, err := s.Push(Point{Time: at(i), Value: vals[i%len(vals)]}); err != nil {
			t.Fatal(err)
		}
		i++
	}
	for range len(vals) {
		push()
	}
	if a := testing.AllocsPerRun(300, push); a != 0 {
		t.Errorf("%v allocations per point, want 0", a)
	}
}

// BenchmarkSeriesPushHorizon: the cost of a point of a warm default series
// forecasting 1 and 12 steps ahead, on the NAB streams in testdata/nab
// (each replayed twice before timing, then cycled, its times running on).
func BenchmarkSeriesPushHorizon(b *testing.B) {
	for _, name := range []string{"nyc_taxi", "ec2_cpu_utilization_77c1ca", "exchange-4_cpc_results"} {
		pts := loadCSV(b, "../testdata/nab/"+name+".csv")
		step := pts[1].Time.Sub(pts[0].Time)
		for _, h := range []int{1, 12, 48} {
			b.Run(fmt.Sprintf("%s/H=%d", name, h), func(b *testing.B) {
				cfg := DefaultConfig()
				cfg.Horizon = h
				s := mustNew(b, cfg)
				t0 := pts[0].Time
				i := 0
				push := func() {
					p := pts[i%len(pts)]
					if _, err := s.Push(Point{Time: t0.Add(time.Duration(i) * step), Value: p.Value}); err != nil {
						b.Fatal(err)
					}
					i++
				}
				for range 2 * len(pts) {
					push()
				}
				b.ReportAllocs()
				for b.Loop() {
					push()
				}
			})
		}
	}
}

// TestRestoreRefusesBadHorizonState: a horizon state of another horizon
// or damaged is refused with ErrBadState, never a panic.
func TestRestoreRefusesBadHorizonState(t *testing.T) {
	cfg := horizonConfig(5)
	s := mustNew(t, cfg)
	run(t, s, arSeries(3, 300))
	for _, tc := range []struct {
		name    string
		corrupt func(*SeriesState)
	}{
		{"fewer_anchors", func(st *SeriesState) { st.Horizon.Anchors = st.Horizon.Anchors[1:] }},
		{"fewer_pending", func(st *SeriesState) { st.Horizon.Anchors[1].Pending = st.Horizon.Anchors[1].Pending[1:] }},
		{"mse_nan", func(st *SeriesState) { st.Horizon.Anchors[1].MSE[0] = math.NaN() }},
		{"q_inf", func(st *SeriesState) { st.Horizon.Anchors[0].Q = math.Inf(1) }},
		{"no_guard", func(st *SeriesState) { st.Horizon.Anchors[2].Guard = nil }},
		{"short_candidates", func(st *SeriesState) {
			p := &st.Horizon.Anchors[0].Pending[0]
			p.Candidates = p.Candidates[1:]
		}},
		{"sar_sums", func(st *SeriesState) { st.Horizon.ARs[1].B = nil }},
		{"window_negative", func(st *SeriesState) { st.Horizon.Window = append(st.Horizon.Window, -1) }},
		{"periods", func(st *SeriesState) { st.Horizon.P1, st.Horizon.P2 = 7, 3 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, err := s.Export()
			if err != nil {
				t.Fatal(err)
			}
			tc.corrupt(&st)
			if r, err := Restore(s.Key(), cfg, st); !errors.Is(err, ErrBadState) || r != nil {
				t.Fatalf("err = %v, want ErrBadState", err)
			}
		})
	}
	// Another horizon is a changed configuration, named.
	st, _ := s.Export()
	other := cfg
	other.Horizon = 6
	if _, err := Restore(s.Key(), other, st); !errors.Is(err, ErrConfigChanged) || !strings.Contains(err.Error(), "horizon 5 → 6") {
		t.Fatalf("err = %v, want ErrConfigChanged naming horizon 5 → 6", err)
	}
	// A horizon state for a series without a horizon is refused.
	one := cfg
	one.Horizon = 1
	flat := mustNew(t, one)
	run(t, flat, arSeries(3, 300))
	fst, _ := flat.Export()
	fst.Horizon = st.Horizon
	if _, err := Restore(flat.Key(), one, fst); !errors.Is(err, ErrBadState) {
		t.Fatalf("a horizon state without a horizon: err = %v, want ErrBadState", err)
	}
	if _, err := Restore(s.Key(), cfg, st); err != nil {
		t.Fatalf("the undamaged state: %v", err)
	}
}

// TestRestoreHorizonRoundTrip: a series restored from its state goes on
// as the series itself would, bit for bit, its pending anchor forecasts
// scored as theirs: for horizons whose anchors score every origin and
// those that score every few.
func TestRestoreHorizonRoundTrip(t *testing.T) {
	for _, H := range []int{5, 48} {
		cfg := horizonConfig(H)
		vals := arSeries(11, 900)
		s := mustNew(t, cfg)
		for i, v := range vals[:601] {
			if _, err := s.Push(Point{Time: at(i), Value: v}); err != nil {
				t.Fatal(err)
			}
		}
		st, err := s.Export()
		if err != nil {
			t.Fatal(err)
		}
		r, err := Restore(s.Key(), cfg, st)
		if err != nil {
			t.Fatal(err)
		}
		for i := 601; i < len(vals); i++ {
			p := Point{Time: at(i), Value: vals[i]}
			a, err1 := s.Push(p)
			b, err2 := r.Push(p)
			if err1 != nil || err2 != nil {
				t.Fatal(err1, err2)
			}
			if !slices.EqualFunc(a.Forecast.Path, b.Forecast.Path, sameStep) || !slices.EqualFunc(a.Outcome.Path, b.Outcome.Path, sameStep) {
				t.Fatalf("H %d point %d: restored path %v, closed %v; want %v, %v", H, i, b.Forecast.Path, b.Outcome.Path, a.Forecast.Path, a.Outcome.Path)
			}
		}
	}
}

// TestRestoreHorizonFromEarlierVersion: a state without the steps'
// state (a file of an earlier version, whose horizon section is skipped)
// is restored with the steps ahead started afresh: a path of H steps
// without intervals beyond step 1 at first.
func TestRestoreHorizonFromEarlierVersion(t *testing.T) {
	const H = 12
	cfg := horizonConfig(H)
	s := mustNew(t, cfg)
	run(t, s, arSeries(3, 300))
	st, err := s.Export()
	if err != nil {
		t.Fatal(err)
	}
	st.Horizon = nil
	r, err := Restore(s.Key(), cfg, st)
	if err != nil {
		t.Fatalf("a state without the steps': %v", err)
	}
	res, err := r.Push(Point{Time: at(300), Value: 50})
	if err != nil || !res.HasForecast || len(res.Forecast.Path) != H || res.Forecast.Path[H-1].HasInterval() {
		t.Fatalf("after restoring it: %+v, %v; want a path of %d steps without intervals beyond step 1", res.Forecast, err, H)
	}
}

// BenchmarkHorizonCostRatio: the cost of a point with H = 12 and H = 48
// over its cost with H = 1, the warm default series fed the same points in
// turn and timed each, so that all meet the same load of a shared machine
// (the ratios "H12/H1" and "H48/H1"). Also reported: each one's ns per
// point.
func BenchmarkHorizonCostRatio(b *testing.B) {
	hs := []int{1, 12, 48}
	for _, name := range []string{"nyc_taxi", "ec2_cpu_utilization_77c1ca", "exchange-4_cpc_results"} {
		pts := loadCSV(b, "../testdata/nab/"+name+".csv")
		step := pts[1].Time.Sub(pts[0].Time)
		b.Run(name, func(b *testing.B) {
			ss := make([]*Series, len(hs))
			for k, h := range hs {
				cfg := DefaultConfig()
				cfg.Horizon = h
				ss[k] = mustNew(b, cfg)
			}
			t0 := pts[0].Time
			took := make([]time.Duration, len(hs))
			i := 0
			push := func(timed bool) {
				p := Point{Time: t0.Add(time.Duration(i) * step), Value: pts[i%len(pts)].Value}
				for k, s := range ss {
					start := time.Now()
					if _, err := s.Push(p); err != nil {
						b.Fatal(err)
					}
					if timed {
						took[k] += time.Since(start)
					}
				}
				i++
			}
			for range 2 * len(pts) {
				push(false)
			}
			n := 0
			for b.Loop() {
				push(true)
				n++
			}
			for k, h := range hs {
				b.ReportMetric(float64(took[k].Nanoseconds())/float64(n), fmt.Sprintf("ns/point-H%d", h))
				if k > 0 {
					b.ReportMetric(float64(took[k])/float64(took[0]), fmt.Sprintf("H%d/H1", h))
				}
			}
		})
	}
}

// BenchmarkStepCostRatio: the cost of a raw point of a series forecast
// 48 steps ahead at a step of an hour, over that of the same point of a
// series forecasting every raw point one step ahead ("step1h-H48/raw-H1"),
// the two fed the same points of nyc_taxi, 30 s apart, in turn.
func BenchmarkStepCostRatio(b *testing.B) {
	pts := loadCSV(b, "../testdata/nab/nyc_taxi.csv")
	raw, stepped := DefaultConfig(), DefaultConfig()
	stepped.Step, stepped.Horizon = time.Hour, 48
	ss := []*Series{mustNew(b, raw), mustNew(b, stepped)}
	t0 := pts[0].Time.Truncate(time.Hour)
	var took [2]time.Duration
	i := 0
	push := func(timed bool) {
		p := Point{Time: t0.Add(time.Duration(i) * 30 * time.Second), Value: pts[i%len(pts)].Value}
		for k, s := range ss {
			start := time.Now()
			if _, err := s.Push(p); err != nil {
				b.Fatal(err)
			}
			if timed {
				took[k] += time.Since(start)
			}
		}
		i++
	}
	for range 120 * 24 * 10 { // ten days of hours, so that the hourly series is warm
		push(false)
	}
	n := 0
	for b.Loop() {
		push(true)
		n++
	}
	b.ReportMetric(float64(took[0].Nanoseconds())/float64(n), "ns/point-raw-H1")
	b.ReportMetric(float64(took[1].Nanoseconds())/float64(n), "ns/point-step1h-H48")
	b.ReportMetric(float64(took[1])/float64(took[0]), "step1h-H48/raw-H1")
}

// BenchmarkNewSeriesHorizon: the memory a default series allocates when
// made, with H = 1 and H = 12 (B/op): the horizon's calibration windows
// and pending forecasts are allocated up front, never per point.
func BenchmarkNewSeriesHorizon(b *testing.B) {
	for _, h := range []int{1, 12} {
		b.Run(fmt.Sprintf("H=%d", h), func(b *testing.B) {
			cfg := DefaultConfig()
			cfg.Horizon = h
			b.ReportAllocs()
			for b.Loop() {
				if _, err := New("k", cfg); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestHorizonRepeatingShape: on an hourly series that repeats a daily and
// weekly shape with small noise, the default series' 48-step path (step 1
// the SVR's, steps 2…48 ahead's) reproduces the shape: over origins at
// different hours and days, its mean absolute error on the values that
// follow is at most seasonal naive's (a day before) and within 10 % of a
// week before's, which is exact but for the noise; no step differs from
// its neighbours by more than the series' largest hourly change, and
// every step has an interval.
func TestHorizonRepeatingShape(t *testing.T) {
	shape := func(i int) float64 {
		hr := float64(i % 24)
		v := 100 + 30*math.Sin(2*math.Pi*(hr-8)/24) + 10*math.Sin(4*math.Pi*hr/24)
		if d := (i / 24) % 7; d >= 5 {
			v -= 25
		}
		return v
	}
	cfg := DefaultConfig()
	cfg.Horizon = 48
	cfg.Coverage = 0.95
	var ours, daily, weekly float64
	for seed := range uint64(6) {
		r := rand.New(rand.NewPCG(seed, 21))
		s := mustNew(t, cfg)
		t0 := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
		n := 24*7*8 + int(seed)*29 // origins at other hours and days
		var vals []float64
		var last Forecast
		for i := range n + 48 {
			vals = append(vals, shape(i)+r.NormFloat64())
			if i >= n {
				continue
			}
			res, err := s.Push(Point{Time: t0.Add(time.Duration(i) * time.Hour), Value: vals[i]})
			if err != nil {
				t.Fatal(err)
			}
			if res.HasForecast {
				last = res.Forecast
				last.Path = slices.Clone(res.Forecast.Path)
			}
		}
		maxStep := 0.0
		for i := 1; i < n; i++ {
			maxStep = math.Max(maxStep, math.Abs(vals[i]-vals[i-1]))
		}
		for h, st := range last.Path {
			y := vals[n+h]
			ours += math.Abs(st.Value - y)
			daily += math.Abs(vals[n+h-24*((h+24)/24)] - y)
			weekly += math.Abs(vals[n+h-168] - y)
			if h > 0 && math.Abs(st.Value-last.Path[h-1].Value) > maxStep {
				t.Errorf("seed %d: step %d moves %.2f from step %d, beyond the largest hourly change %.2f", seed, h+1, st.Value-last.Path[h-1].Value, h, maxStep)
			}
			if !st.HasInterval() {
				t.Errorf("seed %d: step %d has no interval", seed, h+1)
			}
		}
	}
	if ours > daily || ours > 1.1*weekly {
		t.Errorf("the paths' mean absolute error %.3f; a day before's %.3f, a week before's %.3f", ours/48/6, daily/48/6, weekly/48/6)
	}
}
