package main

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/forecastd/forecastd/internal/config"
	"github.com/forecastd/forecastd/lab/dataset"
	"github.com/forecastd/forecastd/lab/mackeyglass"
	"github.com/forecastd/forecastd/pipeline"
)

// cli runs forecastd with args, as main does, and returns its outputs.
func cli(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var o, e bytes.Buffer
	code = run(args, &o, &e)
	return o.String(), e.String(), code
}

// mustCLI runs forecastd and fails the test unless it exits 0.
func mustCLI(t *testing.T, args ...string) string {
	t.Helper()
	out, errOut, code := cli(t, args...)
	if code != 0 {
		t.Fatalf("forecastd %s: exit %d\n%s", strings.Join(args, " "), code, errOut)
	}
	return out
}

// backtestJSON runs a backtest with --json and decodes the summary.
func backtestJSON(t *testing.T, args ...string) map[string]any {
	t.Helper()
	var m map[string]any
	out := mustCLI(t, append([]string{"backtest", "--json"}, args...)...)
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatalf("stdout is not one JSON object: %v\n%s", err, out)
	}
	return m
}

func num(t *testing.T, m map[string]any, key string) float64 {
	t.Helper()
	v, ok := m[key].(float64)
	if !ok {
		t.Fatalf("JSON field %q = %v, want a number", key, m[key])
	}
	return v
}

