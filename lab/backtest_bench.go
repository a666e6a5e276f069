package lab

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/forecastd/forecastd/lab/backtest"
	"github.com/forecastd/forecastd/pipeline"
)

// The states of a series in the per-series report.
const (
	statusScored    = backtest.StatusScored
	statusNotScored = backtest.StatusNotScored
	statusError     = backtest.StatusError
)

type (
	seriesReport = backtest.SeriesReport
	ratioSummary = backtest.RatioSummary
	benchSummary = backtest.BenchSummary
)

// benchReport is the --json object of the per-series report.
type benchReport struct {
	Series  []seriesReport `json:"series"`
	Summary benchSummary   `json:"summary"`
}

// benchUnit is a series to run, or a file that could not be read.
type benchUnit struct {
	slot int
	in   *loaded
	file string
	err  error
}

// runBench backtests every series of files, each with its own pipeline,
// over o.jobs goroutines, and prints the per-series report in input order.
// Files are read one at a time, as the workers take their series, so at
// most about o.jobs series are held at once (all of a line-protocol file's).
func runBench(o *backtestOptions, cfg pipeline.Config, files []string, start time.Time, stdout, stderr io.Writer) error {
	rules, err := o.ruleConfigs()
	if err != nil {
		return err
	}
	var mu sync.Mutex
	var reps []seriesReport
	lastReport := time.Now()
	forEachSeries(o, files, func(u benchUnit) {
		c := cfg
		if u.in != nil {
			c = configFor(u.in.label(), cfg, rules)
		}
		r := benchSeries(o, c, u)
		mu.Lock()
		defer mu.Unlock()
		reps = append(reps, r)
		if o.progress > 0 && time.Since(lastReport) >= o.progress {
			lastReport = time.Now()
			fmt.Fprintf(stderr, "backtest: %d series done, %.1f s\n", len(reps), time.Since(start).Seconds())
		}
	})
	slices.SortFunc(reps, func(a, b seriesReport) int { return a.Slot - b.Slot })

	rep := benchReport{Series: reps, Summary: backtest.SummarizeBench(o.engineOptions(), cfg, reps)}
	rep.Summary.Seconds = jfloat(time.Since(start).Seconds())
	if o.json {
		err = json.NewEncoder(stdout).Encode(rep)
	} else {
		err = writeBenchText(stdout, o, rep)
	}
	if err != nil {
		return err
	}
	sum := rep.Summary
	var errs []error
	if sum.SeriesFailed > 0 {
		errs = append(errs, fmt.Errorf("%d of %d series failed (status error)", sum.SeriesFailed, sum.Series))
	}
	if sum.SeriesScored == 0 {
		errs = append(errs, fmt.Errorf("nothing scored in any of the %d series", sum.Series))
	}
	return errors.Join(errs...)
}

// benchSeries runs one series and scores it and its baselines.
func benchSeries(o *backtestOptions, cfg pipeline.Config, u benchUnit) seriesReport {
	if u.err != nil {
		r := backtest.NewReport(u.slot, u.file, u.file)
		r.Reason = u.err.Error()
		return r
	}
	cfg, err := u.in.atStep(cfg)
	if err != nil {
		r := backtest.NewReport(u.slot, u.in.label(), u.file)
		r.Reason = err.Error()
		return r
	}
	return backtest.Score(u.slot, u.in.label(), u.file, cfg, u.in.data.engineData(), u.in.data.skipped, o.engineOptions())
}

var jnan = backtest.NaN

// ratio formats a ratio, "n/a" when undefined.
func ratio(x jfloat) string {
	v := float64(x)
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "n/a"
	}
	return fmt.Sprintf("%.3f", v)
}

