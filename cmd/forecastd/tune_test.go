package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/forecastd/forecastd/internal/config"
	"github.com/forecastd/forecastd/lab/dataset"
	"github.com/forecastd/forecastd/pipeline"
	"github.com/forecastd/forecastd/sources"
	"github.com/forecastd/forecastd/svr"
)

// tuneSeries writes the first n points of a series of testdata/series to
// a CSV file, keeping its time column.
func tuneSeries(t *testing.T, name string, n int) string {
	t.Helper()
	s := dataset.MustLoad(name)
	rows := make([]string, n)
	for i := range rows {
		rows[i] = strconv.FormatFloat(s.Times[i], 'g', -1, 64) + "," + strconv.FormatFloat(s.Values[i], 'g', -1, 64)
	}
	return writeSeries(t, name+".csv", "t,value", rows)
}

// tuneTable is the printed grid: the settings and the first score column
// (LOO MAE with one file, the aggregate with several).
type tuneTableRow struct {
	c, eps, gamma, score float64
}

// parseTuneTable reads the grid table of tune's text output.
func parseTuneTable(t *testing.T, out string) []tuneTableRow {
	t.Helper()
	lines := strings.Split(out, "\n")
	var rows []tuneTableRow
	in := false
	for _, l := range lines {
		f := strings.Fields(l)
		switch {
		case len(f) > 0 && f[0] == "c" && len(f) > 2 && f[1] == "epsilon":
			in = true
		case in && len(f) == 0:
			in = false
		case in:
			var v [4]float64
			for i := range v {
				x, err := strconv.ParseFloat(f[i], 64)
				if err != nil {
					t.Fatalf("table row %q: field %d: %v", l, i, err)
				}
				v[i] = x
			}
			rows = append(rows, tuneTableRow{v[0], v[1], v[2], v[3]})
		}
	}
	if len(rows) == 0 {
		t.Fatalf("no table in the output:\n%s", out)
	}
	return rows
}

// tomlBlock returns the [[rules]] block at the end of tune's output.
func tomlBlock(t *testing.T, out string) string {
	t.Helper()
	i := strings.LastIndex(out, "[[rules]]")
	if i < 0 {
		t.Fatalf("no [[rules]] block in the output:\n%s", out)
	}
	return out[i:]
}

// TestTuneChoosesArgMinAndPastes: on a real series, the chosen setting is
// the arg-min of the printed table (all of it, --top 0), and the printed
// [[rules]] block, appended to config.example.toml, loads with the
// daemon's own loader into a rule with exactly the chosen values.
func TestTuneChoosesArgMinAndPastes(t *testing.T) {
	t.Parallel()
	file := tuneSeries(t, "santafe_laser_a", 400)
	out := mustCLI(t, "tune", "--c", "1,10,100", "--epsilon", "0.05,0.5", "--gamma", "0.01,0.1",
		"--windows", "2", "--max-samples", "60", "--top", "0", "--match", "laser.*", file)
	rows := parseTuneTable(t, out)
	if len(rows) != 12 {
		t.Fatalf("%d rows in the table, want 3·2·2 = 12:\n%s", len(rows), out)
	}
	best := rows[0]
	for _, r := range rows {
		if r.score < best.score {
			best = r
		}
	}
	// The printed MAE has 6 significant digits: ties within them are
	// allowed, but then the first of them must have been chosen.
	if rows[0].score > best.score {
		t.Errorf("the first row's LOO MAE %v is not the least (%v)", rows[0].score, best.score)
	}

	example, err := os.ReadFile("../../config.example.toml")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "tuned.toml")
	if err := os.WriteFile(path, append(append(example, '\n'), tomlBlock(t, out)...), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(path, config.DaemonChecks)
	if err != nil {
		t.Fatalf("config.example.toml with the tuned block: %v\n%s", err, tomlBlock(t, out))
	}
	rule := cfg.Rules[len(cfg.Rules)-1]
	if rule.Match == nil || *rule.Match != "laser.*" {
		t.Errorf("rule match %v, want laser.*", rule.Match)
	}
	c, cok := rule.Params["c"].(float64)
	eps, eok := rule.Params["epsilon"].(float64)
	if !cok || !eok || rule.Gamma == nil {
		t.Fatalf("rule lacks c, epsilon or gamma: %+v", rule.Keys)
	}
	if c != rows[0].c || eps != rows[0].eps || *rule.Gamma != rows[0].gamma {
		t.Errorf("rule c %v epsilon %v gamma %v, the table's first row %+v", c, eps, *rule.Gamma, rows[0])
	}
	// And the rule's model is an AOSVR with those values.
	pc, err := cfg.Model.Merge(rule.Keys).Config()
	if err != nil {
		t.Fatal(err)
	}
	if pc.C != rows[0].c || pc.Epsilon != rows[0].eps || pc.Kernel != (svr.RBF{Gamma: rows[0].gamma}) {
		t.Errorf("the rule's pipeline config: C %v, ε %v, kernel %v", pc.C, pc.Epsilon, pc.Kernel)
	}
}