// writeSeries writes a CSV with the given header and rows.
func writeSeries(t *testing.T, name string, header string, rows []string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(header+"\n"+strings.Join(rows, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// valuesCSV writes values with a t column of Unix seconds, 60 s apart.
func valuesCSV(t *testing.T, name string, v []float64) string {
	rows := make([]string, len(v))
	for i, x := range v {
		rows[i] = fmt.Sprintf("%d,%s", 1_700_000_000+60*i, strconv.FormatFloat(x, 'g', -1, 64))
	}
	return writeSeries(t, name, "t,value", rows)
}

type outRow struct {
	index                          int
	time                           string
	actual, forecast, lower, upper float64
	hasInterval                    bool
}

// readOut reads a --out file, checking its header.
func readOut(t *testing.T, path string) []outRow {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(recs[0], ","); got != "index,time,actual,forecast,lower,upper,anomaly_score,anomaly" {
		t.Fatalf("header %q", got)
	}
	var rows []outRow
	for _, r := range recs[1:] {
		var o outRow
		var err error
		if o.index, err = strconv.Atoi(r[0]); err != nil {
			t.Fatalf("row %v: index: %v", r, err)
		}
		o.time = r[1]
		f := func(s string) float64 {
			x, err := strconv.ParseFloat(s, 64)
			if err != nil {
				t.Fatalf("row %v: %v", r, err)
			}
			return x
		}
		o.actual, o.forecast = f(r[2]), f(r[3])
		if r[4] != "" || r[5] != "" {
			o.lower, o.upper, o.hasInterval = f(r[4]), f(r[5]), true
		}
		checkAnomalyColumns(t, r, o, rows)
		rows = append(rows, o)
	}
	return rows
}

// TestBacktestContract checks the CLI contract end to end: flags, the CSV
// rows and their semantics, every JSON field, the plots.
func TestBacktestContract(t *testing.T) {
	in := filepath.Join(dataset.Dir(), "santafe_laser_a.csv")
	src := dataset.MustLoad("santafe_laser_a")
	dir := t.TempDir()
	out := filepath.Join(dir, "rows.csv")
	png := filepath.Join(dir, "plot.png")
	svg := filepath.Join(dir, "plot.svg")
	// The paper's setup (level, warm-up scale: scaled errors in units of
	// the first 100 points' half-range) and the default (change, no
	// scale: scaled errors are the errors; the first input needs dim + 1
	// points).
	paper := []string{"--target", "level", "--scale", "warmup:100", "--window", "200", "--gamma", "1", "--c", "10", "--epsilon", "0.1", "--seasons", "", "--combine=false"}
	for _, tc := range []struct {
		model string
		setup []string
	}{{"aosvr", paper}, {"sogsvr", paper}, {"norma", paper}, {"aosvr", nil}, {"sogsvr", nil}, {"norma", nil}} {
		model := tc.model
		name := model
		if tc.setup == nil {
			name += "_default"
		}
		t.Run(name, func(t *testing.T) {
			const train = 300
			m := backtestJSON(t, append(append([]string{"--model", model}, tc.setup...), "--train", strconv.Itoa(train), "--out", out, "--plot", png, in)...)
			for _, k := range []string{"model", "n_scored", "mse", "mae", "rmse", "mse_scaled", "mae_scaled",
				"persistence_mse", "persistence_mae", "model_size", "max_model_size", "updates",
				"ns_per_update", "model_bytes", "interval_coverage", "seconds"} {
				if _, ok := m[k]; !ok {
					t.Errorf("JSON summary lacks %q", k)
				}
			}
			if m["model"] != model {
				t.Errorf("model = %v, want %s", m["model"], model)
			}
			rows := readOut(t, out)
			if len(rows) != len(src.Values)-train || int(num(t, m, "n_scored")) != len(rows) {
				t.Fatalf("%d rows, n_scored %v, want %d", len(rows), m["n_scored"], len(src.Values)-train)
			}
			var se, ae, pse, pae float64
			var nInt, in int
			for j, r := range rows {
				i := train + j
				if r.index != i || r.time != strconv.Itoa(int(src.Times[i])) || r.actual != src.Values[i] {
					t.Fatalf("row %d = %+v, want index %d, time %v, actual %v", j, r, i, src.Times[i], src.Values[i])
				}
				e := r.actual - r.forecast
				se, ae = se+e*e, ae+math.Abs(e)
				p := r.actual - src.Values[i-1]
				pse, pae = pse+p*p, pae+math.Abs(p)
				if r.hasInterval {
					nInt++
					if r.lower <= r.actual && r.actual <= r.upper {
						in++
					}
					if !(r.lower <= r.forecast && r.forecast <= r.upper) {
						t.Fatalf("row %+v: forecast outside its interval", r)
					}
				}
			}
			n := float64(len(rows))
			lo, hi := slices.Min(src.Values[:100]), slices.Max(src.Values[:100]) // warmup:100
			h, updates := (hi-lo)/2, len(src.Values)-5
			if tc.setup == nil {
				h, updates = 1, len(src.Values)-6
			}
			for _, c := range []struct {
				key  string
				want float64
			}{
				{"mse", se / n}, {"mae", ae / n}, {"rmse", math.Sqrt(se / n)},
				{"mse_scaled", se / n / (h * h)}, {"mae_scaled", ae / n / h},
				{"persistence_mse", pse / n}, {"persistence_mae", pae / n},
				{"interval_coverage", float64(in) / float64(nInt)},
				{"updates", float64(updates)},
			} {
				if got := num(t, m, c.key); math.Abs(got-c.want) > 1e-9*math.Max(1, math.Abs(c.want)) {
					t.Errorf("%s = %v, recomputed from the rows %v", c.key, got, c.want)
				}
			}
			for _, k := range []string{"model_size", "max_model_size", "model_bytes", "ns_per_update", "seconds"} {
				if !(num(t, m, k) > 0) {
					t.Errorf("%s = %v, want > 0", k, m[k])
				}
			}
			if num(t, m, "model_size") > num(t, m, "max_model_size") {
				t.Errorf("model_size %v > max_model_size %v", m["model_size"], m["max_model_size"])
			}
			b, err := os.ReadFile(png)
			if err != nil || !bytes.HasPrefix(b, []byte("\x89PNG")) {
				t.Errorf("plot %s is not a PNG (err %v)", png, err)
			}
		})
	}
	mustCLI(t, "backtest", "--plot", svg, "--model", "norma", in)
	if b, err := os.ReadFile(svg); err != nil || !bytes.Contains(b, []byte("<svg")) {
		t.Errorf("plot %s is not an SVG (err %v)", svg, err)
	}
	// Flags after FILE are flags too; the text summary names the file.
	if out := mustCLI(t, "backtest", in, "--model", "norma"); !strings.Contains(out, "norma") || !strings.Contains(out, "santafe_laser_a") {
		t.Errorf("text summary:\n%s", out)
	}
}

// TestBacktestNoTimeColumn: without a time column, time is the index; the
// value column is chosen by --column.
func TestBacktestNoTimeColumn(t *testing.T) {
	v := dataset.MustLoad("santafe_laser_a").Values[:300]
	rows := make([]string, len(v))
	for i, x := range v {
		rows[i] = fmt.Sprintf("%d,%g", i%7, x)
	}
	in := writeSeries(t, "s.csv", "other,laser", rows)
	out := filepath.Join(t.TempDir(), "o.csv")
	mustCLI(t, "backtest", "--column", "laser", "--scale", "none", "--out", out, in)
	got := readOut(t, out)
	if len(got) == 0 {
		t.Fatal("no rows")
	}
	for _, r := range got {
		if r.time != strconv.Itoa(r.index) || r.actual != v[r.index] {
			t.Fatalf("row %+v", r)
		}
	}
	// With --scale none the first sample completes at point dim = 5 and the
	// first forecast is for point 6.
	if got[0].index != 6 {
		t.Errorf("first row index %d, want 6", got[0].index)
	}
}

// TestBacktestNoForecastUsesItsTarget perturbs x(i) in the file and checks
// that the rows for points ≤ i are unchanged and the row for i+1 is not.
func TestBacktestNoForecastUsesItsTarget(t *testing.T) {
	v := dataset.MustLoad("santafe_laser_a").Values[:400]
	for _, model := range []string{"aosvr", "sogsvr", "norma"} {
		t.Run(model, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "o.csv")
			mustCLI(t, "backtest", "--model", model, "--out", out, valuesCSV(t, "ref.csv", v))
			ref := readOut(t, out)
			for _, i := range []int{150, 237, 398} {
				w := slices.Clone(v)
				w[i] += 50
				mustCLI(t, "backtest", "--model", model, "--out", out, valuesCSV(t, "p.csv", w))
				got := readOut(t, out)
				if len(got) != len(ref) {
					t.Fatalf("%d rows, want %d", len(got), len(ref))
				}
				for j, r := range got {
					a := ref[j]
					if r.index <= i && (r.forecast != a.forecast || r.lower != a.lower || r.upper != a.upper) {
						t.Fatalf("x(%d) changed the forecast for point %d: %+v → %+v", i, r.index, a, r)
					}
					if r.index == i+1 && r.forecast == a.forecast {
						t.Errorf("x(%d) did not change the forecast for point %d", i, i+1)
					}
				}
			}
		})
	}
}

func TestBacktestBadRows(t *testing.T) {
	in := writeSeries(t, "bad.csv", "t,value", []string{
		"1,1.0", "2,2.0", "3,abc", "4,4.0", "5,NaN", "x,6", "7,7.0",
	})
	_, errOut, code := cli(t, "backtest", in)
	if code != 1 || !strings.Contains(errOut, in+":4: column 2 (\"value\")") || !strings.Contains(errOut, `"abc"`) {
		t.Errorf("exit %d, stderr %q: want an error naming %s, line 4, column 2", code, errOut, in)
	}
	m := backtestJSON(t, "--skip-bad", "--scale", "none", "--dim", "1", in)
	if num(t, m, "skipped_rows") != 3 || num(t, m, "n_points") != 4 {
		t.Errorf("skipped_rows %v, n_points %v; want 3 and 4", m["skipped_rows"], m["n_points"])
	}
	_, errOut, _ = cli(t, "backtest", "--column", "nope", in)
	if !strings.Contains(errOut, `no column "nope"`) {
		t.Errorf("stderr %q", errOut)
	}
}

func TestBacktestUsage(t *testing.T) {
	in := filepath.Join(dataset.Dir(), "santafe_laser_a.csv")
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"backtest"}, 2, "no FILE or DIR given"},
		{[]string{"backtest", "--score_from", "1", in}, 2, "--score_from 1: want a fraction"},
		{[]string{"backtest", "--format", "xml", in}, 2, "--format"},
		{[]string{"backtest", "--out", "o.csv", in, in}, 2, "--out and --plot take one series"},
		{[]string{"backtest", "--time-column", "when", in}, 1, `no time column "when"`},
		{[]string{"backtest", "nonexistent.csv"}, 1, "nonexistent.csv"},
		{[]string{"backtest", "--freeze", in}, 2, "--freeze needs --train"},
		{[]string{"backtest", "--dim", "x", in}, 2, "not an integer"},
		{[]string{"backtest", "--plot", "a.gif", in}, 2, ".svg or .png"},
		{[]string{"backtest", "--model", "lstm", "--dim", "0", in}, 1, "model.kind"},
		{[]string{"backtest", "--model", "lstm", "--dim", "0", in}, 1, "dim must be at least 1"},
		{[]string{"frobnicate"}, 2, "unknown command"},
	} {
		_, errOut, code := cli(t, c.args...)
		if code != c.code || !strings.Contains(errOut, c.want) {
			t.Errorf("forecastd %v: exit %d, stderr %q; want exit %d and %q", c.args, code, errOut, c.code, c.want)
		}
	}
	// A wrong flag prints its error and a pointer at -h, not the usage.
	_, errOut, code := cli(t, "backtest", "--frobnicate", in)
	if want := "forecastd backtest: flag provided but not defined: -frobnicate\nrun \"forecastd backtest -h\" for the flags\n"; code != 2 || errOut != want {
		t.Errorf("unknown flag: exit %d, stderr %q; want exit 2 and %q", code, errOut, want)
	}
	if _, errOut, _ := cli(t, "backtest", "-h"); !strings.Contains(errOut, "usage: forecastd backtest") || !strings.Contains(errOut, "-score_from") {
		t.Errorf("backtest -h does not print the usage and flags:\n%s", errOut)
	}
	if out := mustCLI(t, "version"); !strings.HasPrefix(out, "forecastd ") {
		t.Errorf("version: %q", out)
	}
	if _, _, code := cli(t, "backtest", "-h"); code != 0 {
		t.Errorf("backtest -h: exit %d", code)
	}
}

