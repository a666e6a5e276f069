package pipeline

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// TestFirstMoveNotCalibrated: a series that starts flat at 0 (a disk-write
// or error counter) and then moves by 10⁷–10⁸ at a time. The forecasts
// made before its first move had no scale; the first move's error, in the
// series' own units, must not enter the calibration kept in scales: every
// interval after it stays within a few hundred times the series' range
// (it reached ±1.6e15 around values of 1e8 when it did), at every step of
// a 4-step horizon too, and the outcome of the first move carries only
// step 1. A series that stays flat keeps intervals of zero width.
func TestFirstMoveNotCalibrated(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 32))
	values := make([]float64, 300)
	for i := 12; i < len(values); i++ {
		if rng.IntN(3) == 0 {
			values[i] = 1e7 * (1 + 40*rng.Float64())
		}
	}
	values[12] = 2e7 // the first move
	for _, h := range []int{1, 4} {
		cfg := DefaultConfig()
		cfg.Horizon = h
		s := mustNew(t, cfg)
		t0 := time.Date(2024, 3, 4, 0, 0, 0, 0, time.UTC)
		hi := 0.0
		intervals := 0
		for i, v := range values {
			r, err := s.Push(Point{Time: t0.Add(time.Duration(i) * 5 * time.Minute), Value: v})
			if err != nil {
				t.Fatal(err)
			}
			hi = math.Max(hi, v)
			if i == 12 && r.HasOutcome && len(r.Outcome.Path) > 1 {
				t.Errorf("H=%d: the first move's outcome carries %d steps", h, len(r.Outcome.Path))
			}
			if !r.HasForecast {
				continue
			}
			check := func(step int, lo, up float64) {
				if math.IsNaN(lo) {
					return
				}
				intervals++
				if i >= 12 && (lo < -500*hi || up > 500*hi) {
					t.Fatalf("H=%d point %d step %d: interval [%g, %g] for values in [0, %g]", h, i, step, lo, up, hi)
				}
			}
			check(1, r.Forecast.Lower, r.Forecast.Upper)
			for _, st := range r.Forecast.Path {
				check(st.Horizon, st.Lower, st.Upper)
			}
		}
		if intervals < 200 {
			t.Errorf("H=%d: only %d intervals checked", h, intervals)
		}
	}
	s := mustNew(t, DefaultConfig())
	for i, r := range pushSpaced(t, s, make([]float64, 60), 5*time.Minute) {
		if i >= 30 && r.HasForecast && !(r.Forecast.Lower == 0 && r.Forecast.Upper == 0) {
			t.Fatalf("flat series, point %d: interval [%v, %v]", i, r.Forecast.Lower, r.Forecast.Upper)
		}
	}
}