// writeBenchText writes the per-series report as a table and a summary.
func writeBenchText(w io.Writer, o *backtestOptions, rep benchReport) error {
	width := len("series")
	for _, r := range rep.Series {
		width = max(width, utf8.RuneCountInString(r.Series))
	}
	pad := func(s string) string { return s + strings.Repeat(" ", width-utf8.RuneCountInString(s)) }
	var b strings.Builder
	fmt.Fprintf(&b, "%s  %8s  %8s  %15s  %18s  %7s  %8s  %8s\n", pad("series"), "points", "scored",
		"MAE/persistence", "MAE/seasonal-naive", "MAE/SES", "coverage", "µs/point")
	for _, r := range rep.Series {
		switch r.Status {
		case statusScored:
			fmt.Fprintf(&b, "%s  %8d  %8d  %15s  %18s  %7s  %8s  %8.1f\n", pad(r.Series), r.Points, r.Scored,
				ratio(r.MAEvsPersistence), ratio(r.MAEvsSnaive), ratio(r.MAEvsSES), ratio(r.Coverage), float64(r.UsPerPoint))
		case statusNotScored:
			fmt.Fprintf(&b, "%s  %8d  %8d  not scored: %s\n", pad(r.Series), r.Points, 0, r.Reason)
		default:
			fmt.Fprintf(&b, "%s  error: %s\n", pad(r.Series), r.Reason)
		}
	}
	s := rep.Summary
	from := "every forecast"
	switch {
	case o.scoreFrom > 0 && o.train > 0:
		from = fmt.Sprintf("from point max(%d, ⌊%g·N⌋)", o.train, o.scoreFrom)
	case o.scoreFrom > 0:
		from = fmt.Sprintf("from point ⌊%g·N⌋", o.scoreFrom)
	case o.train > 0:
		from = fmt.Sprintf("from point %d", o.train)
	}
	fmt.Fprintf(&b, "%s: %d of %d series scored", s.Model, s.SeriesScored, s.Series)
	if s.SeriesNotScored > 0 || s.SeriesFailed > 0 {
		fmt.Fprintf(&b, " (%d not scored, %d failed)", s.SeriesNotScored, s.SeriesFailed)
	}
	fmt.Fprintf(&b, ", %d of their %d points, scored %s\n", s.Scored, s.Points, from)
	for _, c := range []struct {
		name, base string
		r          ratioSummary
	}{
		{"MAE/persistence", "persistence", s.MAEvsPersistence},
		{"MAE/seasonal-naive", "seasonal naive", s.MAEvsSnaive},
		{"MAE/SES", "SES", s.MAEvsSES},
	} {
		if c.r.Series == 0 {
			fmt.Fprintf(&b, "  %-18s  n/a on every series\n", c.name)
			continue
		}
		fmt.Fprintf(&b, "  %-18s  geo-mean %s over %d series; %d worse than %s, worst %s (%s)\n",
			c.name, ratio(c.r.GeoMean), c.r.Series, c.r.Worse, c.base, ratio(c.r.Worst), c.r.WorstSeries)
	}
	if s.SnaiveEarly > 0 {
		fmt.Fprintf(&b, "  seasonal naive n/a on %d series scored from within their first day (try --score_from 0.5)\n", s.SnaiveEarly)
	}
	fmt.Fprintf(&b, "  coverage min %s max %s (nominal %.4g); %.1f µs per point; %.1f s\n",
		ratio(s.CoverageMin), ratio(s.CoverageMax), float64(s.CoverageNominal), float64(s.UsPerPoint), float64(s.Seconds))
	if s.Horizon > 1 {
		writeStepTable(&b, s)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeStepTable writes the summary's scores at each step of the path.
func writeStepTable(b *strings.Builder, s benchSummary) {
	fmt.Fprintf(b, "  by step (geo-mean over the series; coverage pooled, and its range over the series):\n")
	fmt.Fprintf(b, "  %4s  %15s  %6s  %18s  %6s  %8s  %15s\n", "step", "MAE/persistence", "worse", "MAE/seasonal-naive", "worse", "coverage", "min–max")
	for h := range s.Horizon {
		p, n := s.MAEvsPersistenceByHorizon[h], s.MAEvsSnaiveByHorizon[h]
		fmt.Fprintf(b, "  %4d  %15s  %6s  %18s  %6s  %8s  %15s\n", h+1, ratio(p.GeoMean), fmt.Sprintf("%d/%d", p.Worse, p.Series),
			ratio(n.GeoMean), fmt.Sprintf("%d/%d", n.Worse, n.Series), ratio(s.CoverageByHorizon[h]),
			ratio(s.CoverageMinByHorizon[h])+"–"+ratio(s.CoverageMaxByHorizon[h]))
	}
}
