package lab

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/forecastd/forecastd/lab/backtest"
	"github.com/forecastd/forecastd/pipeline"
	"github.com/forecastd/forecastd/runner"
)

// holdoutReport is one series of --holdout's report (an element of
// "series" in --json).
type holdoutReport struct {
	slot        int
	Series      string `json:"series"`
	File        string `json:"file"`
	Error       string `json:"error,omitempty"`
	Points      int    `json:"points"`
	Period      int    `json:"mase_period"`
	MASE        jfloat `json:"mase"`
	SMAPE       jfloat `json:"smape"`
	MSIS        jfloat `json:"msis"`
	Coverage    jfloat `json:"coverage"`
	SnaiveMASE  jfloat `json:"snaive_mase"`
	SnaiveSMAPE jfloat `json:"snaive_smape"`
	// Forecast, Lower, Upper and Actual are the held-out steps.
	Forecast []jfloat `json:"forecast,omitempty"`
	Lower    []jfloat `json:"lower,omitempty"`
	Upper    []jfloat `json:"upper,omitempty"`
	Actual   []jfloat `json:"actual,omitempty"`

	// rows are, with --plot, the training part's last points (without a
	// forecast) and the held-out steps, to draw.
	rows  []backtest.Row
	dates bool
}

// holdoutSummary is the mean of each score over the series scored (as the
// competitions average them), and how many series forecastd lost to
// seasonal naive by MASE.
type holdoutSummary struct {
	Series, Scored, Failed int
	Holdout                int     `json:"holdout"`
	Coverage               float64 `json:"coverage_nominal"`
	MASE                   jfloat  `json:"mase"`
	SMAPE                  jfloat  `json:"smape"`
	MSIS                   jfloat  `json:"msis"`
	Covered                jfloat  `json:"coverage"`
	SnaiveMASE             jfloat  `json:"snaive_mase"`
	SnaiveSMAPE            jfloat  `json:"snaive_smape"`
	WorseThanSnaive        int     `json:"worse_than_snaive"`
	Seconds                jfloat  `json:"seconds"`
}

// runHoldout is the backtest with --holdout: every series' last N points
// forecast from the point before them.
func runHoldout(o *backtestOptions, cfg pipeline.Config, files []string, start time.Time, stdout, stderr io.Writer) error {
	rules, err := o.ruleConfigs()
	if err != nil {
		return err
	}
	// The held-out points are one forecast's path: a horizon short of
	// them would fail every series, inside the table.
	if h := max(cfg.Horizon, 1); h < o.holdout {
		return usageError(fmt.Errorf("--holdout %d forecasts the %[1]d held-out points as one path: it needs --horizon %[1]d or more (the horizon is %d)\n%s", o.holdout, h, helpHint))
	}
	for i, r := range rules {
		if h := max(r.Config.Horizon, 1); h < o.holdout {
			return usageError(fmt.Errorf("--holdout %d forecasts the %[1]d held-out points as one path: [[rules]] %d (match %q) of --config has horizon %d; give it %[1]d or more, or pass --horizon %[1]d\n%[5]s", o.holdout, i, r.Match, h, helpHint))
		}
	}
	var mu sync.Mutex
	var reps []holdoutReport
	forEachSeries(o, files, func(u benchUnit) {
		r := holdoutSeries(o, cfg, rules, u)
		mu.Lock()
		reps = append(reps, r)
		mu.Unlock()
	})
	slices.SortFunc(reps, func(a, b holdoutReport) int { return a.slot - b.slot })
	if o.plot != "" {
		if len(reps) != 1 || reps[0].Error != "" {
			return usageError(fmt.Errorf("--plot with --holdout takes one series that can be scored (%d series given)\n%s", len(reps), helpHint))
		}
		r := reps[0]
		title := fmt.Sprintf("%s — the last %d points forecast from the one before them, %.0f %% interval (MASE %.3g, seasonal naive %.3g)",
			r.Series, o.holdout, 100*cfg.Coverage, float64(r.MASE), float64(r.SnaiveMASE))
		if err := o.plotter(o.plot, title, r.rows, r.dates); err != nil {
			return fmt.Errorf("plot: %w", err)
		}
	}
	sum := summarizeHoldout(o, cfg, reps)
	sum.Seconds = jfloat(time.Since(start).Seconds())
	if o.json {
		err = json.NewEncoder(stdout).Encode(struct {
			Series  []holdoutReport `json:"series"`
			Summary holdoutSummary  `json:"summary"`
		}{reps, sum})
	} else {
		err = writeHoldoutText(stdout, reps, sum)
	}
	if err != nil {
		return err
	}
	if sum.Scored == 0 {
		return fmt.Errorf("nothing scored in any of the %d series", sum.Series)
	}
	if sum.Failed > 0 {
		return fmt.Errorf("%d of %d series could not be scored (see error)", sum.Failed, sum.Series)
	}
	return nil
}

// forEachSeries loads every series of files and calls fn on each, up to
// o.jobs at once; a file that cannot be read is one unit with its error.
func forEachSeries(o *backtestOptions, files []string, fn func(benchUnit)) {
	units := make(chan benchUnit)
	go func() {
		defer close(units)
		slot := 0
		for _, f := range files {
			ss, err := o.load(f)
			if err != nil {
				units <- benchUnit{slot: slot, file: f, err: err}
				slot++
				continue
			}
			for _, in := range ss {
				units <- benchUnit{slot: slot, in: in, file: f}
				slot++
			}
		}
	}()
	var wg sync.WaitGroup
	for range o.jobs {
		wg.Go(func() {
			for u := range units {
				fn(u)
			}
		})
	}
	wg.Wait()
}