// TestBacktestConfigFile: --config reads [model] of a daemon config (other
// tables accepted), and flags override it.
func TestBacktestConfigFile(t *testing.T) {
	v := dataset.MustLoad("santafe_laser_a").Values[:200]
	in := valuesCSV(t, "s.csv", v)
	cfg := filepath.Join(t.TempDir(), "forecastd.toml")
	if err := os.WriteFile(cfg, []byte(`
[nats]
servers = ["nats://127.0.0.1:4222"]
embedded = true

[input]
subjects = ["metrics.>"]

[model]
kind = "norma"
dim = 3
scale = "none"
norma_tau = 50
norma_merge = 0

[[rules]]
match = "cpu.*"
kind = "aosvr"
`), 0o644); err != nil {
		t.Fatal(err)
	}
	m := backtestJSON(t, "--config", cfg, in)
	// Target change: the first sample needs dim + 1 points (dim changes).
	if m["model"] != "norma" || num(t, m, "updates") != float64(len(v)-4) || num(t, m, "model_size") != 50 {
		t.Errorf("from the config: model %v, updates %v, size %v; want norma, %d, 50", m["model"], m["updates"], m["model_size"], len(v)-4)
	}
	m = backtestJSON(t, "--config", cfg, "--dim", "4", "--model", "aosvr", in)
	if m["model"] != "aosvr" || num(t, m, "updates") != float64(len(v)-5) {
		t.Errorf("flags over the config: model %v, updates %v; want aosvr, %d", m["model"], m["updates"], len(v)-5)
	}
}

