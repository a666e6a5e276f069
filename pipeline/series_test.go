package pipeline

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/forecastd/forecastd/embedding"
	"github.com/forecastd/forecastd/lab/dataset"
	"github.com/forecastd/forecastd/svr"
)

var kinds = []Kind{AOSVR, SOGSVR, NORMA}

func at(i int) time.Time { return time.Unix(int64(1000+i), 0) }

// run pushes values (one per second) and returns every result.
func run(t testing.TB, s *Series, values []float64) []Result {
	t.Helper()
	out := make([]Result, len(values))
	for i, v := range values {
		r, err := s.Push(Point{Time: at(i), Value: v})
		if err != nil {
			t.Fatalf("point %d: %v", i, err)
		}
		out[i] = r
	}
	return out
}

func mustNew(t testing.TB, cfg Config) *Series {
	t.Helper()
	s, err := New("test", cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func santafe(n int) []float64 { return dataset.MustLoad("santafe_laser_a").Values[:n] }

// TestWarmupReplayLosesNoPoint: with warm-up scaling, the points held back
// are all learned once the range is known, so that the model ends up exactly
// as one that knew that range from the start; none of them is forecast.
func TestWarmupReplayLosesNoPoint(t *testing.T) {
	const n, warm = 400, 50
	v := santafe(n)
	lo, hi := slices.Min(v[:warm]), slices.Max(v[:warm])
	for _, k := range kinds {
		t.Run(k.String(), func(t *testing.T) {
			cw := PaperConfig()
			cw.Kind = k
			cw.Scale = embedding.ScaleSpec{Mode: embedding.ScaleWarmup, N: warm}
			cf := cw
			cf.Scale = embedding.ScaleSpec{Mode: embedding.ScaleFixed, Min: lo, Max: hi}
			sw, sf := mustNew(t, cw), mustNew(t, cf)
			rw, rf := run(t, sw, v), run(t, sf, v)
			for i := range warm - 1 {
				if rw[i].HasForecast || rw[i].HasOutcome {
					t.Fatalf("point %d inside warm-up produced %+v", i, rw[i])
				}
			}
			if !rw[warm-1].HasForecast {
				t.Fatalf("the point completing the warm-up made no forecast")
			}
			if got, want := sw.Stats().Updates, uint64(n-cw.Dim); got != want {
				t.Errorf("updates = %d, want %d (every sample once)", got, want)
			}
			if got, want := sw.Stats().Updates, sf.Stats().Updates; got != want {
				t.Errorf("updates = %d, fixed-scale twin %d", got, want)
			}
			// From the end of warm-up on, the forecasts equal the twin's.
			for i := warm - 1; i < n; i++ {
				a, b := rw[i].Forecast, rf[i].Forecast
				if a.Value != b.Value || a.Scaled != b.Scaled {
					t.Fatalf("point %d: forecast %v, fixed-scale twin %v", i, a.Value, b.Value)
				}
			}
		})
	}
}

// TestForecastNeverUsesItsTarget perturbs x(i) and checks that every
// forecast for points ≤ i, with its interval, is unchanged, while the
// forecast for i+1 does change (so the test can fail).
func TestForecastNeverUsesItsTarget(t *testing.T) {
	const n = 300
	base := santafe(n)
	for _, k := range kinds {
		t.Run(k.String(), func(t *testing.T) {
			cfg := PaperConfig()
			cfg.Kind = k
			ref := run(t, mustNew(t, cfg), base)
			for _, i := range []int{120, 181, 250} {
				v := slices.Clone(base)
				v[i] += 40
				got := run(t, mustNew(t, cfg), v)
				for j := 0; j <= i; j++ {
					a, b := ref[j].Outcome.Forecast, got[j].Outcome.Forecast
					if a.Value != b.Value || !same(a.Lower, b.Lower) || !same(a.Upper, b.Upper) {
						t.Fatalf("x(%d) changed the forecast for point %d: %v → %v", i, j, a, b)
					}
				}
				if ref[i+1].Outcome.Forecast.Value == got[i+1].Outcome.Forecast.Value {
					t.Errorf("x(%d) did not change the forecast for point %d", i, i+1)
				}
			}
		})
	}
}

func sameForecast(a, b Forecast) bool {
	return a.Origin.Equal(b.Origin) && a.Time.Equal(b.Time) && a.Value == b.Value &&
		a.Scaled == b.Scaled && same(a.Lower, b.Lower) && same(a.Upper, b.Upper)
}

func same(a, b float64) bool { return a == b || (math.IsNaN(a) && math.IsNaN(b)) }

// TestOutcomePairsForecastWithItsPoint: each outcome carries the forecast
// made one point earlier and that point's value.
func TestOutcomePairsForecastWithItsPoint(t *testing.T) {
	cfg := PaperConfig()
	cfg.Scale = embedding.ScaleSpec{Mode: embedding.ScaleNone}
	v := santafe(100)
	s := mustNew(t, cfg)
	rs := run(t, s, v)
	first := -1
	for i := 1; i < len(rs); i++ {
		if !rs[i].HasOutcome {
			if rs[i-1].HasForecast {
				t.Fatalf("point %d: forecast made at %d was not scored", i, i-1)
			}
			continue
		}
		if first < 0 {
			first = i
		}
		o := rs[i].Outcome
		if !sameForecast(o.Forecast, rs[i-1].Forecast) || o.Actual != v[i] || !o.Time.Equal(at(i)) {
			t.Fatalf("point %d: outcome %+v does not pair forecast %+v with value %v", i, o, rs[i-1].Forecast, v[i])
		}
		if !o.Forecast.Time.Equal(at(i)) || !o.Forecast.Origin.Equal(at(i-1)) {
			t.Fatalf("point %d: forecast dated %v from %v", i, o.Forecast.Time, o.Forecast.Origin)
		}
	}
	// The first sample completes at point Dim; the first forecast follows it.
	if first != cfg.Dim+1 {
		t.Errorf("first outcome at point %d, want %d", first, cfg.Dim+1)
	}
}

func TestOutOfOrderAndNonFinite(t *testing.T) {
	cfg := PaperConfig()
	cfg.Scale = embedding.ScaleSpec{Mode: embedding.ScaleNone}
	s := mustNew(t, cfg)
	v := santafe(40)
	for i := range 20 {
		if _, err := s.Push(Point{Time: at(i), Value: v[i] / 100}); err != nil {
			t.Fatal(err)
		}
	}
	for _, ti := range []int{19, 5} {
		if _, err := s.Push(Point{Time: at(ti), Value: 1}); !errors.Is(err, ErrOutOfOrder) {
			t.Fatalf("time of point %d again: err = %v, want ErrOutOfOrder", ti, err)
		}
	}
	if _, err := s.Push(Point{Time: at(20), Value: math.NaN()}); !errors.Is(err, ErrNonFinite) {
		t.Fatalf("NaN: err = %v, want ErrNonFinite", err)
	}
	// The embedding restarts: no outcome or forecast until Dim+... points.
	for i := 21; i < 21+cfg.Dim-1; i++ {
		r, err := s.Push(Point{Time: at(i), Value: v[i] / 100})
		if err != nil {
			t.Fatal(err)
		}
		if r.HasOutcome || r.HasForecast {
			t.Fatalf("point %d right after the restart produced %+v", i, r)
		}
	}
	r, err := s.Push(Point{Time: at(21 + cfg.Dim - 1), Value: 0.5})
	if err != nil || !r.HasForecast || r.HasOutcome {
		t.Fatalf("point completing the new embedding: %+v, %v; want a forecast and no outcome", r, err)
	}
	st := s.Stats()
	if st.OutOfOrder != 2 || st.NonFinite != 1 || st.Restarts != 1 || st.Points != uint64(20+cfg.Dim) {
		t.Errorf("stats %+v", st)
	}
}

func TestGapRestartsEmbedding(t *testing.T) {
	cfg := PaperConfig()
	cfg.Scale = embedding.ScaleSpec{Mode: embedding.ScaleNone}
	cfg.MaxGap = 3
	s := mustNew(t, cfg)
	push := func(sec int, v float64) Result {
		t.Helper()
		r, err := s.Push(Point{Time: time.Unix(int64(sec), 0), Value: v})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	for i := range 20 {
		push(10*i, math.Sin(float64(i)))
	}
	if got := s.Interval(); got != 10*time.Second {
		t.Fatalf("interval %v, want 10s", got)
	}
	if r := push(190+30, 0.3); !r.HasOutcome || !r.HasForecast { // 3 intervals: no gap
		t.Fatalf("30 s after: %+v, want a scored point and a forecast", r)
	}
	if r := push(220+31, 0.1); r.HasOutcome || r.HasForecast {
		t.Fatalf("31 s after: %+v, want a restart", r)
	}
	if st := s.Stats(); st.Restarts != 1 {
		t.Errorf("restarts = %d, want 1", st.Restarts)
	}
	if got := s.Interval(); got != 10*time.Second {
		t.Errorf("interval after the gap %v, want 10s (gaps are not spacings)", got)
	}
}

// TestConformalQuantile checks the rolling quantile against sorting the
// window from scratch, over a ladder of windows, with γ = 0, with 16- and
// 32-bit arrival numbers; after every residual, the window read back in
// arrival order is the last w residuals, and a window restored from it
// gives the same quantiles from then on.
func TestConformalQuantile(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, w := range []int{2, 9, 10, 50, 200} {
		for _, cov := range []float64{0.5, 0.9, 0.95} {
			wide := w == 9 || w == 50
			c := newConformalSeq(w, cov, 0, wide)
			var all []float64
			for i := range 3 * w {
				r := math.Abs(rng.NormFloat64())
				if i%7 == 0 && len(all) > 0 {
					r = all[len(all)-1] // ties
				}
				c.add(r)
				all = append(all, r)
				win := slices.Clone(all[max(0, len(all)-w):])
				slices.Sort(win)
				n := len(win)
				k := int(math.Ceil(float64(n+1)*cov - 1e-9))
				q, ok := c.quantile()
				if ok != (k <= n) {
					t.Fatalf("w=%d cov=%v n=%d: ok = %v, want %v", w, cov, n, ok, k <= n)
				}
				if ok && q != win[k-1] {
					t.Fatalf("w=%d cov=%v n=%d: q = %v, want %v", w, cov, n, q, win[k-1])
				}
				if got, want := c.residuals(), all[max(0, len(all)-w):]; !slices.Equal(got, want) {
					t.Fatalf("w=%d n=%d: residuals %v, want %v", w, n, got, want)
				}
				if i%(w/2+1) == 0 {
					r := newConformalSeq(w, cov, 0, !wide)
					if err := r.restore(c.residuals(), c.alpha); err != nil {
						t.Fatal(err)
					}
					c = r
				}
				if cap(c.sorted) > max(w, conformalStart) {
					t.Fatalf("w=%d: room for %d residuals", w, cap(c.sorted))
				}
			}
		}
	}
}

// TestConformalArrivalWraps feeds more residuals than 16-bit arrival
// numbers count: the oldest is still the one forgotten.
func TestConformalArrivalWraps(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	const w = 37
	c := newConformal(w, 0.9, 0)
	var all []float64
	for i := range 1<<16 + 3*w {
		r := math.Abs(rng.NormFloat64())
		c.add(r)
		all = append(all, r)
		if i < 1<<16-w {
			continue
		}
		if got, want := c.residuals(), all[len(all)-w:]; !slices.Equal(got, want) {
			t.Fatalf("after %d residuals: %v, want %v", i+1, got, want)
		}
	}
}

// TestIntervalCoverage: on every series in testdata/series and for every
// model on its defaults, the 90 % intervals cover within ±3 points of
// nominal. Warm-up: the scale's 100 points, then forecasts for points
// before 200 are not counted (the first intervals rest on few residuals).
func TestIntervalCoverage(t *testing.T) {
	const skip = 200
	for _, name := range dataset.Names {
		v := dataset.MustLoad(name).Values
		for _, k := range kinds {
			t.Run(name+"/"+k.String(), func(t *testing.T) {
				t.Parallel()
				cfg := PaperConfig()
				cfg.Kind = k
				rs := run(t, mustNew(t, cfg), v)
				var n, in int
				for i := skip; i < len(rs); i++ {
					o := rs[i].Outcome
					if !rs[i].HasOutcome || !o.Forecast.HasInterval() {
						continue
					}
					n++
					if o.Forecast.Lower <= o.Actual && o.Actual <= o.Forecast.Upper {
						in++
					}
				}
				if n < len(v)-skip-1 {
					t.Fatalf("only %d of %d points had an interval", n, len(v)-skip)
				}
				cov := float64(in) / float64(n)
				t.Logf("coverage %.4f on %d forecasts", cov, n)
				if math.Abs(cov-cfg.Coverage) > 0.03 {
					t.Errorf("coverage %.4f, want %.2f ± 0.03", cov, cfg.Coverage)
				}
			})
		}
	}
}

// TestNoAllocationsOnceWarm: a point costs no allocation once the model has
// grown to its bound (AOSVR's window, SOG-SVR's dictionary, NORMA's τ).
func TestNoAllocationsOnceWarm(t *testing.T) {
	v := dataset.MustLoad("santafe_laser_a").Values
	for _, k := range kinds {
		t.Run(k.String(), func(t *testing.T) {
			cfg := PaperConfig()
			cfg.Kind = k
			cfg.Window = 50
			cfg.NORMA.Tau = 100
			cfg.MeasureUpdates = true
			s := mustNew(t, cfg)
			i := 0
			push := func() {
				if _, err := s.Push(Point{Time: at(i), Value: v[i%len(v)]}); err != nil {
					t.Fatal(err)
				}
				i++
			}
			for range 2 * len(v) {
				push()
			}
			if a := testing.AllocsPerRun(500, push); a != 0 {
				t.Errorf("%v allocations per point, want 0", a)
			}
		})
	}
}

func TestConfigValidateReportsEveryProblem(t *testing.T) {
	cfg := PaperConfig()
	cfg.Dim = 0
	cfg.Delay = 0
	cfg.Window = -1
	cfg.Coverage = 1
	cfg.IntervalWindow = 1
	cfg.MaxGap = -1
	err := cfg.Validate()
	for _, want := range []string{"dim", "delay", "window", "coverage", "interval_window", "max_gap"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v does not name %s", err, want)
		}
	}
	if !errors.Is(err, ErrBadConfig) {
		t.Errorf("error does not wrap ErrBadConfig")
	}

	cfg = PaperConfig()
	cfg.Kind = SOGSVR
	cfg.SOG.Lambda, cfg.SOG.Forget, cfg.SOG.MaxDict = -1, 2, -3
	err = cfg.Validate()
	for _, want := range []string{"sog_lambda", "sog_forget", "sog_max_dict"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v does not name %s", err, want)
		}
	}
	if !errors.Is(err, svr.ErrBadConfig) {
		t.Errorf("error does not wrap svr.ErrBadConfig")
	}
}

func BenchmarkSeriesPush(b *testing.B) {
	v := dataset.MustLoad("santafe_laser_a").Values
	for _, k := range kinds {
		b.Run(fmt.Sprint(k), func(b *testing.B) {
			cfg := PaperConfig()
			cfg.Kind = k
			s := mustNew(b, cfg)
			i := 0
			for ; i < 2*len(v); i++ {
				_, _ = s.Push(Point{Time: at(i), Value: v[i%len(v)]})
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := s.Push(Point{Time: at(i), Value: v[i%len(v)]}); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}

func TestSamplesAreTheDelayVectors(t *testing.T) {
	cfg := PaperConfig()
	cfg.Scale = embedding.ScaleSpec{} // none: samples in the series' units
	cfg.Dim = 3
	t0 := time.Unix(1e9, 0)
	var pts []Point
	for i := range 10 {
		pts = append(pts, Point{Time: t0.Add(time.Duration(i) * time.Second), Value: float64(i * i)})
	}
	xs, ys, err := Samples(cfg, pts)
	if err != nil {
		t.Fatal(err)
	}
	if len(xs) != 7 || len(ys) != 7 {
		t.Fatalf("got %d samples, %d targets; want 7 (10 points, dim 3)", len(xs), len(ys))
	}
	for k := range xs {
		for j := range 3 {
			// X(t) = [x(t), x(t−1), x(t−2)], newest first
			if want := float64((k + 2 - j) * (k + 2 - j)); xs[k][j] != want {
				t.Fatalf("sample %d: x[%d] = %v, want %v", k, j, xs[k][j], want)
			}
		}
		if want := float64((k + 3) * (k + 3)); ys[k] != want {
			t.Fatalf("sample %d: y = %v, want %v", k, ys[k], want)
		}
	}
}
