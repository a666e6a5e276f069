// Package tune chooses AOSVR's C, ε and γ for a series by the exact
// leave-one-out error of the samples the daemon's model would learn from
// it (Cauwenberghs and Poggio's decremental unlearning, as the AOSVR
// paper's section 5.3 uses it: every support vector unlearnt, predicted
// and learnt back; svr.LeaveOneOut). It is the logic of `forecastd tune`
// (lab), which reads the files and prints the result.
package tune

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/forecastd/forecastd/lab/backtest"
	"github.com/forecastd/forecastd/pipeline"
	"github.com/forecastd/forecastd/svr"
)

// jfloat marshals NaN and ±Inf as null.
type jfloat = backtest.Float

// Setting is one point of the grid.
type Setting struct {
	C       float64 `json:"c"`
	Epsilon float64 `json:"epsilon"`
	Gamma   float64 `json:"gamma"` // NaN for the linear kernel
}

// File is one series' samples and the windows tuned on.
type File struct {
	File    string   `json:"file"`
	Points  int      `json:"points"`
	Samples int      `json:"samples"`
	Dim     int      `json:"dim"`
	Windows [][2]int `json:"windows"` // [lo, hi) of the samples
	// ConstantMAE is the mean absolute deviation of the windows' targets
	// from their median: the LOO MAE a constant predictor about reaches,
	// for scale.
	ConstantMAE jfloat `json:"constant_mae"`
	Best        Best   `json:"best"` // this file's best setting
	xs          [][]float64
	ys          []float64
}

// Best is a series' best setting and its LOO MAE.
type Best struct {
	Setting
	LOOMAE jfloat `json:"loo_mae"`
}

// Row is the result of one setting over every file.
type Row struct {
	Setting
	// Score orders the rows: the LOO MAE with one file, else the geometric
	// mean of LOO MAE / the file's best; NaN if any run failed.
	Score   jfloat   `json:"score"`
	LOOMAE  []jfloat `json:"loo_mae"` // per file, over its windows' samples
	Support []int    `json:"support_vectors"`
	Seconds jfloat   `json:"seconds"`
	Err     string   `json:"error,omitempty"`
}

// Grid returns the settings to try: every combination of cs, es and gs,
// those left empty the defaults around cfg's values: for C and γ, the
// values 1, 3, 10, 30… from v/10 to 10·v, and v; for ε, those from v/10
// to 3·v, and v.
func Grid(cs, es, gs []float64, cfg pipeline.Config) ([]Setting, error) {
	gamma, ok := kernelGamma(cfg.Kernel)
	if !ok && len(gs) > 0 {
		return nil, fmt.Errorf("--gamma: the %s kernel has no gamma", cfg.Kernel)
	}
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
	var grid []Setting
	for _, c := range cs {
		for _, e := range es {
			for _, g := range gs {
				grid = append(grid, Setting{C: c, Epsilon: e, Gamma: g})
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

// Prepare builds the samples the daemon's model of cfg would learn from
// the points of the series file (pipeline.Samples) and the windows tuned
// on: windows windows of W samples, the last ending at the end (W =
// cfg.Window, or every sample if it is 0, at most maxSamples).
func Prepare(file string, pts []pipeline.Point, cfg pipeline.Config, windows, maxSamples int) (*File, error) {
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
	w = min(w, maxSamples)
	f := &File{File: file, Points: len(pts), Samples: n, Dim: len(xs[0]), xs: xs, ys: ys}
	// K windows of w samples, ends spread evenly, the last at n.
	k := windows
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

// Run runs the leave-one-out of every setting on every file's windows,
// jobs at a time, and returns the rows sorted by score (failures last),
// each file's Best filled in.
func Run(files []*File, grid []Setting, kernel svr.Kernel, jobs int) []Row {
	res := looAll(files, grid, kernel, jobs)
	best := make([]float64, len(files))
	for f := range files {
		best[f] = math.Inf(1)
		for s := range grid {
			if r := res[s][f]; r.err == nil {
				if mae := r.sumAE / float64(r.n); mae < best[f] {
					best[f] = mae
					files[f].Best = Best{grid[s], jfloat(mae)}
				}
			}
		}
	}
	rows := make([]Row, len(grid))
	for s, st := range grid {
		rows[s] = row(st, res[s], best)
	}
	// Stable: among equal scores the earlier (smaller) setting wins.
	slices.SortStableFunc(rows, func(a, b Row) int {
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

// looResult is the leave-one-out of one setting on one file's windows.
type looResult struct {
	sumAE float64
	n, sv int
	secs  float64
	err   error
}

// looAll runs the leave-one-out of every setting on every file, jobs at a
// time, and returns the results by setting and file.
func looAll(files []*File, grid []Setting, kernel svr.Kernel, jobs int) [][]looResult {
	res := make([][]looResult, len(grid)) // [setting][file]
	type task struct{ s, f int }
	tasks := make(chan task)
	var wg sync.WaitGroup
	for range jobs {
		wg.Go(func() {
			for t := range tasks {
				res[t.s][t.f] = loo(files[t.f], grid[t.s], kernel)
			}
		})
	}
	for s := range grid {
		res[s] = make([]looResult, len(files))
		for f := range files {
			tasks <- task{s, f}
		}
	}
	close(tasks)
	wg.Wait()
	return res
}

// loo runs the leave-one-out of st on f's windows.
func loo(f *File, st Setting, kernel svr.Kernel) looResult {
	var r looResult
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
	return r
}

// row is the table's row of st: its leave-one-out MAE and support per
// file, and its score, the geometric mean of its MAE over each file's
// best (best).
func row(st Setting, res []looResult, best []float64) Row {
	row := Row{Setting: st}
	logSum := 0.0
	for f, r := range res {
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
	case len(res) == 1:
		row.Score = row.LOOMAE[0]
	default:
		row.Score = jfloat(math.Exp(logSum / float64(len(res))))
	}
	return row
}

// Edges describes the parameters whose chosen value is at an end of
// a grid of several values, e.g. "c = 30 is the largest of --c".
func Edges(grid []Setting, s Setting) []string {
	var out []string
	for _, p := range []struct {
		name string
		get  func(Setting) float64
	}{
		{"c", func(t Setting) float64 { return t.C }},
		{"epsilon", func(t Setting) float64 { return t.Epsilon }},
		{"gamma", func(t Setting) float64 { return t.Gamma }},
	} {
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, t := range grid {
			lo, hi = math.Min(lo, p.get(t)), math.Max(hi, p.get(t))
		}
		v := p.get(s)
		switch {
		case math.IsNaN(v) || lo == hi:
		case v == hi:
			out = append(out, fmt.Sprintf("%s = %s is the largest of --%s", p.name, FormatSetting(v), p.name))
		case v == lo && v > 0:
			out = append(out, fmt.Sprintf("%s = %s is the smallest of --%s", p.name, FormatSetting(v), p.name))
		}
	}
	return out
}

// TOML returns the chosen setting as a [[rules]] entry.
func TOML(match string, s Setting) string {
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

// FormatSetting writes a grid value, "-" for no γ.
func FormatSetting(x float64) string {
	if math.IsNaN(x) {
		return "-"
	}
	return strconv.FormatFloat(x, 'g', 6, 64)
}