// tuneJSON runs tune --json and decodes its report.
func tuneJSON(t *testing.T, args ...string) tuneReportJSON {
	t.Helper()
	out := mustCLI(t, append([]string{"tune", "--json"}, args...)...)
	var r tuneReportJSON
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("stdout is not one JSON report: %v\n%s", err, out)
	}
	return r
}

// tuneReportJSON is the --json report as a client reads it.
type tuneReportJSON struct {
	Model string `json:"model"`
	Files []struct {
		File    string   `json:"file"`
		Samples int      `json:"samples"`
		Dim     int      `json:"dim"`
		Windows [][2]int `json:"windows"`
		Best    struct {
			C, Epsilon, Gamma float64
			LOOMAE            float64 `json:"loo_mae"`
		} `json:"best"`
	} `json:"files"`
	Grid []struct {
		C, Epsilon, Gamma float64
		Score             float64   `json:"score"`
		LOOMAE            []float64 `json:"loo_mae"`
	} `json:"grid"`
	Chosen struct{ C, Epsilon, Gamma float64 } `json:"chosen"`
	TOML   string                              `json:"toml"`
}

// TestTuneLOOMatchesDirect: the LOO MAE tune reports for a setting is the
// mean absolute leave-one-out error of svr.LeaveOneOut on the last W
// samples pipeline.Samples gives for the file (one window).
func TestTuneLOOMatchesDirect(t *testing.T) {
	t.Parallel()
	file := tuneSeries(t, "sensor_temperature_15min", 500)
	r := tuneJSON(t, "--c", "3", "--epsilon", "0.1,0.5", "--gamma", "0.01", "--windows", "1", "--window", "80", file)
	if len(r.Files) != 1 || len(r.Files[0].Windows) != 1 || len(r.Grid) != 2 {
		t.Fatalf("report: %+v", r)
	}
	cfg := pipeline.DefaultConfig()
	cfg.Window = 80
	data, err := sources.ReadCSV(file, "value", "", false)
	if err != nil {
		t.Fatal(err)
	}
	pts := make([]pipeline.Point, len(data.Values))
	for i := range pts {
		pts[i] = pipeline.Point{Time: data.Times[i], Value: data.Values[i]}
	}
	xs, ys, err := pipeline.Samples(cfg, pts)
	if err != nil {
		t.Fatal(err)
	}
	n := len(xs)
	if w := r.Files[0].Windows[0]; w != [2]int{n - 80, n} || r.Files[0].Dim != len(xs[0]) {
		t.Fatalf("window %v of dimension %d, want [%d, %d) of dimension %d", w, r.Files[0].Dim, n-80, n, len(xs[0]))
	}
	for _, g := range r.Grid {
		loo, err := svr.LeaveOneOut(svr.AOSVRConfig{Dim: len(xs[0]), Kernel: svr.RBF{Gamma: g.Gamma}, C: g.C, Epsilon: g.Epsilon}, xs[n-80:], ys[n-80:])
		if err != nil {
			t.Fatal(err)
		}
		var sum float64
		for i, p := range loo.Pred {
			sum += math.Abs(p - ys[n-80+i])
		}
		if want := sum / 80; math.Abs(g.LOOMAE[0]-want) > 1e-12*want {
			t.Errorf("ε = %v: reported LOO MAE %v, direct %v", g.Epsilon, g.LOOMAE[0], want)
		}
	}
}

