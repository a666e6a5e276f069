package pipeline

import (
	"encoding/csv"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// TestChangeKnowingNothingIsPersistence: with target change, a model that
// has learned nothing forecasts no change, so the forecast is the last
// value, bit for bit, whatever the series' units.
func TestChangeKnowingNothingIsPersistence(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Combine = false
	s, err := New("k", cfg)
	if err != nil {
		t.Fatal(err)
	}
	s.Freeze()
	r := rand.New(rand.NewPCG(4, 4))
	t0 := time.Unix(1.7e9, 0)
	n := 0
	for i := range 300 {
		v := 1e9 + 1e7*r.NormFloat64()
		res, err := s.Push(Point{Time: t0.Add(time.Duration(i) * time.Second), Value: v})
		if err != nil {
			t.Fatal(err)
		}
		if res.HasForecast {
			n++
			if res.Forecast.Value != v {
				t.Fatalf("point %d: forecast %v, want the last value %v", i, res.Forecast.Value, v)
			}
		}
	}
	if n < 290 {
		t.Fatalf("%d forecasts of 300 points: the warm-up should be a few points", n)
	}
}

// TestChangeScaleFree: the default forecasts of a·x + b are a·f + b (to
// rounding), intervals included: no unit, offset or first points enter.
// With NORMA at every point. AOSVR and SOG-SVR make discrete choices (a
// sample enters the support set, an atom the dictionary) that a rounding
// difference can flip, after which the two runs are different, equally
// good models: for them the first forecasts agree to rounding and the
// whole runs' MAEs within 2 %.
func TestChangeScaleFree(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 5))
	var pts []Point
	x := 20.0
	for i := range 1500 {
		x += 0.3*r.NormFloat64() + 0.05*(20-x)
		pts = append(pts, Point{Time: time.Unix(1.7e9+int64(i)*900, 0), Value: x + 2*math.Sin(float64(i)*2*math.Pi/96)})
	}
	for _, kind := range []Kind{AOSVR, SOGSVR, NORMA} {
		t.Run(kind.String(), func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.Kind = kind
			a, _ := New("a", cfg)
			b, _ := New("b", cfg)
			const scale, off = 3e4, -7e5
			n, off1, firstOff := 0, 0, -1
			var aeA, aeB float64
			for i, p := range pts {
				ra, _ := a.Push(p)
				rb, _ := b.Push(Point{Time: p.Time, Value: scale*p.Value + off})
				if ra.HasForecast != rb.HasForecast {
					t.Fatalf("point %d: forecast %v and %v", i, ra.HasForecast, rb.HasForecast)
				}
				if !ra.HasForecast {
					continue
				}
				n++
				if i+1 < len(pts) {
					aeA += math.Abs(pts[i+1].Value - ra.Forecast.Value)
					aeB += math.Abs(scale*pts[i+1].Value + off - rb.Forecast.Value)
				}
				for _, pair := range [][2]float64{{ra.Forecast.Value, rb.Forecast.Value}, {ra.Forecast.Lower, rb.Forecast.Lower}, {ra.Forecast.Upper, rb.Forecast.Upper}} {
					if math.IsNaN(pair[0]) != math.IsNaN(pair[1]) || !math.IsNaN(pair[0]) && math.Abs(scale*pair[0]+off-pair[1]) > 1e-6*scale {
						off1++
						if firstOff < 0 {
							firstOff = i
						}
						if kind == NORMA {
							t.Fatalf("point %d: %v maps to %v, got %v", i, pair[0], scale*pair[0]+off, pair[1])
						}
						break
					}
				}
			}
			t.Logf("%d of %d forecasts differ beyond rounding, the first at point %d; MAE %.6g and %.6g (scaled back)", off1, n, firstOff, aeA, aeB/scale)
			if firstOff >= 0 && firstOff < 30 {
				t.Errorf("forecast %d differs already", firstOff)
			}
			if math.Abs(aeB/scale/aeA-1) > 0.02 {
				t.Errorf("MAE %.6g at one scale, %.6g at the other", aeA, aeB/scale)
			}
		})
	}
}

// TestBoundsClip: with min and max, every forecast and interval bound of a
// percentage stays inside [0, 100], even after a spike to the edge.
func TestBoundsClip(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Min, cfg.Max = 0, 100
	s, _ := New("cpu", cfg)
	r := rand.New(rand.NewPCG(9, 9))
	t0 := time.Unix(1.7e9, 0)
	clipped := 0
	for i := range 2000 {
		v := math.Max(0, math.Min(100, 3+2*r.NormFloat64()))
		if i%400 == 399 {
			v = 100
		}
		res, _ := s.Push(Point{Time: t0.Add(time.Duration(i) * time.Second), Value: v})
		if !res.HasForecast {
			continue
		}
		f := res.Forecast
		for _, x := range []float64{f.Value, f.Lower, f.Upper} {
			if x < 0 || x > 100 {
				t.Fatalf("point %d: %v outside [0, 100] (%+v)", i, x, f)
			}
		}
		if f.Lower == 0 {
			clipped++
		}
	}
	if clipped == 0 {
		t.Fatal("no lower bound was clipped: the test does not test clipping")
	}
	bad := DefaultConfig()
	bad.Min, bad.Max = 5, 5
	if err := bad.Validate(); err == nil {
		t.Fatal("min = max accepted")
	}
}

