package pipeline

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/forecastd/forecastd/anomaly"
)

// sagDays returns 9 days of 5-minute points with a daily plateau (80 from
// 08:00 to 18:00, 20 otherwise) and noise σ = 1, whose plateau on day 8
// sags slowly, half a unit a point, to 50 from 09:00 on: each step is
// within the noise the forecaster sees, but the day leaves its pattern.
// It returns the values and the first point of the sag.
func sagDays() ([]float64, int) {
	const day = 288
	rng := rand.New(rand.NewPCG(21, 22))
	sag := 8*day + 108
	v := make([]float64, 9*day)
	for i := range v {
		y := 20.0
		if h := i % day; h >= 96 && h < 216 {
			y = 80
			if i >= sag && i < 8*day+216 {
				y = math.Max(50, 80-0.5*float64(i-sag+1))
			}
		}
		v[i] = y + rng.NormFloat64()
	}
	return v, sag
}

// pushSpaced feeds values to s at spacing and returns the results.
func pushSpaced(t *testing.T, s *Series, values []float64, spacing time.Duration) []Result {
	t.Helper()
	t0 := time.Date(2024, 3, 4, 0, 0, 0, 0, time.UTC)
	out := make([]Result, len(values))
	for i, v := range values {
		r, err := s.Push(Point{Time: t0.Add(time.Duration(i) * spacing), Value: v})
		if err != nil {
			t.Fatalf("point %d: %v", i, err)
		}
		out[i] = r
	}
	return out
}

// TestSeasonalAnomaly: with the default seasonal detection, and the
// other ways of opening an event off (so that their quiet periods do not
// interfere), the day whose plateau sags opens an event by its seasonal
// deviation (from the series' values a day and a week before, out of the
// change features' history) within the first two hours of the sag, and no
// other point opens one; with anomaly_seasonal off none opens; with
// target level (no seasonal history) none opens either.
func TestSeasonalAnomaly(t *testing.T) {
	values, sag := sagDays()
	opened := func(cfg Config) (seasonal, other []int) {
		for i, r := range pushSpaced(t, mustNew(t, cfg), values, 5*time.Minute) {
			if r.HasOutcome && r.Outcome.Anomaly.Event == anomaly.Opened {
				if r.Outcome.Anomaly.Seasonal {
					seasonal = append(seasonal, i)
				} else {
					other = append(other, i)
				}
			}
		}
		return seasonal, other
	}
	only := DefaultConfig()
	only.Anomaly.Threshold, only.Anomaly.ExtremeQuiet = 2*anomaly.MaxScore, 0
	seasonal, other := opened(only)
	if len(seasonal) != 1 || seasonal[0] < sag || seasonal[0] >= sag+24 || len(other) != 0 {
		t.Errorf("seasonal events at %v (others at %v), want one in [%d, %d)", seasonal, other, sag, sag+24)
	}
	off := only
	off.Anomaly.Seasonal = 0
	if seasonal, other := opened(off); len(seasonal)+len(other) != 0 {
		t.Errorf("seasonal off: events at %v and %v", seasonal, other)
	}
	level := PaperConfig()
	level.Anomaly = only.Anomaly
	if seasonal, other := opened(level); len(seasonal)+len(other) != 0 {
		t.Errorf("target level: events at %v and %v", seasonal, other)
	}
}
