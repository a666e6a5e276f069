package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/forecastd/forecastd/lab/baseline"
	"github.com/forecastd/forecastd/lab/dataset"
)

// benchDir writes a directory of inputs for the per-series report and
// returns it with the values of its series:
//
//	a.csv        300 points of Santa Fe a minute apart (no seasonal naive: a day is 1440 points)
//	b.csv        240 hourly points of a daily cycle (seasonal naive with P = 24)
//	d.lp         line protocol: 300 lines of cpu (two numeric fields, a string field, a comment), 2 of mem
//	sub/c.csv    3 points: nothing can be scored
//	README.md    not an input
func benchDir(t *testing.T) (dir string, values map[string][]float64) {
	t.Helper()
	dir = t.TempDir()
	laser := dataset.MustLoad("santafe_laser_a").Values
	values = map[string][]float64{}
	write := func(name, text string) {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var b strings.Builder
	b.WriteString("t,value\n")
	for i, v := range laser[:300] {
		fmt.Fprintf(&b, "%d,%g\n", 1_700_000_000+60*i, v)
		values["a.csv"] = append(values["a.csv"], v)
	}
	write("a.csv", b.String())

	b.Reset()
	b.WriteString("timestamp,value\n")
	t0 := time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC)
	for i := range 240 {
		v := math.Round(100*(20+5*math.Sin(2*math.Pi*float64(i)/24)+laser[i]/100)) / 100
		fmt.Fprintf(&b, "%s,%g\n", t0.Add(time.Duration(i)*time.Hour).Format("2006-01-02 15:04:05"), v)
		values["b.csv"] = append(values["b.csv"], v)
	}
	write("b.csv", b.String())

	b.Reset()
	b.WriteString("# written by Telegraf's outputs.file\n")
	const idle, user = "cpu,cpu=cpu0,host=b usage_idle", "cpu,cpu=cpu0,host=b usage_user"
	for i := range 300 {
		vi, vu := 100-laser[i]/10, int(laser[i])
		fmt.Fprintf(&b, "cpu,host=b,cpu=cpu0 usage_idle=%g,usage_user=%di,status=\"ok\" %d\n", vi, vu, int64(1_700_000_000+10*i)*1e9)
		values[idle] = append(values[idle], vi)
		values[user] = append(values[user], float64(vu))
		if i < 2 {
			fmt.Fprintf(&b, "mem,host=b used=%du %d\n", 1000+i, int64(1_700_000_000+10*i)*1e9)
		}
	}
	write("d.lp", b.String())
	write("sub/c.csv", "t,value\n1,1\n2,2\n3,3\n")
	write("README.md", "# not a series\n")
	return dir, values
}

