package plot

import (
	"strings"
	"testing"

	"github.com/forecastd/forecastd/lab/backtest"
)

// TestPlotStyle: the legend gets room above the data instead of covering
// it, every panel labels its ticks alike (no "175.00" beside "200"), and
// the SVG's fonts fall back to a generic family.
func TestPlotStyle(t *testing.T) {
	rows := make([]backtest.Row, 200)
	for i := range rows {
		v := 25 + 150*float64(i%20)/19
		rows[i] = backtest.Row{Index: i, Secs: float64(i), Actual: v, Forecast: v, Lower: v - 1, Upper: v + 1, Horizon: 1}
	}
	p, err := panel("t", rows, false)
	if err != nil {
		t.Fatal(err)
	}
	if top := 176.0 + 0.2*(176-24); p.Y.Max < top {
		t.Errorf("y axis ends at %v: no room for the legend above the data (want ≥ %v)", p.Y.Max, top)
	}
	for _, tk := range (ticks{}).Ticks(25, 175) {
		if strings.HasSuffix(tk.Label, ".00") || strings.HasSuffix(tk.Label, ".0") {
			t.Errorf("tick label %q", tk.Label)
		}
	}
	got := string(svgFontFallback([]byte(`<text style="font-family:Liberation Serif;font-size:12px">`)))
	if !strings.Contains(got, `font-family:'Liberation Serif',serif;`) {
		t.Errorf("font fallback: %s", got)
	}
}
