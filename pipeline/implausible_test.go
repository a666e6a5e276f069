package pipeline

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/forecastd/forecastd/embedding"
)

// TestImplausibleValuesRefused: ten alternating ±1e308 points (finite) in
// a noisy sine must not blind the series' intervals: they are refused and
// counted, and the intervals of the points after them are as wide as
// before (they widened about 10¹¹ times for 40 points when they were
// learned). A real change of level, however large, is taken after a few
// points that agree with each other.
func TestImplausibleValuesRefused(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	s := mustNew(t, DefaultConfig())
	t0 := time.Unix(1_700_000_000, 0)
	i := 0
	width := func(n int, level float64) (w float64) {
		t.Helper()
		for range n {
			res, err := s.Push(Point{Time: t0.Add(time.Duration(i) * time.Second), Value: level + math.Sin(float64(i)/5) + 0.1*rng.NormFloat64()})
			i++
			if errors.Is(err, ErrImplausible) && level != 0 {
				continue // a change of level: taken after a few points
			}
			if err != nil {
				t.Fatal(err)
			}
			if res.HasForecast && res.Forecast.HasInterval() {
				w = max(w, res.Forecast.Upper-res.Forecast.Lower)
			}
		}
		return w
	}
	width(300, 0)
	before := width(50, 0)
	for k := range 10 {
		v := math.MaxFloat64
		if k%2 == 1 {
			v = -v
		}
		_, err := s.Push(Point{Time: t0.Add(time.Duration(i) * time.Second), Value: v})
		i++
		if !errors.Is(err, ErrImplausible) {
			t.Fatalf("point %d = %v: %v, want ErrImplausible", k, v, err)
		}
	}
	if n := s.Stats().Implausible; n != 10 {
		t.Fatalf("Implausible = %d, want 10", n)
	}
	after := width(40, 0)
	if before <= 0 || after > 10*before {
		t.Fatalf("interval width %g before the ±1e308 points, %g after", before, after)
	}

	// A change of level of 10⁹ times the series' scale is real after
	// maxImplausibleRun points: the series forecasts at the new level.
	width(maxImplausibleRun+60, 1e9)
	res, err := s.Push(Point{Time: t0.Add(time.Duration(i) * time.Second), Value: 1e9})
	if err != nil || !res.HasForecast || math.Abs(res.Forecast.Value-1e9) > 1e3 {
		t.Fatalf("after a change of level to 1e9: forecast %+v, %v", res.Forecast, err)
	}
}

// TestImplausibleOnFlatSeries: a series whose changes were all zero has
// no running scale, and the guard used to let any value through: one
// 1e308 on a series flat at 40 made every later forecast 1e297–1e305
// while the values stayed 40. Without a scale the series' level stands
// for it (at least 10⁶): ±1e308 is refused on a series flat at 40 or at
// 0, with the default scale and with a warm-up one, and the forecasts
// stay at the level; a first move a counter makes (0 to 2·10⁷) is taken.
func TestImplausibleOnFlatSeries(t *testing.T) {
	for _, c := range []struct {
		name  string
		level float64
		scale string
	}{{"flat at 40", 40, ""}, {"flat at 0", 0, ""}, {"flat at 40, warm-up scale", 40, "warmup:20"}, {"flat at -3e9", -3e9, ""}} {
		t.Run(c.name, func(t *testing.T) {
			cfg := DefaultConfig()
			if c.scale != "" {
				sc, err := embedding.ParseScale(c.scale)
				if err != nil {
					t.Fatal(err)
				}
				cfg.Scale = sc
			}
			s := mustNew(t, cfg)
			t0 := time.Date(2024, 3, 4, 0, 0, 0, 0, time.UTC)
			i := 0
			push := func(v float64) (Result, error) {
				i++
				return s.Push(Point{Time: t0.Add(time.Duration(i) * time.Minute), Value: v})
			}
			for range 100 {
				if _, err := push(c.level); err != nil {
					t.Fatal(err)
				}
			}
			for _, v := range []float64{1e308, -1e308, math.MaxFloat64} {
				if _, err := push(v); !errors.Is(err, ErrImplausible) {
					t.Fatalf("%v after a flat stretch at %v: %v, want ErrImplausible", v, c.level, err)
				}
			}
			for k := range 50 {
				r, err := push(c.level)
				if err != nil {
					t.Fatal(err)
				}
				if r.HasForecast && math.Abs(r.Forecast.Value-c.level) > 1+1e-9*math.Abs(c.level) {
					t.Fatalf("point %d after the refusals: forecast %v, the series at %v", k, r.Forecast.Value, c.level)
				}
			}
			if n := s.Stats().Implausible; n != 3 {
				t.Fatalf("Implausible = %d, want 3", n)
			}
		})
	}
	s := mustNew(t, DefaultConfig())
	pushSpaced(t, s, append(make([]float64, 100), 2e7, 2e7, 3e7), time.Minute)
}
