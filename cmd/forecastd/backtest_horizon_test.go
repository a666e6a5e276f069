package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"github.com/forecastd/forecastd/internal/config/schema"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/forecastd/forecastd/internal/testserver/influxtest"
	"github.com/forecastd/forecastd/lab/dataset"
	"github.com/forecastd/forecastd/pipeline"
	"github.com/forecastd/forecastd/sinks"
)

// readOutCSV reads a backtest --out file: its header and rows.
func readOutCSV(t *testing.T, path string) ([]string, [][]string) {
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
	return recs[0], recs[1:]
}

// TestBacktestHorizon: with --horizon 3 the --out file has a horizon
// column and, for each target point, its steps in increasing order; its
// step-1 rows are the rows of the run without --horizon, byte for byte;
// --json's by-horizon arrays have 3 entries, step 1's the one-step
// figures, and each step's MAE and coverage are those of its rows.
func TestBacktestHorizon(t *testing.T) {
	dir := t.TempDir()
	file := "../../testdata/nab/nyc_taxi.csv"
	out1, out3 := filepath.Join(dir, "h1.csv"), filepath.Join(dir, "h3.csv")
	var so, se bytes.Buffer
	if code := run([]string{"backtest", "--out", out1, "--score-from", "0.5", file}, &so, &se); code != 0 {
		t.Fatalf("exit %d: %s", code, se.String())
	}
	so.Reset()
	if code := run([]string{"backtest", "--horizon", "3", "--out", out3, "--score-from", "0.5", "--json", file}, &so, &se); code != 0 {
		t.Fatalf("exit %d: %s", code, se.String())
	}
	h1, rows1 := readOutCSV(t, out1)
	h3, rows3 := readOutCSV(t, out3)
	if strings.Join(h1, ",") != "index,time,actual,forecast,lower,upper,anomaly_score,anomaly" ||
		strings.Join(h3, ",") != "index,time,actual,forecast,lower,upper,horizon,anomaly_score,anomaly" {
		t.Fatalf("headers %v and %v", h1, h3)
	}
	var step1 [][]string
	ae, n, cov, nint := make([]float64, 3), make([]int, 3), make([]int, 3), make([]int, 3)
	for k, r := range rows3 {
		h, _ := strconv.Atoi(r[6])
		if h < 1 || h > 3 {
			t.Fatalf("row %v: horizon %d", r, h)
		}
		if k > 0 && rows3[k-1][0] == r[0] && rows3[k-1][6] >= r[6] {
			t.Fatalf("rows %v, %v: steps of a point not in increasing order", rows3[k-1], r)
		}
		if h == 1 { // the anomaly columns are step 1's; empty and 0 for later steps
			step1 = append(step1, append(slices.Clip(r[:6]), r[7:]...))
		} else if r[7] != "" || r[8] != "0" {
			t.Fatalf("row %v: step %d has anomaly columns", r, h)
		}
		y, _ := strconv.ParseFloat(r[2], 64)
		f, _ := strconv.ParseFloat(r[3], 64)
		ae[h-1] += math.Abs(y - f)
		n[h-1]++
		if r[4] != "" {
			lo, _ := strconv.ParseFloat(r[4], 64)
			hi, _ := strconv.ParseFloat(r[5], 64)
			nint[h-1]++
			if lo <= y && y <= hi {
				cov[h-1]++
			}
		}
	}
	if len(step1) != len(rows1) {
		t.Fatalf("%d step-1 rows, %d rows without --horizon", len(step1), len(rows1))
	}
	for i := range rows1 {
		if strings.Join(step1[i], ",") != strings.Join(rows1[i], ",") {
			t.Fatalf("step-1 row %d %v, without --horizon %v", i, step1[i], rows1[i])
		}
	}
	var sum struct {
		MAE               float64   `json:"mae"`
		Horizon           int       `json:"horizon"`
		MAEByHorizon      []float64 `json:"mae_by_horizon"`
		PersistenceByH    []float64 `json:"persistence_mae_by_horizon"`
		SnaiveByH         []float64 `json:"snaive_mae_by_horizon"`
		CoverageByHorizon []float64 `json:"coverage_by_horizon"`
	}
	if err := json.Unmarshal(so.Bytes(), &sum); err != nil {
		t.Fatalf("%s: %v", so.String(), err)
	}
	if sum.Horizon != 3 || len(sum.MAEByHorizon) != 3 || len(sum.PersistenceByH) != 3 || len(sum.SnaiveByH) != 3 || len(sum.CoverageByHorizon) != 3 || sum.MAEByHorizon[0] != sum.MAE {
		t.Fatalf("summary %s", so.String())
	}
	for h := range 3 {
		if m := ae[h] / float64(n[h]); math.Abs(m-sum.MAEByHorizon[h]) > 1e-9*m {
			t.Errorf("step %d: mae_by_horizon %v, its rows' %v", h+1, sum.MAEByHorizon[h], m)
		}
		if c := float64(cov[h]) / float64(nint[h]); c != sum.CoverageByHorizon[h] {
			t.Errorf("step %d: coverage_by_horizon %v, its rows' %v", h+1, sum.CoverageByHorizon[h], c)
		}
		// The series has a strong daily cycle: both baselines lose.
		if !(sum.MAEByHorizon[h] < sum.PersistenceByH[h] && sum.MAEByHorizon[h] < sum.SnaiveByH[h]) {
			t.Errorf("step %d: mae %v, persistence %v, seasonal naive %v", h+1, sum.MAEByHorizon[h], sum.PersistenceByH[h], sum.SnaiveByH[h])
		}
	}
	if !(sum.PersistenceByH[2] > sum.PersistenceByH[0]) {
		t.Errorf("persistence's error does not grow with the step: %v", sum.PersistenceByH)
	}
}

