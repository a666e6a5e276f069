package pipeline

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/forecastd/forecastd/anomaly"
)

// outage returns a noisy daily-like sine with a level shift to +50 (an
// outage) over points [start, start+length).
func outage(n, start, length int) []float64 {
	rng := rand.New(rand.NewPCG(11, 12))
	v := make([]float64, n)
	for i := range v {
		v[i] = 10*math.Sin(2*math.Pi*float64(i)/50) + rng.NormFloat64()
		if i >= start && i < start+length {
			v[i] += 50
		}
	}
	return v
}

// TestAnomalyOutcome: every outcome carries the anomaly score of its actual
// against its forecast's interval; the outage opens exactly one event at
// its first point (the return to normal may open another), which closes after close_m points back inside, and the
// quiet stretch before it opens none.
func TestAnomalyOutcome(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Anomaly = anomaly.Config{Threshold: 3, M: 30}
	s := mustNew(t, cfg)
	const start, length = 700, 40
	res := run(t, s, outage(1000, start, length))
	var opened, closed []int
	for i, r := range res {
		if !r.HasOutcome {
			continue
		}
		o := r.Outcome
		want := anomaly.Score(o.Actual, o.Forecast.Value, o.Forecast.Lower, o.Forecast.Upper)
		if got := o.Anomaly.Score; got != want && !(math.IsNaN(got) && math.IsNaN(want)) {
			t.Fatalf("point %d: score %v, want %v", i, got, want)
		}
		switch o.Anomaly.Event {
		case anomaly.Opened:
			opened = append(opened, i)
		case anomaly.Closed:
			closed = append(closed, i)
		}
	}
	before := 0
	for _, i := range opened {
		if i < start {
			before++
		}
	}
	if !slices.Contains(opened, start) {
		t.Fatalf("events opened at %v, want one at the outage's start %d", opened, start)
	}
	if before > 2 {
		t.Errorf("%d events opened (at %v) on the quiet series before the outage", before, opened)
	}
	if got := s.Stats().Anomalies; got != uint64(len(opened)) {
		t.Errorf("Stats.Anomalies %d, want %d", got, len(opened))
	}
	if len(closed) == 0 || closed[len(closed)-1] <= start {
		t.Errorf("events closed at %v, want one after %d", closed, start)
	}
}

// TestLearnAnomalies: with learn_anomalies false the points of the open
// event are neither learned nor calibrated on, so after the outage the
// forecasts come back to the sine sooner and the model learned fewer
// samples; with true, every point is learned.
func TestLearnAnomalies(t *testing.T) {
	const n, start, length = 1000, 700, 40
	v := outage(n, start, length)
	stats := map[bool]Stats{}
	errAfter := map[bool]float64{}
	for _, learn := range []bool{true, false} {
		cfg := DefaultConfig()
		cfg.Anomaly = anomaly.Config{Threshold: 3, M: 30}
		cfg.LearnAnomalies = learn
		s := mustNew(t, cfg)
		res := run(t, s, v)
		for i := start + length; i < start+length+20; i++ {
			if res[i].HasOutcome {
				errAfter[learn] += math.Abs(res[i].Outcome.Actual - res[i].Outcome.Forecast.Value)
			}
		}
		stats[learn] = s.Stats()
	}
	if stats[false].Updates+uint64(length) > stats[true].Updates {
		t.Errorf("learned %d samples without anomalies, %d with: want at least %d fewer", stats[false].Updates, stats[true].Updates, length)
	}
	t.Logf("abs error over the 20 points after the outage: %.1f learning it, %.1f not", errAfter[true], errAfter[false])
}

func TestAnomalyConfigInvalid(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Anomaly.K, cfg.Anomaly.N = 5, 2
	_, err := New("x", cfg)
	if !errors.Is(err, ErrBadConfig) || !strings.Contains(err.Error(), "open_k") {
		t.Fatalf("New with open_k > open_n: %v", err)
	}
}

// TestLearnAnomaliesRegimeChange: with learn_anomalies false, a permanent
// change of regime (the noise ten times larger from point 500 on) opens an
// event that the model and the interval stop learning from only for
// interval_window points; then they learn the new regime and the interval
// covers again. Unbounded, the interval calibrated on the old noise kept
// most points outside and the event open for ever.
func TestLearnAnomaliesRegimeChange(t *testing.T) {
	const n, start = 1600, 500
	rng := rand.New(rand.NewPCG(13, 14))
	v := make([]float64, n)
	for i := range v {
		sigma := 1.0
		if i >= start {
			sigma = 10
		}
		v[i] = 10*math.Sin(2*math.Pi*float64(i)/50) + sigma*rng.NormFloat64()
	}
	for _, cfg := range []Config{DefaultConfig(), PaperConfig()} {
		cfg.Anomaly = anomaly.Config{Threshold: 3, M: 30}
		cfg.LearnAnomalies = false
		s := mustNew(t, cfg)
		res := run(t, s, v)
		covered, scored := 0, 0
		for _, r := range res[n-300:] {
			if r.HasOutcome && r.Outcome.Forecast.HasInterval() {
				scored++
				if o := r.Outcome; o.Forecast.Lower <= o.Actual && o.Actual <= o.Forecast.Upper {
					covered++
				}
			}
		}
		if scored < 250 || float64(covered) < 0.7*float64(scored) {
			t.Errorf("target %v: after the change, %d of the last %d points inside their interval; want ≥ 70 %%", cfg.Target, covered, scored)
		}
	}
}
