package main

import (
	"math"
	"strconv"
	"testing"

	"github.com/forecastd/forecastd/anomaly"
	"github.com/forecastd/forecastd/pipeline"
)

// checkAnomalyColumns checks a --out row's anomaly columns against its
// forecast: the score is anomaly.Score of the row (empty without an
// interval), and a point where the detector fired (anomaly 1) is outside
// by the default threshold, or else (an extreme: a new all-time high or
// low) beyond every actual of the rows before it, prev.
func checkAnomalyColumns(t *testing.T, r []string, o outRow, prev []outRow) {
	t.Helper()
	if !o.hasInterval {
		if r[6] != "" || r[7] != "0" {
			t.Fatalf("row %v: anomaly columns without an interval", r)
		}
		return
	}
	s, err := strconv.ParseFloat(r[6], 64)
	if err != nil {
		t.Fatalf("row %v: anomaly_score: %v", r, err)
	}
	if want := anomaly.Score(o.actual, o.forecast, o.lower, o.upper); math.Abs(s-want) > 1e-9*math.Max(1, want) {
		t.Fatalf("row %v: anomaly_score %v, want %v", r, s, want)
	}
	switch r[7] {
	case "0":
	case "1":
		if s > pipeline.DefaultAnomalyThreshold {
			break
		}
		high, low := true, true
		for _, p := range prev {
			high = high && o.actual > p.actual
			low = low && o.actual < p.actual
		}
		if !high && !low {
			t.Fatalf("row %v: fired at score %v ≤ %v, and not at a new high or low", r, s, pipeline.DefaultAnomalyThreshold)
		}
	default:
		t.Fatalf("row %v: anomaly %q, want 0 or 1", r, r[7])
	}
}