// TestDashboardHorizon: every InfluxQL query of grafana/forecastd.json
// answers on a series forecasting 3 steps ahead, written by the InfluxDB
// sink into a real InfluxDB (variables substituted as Grafana would), the
// one-step panels see step 1 only, and "MAE by step" gives each step's
// MAE of the forecasts written; beside it the same series at a step of a
// minute, which the panels show when the step variable selects it, and
// only then.
func TestDashboardHorizon(t *testing.T) {
	influx := influxtest.Shared(t, influxtest.Options{})
	is, err := sinks.NewInflux(sinks.InfluxConfig{URL: influx.URL, Bucket: influx.Database, FlushInterval: schema.Dur(50 * time.Millisecond)})
	if err != nil {
		t.Fatal(err)
	}
	cfg := pipeline.DefaultConfig()
	cfg.Window, cfg.Horizon = 50, 3
	s, err := pipeline.New("dash", cfg)
	if err != nil {
		t.Fatal(err)
	}
	ss := &sinks.SeriesSink{Model: "aosvr", Subject: "dash", Out: is}
	// The same series at a step of a minute, as a [[resolutions]] entry
	// makes it: its records under the same name, tagged step=1m.
	mcfg := cfg
	mcfg.Step = time.Minute
	ms, err := pipeline.New(pipeline.ResolutionKey("dash", time.Minute), mcfg)
	if err != nil {
		t.Fatal(err)
	}
	mss := &sinks.SeriesSink{Model: "aosvr", Subject: "dash", Step: "1m", Name: "dash", Out: is}
	var aeMin float64
	var nMin int
	t0 := time.Now().Add(-2 * time.Hour).Truncate(time.Minute)
	ae, n := make([]float64, 3), make([]int, 3)
	var aeOne float64
	var nOne int
	var newest []pipeline.Step // the raw series' newest path
	for i := range 600 {
		p := pipeline.Point{Time: t0.Add(time.Duration(i) * 10 * time.Second), Value: 10 + math.Sin(float64(i)/6)}
		mres, err := ms.Push(p)
		if err != nil {
			t.Fatal(err)
		}
		if mres.HasOutcome {
			aeMin += math.Abs(mres.Outcome.Actual - mres.Outcome.Forecast.Value)
			nMin++
			if err := mss.Outcome(ms.Key(), mres.Outcome); err != nil {
				t.Fatal(err)
			}
		}
		if mres.HasForecast {
			if err := mss.Forecast(ms.Key(), mres.Forecast); err != nil {
				t.Fatal(err)
			}
		}
		if i < 450 {
			continue // the raw series: its last 150 points
		}
		res, err := s.Push(p)
		if err != nil {
			t.Fatal(err)
		}
		if res.HasOutcome {
			for _, st := range res.Outcome.Path {
				ae[st.Horizon-1] += math.Abs(res.Outcome.Actual - st.Value)
				n[st.Horizon-1]++
			}
			aeOne += math.Abs(res.Outcome.Actual - res.Outcome.Forecast.Value)
			nOne++
			if err := ss.Outcome("dash", res.Outcome); err != nil {
				t.Fatal(err)
			}
		}
		if res.HasForecast {
			if err := ss.Forecast("dash", res.Forecast); err != nil {
				t.Fatal(err)
			}
			newest = append(newest[:0], res.Forecast.Path...)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := is.Close(ctx); err != nil {
		t.Fatal(err)
	}

	panels := dashboardPanels(t)
	vars := map[string]any{"series": "dash", "step": allValue("(?:)"), "timeFilter": allValue("time >= now() - 2h AND time <= now() + 1h")}
	// The newest path panel draws the newest origin's H steps, each at its
	// target time with its interval, and nothing else.
	pathPanel := false
	for _, p := range panels {
		if !strings.Contains(p.Title, "newest forecast to the horizon") {
			continue
		}
		pathPanel = true
		cols, vals := influxSeries(t, influx, grafanaQuery(p.Targets[0].Query, map[string]any{"series": "dash", "step": allValue("^$"), "timeFilter": vars["timeFilter"]}))
		if len(newest) != 3 || len(vals) != len(newest) || !slices.Equal(cols, []string{"time", "forecast", "lower", "upper"}) {
			t.Fatalf("panel %q: columns %q, %d rows; want the newest path's %d steps:\n%v", p.Title, cols, len(vals), len(newest), vals)
		}
		for i, st := range newest {
			tm, _ := time.Parse(time.RFC3339Nano, vals[i][0].(string))
			if !tm.Equal(st.Time) || vals[i][1] != st.Value || vals[i][2] != st.Lower || vals[i][3] != st.Upper {
				t.Errorf("panel %q: row %d %v, want step %d at %v: %v [%v, %v]", p.Title, i, vals[i], st.Horizon, st.Time, st.Value, st.Lower, st.Upper)
			}
		}
	}
	if !pathPanel {
		t.Error("no panel draws the newest forecast to the horizon")
	}
	stepMAE := false
	for _, p := range panels {
		for _, q := range p.Targets {
			if thresholdQuery(q.Query) {
				continue // no thresholds here: TestDashboardThresholds
			}
			body := influx.Query(t, grafanaQuery(q.Query, vars))
			var res struct {
				Results []struct {
					Series []struct {
						Tags    map[string]string `json:"tags"`
						Columns []string          `json:"columns"`
						Values  [][]any           `json:"values"`
					} `json:"series"`
				} `json:"results"`
			}
			if err := json.Unmarshal([]byte(body), &res); err != nil {
				t.Fatal(err)
			}
			if len(res.Results) == 0 || len(res.Results[0].Series) == 0 {
				t.Fatalf("panel %q: no data:\n%s\n%s", p.Title, q.Query, body)
			}
			var order []string // of the horizon tag, as InfluxDB gives it
			for _, ser := range res.Results[0].Series {
				order = append(order, ser.Tags["horizon"])
				if col := ser.Columns[1]; col == "MAE" {
					if m := ser.Values[0][1].(float64); math.Abs(m-aeOne/float64(nOne)) > 1e-9 {
						t.Errorf("panel %q: MAE %v, step 1's %v", p.Title, m, aeOne/float64(nOne))
					}
				} else if col == "step MAE" {
					stepMAE = true
					h, _ := strconv.Atoi(ser.Tags["horizon"])
					if h < 1 || h > 3 {
						t.Fatalf("panel %q: series %v", p.Title, ser)
					}
					if m, want := ser.Values[0][1].(float64), ae[h-1]/float64(n[h-1]); math.Abs(m-want) > 1e-9 {
						t.Errorf("panel %q: step %d MAE %v, want %v", p.Title, h, m, want)
					}
				}
			}
			if strings.Contains(q.Query, `GROUP BY time($__interval), "horizon"`) && len(res.Results[0].Series) != 3 {
				t.Errorf("panel %q: %d series, want one per step", p.Title, len(res.Results[0].Series))
			}
			if strings.Contains(q.Query, `"horizon"`) && len(order) == 3 && !slices.Equal(order, []string{"001", "002", "003"}) {
				t.Errorf("panel %q: steps in the order %q, want 001, 002, 003", p.Title, order)
			}
		}
	}
	if !stepMAE {
		t.Error("no panel gives the MAE by step")
	}
	// At the step: every panel answers, on the minute's forecasts only.
	vars = map[string]any{"series": "dash", "step": "1m", "timeFilter": allValue("time >= now() - 3h AND time <= now() + 1h")}
	for _, p := range panels {
		for _, q := range p.Targets {
			if thresholdQuery(q.Query) {
				continue
			}
			cols, vals := influxSeries(t, influx, grafanaQuery(q.Query, vars))
			if len(vals) == 0 {
				t.Fatalf("panel %q at step 1m: no data:\n%s", p.Title, q.Query)
			}
			if slices.Contains(cols, "MAE") {
				if m := vals[0][1].(float64); math.Abs(m-aeMin/float64(nMin)) > 1e-9 {
					t.Errorf("panel %q at step 1m: MAE %v, the minute series' %v", p.Title, m, aeMin/float64(nMin))
				}
			}
		}
	}
}

// TestDaemonHorizonEqualsBacktest: a daemon forecasting 4 steps ahead (a
// [[rules]] entry sets the horizon of its series) publishes for each point
// one message whose path holds, at each step, exactly the forecast and
// bounds `forecastd backtest --horizon 4` computes for that step on the
// same points, bit for bit; a series the rule does not match has no path.
func TestDaemonHorizonEqualsBacktest(t *testing.T) {
	const H, n = 4, 300
	rd := startDaemon(t, `
[nats]
servers = ["nats://127.0.0.1:0"]
embedded = true

[input]
subjects = ["hz.>"]

[[rules]]
match = "hz.path"
horizon = 4
`, nil)
	waitSubscribed(t, rd.d.embedded, "hz.>")
	nc := connectTest(t, rd.d.embedded.ClientURL())
	var mu sync.Mutex
	msgs := subscribeForecasts(t, nc, "forecast.hz.>", &mu, func(m *nats.Msg, _ stepMsg) string { return m.Subject })
	values := dataset.MustLoad("sensor_temperature_15min").Values[:n]
	t0 := time.Now().Add(-time.Minute - n*time.Second).Truncate(time.Second)
	times := make([]int64, n)
	for i := range n {
		times[i] = t0.Unix() + int64(i)
		for _, subj := range []string{"hz.path", "hz.one"} {
			if err := nc.Publish(subj, fmt.Appendf(nil, `{"time":%d,"value":%v}`, times[i], values[i])); err != nil {
				t.Fatal(err)
			}
		}
	}
	count := func(s string) int { mu.Lock(); defer mu.Unlock(); return len(msgs[s]) }
	waitFor(t, time.Minute, "the forecasts", func() bool { return count("forecast.hz.path") >= n-5 && count("forecast.hz.one") >= n-5 })
	mu.Lock()
	defer mu.Unlock()
	for _, m := range msgs["forecast.hz.one"] {
		if m.Path != nil {
			t.Fatalf("a series with horizon 1 has a path: %+v", m)
		}
	}

	// The backtest's rows of the same points, by target time and step.
	dir := t.TempDir()
	var b strings.Builder
	b.WriteString("t,value\n")
	for i, v := range values {
		fmt.Fprintf(&b, "%d,%s\n", times[i], strconv.FormatFloat(v, 'g', -1, 64))
	}
	in := filepath.Join(dir, "s.csv")
	if err := os.WriteFile(in, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	unix := func(tm time.Time) string { return strconv.FormatInt(tm.Unix(), 10) }
	compareBacktest(t, msgs["forecast.hz.path"], "hz.path", in, H, n-10, unix)
	if _, err := rd.stop(t); err != nil {
		t.Fatal(err)
	}
}
