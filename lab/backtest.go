package lab

import (
	"bufio"
	"encoding/csv"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/forecastd/forecastd/internal/cmdline"
	"github.com/forecastd/forecastd/internal/keyglob"
	"github.com/forecastd/forecastd/lab/backtest"
	"github.com/forecastd/forecastd/pipeline"
	"github.com/forecastd/forecastd/runner"
	"github.com/forecastd/forecastd/sources"
)

// progressEvery is the least time between two progress lines on stderr.
var progressEvery = time.Second

// backtestOptions are the backtest's command line.
type backtestOptions struct {
	inputs     []string // FILE and DIR arguments, in order
	column     string
	timeColumn string // "" reads "time", "timestamp" or "t"
	format     string // auto (by extension), csv or influx
	config     string
	model      ModelFlags // the [model] keys given as flags
	train      int
	scoreFrom  float64 // score points from index ⌊scoreFrom·N⌋ on
	freeze     bool
	out        string
	plot       string
	plotter    Plotter // draws --plot
	json       bool
	bench      bool // the per-series report even for one series
	jobs       int  // series run at once
	skipBad    bool
	progress   time.Duration // least time between two progress lines on stderr
	holdout    int           // forecast the last N points from the point before them
	masePeriod int           // MASE's seasonal period with --holdout; 0: a day of points
	influx     influxOptions // --influx_url: the series from InfluxDB (backtest_history.go)
}

const backtestUsage = `usage: forecastd backtest [flags] FILE|DIR...
       forecastd backtest [flags] --influx_url URL --series KEY [--lookback 14d]

Replays recorded series through the forecasting pipeline the daemon runs:
the forecast for point i is made from points 0…i−1 only. Flags override
--config's [model], each named as its key (--model sets kind, one of the
kinds registered in pipeline, listed at --model below).
A point whose time is not after the previous one's is dropped (counted as
"dropped").

A FILE is a CSV file with a header row (one series: --column, and a
"time", "timestamp" or "t" column or --time_column), or, ending in .lp or
.influx (or with --format influx), InfluxDB line protocol as Telegraf's
file output writes it: every numeric field of every line is a point of the
series "measurement,tag=v,… field". A DIR is searched recursively for
*.csv, *.lp and *.influx files, in sorted order.

With --influx_url, the one series --series is read from InfluxDB instead
(InfluxQL on /query), --lookback before --end, at the configuration's
step aggregated by the server: the query the daemon's [history] makes.

One series prints the summary of its run. Several series (or --bench)
print one row per series (its MAE relative to persistence, seasonal naive
and simple exponential smoothing, computed on the same points, interval
coverage, µs per point) and a summary over the series. Points before
--train N, or before ⌊F·N⌋ with --score_from F, are learned but not
scored. Exit status 1 if nothing at all could be scored.

flags:
`

// helpHint ends a usage error: the full usage is only printed by -h.
const helpHint = `run "forecastd backtest -h" for the flags`

