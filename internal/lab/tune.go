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
	"sync"
	"text/tabwriter"
	"time"

	"github.com/forecastd/forecastd/internal/keyglob"
	"github.com/forecastd/forecastd/pipeline"
	"github.com/forecastd/forecastd/svr"
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
	dashAliases(fs, "time_column", "skip_bad", "max_samples")
	bad := func(err error) error {
		return usageError(fmt.Errorf("%w\nrun \"forecastd tune -h\" for the flags", err))
	}
	files, err := parseOperands(fs, args, "tune", tuneUsage, stderr)
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

// tuneSetting is one point of the grid.
type tuneSetting struct {
	C       float64 `json:"c"`
	Epsilon float64 `json:"epsilon"`
	Gamma   float64 `json:"gamma"` // NaN for the linear kernel
}

// tuneFile is one file's samples and windows.
type tuneFile struct {
	File    string   `json:"file"`
	Points  int      `json:"points"`
	Samples int      `json:"samples"`
	Dim     int      `json:"dim"`
	Windows [][2]int `json:"windows"` // [lo, hi) of the samples
	// ConstantMAE is the mean absolute deviation of the windows' targets
	// from their median: the LOO MAE a constant predictor about reaches,
	// for scale.
	ConstantMAE jfloat   `json:"constant_mae"`
	Best        tuneBest `json:"best"` // this file's best setting
	xs          [][]float64
	ys          []float64
}

type tuneBest struct {
	tuneSetting
	LOOMAE jfloat `json:"loo_mae"`
}

// tuneRow is the result of one setting over every file.
type tuneRow struct {
	tuneSetting
	// Score orders the rows: the LOO MAE with one file, else the geometric
	// mean of LOO MAE / the file's best; NaN if any run failed.
	Score   jfloat   `json:"score"`
	LOOMAE  []jfloat `json:"loo_mae"` // per file, over its windows' samples
	Support []int    `json:"support_vectors"`
	Seconds jfloat   `json:"seconds"`
	Err     string   `json:"error,omitempty"`
}

// tuneReport is the --json object.
type tuneReport struct {
	Model     string      `json:"model"`
	Aggregate string      `json:"aggregate"`
	Files     []*tuneFile `json:"files"`
	Grid      []tuneRow   `json:"grid"` // sorted by score, failures last
	Chosen    tuneSetting `json:"chosen"`
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
	grid, err := tuneGrid(o, cfg)
	if err != nil {
		return usageError(err)
	}

	var files []*tuneFile
	for _, name := range o.files {
		f, err := tuneSamples(name, o, cfg)
		if err != nil {
			return err
		}
		files = append(files, f)
	}
	rows := tuneRun(files, grid, cfg.Kernel, o.jobs)
	aggregate := "LOO MAE"
	if len(files) > 1 {
		aggregate = "geometric mean over the files of LOO MAE / the file's best LOO MAE"
	}
	if !(rows[0].Score >= 0) {
		return fmt.Errorf("every setting failed; the first: %s", rows[0].Err)
	}
	rep := tuneReport{
		Model: cfg.Kind.String(), Aggregate: aggregate, Files: files, Grid: rows,
		Chosen: rows[0].tuneSetting, Match: o.match, Seconds: jfloat(time.Since(start).Seconds()),
	}
	rep.TOML = tuneTOML(o.match, rep.Chosen)
	rep.Edges = gridEdges(grid, rep.Chosen)
	if o.json {
		return json.NewEncoder(stdout).Encode(rep)
	}
	return writeTune(stdout, &rep, o.top)
}

// tuneGrid returns the settings to try: the flags' lists, or the defaults
// around cfg's values.
func tuneGrid(o *tuneOptions, cfg pipeline.Config) ([]tuneSetting, error) {
	gamma, ok := kernelGamma(cfg.Kernel)
	if !ok && len(o.g) > 0 {
		return nil, fmt.Errorf("--gamma: the %s kernel has no gamma", cfg.Kernel)
	}
	cs, es, gs := []float64(o.c), []float64(o.eps), []float64(o.g)
	if len(cs) == 0 {
		cs = ladder(cfg.C, 10, 10)
	}
	if len(es) == 0 {
		es = ladder(cfg.Epsilon, 10, 3)
	}
	if !ok {
		gs = []float64{math.NaN()}
	} else if len(gs) == 0 {
		gs = ladder(gamma, 10, 10)
	}
	var grid []tuneSetting
	for _, c := range cs {
		for _, e := range es {
			for _, g := range gs {
				grid = append(grid, tuneSetting{C: c, Epsilon: e, Gamma: g})
			}
		}
	}
	return grid, nil
}