// TestBacktestSingleFileRules: a backtest of one file applies the
// [[rules]] that match its series (the file's path, for CSV), as a backtest of
// many files and the daemon do; the flags still win over the rule.
func TestBacktestSingleFileRules(t *testing.T) {
	v := dataset.MustLoad("santafe_laser_a").Values[:200]
	in := valuesCSV(t, "s.csv", v)
	cfg := filepath.Join(t.TempDir(), "forecastd.toml")
	if err := os.WriteFile(cfg, []byte(`
[model]
kind = "aosvr"

[[rules]]
match = "`+in+`"
kind = "norma"
norma_tau = 40
norma_merge = 0
`), 0o644); err != nil {
		t.Fatal(err)
	}
	m := backtestJSON(t, "--config", cfg, in)
	if m["model"] != "norma" || num(t, m, "model_size") != 40 {
		t.Errorf("one file under a matching rule: model %v, size %v; want norma, 40", m["model"], m["model_size"])
	}
	m = backtestJSON(t, "--config", cfg, "--model", "sogsvr", in)
	if m["model"] != "sogsvr" {
		t.Errorf("flags over the rule: model %v, want sogsvr", m["model"])
	}
}

// TestConfigStrict: unknown keys are errors naming them, and every problem
// of a file is reported at once.
func TestConfigStrict(t *testing.T) {
	p := filepath.Join(t.TempDir(), "bad.toml")
	if err := os.WriteFile(p, []byte(`
[model]
kind = "svm"
dim = 0
kernel = "sigmoid"
epsilon = -1
scale = "warmup:1"
interval = "soon"
colour = "blue"
norma_loss = "hinge"
sog_on_full = "drop"

[nats]
servers = []

[bogus]
x = 1
`), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := config.Load(p, config.DaemonChecks)
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{p, "model.kind", "dim must be at least 1", "model.kernel", "epsilon",
		"model.scale", "model.interval", `unknown key "model.colour"`, `unknown key "bogus"`,
		"model.norma_loss", "model.sog_on_full"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not mention %q:\n%v", want, err)
		}
	}
	if strings.Contains(err.Error(), "nats") {
		t.Errorf("the daemon's [nats] table was rejected:\n%v", err)
	}
	// A good file, and the Merge of layers.
	good := filepath.Join(t.TempDir(), "good.toml")
	if err := os.WriteFile(good, []byte("[input]\nsubjects = [\"a\"]\n[model]\nkind = \"sogsvr\"\nsog_max_dict = 32\ngamma = 0.5\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := config.Load(good, config.DaemonChecks)
	if err != nil {
		t.Fatal(err)
	}
	dim := 7
	pc, err := c.Model.Merge(pipeline.Keys{Dim: &dim}).Config()
	if err != nil {
		t.Fatal(err)
	}
	if pc.Kind.String() != "sogsvr" || pc.SOG.MaxDict != 32 || pc.Dim != 7 || pc.Kernel.String() != "rbf(gamma=0.5)" || pc.Window != 100 {
		t.Errorf("merged config %+v", pc)
	}
}

// TestLeakageRandomWalk: on a Gaussian random walk the best forecast is
// persistence; a model that beats it by more than a few percent sees the
// future somewhere. Every model runs on its defaults (where RBF models
// trail persistence far behind: the walk leaves the warm-up range) and in
// a setting that can come close to it (linear kernel, small ε), so that a
// leak would show; NORMA's shrinkage keeps it ≥ 1.4× persistence in both.
func TestLeakageRandomWalk(t *testing.T) {
	rng := rand.New(rand.NewPCG(2026, 4))
	v := make([]float64, 3000)
	for i := 1; i < len(v); i++ {
		v[i] = v[i-1] + rng.NormFloat64()
	}
	in := valuesCSV(t, "walk.csv", v)
	full := fmt.Sprintf("fixed:%g,%g", slices.Min(v), slices.Max(v))
	for _, c := range [][]string{
		{"--model", "aosvr"},
		{"--model", "sogsvr"},
		{"--model", "norma"},
		{"--model", "aosvr", "--kernel", "linear", "--epsilon", "0.01"},
		{"--model", "sogsvr", "--kernel", "linear"},
		{"--model", "norma", "--scale", full, "--kernel", "rbf", "--gamma", "0.1"},
	} {
		m := backtestJSON(t, append(append([]string{"--train", "200"}, c...), in)...)
		mse, pmse := num(t, m, "mse"), num(t, m, "persistence_mse")
		t.Logf("%v: mse %.4g, persistence %.4g, ratio %.3f", c, mse, pmse, mse/pmse)
		if mse < 0.97*pmse {
			t.Errorf("%v beats persistence on a random walk: mse %.4g < 0.97 × %.4g", c, mse, pmse)
		}
	}
}

// TestBadConfigFiles loads every testdata/*.bad.toml and matches the error
// against the file's "# want:" lines.
func TestBadConfigFiles(t *testing.T) {
	files, err := filepath.Glob("testdata/*.bad.toml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no testdata/*.bad.toml (%v)", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			var wants []string
			for _, line := range strings.Split(string(b), "\n") {
				if w, ok := strings.CutPrefix(line, "# want: "); ok {
					wants = append(wants, w)
				}
			}
			if len(wants) == 0 {
				t.Fatal("no # want: lines")
			}
			_, err = config.Load(f, config.DaemonChecks)
			if err == nil {
				t.Fatal("loaded without error")
			}
			for _, w := range wants {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error does not contain %q:\n%v", w, err)
				}
			}
		})
	}
}

