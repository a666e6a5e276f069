package lab

import (
	"strings"
	"testing"
)

// TestBacktestPlotTitle: the title says which forecasts the plot draws:
// one step ahead, or with --horizon H, H steps ahead (never "one-step").
func TestBacktestPlotTitle(t *testing.T) {
	for _, tc := range []struct {
		h          int
		want, miss string
	}{
		{1, "one-step forecasts", "steps ahead"},
		{12, "forecasts 12 steps ahead (horizon 12)", "one-step"},
	} {
		got := plotTitle("cpu", "aosvr", 0.9, tc.h)
		if !strings.Contains(got, tc.want) || strings.Contains(got, tc.miss) || !strings.Contains(got, "90 % interval") {
			t.Errorf("horizon %d: title %q, want %q", tc.h, got, tc.want)
		}
	}
}