func parseBacktestFlags(args []string, stderr io.Writer, env Env) (*backtestOptions, error) {
	o := &backtestOptions{progress: progressEvery, plotter: env.Plot}
	fs := flag.NewFlagSet("backtest", flag.ContinueOnError)
	// The flag package prints its errors and the usage to Output; usage
	// errors are returned (one line and a hint instead), and the usage is
	// printed for -h below.
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	fs.StringVar(&o.column, "column", "value", "CSV value column `NAME`")
	fs.StringVar(&o.timeColumn, "time_column", "", "CSV time column `NAME` (default: \"time\", else \"timestamp\", else \"t\"; none: time is the row index)")
	fs.StringVar(&o.format, "format", "auto", "input `FORMAT`: csv, influx (line protocol), or auto: influx for *.lp and *.influx, else csv")
	fs.StringVar(&o.config, "config", "", "take [model] settings from a daemon config `FILE`; flags override it")
	fs.IntVar(&o.train, "train", 0, "the first `N` points are learned but not scored")
	fs.Float64Var(&o.scoreFrom, "score_from", 0, "score only points from index ⌊`F`·N⌋ on, N the series' points, 0 ≤ F < 1 (0.5: the second half)")
	fs.BoolVar(&o.freeze, "freeze", false, "stop learning after the first --train points (the paper's fixed predictor)")
	fs.StringVar(&o.out, "out", "", "write one row per scored forecast to `FILE.csv`: index,time,actual,forecast,lower,upper,anomaly_score,anomaly (one series only)")
	fs.StringVar(&o.plot, "plot", "", "plot actual, forecast and interval band to `FILE.svg|png` (one series only; with --horizon H, the forecasts H steps ahead; with --holdout, the held-out forecast after the training part's last points)")
	fs.BoolVar(&o.json, "json", false, "print one JSON object on stdout")
	fs.BoolVar(&o.bench, "bench", false, "print the per-series report with baselines and summary even for one series")
	fs.IntVar(&o.jobs, "jobs", runtime.GOMAXPROCS(0), "run up to `N` series at once")
	fs.BoolVar(&o.skipBad, "skip_bad", false, "skip and count unparsable rows (lines) instead of failing")
	fs.IntVar(&o.holdout, "holdout", 0, "forecast the last `N` points of each series from the point before them (nothing of them seen) and score MASE, sMAPE, MSIS and coverage beside seasonal naive's, as forecasting competitions do; needs --horizon ≥ N")
	fs.IntVar(&o.masePeriod, "mase_period", 0, "with --holdout, the seasonal period `M` (points) of MASE's scale and of seasonal naive (default: the points in a day, else 1)")
	o.model = env.Models.AddFlags(fs)
	addInfluxFlags(fs, &o.influx)
	cmdline.DashAliases(fs, "time_column", "score_from", "skip_bad", "mase_period")
	hint := func(err error) error { return usageError(fmt.Errorf("%w\n%s", err, helpHint)) }
	inputs, err := cmdline.ParseOperands(fs, args, "backtest", backtestUsage, stderr)
	if err != nil {
		return nil, err
	}
	o.inputs = inputs
	if err := o.influx.check(inputs); err != nil {
		return nil, hint(err)
	}
	if len(o.inputs) == 0 && o.influx.url == "" {
		return nil, hint(errors.New("no FILE or DIR given"))
	}
	if o.train < 0 {
		return nil, hint(fmt.Errorf("--train must not be negative, got %d", o.train))
	}
	if !(o.scoreFrom >= 0 && o.scoreFrom < 1) {
		return nil, hint(fmt.Errorf("--score_from %v: want a fraction of the series in [0, 1)", o.scoreFrom))
	}
	if o.freeze && o.train == 0 {
		return nil, hint(errors.New("--freeze needs --train N > 0: the points learned before freezing"))
	}
	if o.holdout < 0 || o.masePeriod < 0 {
		return nil, hint(fmt.Errorf("--holdout and --mase_period must not be negative, got %d and %d", o.holdout, o.masePeriod))
	}
	if o.holdout > 0 && (o.out != "" || o.train > 0 || o.scoreFrom > 0 || o.freeze) {
		return nil, hint(errors.New("--holdout scores the last points only: it takes none of --out, --train, --score_from, --freeze"))
	}
	if o.jobs < 1 {
		return nil, hint(fmt.Errorf("--jobs %d: want at least 1", o.jobs))
	}
	switch o.format {
	case "auto", "csv", "influx":
	default:
		return nil, hint(fmt.Errorf("--format %q: want auto, csv or influx", o.format))
	}
	if o.plot != "" {
		if ext := strings.ToLower(filepath.Ext(o.plot)); ext != ".svg" && ext != ".png" {
			return nil, hint(fmt.Errorf("--plot %q: want a .svg or .png file", o.plot))
		}
		if o.plotter == nil {
			return nil, hint(fmt.Errorf("--plot: this forecastd draws no plots; %s", env.PlotHint))
		}
	}
	return o, nil
}

// ruleConfigs returns, with --config, its [[rules]], each with [model],
// the rule and the flags merged in that order (the flags win), so that a
// backtest over many series configures each as the daemon would.
func (o *backtestOptions) ruleConfigs() ([]runner.Rule, error) { return o.model.Rules(o.config) }

// configFor returns the configuration of the series key: the first rule
// whose glob matches it, else def. The globs were checked by ruleConfigs
// (keyglob's only error is a bad pattern).
func configFor(key string, def pipeline.Config, rules []runner.Rule) pipeline.Config {
	for _, r := range rules {
		if g, err := keyglob.Compile(r.Match); err == nil && g.Match(key) {
			return r.Config
		}
	}
	return def
}

// resampled returns cfg for points the backtest has already aggregated
// into its buckets (backtestOptions.load): spaced by the step, which
// dates the forecasts, and not bucketed again. The series then computes
// exactly what the daemon's computes from the same buckets.
func resampled(cfg pipeline.Config) pipeline.Config {
	if cfg.Step > 0 {
		cfg.Interval, cfg.Step = cfg.Step, 0
	}
	return cfg
}

// modelConfig returns the [model] settings of --config (if any) overridden by
// the flags, validated.
func (o *backtestOptions) modelConfig() (pipeline.Config, error) { return o.model.Config(o.config) }

