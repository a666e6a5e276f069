package lab

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/forecastd/forecastd/internal/cmdline"
	"github.com/forecastd/forecastd/internal/keyglob"
	"github.com/forecastd/forecastd/lab/tune"
	"github.com/forecastd/forecastd/pipeline"
)

const tuneUsage = `usage: forecastd tune [flags] FILE.csv...

Chooses AOSVR's C, epsilon and gamma by the exact leave-one-out error of
the samples the daemon's model would learn from each file (the AOSVR
paper's section 5.3: every support vector unlearnt, predicted and learnt
back). The samples are those of [model] (--config and the [model] flags,
as for backtest); from them, --windows windows of W samples spread through
the series, the last ending at the end (W = [model] window, or every
sample if it is 0, at most --max_samples). For every setting of the grid
--c × --epsilon × --gamma it computes the leave-one-out mean absolute
error over the windows, in the model's units, and prints the grid sorted
by it, each file's best setting, and the chosen one as a [[rules]] block
to paste into the daemon's configuration.

With several files, one setting is chosen for all of them: the one with
the least geometric mean, over the files, of its LOO MAE divided by that
file's best LOO MAE (1 = best everywhere; scale-free, so no series
dominates by its units).

Grid defaults, around the [model] values c, epsilon, gamma (v): c and
gamma, the values 1, 3, 10, 30… from v/10 to 10·v, and v; epsilon, those
from v/10 to 3·v, and v.

flags:
`

// tuneOptions are the tune command line.
type tuneOptions struct {
	files      []string
	column     string
	timeColumn string
	skipBad    bool
	config     string
	model      ModelFlags // the [model] keys given as flags (not c, epsilon, gamma)
	c, eps, g  floatList  // the grid; empty: the defaults around [model]
	windows    int
	maxSamples int
	match      string
	top        int
	jobs       int
	json       bool
}

// floatList is a flag of comma-separated numbers.
type floatList []float64

func (l *floatList) String() string {
	s := make([]string, len(*l))
	for i, x := range *l {
		s[i] = strconv.FormatFloat(x, 'g', -1, 64)
	}
	return strings.Join(s, ",")
}

func (l *floatList) Set(s string) error {
	var out floatList
	for _, f := range strings.Split(s, ",") {
		x, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
			return fmt.Errorf("not a finite number: %q", strings.TrimSpace(f))
		}
		if !slices.Contains(out, x) {
			out = append(out, x)
		}
	}
	*l = out
	return nil
}

// The [model] keys tune takes as lists instead.
var tuneGridKeys = []string{"c", "epsilon", "gamma"}