// ladder returns v and the values 1·10^k and 3·10^k in [v/below, v·above],
// sorted; just v if v is 0.
func ladder(v, below, above float64) []float64 {
	out := []float64{v}
	if v > 0 {
		for k := math.Floor(math.Log10(v/below)) - 1; k <= math.Ceil(math.Log10(v*above))+1; k++ {
			for _, m := range []string{"1", "3"} {
				// Parsed, not m·10^k computed, so that x is the float64
				// nearest the decimal (1e-3, not 0.0010000000000000002).
				x, err := strconv.ParseFloat(m+"e"+strconv.Itoa(int(k)), 64)
				if err != nil { // "1e-5" and the like always parse
					panic(fmt.Sprintf("tune: ladder: %v", err))
				}
				if x >= v/below*(1-1e-12) && x <= v*above*(1+1e-12) && !slices.Contains(out, x) {
					out = append(out, x)
				}
			}
		}
	}
	slices.Sort(out)
	return out
}

// kernelGamma returns the γ of an RBF or polynomial kernel.
func kernelGamma(k svr.Kernel) (float64, bool) {
	switch k := k.(type) {
	case svr.RBF:
		return k.Gamma, true
	case svr.Poly:
		return k.Gamma, true
	}
	return 0, false
}

// withGamma returns k with γ = g (k itself if it has none).
func withGamma(k svr.Kernel, g float64) svr.Kernel {
	switch k := k.(type) {
	case svr.RBF:
		return svr.RBF{Gamma: g}
	case svr.Poly:
		k.Gamma = g
		return k
	}
	return k
}

// tuneSamples reads a file and builds the samples the daemon's model would
// learn from it (pipeline.Samples) and the windows tuned on.
func tuneSamples(file string, o *tuneOptions, cfg pipeline.Config) (*tuneFile, error) {
	data, err := readSeries(file, o.column, o.timeColumn, o.skipBad)
	if err != nil {
		return nil, err
	}
	pts := make([]pipeline.Point, len(data.values))
	for i, v := range data.values {
		pts[i] = pipeline.Point{Time: data.times[i], Value: v}
	}
	xs, ys, err := pipeline.Samples(cfg, pts)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	n := len(xs)
	if n < 2 {
		return nil, fmt.Errorf("%s: %d points give %d training samples, too few to tune on", file, len(pts), n)
	}
	w := n
	if cfg.Window > 0 {
		w = min(w, cfg.Window)
	}
	w = min(w, o.maxSamples)
	f := &tuneFile{File: file, Points: len(pts), Samples: n, Dim: len(xs[0]), xs: xs, ys: ys}
	// K windows of w samples, ends spread evenly, the last at n.
	k := o.windows
	for j := range k {
		hi := n
		if k > 1 {
			hi = w + int(math.Round(float64(j)*float64(n-w)/float64(k-1)))
		}
		win := [2]int{hi - w, hi}
		if !slices.Contains(f.Windows, win) {
			f.Windows = append(f.Windows, win)
		}
	}
	var dev float64
	for _, win := range f.Windows {
		t := slices.Clone(ys[win[0]:win[1]])
		slices.Sort(t)
		med := (t[(len(t)-1)/2] + t[len(t)/2]) / 2
		for _, y := range t {
			dev += math.Abs(y - med)
		}
	}
	f.ConstantMAE = jfloat(dev / float64(len(f.Windows)*w))
	return f, nil
}