// recorded is a series read from a CSV file.
type recorded struct {
	times   []time.Time // the pipeline's timestamps
	labels  []string    // the time column's text, or the index
	secs    []float64   // timestamps as Unix seconds, for plots
	values  []float64
	hasTime bool
	skipped int // unparsable rows skipped (--skip_bad)
}

// readSeries reads column from a CSV file as sources.ReadCSV does.
func readSeries(path, column, timeColumn string, skipBad bool) (*recorded, error) {
	c, err := sources.ReadCSV(path, column, timeColumn, skipBad)
	if err != nil {
		return nil, err
	}
	return &recorded{times: c.Times, labels: c.Labels, secs: c.Secs, values: c.Values, hasTime: c.HasTime, skipped: c.Skipped}, nil
}

// fmtFloat writes the shortest exact form, or nothing for NaN (no interval).
func fmtFloat(x float64) string {
	if math.IsNaN(x) {
		return ""
	}
	return strconv.FormatFloat(x, 'g', -1, 64)
}

// jfloat is a float64 that marshals NaN and ±Inf (an undefined mean) as null.
type jfloat = backtest.Float

// summary is the --json object of one series.
type summary = backtest.Summary

// engineOptions are the backtest engine's options of the command line.
func (o *backtestOptions) engineOptions() backtest.Options {
	return backtest.Options{Train: o.train, ScoreFrom: o.scoreFrom, Freeze: o.freeze}
}

// engineData is the engine's view of a recorded series.
func (r *recorded) engineData() backtest.Data {
	return backtest.Data{Times: r.times, Secs: r.secs, Values: r.values}
}

// Backtest is `forecastd backtest [flags] FILE|DIR...` (backtestUsage).
func Backtest(args []string, stdout, stderr io.Writer, env Env) error {
	start := time.Now()
	o, err := parseBacktestFlags(args, stderr, env)
	if err != nil {
		return err
	}
	cfg, err := o.modelConfig()
	if err != nil {
		return err
	}
	cfg.MeasureUpdates = true
	if o.influx.url != "" {
		return runInflux(o, cfg, start, stdout, stderr)
	}
	files, err := o.expandInputs()
	if err != nil {
		return err
	}
	if o.holdout > 0 {
		return runHoldout(o, cfg, files, start, stdout, stderr)
	}
	single := len(files) == 1 && len(o.inputs) == 1 && files[0] == o.inputs[0] && !o.bench
	if !single && (o.out != "" || o.plot != "") {
		return usageError(fmt.Errorf("--out and --plot take one series, from one FILE without --bench\n%s", helpHint))
	}
	if !single {
		return runBench(o, cfg, files, start, stdout, stderr)
	}
	series, err := o.load(files[0])
	if err != nil {
		return err
	}
	if len(series) != 1 {
		if o.out != "" || o.plot != "" {
			return usageError(fmt.Errorf("%s holds %d series: --out and --plot take one\n%s", files[0], len(series), helpHint))
		}
		return runBench(o, cfg, files, start, stdout, stderr)
	}
	// The series' own [[rules]], as the daemon and a backtest of many
	// series apply them.
	rules, err := o.ruleConfigs()
	if err != nil {
		return err
	}
	if len(rules) > 0 {
		cfg = configFor(series[0].label(), cfg, rules)
		cfg.MeasureUpdates = true
	}
	if cfg, err = series[0].atStep(cfg); err != nil {
		return err
	}
	return runSingle(o, cfg, series[0], start, stdout, stderr)
}