// BenchmarkBacktest100k times a whole backtest of 100 000 points of
// Mackey-Glass (τ = 17) with each model on its defaults, from reading the
// CSV to the JSON summary, and reports the summary's ns_per_update and
// ns_per_forecast:
//
//	go test -run '^$' -bench Backtest100k -benchtime 3x ./cmd/forecastd
func BenchmarkBacktest100k(b *testing.B) {
	v := mackeyglass.Generate(100_000, mackeyglass.Config{})
	rows := make([]string, len(v))
	for i, x := range v {
		rows[i] = fmt.Sprintf("%d,%s", i, strconv.FormatFloat(x, 'g', -1, 64))
	}
	p := filepath.Join(b.TempDir(), "mg100k.csv")
	if err := os.WriteFile(p, []byte("t,value\n"+strings.Join(rows, "\n")+"\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	for _, model := range []string{"norma", "sogsvr", "aosvr"} {
		b.Run(model, func(b *testing.B) {
			var m map[string]float64
			for b.Loop() {
				var o, e bytes.Buffer
				if code := run([]string{"backtest", "--json", "--model", model, p}, &o, &e); code != 0 {
					b.Fatalf("exit %d: %s", code, e.String())
				}
				m = nil
				var raw map[string]any
				if err := json.Unmarshal(o.Bytes(), &raw); err != nil {
					b.Fatal(err)
				}
				m = map[string]float64{}
				for k, x := range raw {
					if f, ok := x.(float64); ok {
						m[k] = f
					}
				}
			}
			b.ReportMetric(m["ns_per_update"], "ns/update")
			b.ReportMetric(m["ns_per_forecast"], "ns/forecast")
			b.ReportMetric(m["mse_scaled"], "mse-scaled")
		})
	}
}

// TestBacktestRFC3339AndOrder: RFC 3339 times pass through to the rows as
// written, and a point not after its predecessor is dropped and counted.
func TestBacktestRFC3339AndOrder(t *testing.T) {
	v := dataset.MustLoad("santafe_laser_a").Values[:60]
	var rows []string
	for i, x := range v {
		ts := time.Date(2024, 3, 1, 0, i, 0, 0, time.UTC).Format(time.RFC3339)
		if i == 30 {
			ts = time.Date(2024, 3, 1, 0, 28, 0, 0, time.UTC).Format(time.RFC3339) // back in time
		}
		rows = append(rows, fmt.Sprintf("%s,%g", ts, x))
	}
	in := writeSeries(t, "s.csv", "time,value", rows)
	out := filepath.Join(t.TempDir(), "o.csv")
	m := backtestJSON(t, "--scale", "none", "--out", out, in)
	if num(t, m, "dropped") != 1 || num(t, m, "n_points") != 60 {
		t.Errorf("dropped %v of %v points, want 1 of 60", m["dropped"], m["n_points"])
	}
	for _, r := range readOut(t, out) {
		if r.index == 30 {
			t.Errorf("the dropped point 30 has a row")
		}
		if want := time.Date(2024, 3, 1, 0, r.index, 0, 0, time.UTC).Format(time.RFC3339); r.time != want {
			t.Errorf("row %d: time %q, want %q", r.index, r.time, want)
		}
	}
}