func parseTuneFlags(args []string, stderr io.Writer, env Env) (*tuneOptions, error) {
	o := &tuneOptions{}
	fs := flag.NewFlagSet("tune", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	fs.StringVar(&o.column, "column", "value", "CSV value column `NAME`")
	fs.StringVar(&o.timeColumn, "time_column", "", "CSV time column `NAME` (default: \"time\", else \"timestamp\", else \"t\"; none: time is the row index)")
	fs.BoolVar(&o.skipBad, "skip_bad", false, "skip and count unparsable rows instead of failing")
	fs.StringVar(&o.config, "config", "", "take [model] settings from a daemon config `FILE`; flags override it")
	fs.Var(&o.c, "c", "AOSVR box C values to try, comma-separated `LIST` (default: around [model] c)")
	fs.Var(&o.eps, "epsilon", "AOSVR tube epsilon values to try, comma-separated `LIST` (default: around [model] epsilon)")
	fs.Var(&o.g, "gamma", "kernel gamma values to try, comma-separated `LIST` (default: around [model] gamma)")
	fs.IntVar(&o.windows, "windows", 3, "leave-one-out on `K` windows spread through each series, the last ending at its end")
	fs.IntVar(&o.maxSamples, "max_samples", 500, "samples per window at most, `N` (the window is [model] window, or all samples if 0)")
	fs.StringVar(&o.match, "match", "*", "the [[rules]] block's match `GLOB`")
	fs.IntVar(&o.top, "top", 10, "print the best `N` settings of the grid; 0: all")
	fs.IntVar(&o.jobs, "jobs", runtime.GOMAXPROCS(0), "leave-one-out runs at once, `N`")
	fs.BoolVar(&o.json, "json", false, "print one JSON object on stdout")
	o.model = env.Models.AddFlags(fs, tuneGridKeys...)
	cmdline.DashAliases(fs, "time_column", "skip_bad", "max_samples")
	bad := func(err error) error {
		return usageError(fmt.Errorf("%w\nrun \"forecastd tune -h\" for the flags", err))
	}
	files, err := cmdline.ParseOperands(fs, args, "tune", tuneUsage, stderr)
	if err != nil {
		return nil, err
	}
	o.files = files
	var errs []error
	if len(o.files) == 0 {
		errs = append(errs, errors.New("no FILE given"))
	}
	for _, x := range o.c {
		if !(x > 0) {
			errs = append(errs, fmt.Errorf("--c: %v: C must be positive", x))
		}
	}
	for _, x := range o.eps {
		if !(x >= 0) {
			errs = append(errs, fmt.Errorf("--epsilon: %v: epsilon must not be negative", x))
		}
	}
	for _, x := range o.g {
		if !(x > 0) {
			errs = append(errs, fmt.Errorf("--gamma: %v: gamma must be positive", x))
		}
	}
	if o.windows < 1 {
		errs = append(errs, fmt.Errorf("--windows must be at least 1, got %d", o.windows))
	}
	if o.maxSamples < 2 {
		errs = append(errs, fmt.Errorf("--max_samples must be at least 2, got %d", o.maxSamples))
	}
	if o.top < 0 {
		errs = append(errs, fmt.Errorf("--top must not be negative, got %d", o.top))
	}
	if o.jobs < 1 {
		errs = append(errs, fmt.Errorf("--jobs must be at least 1, got %d", o.jobs))
	}
	if _, err := keyglob.Compile(o.match); err != nil {
		errs = append(errs, fmt.Errorf("--match %q: not a glob: %v", o.match, err))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, bad(err)
	}
	return o, nil
}

// tuneReport is the --json object.
type tuneReport struct {
	Model     string       `json:"model"`
	Aggregate string       `json:"aggregate"`
	Files     []*tune.File `json:"files"`
	Grid      []tune.Row   `json:"grid"` // sorted by score, failures last
	Chosen    tune.Setting `json:"chosen"`
	// Edges names each parameter whose chosen value is the grid's
	// smallest or largest: the best may lie beyond.
	Edges   []string `json:"edges"`
	Match   string   `json:"match"`
	TOML    string   `json:"toml"`
	Seconds jfloat   `json:"seconds"`
}

// Tune is `forecastd tune [flags] FILE.csv...` (tuneUsage).
func Tune(args []string, stdout, stderr io.Writer, env Env) error {
	start := time.Now()
	o, err := parseTuneFlags(args, stderr, env)
	if err != nil {
		return err
	}
	cfg, err := o.model.Config(o.config)
	if err != nil {
		return err
	}
	if cfg.Kind != pipeline.AOSVR {
		return usageError(fmt.Errorf("model %s: only aosvr can be tuned by its exact leave-one-out (decremental unlearning); SOG-SVR and NORMA have none", cfg.Kind))
	}
	grid, err := tune.Grid(o.c, o.eps, o.g, cfg)
	if err != nil {
		return usageError(err)
	}

	var files []*tune.File
	for _, name := range o.files {
		data, err := readSeries(name, o.column, o.timeColumn, o.skipBad)
		if err != nil {
			return err
		}
		pts := make([]pipeline.Point, len(data.values))
		for i, v := range data.values {
			pts[i] = pipeline.Point{Time: data.times[i], Value: v}
		}
		f, err := tune.Prepare(name, pts, cfg, o.windows, o.maxSamples)
		if err != nil {
			return err
		}
		files = append(files, f)
	}
	rows := tune.Run(files, grid, cfg.Kernel, o.jobs)
	aggregate := "LOO MAE"
	if len(files) > 1 {
		aggregate = "geometric mean over the files of LOO MAE / the file's best LOO MAE"
	}
	if !(rows[0].Score >= 0) {
		return fmt.Errorf("every setting failed; the first: %s", rows[0].Err)
	}
	rep := tuneReport{
		Model: cfg.Kind.String(), Aggregate: aggregate, Files: files, Grid: rows,
		Chosen: rows[0].Setting, Match: o.match, Seconds: jfloat(time.Since(start).Seconds()),
	}
	rep.TOML = tune.TOML(o.match, rep.Chosen)
	rep.Edges = tune.Edges(grid, rep.Chosen)
	if o.json {
		return json.NewEncoder(stdout).Encode(rep)
	}
	return writeTune(stdout, &rep, o.top)
}

func writeTune(w io.Writer, r *tuneReport, top int) error {
	pw := &errWriter{w: w}
	for _, f := range r.Files {
		pw.printf("%s: %d points, %d samples of dimension %d; leave-one-out on %d windows of %d samples; constant predictor MAE %.4g\n",
			f.File, f.Points, f.Samples, f.Dim, len(f.Windows), f.Windows[0][1]-f.Windows[0][0], float64(f.ConstantMAE))
		pw.printf("  best: c = %s  epsilon = %s  gamma = %s  LOO MAE %.4g\n",
			tune.FormatSetting(f.Best.C), tune.FormatSetting(f.Best.Epsilon), tune.FormatSetting(f.Best.Gamma), float64(f.Best.LOOMAE))
	}
	n := len(r.Grid)
	if top > 0 && top < n {
		pw.printf("\nbest %d of %d settings by %s:\n", top, n, r.Aggregate)
		n = top
	} else {
		pw.printf("\n%d settings by %s:\n", n, r.Aggregate)
	}
	tw := tabwriter.NewWriter(pw, 0, 0, 2, ' ', tabwriter.AlignRight)
	hdr := "c\tepsilon\tgamma\t"
	if len(r.Files) > 1 {
		hdr += "score\t"
		for i := range r.Files {
			hdr += fmt.Sprintf("MAE %d\t", i+1)
		}
	} else {
		hdr += "LOO MAE\t"
	}
	fmt.Fprintln(tw, hdr+"SV %\tseconds\t")
	held := 0 // samples left out, over every file and window
	for _, f := range r.Files {
		for _, win := range f.Windows {
			held += win[1] - win[0]
		}
	}
	for _, row := range r.Grid[:n] {
		line := fmt.Sprintf("%s\t%s\t%s\t", tune.FormatSetting(row.C), tune.FormatSetting(row.Epsilon), tune.FormatSetting(row.Gamma))
		if len(r.Files) > 1 {
			line += fmt.Sprintf("%.4f\t", float64(row.Score))
		}
		sv := 0
		for _, m := range row.LOOMAE {
			line += fmt.Sprintf("%.6g\t", float64(m))
		}
		for _, k := range row.Support {
			sv += k
		}
		if row.Err != "" {
			line += "failed: " + row.Err + "\t\t"
		} else {
			line += fmt.Sprintf("%.0f\t%.3f\t", 100*float64(sv)/float64(held), float64(row.Seconds))
		}
		fmt.Fprintln(tw, line)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, e := range r.Edges {
		pw.printf("\nnote: %s: the best may lie beyond; widen the grid", e)
	}
	if len(r.Edges) > 0 {
		pw.printf("\n")
	}
	pw.printf("\nchosen (%s), for the daemon's configuration:\n\n%s", r.Aggregate, r.TOML)
	return pw.err
}

// errWriter keeps the first write error.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(p)
	e.err = err
	return n, err
}

func (e *errWriter) printf(format string, args ...any) { fmt.Fprintf(e, format, args...) }
