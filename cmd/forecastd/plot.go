package main

import (
	"fmt"
	"image/color"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"

	"gonum.org/v1/plot"
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
	maxPlotPoints = 4000 // the overview panel is decimated to this
	zoomPoints    = 300  // the detail panel shows the last this many
)

// writePlot draws actual values, forecasts and the interval band of the
// scored rows to path (SVG or PNG by extension): an overview of the whole
// run and, when it is long, a detail panel of its last 300 forecasts.
func writePlot(path, title string, rows []row, dates bool) error {
	if len(rows) == 0 {
		return fmt.Errorf("no scored forecasts to plot")
	}
	step := (len(rows) + maxPlotPoints - 1) / maxPlotPoints
	over, err := panel(title, rows, step, dates)
	if err != nil {
		return err
	}
	plots := [][]*plot.Plot{{over}}
	height := 4.5 * vg.Inch
	if len(rows) > 2*zoomPoints {
		detail, err := panel(fmt.Sprintf("last %d forecasts", zoomPoints), rows[len(rows)-zoomPoints:], 1, dates)
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
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := c.WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// panel plots rows[::step].
func panel(title string, rows []row, step int, dates bool) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = title
	p.Y.Label.Text = "value"
	if dates {
		p.X.Label.Text = "time (UTC)"
		p.X.Tick.Marker = plot.TimeTicks{Format: "2006-01-02\n15:04"}
	} else {
		p.X.Label.Text = "index"
	}
	p.Add(plotter.NewGrid())
	x := func(r row) float64 {
		if dates {
			return r.secs
		}
		return float64(r.index)
	}

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
		actual = append(actual, plotter.XY{X: x(r), Y: r.actual})
		forecast = append(forecast, plotter.XY{X: x(r), Y: r.forecast})
		if math.IsNaN(r.lower) {
			flush()
			continue
		}
		lo = append(lo, plotter.XY{X: x(r), Y: r.lower})
		hi = append(hi, plotter.XY{X: x(r), Y: r.upper})
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
	p.Legend.Top = true
	p.Legend.Left = true
	p.Legend.Padding = vg.Points(3)
	return p, nil
}
