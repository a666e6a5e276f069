package plot

import (
	"testing"

	"github.com/forecastd/forecastd/lab/backtest"
)

// TestPlotWarmupBandClipped: a CPU percentage whose first intervals reach
// ±7000 while the model warms up is drawn on an axis scaled from its
// values (within half their range beyond them, plus the legend's room),
// not flattened by the warm-up band.
func TestPlotWarmupBandClipped(t *testing.T) {
	rows := make([]backtest.Row, 400)
	for i := range rows {
		v := 20 + 60*float64(i%40)/39
		w := 2.0
		if i < 30 {
			w = 7000
		}
		rows[i] = backtest.Row{Index: i, Secs: float64(i), Actual: v, Forecast: v, Lower: v - w, Upper: v + w, Horizon: 1}
	}
	p, err := panel("t", rows, false)
	if err != nil {
		t.Fatal(err)
	}
	if p.Y.Min < 20-30 || p.Y.Min > 20-2 || p.Y.Max > (80+30)+0.3*(110+10) || p.Y.Max < 80+2 {
		t.Errorf("y axis [%v, %v]; want it from the values [20, 80], at most 30 beyond", p.Y.Min, p.Y.Max)
	}
	// A narrow run is not widened: the axis holds the data.
	p, err = panel("t", rows[100:], false)
	if err != nil {
		t.Fatal(err)
	}
	if p.Y.Min > 18 || p.Y.Min < 18-1e-9 {
		t.Errorf("y axis from %v; want the lowest bound, 18", p.Y.Min)
	}
}

// TestPlotSummaryWarmupClipped: the summary of a long run (mean error and
// interval half-width per bucket) takes its y axis from the buckets after
// the warm-up, not from the warm-up's half-width of 7000.
func TestPlotSummaryWarmupClipped(t *testing.T) {
	rows := make([]backtest.Row, 3*maxPlotPoints)
	for i := range rows {
		v := 20 + 60*float64(i%40)/39
		w := 2.0
		if i < 100 {
			w = 7000
		}
		rows[i] = backtest.Row{Index: i, Secs: float64(i), Actual: v, Forecast: v + 1, Lower: v - w, Upper: v + w, Horizon: 1}
	}
	p, err := errorPanel("t", rows, false)
	if err != nil {
		t.Fatal(err)
	}
	if p.Y.Max > 10 || p.Y.Max < 2 {
		t.Errorf("y axis up to %v; want it from the half-width 2 after the warm-up", p.Y.Max)
	}
}