// benchJSON runs a backtest with --json and decodes the per-series report;
// the exit status must be code.
func benchJSON(t *testing.T, code int, args ...string) (series []map[string]any, summary map[string]any) {
	t.Helper()
	out, errOut, c := cli(t, append([]string{"backtest", "--json"}, args...)...)
	if c != code {
		t.Fatalf("backtest %v: exit %d, want %d\n%s", args, c, code, errOut)
	}
	var rep struct {
		Series  []map[string]any `json:"series"`
		Summary map[string]any   `json:"summary"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("stdout is not one JSON object: %v\n%s", err, out)
	}
	return rep.Series, rep.Summary
}

// TestBacktestBench runs the per-series report over a directory of CSV and
// line-protocol files and checks every row against single-file runs and a
// recomputation of the baselines, and the summary against the rows.
func TestBacktestBench(t *testing.T) {
	dir, values := benchDir(t)
	series, sum := benchJSON(t, 0, "--score-from", "0.5", dir)
	const idle, user = "cpu,cpu=cpu0,host=b usage_idle", "cpu,cpu=cpu0,host=b usage_user"
	lp := filepath.Join(dir, "d.lp")
	want := []struct{ series, file, status, key string }{
		{filepath.Join(dir, "a.csv"), filepath.Join(dir, "a.csv"), "scored", "a.csv"},
		{filepath.Join(dir, "b.csv"), filepath.Join(dir, "b.csv"), "scored", "b.csv"},
		{idle, lp, "scored", idle},
		{user, lp, "scored", user},
		{"mem,host=b used", lp, "not_scored", ""},
		{filepath.Join(dir, "sub", "c.csv"), filepath.Join(dir, "sub", "c.csv"), "not_scored", ""},
	}
	if len(series) != len(want) {
		t.Fatalf("%d series, want %d: %v", len(series), len(want), series)
	}
	for i, w := range want {
		r := series[i]
		if r["series"] != w.series || r["file"] != w.file || r["status"] != w.status {
			t.Errorf("series %d: %v, %v, %v; want %s, %s, %s", i, r["series"], r["file"], r["status"], w.series, w.file, w.status)
			continue
		}
		if w.status != "scored" {
			if reason, _ := r["reason"].(string); !strings.Contains(reason, "no forecast was made") || r["mae"] != nil {
				t.Errorf("%s: reason %q, mae %v; want why nothing was scored, and null", w.series, reason, r["mae"])
			}
			continue
		}
		v := values[w.key]
		n := len(v)
		if num(t, r, "points") != float64(n) || num(t, r, "score_start") != float64(n/2) {
			t.Errorf("%s: points %v, score_start %v; want %d, %d", w.series, r["points"], r["score_start"], n, n/2)
		}
		// The same series alone, through the single-file output: the same
		// forecasts on the same scored points.
		single := w.file
		if w.file == lp {
			single = filepath.Join(t.TempDir(), "one.lp")
			var b strings.Builder
			for j, x := range v {
				field := strings.Fields(w.key)[1]
				fmt.Fprintf(&b, "cpu,host=b,cpu=cpu0 %s=%g %d\n", field, x, int64(1_700_000_000+10*j)*1e9)
			}
			if err := os.WriteFile(single, []byte(b.String()), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		out := filepath.Join(t.TempDir(), "rows.csv")
		m := backtestJSON(t, "--score-from", "0.5", "--out", out, single)
		rows := readOut(t, out)
		if num(t, r, "scored") != float64(len(rows)) || num(t, m, "n_scored") != float64(len(rows)) || rows[0].index < n/2 {
			t.Fatalf("%s: scored %v, single run %v, %d rows from %d; want rows from %d", w.series, r["scored"], m["n_scored"], len(rows), rows[0].index, n/2)
		}
		for _, k := range []string{"mae", "persistence_mae"} {
			if got, want := num(t, r, k), num(t, m, k); math.Abs(got-want) > 1e-12*want {
				t.Errorf("%s: %s %v, single-file run %v", w.series, k, got, want)
			}
		}
		// The baselines on the rows' points, by hand.
		spacing := time.Minute
		switch w.key {
		case "b.csv":
			spacing = time.Hour
		case idle, user:
			spacing = 10 * time.Second
		}
		b := baseline.Compute(v, spacing)
		var pae, sae, ses float64
		for _, row := range rows {
			pae += math.Abs(v[row.index-1] - row.actual)
			ses += math.Abs(b.SES[row.index] - row.actual)
			if b.Period > 0 {
				sae += math.Abs(v[row.index-b.Period] - row.actual)
			}
		}
		nr := float64(len(rows))
		mae := num(t, r, "mae")
		for _, c := range []struct {
			key  string
			want float64
		}{
			{"persistence_mae", pae / nr}, {"ses_mae", ses / nr}, {"ses_alpha", b.Alpha},
			{"mae_vs_persistence", mae / (pae / nr)}, {"mae_vs_ses", mae / (ses / nr)},
		} {
			if got := num(t, r, c.key); math.Abs(got-c.want) > 1e-12*math.Abs(c.want) {
				t.Errorf("%s: %s %v, recomputed %v", w.series, c.key, got, c.want)
			}
		}
		if w.key == "b.csv" {
			if num(t, r, "snaive_period") != 24 || math.Abs(num(t, r, "snaive_mae")-sae/nr) > 1e-12*sae/nr ||
				math.Abs(num(t, r, "mae_vs_snaive")-mae/(sae/nr)) > 1e-12 {
				t.Errorf("%s: snaive_period %v, snaive_mae %v, mae_vs_snaive %v; want 24, %v, %v", w.series, r["snaive_period"], r["snaive_mae"], r["mae_vs_snaive"], sae/nr, mae/(sae/nr))
			}
		} else if num(t, r, "snaive_period") != 0 || r["snaive_mae"] != nil || r["mae_vs_snaive"] != nil {
			t.Errorf("%s: snaive_period %v, snaive_mae %v, mae_vs_snaive %v; want 0, null, null (shorter than 4 days)", w.series, r["snaive_period"], r["snaive_mae"], r["mae_vs_snaive"])
		}
		if c := num(t, r, "coverage"); math.Abs(c-num(t, m, "interval_coverage")) > 1e-12 {
			t.Errorf("%s: coverage %v, single-file run %v", w.series, c, m["interval_coverage"])
		}
		if !(num(t, r, "us_per_point") > 0) {
			t.Errorf("%s: us_per_point %v", w.series, r["us_per_point"])
		}
	}

	// The summary from the rows.
	for _, k := range []struct {
		key  string
		want float64
	}{{"series", 6}, {"series_scored", 4}, {"series_not_scored", 2}, {"series_failed", 0}} {
		if num(t, sum, k.key) != k.want {
			t.Errorf("summary %s = %v, want %v", k.key, sum[k.key], k.want)
		}
	}
	cmin, cmax := math.Inf(1), math.Inf(-1)
	for _, rk := range []string{"mae_vs_persistence", "mae_vs_snaive", "mae_vs_ses"} {
		var logs float64
		var n, worse int
		worst, worstSeries := 0.0, ""
		for _, r := range series {
			x, ok := r[rk].(float64)
			if !ok || r["status"] != "scored" {
				continue
			}
			logs += math.Log(x)
			n++
			if x > 1 {
				worse++
			}
			if x > worst {
				worst, worstSeries = x, r["series"].(string)
			}
			c := num(t, r, "coverage")
			cmin, cmax = math.Min(cmin, c), math.Max(cmax, c)
		}
		s, _ := sum[rk].(map[string]any)
		if n == 0 || s == nil {
			t.Fatalf("%s: %d series, summary %v", rk, n, sum[rk])
		}
		if g := math.Exp(logs / float64(n)); math.Abs(num(t, s, "geo_mean")-g) > 1e-12*g ||
			num(t, s, "series") != float64(n) || num(t, s, "worse") != float64(worse) || num(t, s, "worst") != worst || s["worst_series"] != worstSeries {
			t.Errorf("summary %s = %v; recomputed geo_mean %v over %d series, %d worse, worst %v (%s)", rk, s, g, n, worse, worst, worstSeries)
		}
	}
	if num(t, s0(sum, "mae_vs_snaive"), "series") != 1 {
		t.Errorf("seasonal naive summarised over %v series, want b.csv alone", s0(sum, "mae_vs_snaive")["series"])
	}
	if num(t, sum, "coverage_min") != cmin || num(t, sum, "coverage_max") != cmax {
		t.Errorf("coverage min %v max %v, want %v %v", sum["coverage_min"], sum["coverage_max"], cmin, cmax)
	}

	// The order and the numbers do not depend on how many series run at
	// once; timings aside.
	strip := func(ss []map[string]any) []map[string]any {
		for _, r := range ss {
			delete(r, "us_per_point")
		}
		return ss
	}
	one, _ := benchJSON(t, 0, "--score-from", "0.5", "--jobs", "1", dir)
	many, _ := benchJSON(t, 0, "--score-from", "0.5", "--jobs", "4", dir)
	if !reflect.DeepEqual(strip(one), strip(series)) || !reflect.DeepEqual(strip(many), strip(series)) {
		t.Errorf("--jobs 1 and 4 differ from the default:\n%v\n%v\n%v", one, many, series)
	}

	// The text report: a row per series, in order, and the summary.
	out, errOut, code := cli(t, "backtest", "--score-from", "0.5", dir)
	if code != 0 {
		t.Fatalf("text report: exit %d\n%s", code, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 1+len(want)+5 || !strings.Contains(lines[0], "MAE/persistence") || !strings.Contains(lines[0], "µs/point") {
		t.Fatalf("text report:\n%s", out)
	}
	for i, w := range want {
		l := lines[1+i]
		if !strings.HasPrefix(l, w.series+" ") || (w.status == "scored") == strings.Contains(l, "not scored: no forecast was made") {
			t.Errorf("row %d %q, want %s %s", i, l, w.series, w.status)
		}
	}
	if strings.Contains(lines[2], "n/a") || !strings.Contains(lines[3], "n/a") { // b.csv has a seasonal naive, the cpu series none
		t.Errorf("seasonal naive n/a where it is undefined only:\n%s\n%s", lines[2], lines[3])
	}
	for _, w := range []string{"aosvr: 4 of 6 series scored (2 not scored, 0 failed)", "from point ⌊0.5·N⌋", "geo-mean", "worse than persistence", "coverage min"} {
		if !strings.Contains(out, w) {
			t.Errorf("text summary lacks %q:\n%s", w, out)
		}
	}
}

// s0 returns the nested object m[key].
func s0(m map[string]any, key string) map[string]any {
	s, _ := m[key].(map[string]any)
	return s
}

// TestBacktestBenchExit: a series that cannot be scored is reported and
// skipped; the exit status is 1 only if nothing at all was scored, or a
// file could not be read.
func TestBacktestBenchExit(t *testing.T) {
	dir, _ := benchDir(t)
	short := filepath.Join(dir, "sub", "c.csv")
	lp := filepath.Join(dir, "d.lp")

	// One short file alone: an error saying why, no NaN summary.
	out, errOut, code := cli(t, "backtest", short)
	if code != 1 || out != "" || !strings.Contains(errOut, short+": nothing scored: no forecast was made: 3 points are too few") {
		t.Errorf("short file: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	// Forecasts only before --train.
	_, errOut, code = cli(t, "backtest", "--train", "300", filepath.Join(dir, "a.csv"))
	if code != 1 || !strings.Contains(errOut, "the last for point 299, and scoring starts at point 300 (--train 300) of 300") {
		t.Errorf("nothing after --score-from: exit %d, stderr %q", code, errOut)
	}
	// Several series none of which can be scored: the report, then exit 1.
	series, sum := benchJSON(t, 1, short, short)
	if len(series) != 2 || num(t, sum, "series_scored") != 0 || s0(sum, "mae_vs_persistence")["geo_mean"] != nil {
		t.Errorf("nothing scored: %v, %v", series, sum)
	}
	_, errOut, _ = cli(t, "backtest", short, short)
	if !strings.Contains(errOut, "nothing scored in any of the 2 series") {
		t.Errorf("stderr %q", errOut)
	}
	// A short series among scored ones: exit 0.
	if series, _ := benchJSON(t, 0, short, filepath.Join(dir, "a.csv")); series[0]["status"] != "not_scored" || series[1]["status"] != "scored" {
		t.Errorf("statuses %v, %v", series[0]["status"], series[1]["status"])
	}
	// An unreadable file is a row with its error, and exit 1.
	bad := writeSeries(t, "bad.csv", "t,value", []string{"1,1", "2,x"})
	series, sum = benchJSON(t, 1, bad, filepath.Join(dir, "a.csv"))
	if series[0]["status"] != "error" || !strings.Contains(series[0]["reason"].(string), `cannot read "x"`) || num(t, sum, "series_failed") != 1 {
		t.Errorf("unreadable file: %v", series[0])
	}
	// A line-protocol file of one series is the single-file output.
	one := filepath.Join(t.TempDir(), "one.influx")
	var b strings.Builder
	for i, v := range dataset.MustLoad("santafe_laser_a").Values[:300] {
		fmt.Fprintf(&b, "laser,rig=a power=%g %d\n", v, int64(1_700_000_000+i)*1e9)
	}
	if err := os.WriteFile(one, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if out := mustCLI(t, "backtest", one); !strings.HasPrefix(out, "laser,rig=a power: ") || !strings.Contains(out, "300 points") {
		t.Errorf("one line-protocol series:\n%s", out)
	}
	// --out and --plot take one series.
	if _, errOut, code := cli(t, "backtest", "--out", filepath.Join(t.TempDir(), "o.csv"), lp); code != 2 || !strings.Contains(errOut, "holds 3 series") {
		t.Errorf("--out with a file of 3 series: exit %d, %q", code, errOut)
	}
	// A bad line names the file and line; --skip-bad counts it.
	badLP := filepath.Join(t.TempDir(), "bad.lp")
	if err := os.WriteFile(badLP, []byte(b.String()+"laser,rig=a power=1 notatime\n"+"laser,rig=a power=2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, errOut, code := cli(t, "backtest", badLP); code != 1 || !strings.Contains(errOut, badLP+":301: ") {
		t.Errorf("bad line: exit %d, %q", code, errOut)
	}
	if m := backtestJSON(t, "--skip-bad", badLP); num(t, m, "skipped_rows") != 2 || num(t, m, "n_points") != 300 {
		t.Errorf("--skip-bad: skipped %v of %v", m["skipped_rows"], m["n_points"])
	}
}

// TestBacktestTimeColumn: --time-column picks the time column by name.
func TestBacktestTimeColumn(t *testing.T) {
	v := dataset.MustLoad("santafe_laser_a").Values[:200]
	rows := make([]string, len(v))
	for i, x := range v {
		rows[i] = fmt.Sprintf("%d,%s,%g", i, time.Date(2024, 1, 1, i, 0, 0, 0, time.UTC).Format(time.RFC3339), x)
	}
	in := writeSeries(t, "s.csv", "t,when,value", rows)
	out := filepath.Join(t.TempDir(), "o.csv")
	mustCLI(t, "backtest", "--time-column", "when", "--out", out, in)
	for _, r := range readOut(t, out) {
		if want := time.Date(2024, 1, 1, r.index, 0, 0, 0, time.UTC).Format(time.RFC3339); r.time != want {
			t.Fatalf("row %d: time %q, want %q", r.index, r.time, want)
		}
	}
	mustCLI(t, "backtest", "--out", out, in) // default: the t column
	if r := readOut(t, out); r[0].time != fmt.Sprint(r[0].index) {
		t.Errorf("default time column: row %+v", r[0])
	}
}

// TestBacktestBenchRules: with --config, each series of a multi-series
// backtest takes the first [[rules]] entry matching its key, as in the
// daemon, with the flags over it: here a NORMA of 40 terms for the idle
// series, the default AOSVR for the other; and the Telegraf capture's
// percentages stay within their bounds.
func TestBacktestBenchRules(t *testing.T) {
	var b strings.Builder
	for j := range 300 {
		ts := int64(1_700_000_000+10*j) * 1e9
		fmt.Fprintf(&b, "cpu,host=b usage_idle=%g,usage_user=%g %d\n", 90+5*math.Sin(float64(j)/7), 5+3*math.Cos(float64(j)/5), ts)
	}
	lp := filepath.Join(t.TempDir(), "cpu.lp")
	if err := os.WriteFile(lp, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(t.TempDir(), "f.toml")
	if err := os.WriteFile(cfg, []byte(`
[model]
kind = "aosvr"
[[rules]]
match = "cpu,* usage_idle"
kind = "norma"
norma_tau = 40
norma_merge = 0
`), 0o644); err != nil {
		t.Fatal(err)
	}
	series, _ := benchJSON(t, 0, "--config", cfg, "--score-from", "0.5", lp)
	if len(series) != 2 {
		t.Fatalf("%d series, want 2", len(series))
	}
	if series[0]["series"] != "cpu,host=b usage_idle" || num(t, series[0], "model_size") != 40 {
		t.Errorf("idle: %v, model size %v; want the rule's NORMA of 40 terms", series[0]["series"], series[0]["model_size"])
	}
	if num(t, series[1], "model_size") == 40 {
		t.Errorf("user took the idle series' rule")
	}
	// The flags win over the rule, as over [model].
	series, _ = benchJSON(t, 0, "--config", cfg, "--norma_tau", "30", "--score-from", "0.5", lp)
	if num(t, series[0], "model_size") != 30 {
		t.Errorf("idle with --norma_tau 30: model size %v", series[0]["model_size"])
	}
}
