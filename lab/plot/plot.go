package plot

import (
	"bytes"
	"fmt"
	"image/color"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"gonum.org/v1/plot"

	"github.com/forecastd/forecastd/lab/backtest"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// Plot colours: the Okabe–Ito palette, readable by colour-blind viewers.
var (
	colActual   = color.NRGBA{R: 40, G: 40, B: 40, A: 255}
	colForecast = color.NRGBA{R: 213, G: 94, B: 0, A: 255}
	colBand     = color.NRGBA{R: 86, G: 180, B: 233, A: 120}
)

const (
	maxPlotPoints = 6000 // longer runs are summarised per bucket
	buckets       = 500  // of the summary
	zoomPoints    = 300  // the detail panel shows the last this many
	// plotWarmup is the forecasts of a run's start whose errors and
	// intervals do not set the summary's y axis: a model warming up, its
	// interval on few residuals (pipeline.DefaultIntervalWindow).
	plotWarmup = 200
)

// Write draws actual values, forecasts and the interval band of the
// scored rows to path (SVG or PNG by extension). A run of up to 6000
// forecasts is drawn whole; a longer one, whose every point could not be
// told apart, is summarised by its mean absolute error and mean interval
// half-width per bucket. A run longer than 600 forecasts gets a second
// panel with its last 300.
func Write(path, title string, rows []backtest.Row, dates bool) error {
	if len(rows) == 0 {
		return fmt.Errorf("no scored forecasts to plot")
	}
	var over *plot.Plot
	var err error
	if len(rows) <= maxPlotPoints {
		over, err = panel(title, rows, dates)
	} else {
		over, err = errorPanel(title, rows, dates)
	}
	if err != nil {
		return err
	}
	plots := [][]*plot.Plot{{over}}
	height := 4.5 * vg.Inch
	if len(rows) > 2*zoomPoints {
		detail, err := panel(fmt.Sprintf("last %d forecasts", zoomPoints), rows[len(rows)-zoomPoints:], dates)
		if err != nil {
			return err
		}
		plots = append(plots, []*plot.Plot{detail})
		height = 8 * vg.Inch
	}
	width := 11 * vg.Inch

	var c interface {
		vg.CanvasSizer
		io.WriterTo
	}
	switch strings.ToLower(filepath.Ext(path)) {
	case ".png":
		c = vgimg.PngCanvas{Canvas: vgimg.NewWith(vgimg.UseWH(width, height), vgimg.UseDPI(110))}
	case ".svg":
		c = vgsvg.New(width, height)
	default:
		return fmt.Errorf("%s: want a .svg or .png file", path)
	}
	dc := draw.New(c)
	tiles := draw.Tiles{Rows: len(plots), Cols: 1, PadTop: vg.Points(6), PadBottom: vg.Points(6), PadLeft: vg.Points(6), PadRight: vg.Points(12), PadY: vg.Points(18)}
	canvases := plot.Align(plots, tiles, dc)
	for i := range plots {
		plots[i][0].Draw(canvases[i][0])
	}
	var buf bytes.Buffer
	if _, err := c.WriteTo(&buf); err != nil {
		return err
	}
	out := buf.Bytes()
	if _, ok := c.(*vgsvg.Canvas); ok {
		out = svgFontFallback(out)
	}
	return os.WriteFile(path, out, 0o644)
}

// svgFontFallback gives every font the SVG names a fallback list, so that a
// viewer without gonum's Liberation fonts draws the text in a close font
// instead of its default.
func svgFontFallback(svg []byte) []byte {
	return fontFamily.ReplaceAllFunc(svg, func(m []byte) []byte {
		name := strings.TrimSpace(strings.TrimPrefix(string(m), "font-family:"))
		generic := "sans-serif"
		if strings.Contains(name, "Serif") && !strings.Contains(name, "Sans") {
			generic = "serif"
		}
		return []byte(fmt.Sprintf("font-family:'%s',%s", name, generic))
	})
}

var fontFamily = regexp.MustCompile(`font-family:[^;"']+`)

// ticks are gonum's default ticks labelled alike on every panel: the
// shortest form of each value (6 significant digits at most), so that one
// panel does not say "200" where the next says "175.00".
type ticks struct{}

func (ticks) Ticks(lo, hi float64) []plot.Tick {
	ts := plot.DefaultTicks{}.Ticks(lo, hi)
	for i := range ts {
		if ts[i].Label != "" {
			ts[i].Label = strconv.FormatFloat(ts[i].Value, 'g', 6, 64)
		}
	}
	return ts
}

// newPlot returns a plot with a grid and an x axis of dates or indices.
func newPlot(title, ylabel string, dates bool) (*plot.Plot, func(backtest.Row) float64) {
	p := plot.New()
	p.Title.Text = title
	p.Y.Label.Text = ylabel
	p.Legend.Top = true
	p.Legend.Left = true
	p.Legend.Padding = vg.Points(3)
	p.Add(plotter.NewGrid())
	p.Y.Tick.Marker = ticks{}
	if dates {
		p.X.Label.Text = "time (UTC)"
		p.X.Tick.Marker = plot.TimeTicks{Format: "2006-01-02\n15:04"}
		return p, func(r backtest.Row) float64 { return r.Secs }
	}
	p.X.Label.Text = "index"
	return p, func(r backtest.Row) float64 { return float64(r.Index) }
}

// errorPanel plots, per bucket of consecutive rows, the mean absolute error
// and the mean half-width of the intervals.
func errorPanel(title string, rows []backtest.Row, dates bool) (*plot.Plot, error) {
	size := (len(rows) + buckets - 1) / buckets
	p, x := newPlot(fmt.Sprintf("%s\nmean |actual − forecast| and interval half-width per %d forecasts", title, size), "value units", dates)
	var ae, hw plotter.XYs
	top := 0.0 // the highest value after the warm-up's buckets
	for i := 0; i < len(rows); i += size {
		b := rows[i:min(i+size, len(rows))]
		var se, sw float64
		var nw int
		for _, r := range b {
			se += math.Abs(r.Actual - r.Forecast)
			if !math.IsNaN(r.Lower) {
				sw += (r.Upper - r.Lower) / 2
				nw++
			}
		}
		mid := x(b[len(b)/2])
		ae = append(ae, plotter.XY{X: mid, Y: se / float64(len(b))})
		if nw > 0 {
			hw = append(hw, plotter.XY{X: mid, Y: sw / float64(nw)})
		}
		if i >= plotWarmup {
			top = math.Max(top, se/float64(len(b)))
			if nw > 0 {
				top = math.Max(top, sw/float64(nw))
			}
		}
	}
	le, err := plotter.NewLine(ae)
	if err != nil {
		return nil, err
	}
	le.Color = colForecast
	le.Width = vg.Points(1.2)
	p.Add(le)
	p.Legend.Add("mean |error|", le)
	if len(hw) > 0 {
		lw, err := plotter.NewLine(hw)
		if err != nil {
			return nil, err
		}
		lw.Color = color.NRGBA{R: 0, G: 114, B: 178, A: 255}
		lw.Width = vg.Points(1.2)
		p.Add(lw)
		p.Legend.Add("interval half-width", lw)
	}
	p.Y.Min = 0
	if top > 0 {
		p.Y.Max = math.Min(p.Y.Max, 1.1*top) // the warm-up's wide intervals clipped
	}
	legendRoom(p, 2)
	return p, nil
}

// panel plots the rows' actual values, forecasts and interval band.
func panel(title string, rows []backtest.Row, dates bool) (*plot.Plot, error) {
	p, x := newPlot(title, "value", dates)
	step := 1

	var actual, forecast plotter.XYs
	var band []plotter.XYs // one polygon per run of rows with an interval
	var lo, hi plotter.XYs
	flush := func() {
		if len(lo) > 1 {
			poly := append(plotter.XYs{}, lo...)
			for j := len(hi) - 1; j >= 0; j-- {
				poly = append(poly, hi[j])
			}
			band = append(band, poly)
		}
		lo, hi = lo[:0], hi[:0]
	}
	for i := 0; i < len(rows); i += step {
		r := rows[i]
		actual = append(actual, plotter.XY{X: x(r), Y: r.Actual})
		if math.IsNaN(r.Forecast) { // context before the forecasts (--holdout)
			continue
		}
		forecast = append(forecast, plotter.XY{X: x(r), Y: r.Forecast})
		if math.IsNaN(r.Lower) {
			flush()
			continue
		}
		lo = append(lo, plotter.XY{X: x(r), Y: r.Lower})
		hi = append(hi, plotter.XY{X: x(r), Y: r.Upper})
	}
	flush()

	var bandLegend *plotter.Polygon
	for _, b := range band {
		poly, err := plotter.NewPolygon(b)
		if err != nil {
			return nil, err
		}
		poly.Color = colBand
		poly.LineStyle.Width = 0
		p.Add(poly)
		bandLegend = poly
	}
	la, err := plotter.NewLine(actual)
	if err != nil {
		return nil, err
	}
	la.Color = colActual
	la.Width = vg.Points(1)
	lf, err := plotter.NewLine(forecast)
	if err != nil {
		return nil, err
	}
	lf.Color = colForecast
	lf.Width = vg.Points(1)
	lf.Dashes = nil
	p.Add(la, lf)
	p.Legend.Add("actual", la)
	p.Legend.Add("forecast", lf)
	if bandLegend != nil {
		p.Legend.Add("prediction interval", bandLegend)
	}
	p.Y.Min, p.Y.Max = yRange(rows, p.Y.Min, p.Y.Max)
	legendRoom(p, 3)
	return p, nil
}

// yRange returns the y axis of a panel of rows whose data span [lo, hi]:
// the span, but no more than the actual values' range widened by half of
// it on each side, so that the wide intervals (±7000 on a CPU percentage)
// and wild forecasts of a model still warming up do not flatten the rest;
// what lies beyond is clipped at the panel's edge.
func yRange(rows []backtest.Row, lo, hi float64) (float64, float64) {
	aLo, aHi := math.Inf(1), math.Inf(-1)
	for _, r := range rows {
		if !math.IsNaN(r.Actual) && !math.IsInf(r.Actual, 0) {
			aLo, aHi = math.Min(aLo, r.Actual), math.Max(aHi, r.Actual)
		}
	}
	if aLo > aHi {
		return lo, hi
	}
	m := (aHi - aLo) / 2
	if m == 0 {
		m = math.Max(1, math.Abs(aHi)/10)
	}
	return math.Max(lo, aLo-m), math.Min(hi, aHi+m)
}

// legendRoom raises the top of p's y axis so that the legend of n entries,
// drawn in the top left corner, sits above the data instead of over it.
func legendRoom(p *plot.Plot, n int) {
	if r := p.Y.Max - p.Y.Min; r > 0 {
		p.Y.Max += r * 0.07 * float64(n+1)
	}
}