// TestTuneSeveralFiles: with two files, each row's score is the geometric
// mean of its MAE relative to each file's best, the grid is sorted by it,
// and each file's best is the least MAE of its column.
func TestTuneSeveralFiles(t *testing.T) {
	t.Parallel()
	a := tuneSeries(t, "santafe_laser_a", 300)
	b := tuneSeries(t, "market_price_daily", 300)
	r := tuneJSON(t, "--c", "1,30", "--epsilon", "0.1,0.5", "--gamma", "0.01,0.3", "--windows", "2", "--max-samples", "50", a, b)
	if len(r.Files) != 2 || len(r.Grid) != 8 {
		t.Fatalf("%d files, %d rows", len(r.Files), len(r.Grid))
	}
	for f := range r.Files {
		least := math.Inf(1)
		for _, g := range r.Grid {
			least = math.Min(least, g.LOOMAE[f])
		}
		if r.Files[f].Best.LOOMAE != least {
			t.Errorf("file %d: best %v, least of its column %v", f, r.Files[f].Best.LOOMAE, least)
		}
	}
	for i, g := range r.Grid {
		want := math.Sqrt(g.LOOMAE[0] / r.Files[0].Best.LOOMAE * g.LOOMAE[1] / r.Files[1].Best.LOOMAE)
		if math.Abs(g.Score-want) > 1e-12*want {
			t.Errorf("row %d: score %v, geo-mean of relative MAE %v", i, g.Score, want)
		}
		if i > 0 && g.Score < r.Grid[i-1].Score {
			t.Errorf("row %d: score %v after %v: not sorted", i, g.Score, r.Grid[i-1].Score)
		}
	}
	if c := r.Chosen; c.C != r.Grid[0].C || c.Epsilon != r.Grid[0].Epsilon || c.Gamma != r.Grid[0].Gamma {
		t.Errorf("chosen %+v, first row %+v", c, r.Grid[0])
	}
	// The grid's spread shows the choice matters: its worst setting is
	// clearly worse than its best.
	if last := r.Grid[len(r.Grid)-1].Score; !(last > 1.05) {
		t.Errorf("worst setting's score %v: every setting alike, the test cannot tell a choice", last)
	}
}

// TestTuneUsage: bad flags and arguments are usage errors (exit 2) that
// name the problem.
func TestTuneUsage(t *testing.T) {
	t.Parallel()
	file := tuneSeries(t, "santafe_laser_a", 200)
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no file", nil, "no FILE given"},
		{"zero C", []string{"--c", "1,0", file}, "--c: 0: C must be positive"},
		{"negative epsilon", []string{"--epsilon", "-0.1", file}, "--epsilon: -0.1: epsilon must not be negative"},
		{"gamma not a number", []string{"--gamma", "0.1,x", file}, `not a finite number: "x"`},
		{"empty list item", []string{"--c", "1,,3", file}, `not a finite number: ""`},
		{"windows", []string{"--windows", "0", file}, "--windows must be at least 1"},
		{"max samples", []string{"--max_samples", "1", file}, "--max_samples must be at least 2"},
		{"top", []string{"--top", "-1", file}, "--top must not be negative"},
		{"match", []string{"--match", "[", file}, `--match "[": not a glob`},
		{"other kind", []string{"--model", "norma", file}, "only aosvr can be tuned"},
		{"linear kernel with gamma", []string{"--kernel", "linear", "--gamma", "1", file}, "--gamma: the linear kernel has no gamma"},
		{"unknown flag", []string{"--nope", file}, "flag provided but not defined: -nope"},
		{"bad [model] flag", []string{"--dim", "0", file}, "dim must be at least 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, errOut, code := cli(t, append([]string{"tune"}, tc.args...)...)
			if code == 0 || !strings.Contains(errOut, tc.want) {
				t.Errorf("exit %d, stderr %q; want an error containing %q", code, errOut, tc.want)
			}
			if tc.name != "bad [model] flag" && code != 2 {
				t.Errorf("exit %d, want 2 (usage)", code)
			}
		})
	}
	if _, errOut, code := cli(t, "tune", filepath.Join(t.TempDir(), "missing.csv")); code != 1 || !strings.Contains(errOut, "missing.csv") {
		t.Errorf("missing file: exit %d, stderr %q", code, errOut)
	}
	out, errOut, code := cli(t, "tune", "-h")
	if code != 0 || !strings.Contains(errOut, "--windows") && !strings.Contains(errOut, "-windows") || out != "" {
		t.Errorf("-h: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}