// runSingle is the backtest of one series with its detailed summary.
func runSingle(o *backtestOptions, cfg pipeline.Config, in *loaded, start time.Time, stdout, stderr io.Writer) error {
	data, file := in.data, in.file
	name := strings.TrimSuffix(filepath.Base(file), filepath.Ext(file))
	if in.key != "" {
		name = in.key
	}
	n := len(data.values)
	eo := o.engineOptions()
	var outFile *os.File
	var out *csv.Writer
	if o.out != "" {
		var err error
		if outFile, err = os.Create(o.out); err != nil {
			return err
		}
		defer outFile.Close()
		out = csv.NewWriter(bufio.NewWriterSize(outFile, 1<<16))
		header := []string{"index", "time", "actual", "forecast", "lower", "upper"}
		if cfg.Horizon > 1 {
			header = append(header, "horizon")
		}
		header = append(header, anomalyColumns...)
		if err := out.Write(header); err != nil {
			return err
		}
		var rec []string
		eo.OnRow = func(r backtest.Row) error {
			rec = append(rec[:0], strconv.Itoa(r.Index), data.labels[r.Index], fmtFloat(r.Actual), fmtFloat(r.Forecast), fmtFloat(r.Lower), fmtFloat(r.Upper))
			if cfg.Horizon > 1 {
				rec = append(rec, strconv.Itoa(r.Horizon))
			}
			rec = appendAnomaly(rec, r.Anomaly)
			return out.Write(rec)
		}
	}
	lastReport := time.Now()
	eo.Progress = func(i int) {
		if o.progress > 0 && time.Since(lastReport) >= o.progress {
			lastReport = time.Now()
			fmt.Fprintf(stderr, "backtest: %s: %d/%d points (%.0f%%), %.1f s\n", file, i, n, 100*float64(i)/float64(n), time.Since(start).Seconds())
		}
	}
	res, err := backtest.Run(name, cfg, data.engineData(), eo)
	if err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	if out != nil {
		out.Flush()
		if err := out.Error(); err != nil {
			return fmt.Errorf("%s: %w", o.out, err)
		}
		if err := outFile.Close(); err != nil {
			return fmt.Errorf("%s: %w", o.out, err)
		}
	}
	if why := res.NotScored(eo); why != "" {
		return fmt.Errorf("%s: nothing scored: %s", in.label(), why)
	}
	sum := backtest.Summarize(res, data.engineData())
	sum.SkippedRows = data.skipped
	if o.plot != "" {
		title := plotTitle(name, cfg.Kind.String(), cfg.Coverage, res.Horizon)
		rows := res.Rows
		if res.Horizon > 1 {
			rows = res.StepRows(res.Horizon)
		}
		if err := o.plotter(o.plot, title, rows, data.hasTime && isEpoch(data.secs)); err != nil {
			return fmt.Errorf("plot: %w", err)
		}
	}
	sum.Seconds = jfloat(time.Since(start).Seconds())
	if o.json {
		enc := json.NewEncoder(stdout)
		return enc.Encode(sum)
	}
	return writeText(stdout, in.label(), sum)
}

// plotTitle is the title of a rolling backtest's plot of a series: what the
// forecasts drawn are, those one step ahead, or with a horizon H > 1 those
// H steps ahead (the path's farthest step, which --plot draws).
func plotTitle(series, model string, coverage float64, horizon int) string {
	what := "one-step forecasts"
	if horizon > 1 {
		what = fmt.Sprintf("forecasts %d steps ahead (horizon %d)", horizon, horizon)
	}
	return fmt.Sprintf("%s — %s, %s, %.0f %% interval", series, model, what, 100*coverage)
}

// isEpoch reports whether timestamps look like Unix times (after 1973),
// to be drawn as dates, rather than indices.
func isEpoch(secs []float64) bool { return len(secs) > 0 && secs[0] > 1e8 }

func writeText(w io.Writer, file string, s summary) error {
	_, err := fmt.Fprintf(w, `%s: %s, %d points, %d scored
  mse %.6g  mae %.6g  rmse %.6g   (scaled: mse %.6g  mae %.6g)
  persistence: mse %.6g  mae %.6g   (scaled: mse %.6g  mae %.6g)
  interval coverage %.4g (nominal %.4g, on %d forecasts)
  model size %d (max %d), %d bytes; %d updates, %.0f ns/update, %.0f ns/forecast; %.3f s
`, file, s.Model, s.NPoints, s.NScored,
		float64(s.MSE), float64(s.MAE), float64(s.RMSE), float64(s.MSEScaled), float64(s.MAEScaled),
		float64(s.PersistenceMSE), float64(s.PersistenceMAE), float64(s.PersistenceMSEScaled), float64(s.PersistenceMAEScaled),
		float64(s.IntervalCoverage), float64(s.CoverageNominal), s.NIntervals,
		s.ModelSize, s.MaxModelSize, s.ModelBytes, s.Updates, float64(s.NsPerUpdate), float64(s.NsPerForecast), float64(s.Seconds))
	if err == nil && s.SkippedRows > 0 {
		_, err = fmt.Fprintf(w, "  skipped %d unparsable rows\n", s.SkippedRows)
	}
	if err == nil && s.Dropped > 0 {
		_, err = fmt.Fprintf(w, "  dropped %d points out of time order\n", s.Dropped)
	}
	for h := 0; err == nil && h < s.Horizon; h++ {
		if h == 0 {
			_, err = fmt.Fprintf(w, "  %4s  %12s  %16s  %16s  %8s\n", "step", "mae", "persistence mae", "seasonal-naive", "coverage")
		}
		if err == nil {
			_, err = fmt.Fprintf(w, "  %4d  %12.6g  %16.6g  %16.6g  %8.4g\n", h+1, float64(s.MAEByHorizon[h]), float64(s.PersistenceMAEByHorizon[h]),
				float64(s.SnaiveMAEByHorizon[h]), float64(s.CoverageByHorizon[h]))
		}
	}
	return err
}
