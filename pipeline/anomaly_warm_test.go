package pipeline

import (
	"math"
	"testing"

	"github.com/forecastd/forecastd/anomaly"
)

// TestAnomalyQuietWhileWarming: a series opens no anomaly event before its
// interval is calibrated on AnomalyWarmup residuals, however far its
// first outcomes miss (an outage among its first points), while each of
// those outcomes still carries its score; the same outage once the series
// is warm opens an event at its first point; the early event's closing is
// not reported either. A restored series is as warm as the one
// checkpointed.
func TestAnomalyQuietWhileWarming(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Anomaly = anomaly.Config{Threshold: 3, M: 30}
	const early, late, length = 60, 700, 20
	v := outage(1000, late, length)
	for i := early; i < early+length; i++ {
		v[i] += 50
	}
	s := mustNew(t, cfg)
	res := run(t, s, v)
	outcomes, scored := 0, 0
	var opened []int
	for i, r := range res {
		if !r.HasOutcome {
			continue
		}
		if r.Outcome.Anomaly.Event == anomaly.Closed && len(opened) == 0 {
			t.Errorf("point %d closes an event none was told of", i)
		}
		if outcomes < AnomalyWarmup(cfg.IntervalWindow) && !math.IsNaN(r.Outcome.Anomaly.Score) {
			scored++
		}
		outcomes++
		if r.Outcome.Anomaly.Event == anomaly.Opened {
			opened = append(opened, i)
		}
	}
	if scored == 0 {
		t.Error("no outcome scored while warming")
	}
	if len(opened) == 0 || opened[0] != late {
		t.Fatalf("events opened at %v; want none before the series is warm, the first at the late outage's start %d", opened, late)
	}
	if s.Stats().Anomalies != uint64(len(opened)) {
		t.Errorf("Stats().Anomalies %d, want %d", s.Stats().Anomalies, len(opened))
	}

	// Warmth is restored with the interval's residuals.
	st, err := s.Export()
	if err != nil {
		t.Fatal(err)
	}
	r, err := Restore("test", cfg, st)
	if err != nil {
		t.Fatal(err)
	}
	if !r.anomalyWarm() {
		t.Error("a restored warm series is warming again")
	}
	if mustNew(t, cfg).anomalyWarm() {
		t.Error("a new series is warm")
	}
}