func holdoutSeries(o *backtestOptions, cfg pipeline.Config, rules []runner.Rule, u benchUnit) holdoutReport {
	r := holdoutReport{slot: u.slot, Series: u.file, File: u.file, MASE: jnan, SMAPE: jnan, MSIS: jnan, Coverage: jnan, SnaiveMASE: jnan, SnaiveSMAPE: jnan}
	if u.err != nil {
		r.Error = u.err.Error()
		return r
	}
	r.Series = u.in.label()
	c, err := u.in.atStep(configFor(u.in.label(), cfg, rules))
	if err != nil {
		r.Error = err.Error()
		return r
	}
	d := u.in.data.engineData()
	r.Points = len(d.Values)
	h, err := backtest.Holdout(r.Series, c, d, o.holdout, o.masePeriod)
	if err != nil {
		r.Error = err.Error()
		return r
	}
	r.Period, r.MASE, r.SMAPE, r.MSIS, r.Coverage = h.Period, h.MASE, h.SMAPE, h.MSIS, h.Covered
	r.SnaiveMASE, r.SnaiveSMAPE = h.SnaiveMASE, h.SnaiveSMAPE
	if o.plot != "" { // three horizons of context, at least a week's points
		for i := max(0, h.Train-max(3*h.H, 7*h.Period)); i < h.Train; i++ {
			r.rows = append(r.rows, backtest.Row{Index: i, Secs: d.Secs[i], Actual: d.Values[i], Forecast: math.NaN(), Lower: math.NaN(), Upper: math.NaN()})
		}
		for k := range h.H {
			i := h.Train + k
			r.rows = append(r.rows, backtest.Row{Index: i, Secs: d.Secs[i], Actual: h.Actual[k], Forecast: h.Forecast[k], Lower: h.Lower[k], Upper: h.Upper[k], Horizon: k + 1})
		}
		r.dates = u.in.data.hasTime && isEpoch(d.Secs)
	}
	for k := range h.H {
		r.Forecast = append(r.Forecast, jfloat(h.Forecast[k]))
		r.Lower = append(r.Lower, jfloat(h.Lower[k]))
		r.Upper = append(r.Upper, jfloat(h.Upper[k]))
		r.Actual = append(r.Actual, jfloat(h.Actual[k]))
	}
	return r
}

func summarizeHoldout(o *backtestOptions, cfg pipeline.Config, reps []holdoutReport) holdoutSummary {
	s := holdoutSummary{Series: len(reps), Holdout: o.holdout, Coverage: cfg.Coverage}
	var m, sm, ms, cv, sn, ssm float64
	nMSIS := 0
	for _, r := range reps {
		if r.Error != "" {
			s.Failed++
			continue
		}
		s.Scored++
		m += float64(r.MASE)
		sm += float64(r.SMAPE)
		sn += float64(r.SnaiveMASE)
		ssm += float64(r.SnaiveSMAPE)
		if !math.IsNaN(float64(r.MSIS)) {
			nMSIS++
			ms += float64(r.MSIS)
			cv += float64(r.Coverage)
		}
		if r.MASE > r.SnaiveMASE {
			s.WorseThanSnaive++
		}
	}
	n := float64(s.Scored)
	s.MASE, s.SMAPE, s.SnaiveMASE, s.SnaiveSMAPE = jfloat(m/n), jfloat(sm/n), jfloat(sn/n), jfloat(ssm/n)
	s.MSIS, s.Covered = jnan, jnan
	if nMSIS == s.Scored && nMSIS > 0 {
		s.MSIS, s.Covered = jfloat(ms/n), jfloat(cv/n)
	}
	return s
}

func writeHoldoutText(w io.Writer, reps []holdoutReport, s holdoutSummary) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%-48s %6s %8s %8s %8s %8s %11s %12s\n", "series", "points", "mase", "smape", "msis", "coverage", "snaive mase", "snaive smape")
	for _, r := range reps {
		name := r.Series
		if len(name) > 48 {
			name = "…" + name[len(name)-47:]
		}
		if r.Error != "" {
			fmt.Fprintf(&b, "%-48s error: %s\n", name, r.Error)
			continue
		}
		fmt.Fprintf(&b, "%-48s %6d %8.4g %8.4g %8.4g %8.4g %11.4g %12.4g\n", name, r.Points, float64(r.MASE), float64(r.SMAPE),
			float64(r.MSIS), float64(r.Coverage), float64(r.SnaiveMASE), float64(r.SnaiveSMAPE))
	}
	fmt.Fprintf(&b, "\nholdout %d: %d series scored of %d (means over series)\n", s.Holdout, s.Scored, s.Series)
	fmt.Fprintf(&b, "  forecastd:      MASE %.4g  sMAPE %.4g  MSIS %.4g  coverage %.4g (nominal %.4g)\n",
		float64(s.MASE), float64(s.SMAPE), float64(s.MSIS), float64(s.Covered), s.Coverage)
	fmt.Fprintf(&b, "  seasonal naive: MASE %.4g  sMAPE %.4g\n", float64(s.SnaiveMASE), float64(s.SnaiveSMAPE))
	fmt.Fprintf(&b, "  worse than seasonal naive (MASE) on %d of %d series; %.1f s\n", s.WorseThanSnaive, s.Scored, float64(s.Seconds))
	_, err := io.WriteString(w, b.String())
	return err
}