// tuneRun runs the leave-one-out of every setting on every file's windows,
// jobs at a time, and returns the rows sorted by score (failures last),
// each file's Best filled in.
func tuneRun(files []*tuneFile, grid []tuneSetting, kernel svr.Kernel, jobs int) []tuneRow {
	rows := make([]tuneRow, len(grid))
	type result struct {
		sumAE float64
		n, sv int
		secs  float64
		err   error
	}
	res := make([][]result, len(grid)) // [setting][file]
	type task struct{ s, f int }
	tasks := make(chan task)
	var wg sync.WaitGroup
	for range jobs {
		wg.Go(func() {
			for t := range tasks {
				f, st := files[t.f], grid[t.s]
				var r result
				t0 := time.Now()
				for _, win := range f.Windows {
					xs, ys := f.xs[win[0]:win[1]], f.ys[win[0]:win[1]]
					loo, err := svr.LeaveOneOut(svr.AOSVRConfig{
						Dim: f.Dim, Kernel: withGamma(kernel, st.Gamma), C: st.C, Epsilon: st.Epsilon,
					}, xs, ys)
					if err != nil {
						r.err = fmt.Errorf("%s: samples [%d, %d): %w", f.File, win[0], win[1], err)
						break
					}
					for i, p := range loo.Pred {
						r.sumAE += math.Abs(p - ys[i])
					}
					r.n += len(ys)
					r.sv += loo.Unlearnt
				}
				r.secs = time.Since(t0).Seconds()
				res[t.s][t.f] = r
			}
		})
	}
	for s := range grid {
		res[s] = make([]result, len(files))
		for f := range files {
			tasks <- task{s, f}
		}
	}
	close(tasks)
	wg.Wait()

	best := make([]float64, len(files))
	for f := range files {
		best[f] = math.Inf(1)
		for s := range grid {
			if r := res[s][f]; r.err == nil {
				if mae := r.sumAE / float64(r.n); mae < best[f] {
					best[f] = mae
					files[f].Best = tuneBest{grid[s], jfloat(mae)}
				}
			}
		}
	}
	for s, st := range grid {
		row := tuneRow{tuneSetting: st}
		logSum := 0.0
		for f, r := range res[s] {
			row.Seconds += jfloat(r.secs)
			if r.err != nil {
				if row.Err == "" {
					row.Err = r.err.Error()
				}
				row.LOOMAE = append(row.LOOMAE, jfloat(math.NaN()))
				row.Support = append(row.Support, 0)
				continue
			}
			mae := r.sumAE / float64(r.n)
			row.LOOMAE = append(row.LOOMAE, jfloat(mae))
			row.Support = append(row.Support, r.sv)
			if best[f] > 0 {
				logSum += math.Log(mae / best[f])
			} else if mae > 0 {
				logSum = math.Inf(1)
			}
		}
		switch {
		case row.Err != "":
			row.Score = jfloat(math.NaN())
		case len(files) == 1:
			row.Score = row.LOOMAE[0]
		default:
			row.Score = jfloat(math.Exp(logSum / float64(len(files))))
		}
		rows[s] = row
	}
	// Stable: among equal scores the earlier (smaller) setting wins.
	slices.SortStableFunc(rows, func(a, b tuneRow) int {
		an, bn := math.IsNaN(float64(a.Score)), math.IsNaN(float64(b.Score))
		switch {
		case an || bn:
			if an == bn {
				return 0
			}
			if an {
				return 1
			}
			return -1
		case a.Score < b.Score:
			return -1
		case a.Score > b.Score:
			return 1
		}
		return 0
	})
	return rows
}

// gridEdges describes the parameters whose chosen value is at an end of
// a grid of several values, e.g. "c = 30 is the largest of --c".
func gridEdges(grid []tuneSetting, s tuneSetting) []string {
	var out []string
	for _, p := range []struct {
		name string
		get  func(tuneSetting) float64
	}{
		{"c", func(t tuneSetting) float64 { return t.C }},
		{"epsilon", func(t tuneSetting) float64 { return t.Epsilon }},
		{"gamma", func(t tuneSetting) float64 { return t.Gamma }},
	} {
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, t := range grid {
			lo, hi = math.Min(lo, p.get(t)), math.Max(hi, p.get(t))
		}
		v := p.get(s)
		switch {
		case math.IsNaN(v) || lo == hi:
		case v == hi:
			out = append(out, fmt.Sprintf("%s = %s is the largest of --%s", p.name, fmtSetting(v), p.name))
		case v == lo && v > 0:
			out = append(out, fmt.Sprintf("%s = %s is the smallest of --%s", p.name, fmtSetting(v), p.name))
		}
	}
	return out
}

// tuneTOML returns the chosen setting as a [[rules]] entry.
func tuneTOML(match string, s tuneSetting) string {
	var b strings.Builder
	fmt.Fprintf(&b, "[[rules]]\nmatch = %s\nc = %s\nepsilon = %s\n", strconv.Quote(match), tomlFloat(s.C), tomlFloat(s.Epsilon))
	if !math.IsNaN(s.Gamma) {
		fmt.Fprintf(&b, "gamma = %s\n", tomlFloat(s.Gamma))
	}
	return b.String()
}

// tomlFloat writes x as a TOML float: shortest exact digits, with a
// decimal point or exponent.
func tomlFloat(x float64) string {
	s := strconv.FormatFloat(x, 'g', -1, 64)
	if !strings.ContainsAny(s, ".e") {
		s += ".0"
	}
	return s
}

// fmtSetting writes a grid value, "-" for no γ.
func fmtSetting(x float64) string {
	if math.IsNaN(x) {
		return "-"
	}
	return strconv.FormatFloat(x, 'g', 6, 64)
}

func writeTune(w io.Writer, r *tuneReport, top int) error {
	pw := &errWriter{w: w}
	for _, f := range r.Files {
		pw.printf("%s: %d points, %d samples of dimension %d; leave-one-out on %d windows of %d samples; constant predictor MAE %.4g\n",
			f.File, f.Points, f.Samples, f.Dim, len(f.Windows), f.Windows[0][1]-f.Windows[0][0], float64(f.ConstantMAE))
		pw.printf("  best: c = %s  epsilon = %s  gamma = %s  LOO MAE %.4g\n",
			fmtSetting(f.Best.C), fmtSetting(f.Best.Epsilon), fmtSetting(f.Best.Gamma), float64(f.Best.LOOMAE))
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
		line := fmt.Sprintf("%s\t%s\t%s\t", fmtSetting(row.C), fmtSetting(row.Epsilon), fmtSetting(row.Gamma))
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