// TestDefaultBeatsPersistence: on real and shared series the default
// configuration's one-step MAE over each series' second half is at most
// 1.02 times persistence's, and well below it where there is something to
// learn (NAB's nyc_taxi, the shared sensor series); the paper's setup loses
// to persistence on the bursty CPU metric, so the test can tell them apart.
func TestDefaultBeatsPersistence(t *testing.T) {
	for _, tc := range []struct {
		file     string
		maxRatio float64
	}{
		{"../testdata/nab/ec2_cpu_utilization_77c1ca.csv", 1.02},
		{"../testdata/nab/nyc_taxi.csv", 0.6},
		{"../testdata/nab/exchange-4_cpc_results.csv", 1.02},
		{"../testdata/series/sensor_temperature_15min.csv", 0.99},
		{"../testdata/series/market_price_daily.csv", 1.0},
		{"../testdata/series/santafe_laser_a.csv", 0.6},
	} {
		t.Run(filepath.Base(tc.file), func(t *testing.T) {
			t.Parallel()
			pts := loadCSV(t, tc.file)
			ratio, cov := maeRatio(t, DefaultConfig(), pts)
			t.Logf("MAE / persistence %.3f, coverage %.3f", ratio, cov)
			if ratio > tc.maxRatio {
				t.Errorf("MAE / persistence MAE = %.3f, want ≤ %v", ratio, tc.maxRatio)
			}
			if cov < 0.87 || cov > 0.93 {
				t.Errorf("90 %% interval coverage %.3f, want within [0.87, 0.93]", cov)
			}
		})
	}
	t.Run("paper_loses_on_bursts", func(t *testing.T) {
		ratio, _ := maeRatio(t, PaperConfig(), loadCSV(t, "../testdata/nab/ec2_cpu_utilization_77c1ca.csv"))
		if ratio <= 1.1 {
			t.Errorf("the paper's setup: MAE / persistence %.3f; the bursty series no longer tells the setups apart", ratio)
		}
	})
}

// maeRatio runs pts through a series of cfg and returns, over the second
// half, its MAE divided by persistence's and its interval coverage.
func maeRatio(t *testing.T, cfg Config, pts []Point) (ratio, coverage float64) {
	t.Helper()
	s, err := New("k", cfg)
	if err != nil {
		t.Fatal(err)
	}
	var ae, pae float64
	var in, nInt int
	for i, p := range pts {
		r, err := s.Push(p)
		if err != nil {
			t.Fatal(err)
		}
		if !r.HasOutcome || i < len(pts)/2 {
			continue
		}
		ae += math.Abs(p.Value - r.Outcome.Forecast.Value)
		pae += math.Abs(p.Value - pts[i-1].Value)
		if f := r.Outcome.Forecast; f.HasInterval() {
			nInt++
			if f.Lower <= p.Value && p.Value <= f.Upper {
				in++
			}
		}
	}
	return ae / pae, float64(in) / float64(nInt)
}

// loadCSV reads a `t,value` (Unix seconds, or an index) or NAB
// `timestamp,value` file.
func loadCSV(t testing.TB, path string) []Point {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	pts := make([]Point, 0, len(recs)-1)
	for i, r := range recs[1:] {
		v, err := strconv.ParseFloat(r[1], 64)
		if err != nil {
			t.Fatalf("%s:%d: %v", path, i+2, err)
		}
		tm, err := time.Parse("2006-01-02 15:04:05", r[0])
		if err != nil {
			x, err := strconv.ParseFloat(r[0], 64)
			if err != nil {
				t.Fatalf("%s:%d: %v", path, i+2, err)
			}
			tm = time.Unix(int64(x), 0)
		}
		pts = append(pts, Point{Time: tm, Value: v})
	}
	return pts
}

// TestChangeExtremeValues: values at the edge of float64 (differences that
// overflow to ±Inf) never produce a NaN or Inf forecast or bound, and the
// series forecasts sanely again once the values are ordinary.
func TestChangeExtremeValues(t *testing.T) {
	for _, kind := range []Kind{AOSVR, SOGSVR, NORMA} {
		t.Run(kind.String(), func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.Kind = kind
			s, _ := New("x", cfg)
			t0 := time.Unix(1.7e9, 0)
			i := 0
			push := func(v float64) Result {
				r, err := s.Push(Point{Time: t0.Add(time.Duration(i) * time.Second), Value: v})
				i++
				if err != nil && !errors.Is(err, ErrImplausible) { // refused: see TestImplausibleValuesRefused
					t.Fatalf("point %d (%v): %v", i, v, err)
				}
				f := r.Forecast
				finite := func(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }
				if r.HasForecast && (!finite(f.Value) || f.HasInterval() && (!finite(f.Lower) || !finite(f.Upper)) || !f.HasInterval() && !math.IsNaN(f.Upper)) {
					t.Fatalf("point %d (%v): forecast %+v", i, v, f)
				}
				return r
			}
			for k := range 300 {
				push(10 + math.Sin(float64(k)/5))
			}
			for k := range 40 {
				push(math.Copysign(math.MaxFloat64, float64(k%2)-0.5))
			}
			var last Result
			for k := range 600 {
				last = push(10 + math.Sin(float64(k)/5))
			}
			if !last.HasForecast || math.Abs(last.Forecast.Value-10) > 3 {
				t.Fatalf("after the extremes: forecast %+v, want about 10", last.Forecast)
			}
		})
	}
}
