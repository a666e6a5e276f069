package main

import (
	"fmt"
	"math"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/forecastd/forecastd/internal/config"
	"github.com/forecastd/forecastd/internal/statestore"
	"github.com/forecastd/forecastd/pipeline"
)

// stateSeries are the series of the restart tests, one per model, with
// their values.
var stateSeries = []string{"st.aosvr", "st.sogsvr", "st.norma"}

func stateValue(k, i int) float64 {
	return math.Sin(float64(i)/(4+float64(k))) + 0.3*math.Sin(float64(i)*0.37+float64(k)) + 0.05*float64(k)
}

// stateModels is the [model] and [[rules]] of the restart tests: each
// series its model, small enough that the test runs fast.
const stateModels = `
[model]
kind = "aosvr"
dim = 3
window = 40
scale = "fixed:-2,2"

[[rules]]
match = "*.sogsvr"
kind = "sogsvr"

[[rules]]
match = "*.norma"
kind = "norma"
norma_tau = 60
`

// uninterrupted returns, per series, the forecasts a Series run alone on
// all n points publishes (by origin index), configured as the daemon
// configures it from cfgText.
func uninterrupted(t *testing.T, cfgText string, keys []string, n int, times []time.Time) map[string]map[int]pipeline.Forecast {
	t.Helper()
	p := filepath.Join(t.TempDir(), "c.toml")
	if err := os.WriteFile(p, []byte(cfgText), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(p, config.DaemonChecks)
	if err != nil {
		t.Fatal(err)
	}
	def, rules, err := cfg.PipelineRules()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]map[int]pipeline.Forecast{}
	for k, key := range keys {
		c := def
		for _, r := range rules {
			if ok, _ := path.Match(r.Match, key); ok {
				c = r.Config
				break
			}
		}
		s, err := pipeline.New(key, c)
		if err != nil {
			t.Fatal(err)
		}
		out[key] = map[int]pipeline.Forecast{}
		for i := range n {
			res, err := s.Push(pipeline.Point{Time: times[i], Value: stateValue(k, i)})
			if err != nil {
				t.Fatal(err)
			}
			if res.HasForecast {
				out[key][i] = res.Forecast
			}
		}
	}
	return out
}

// compareForecasts checks every forecast published for key against the
// uninterrupted run's forecast made at the same origin, and returns the
// largest difference and how many were compared.
func compareForecasts(t *testing.T, key string, got []published, want map[int]pipeline.Forecast, times []time.Time, fromIdx int) (maxDiff float64, n int) {
	t.Helper()
	idx := map[int64]int{}
	for i, tm := range times {
		idx[tm.Unix()] = i
	}
	for _, p := range got {
		i, ok := idx[p.Origin.Unix()]
		if !ok {
			t.Fatalf("%s: forecast from an unknown origin %v", key, p.Origin)
		}
		if i < fromIdx {
			continue
		}
		w, ok := want[i]
		if !ok {
			t.Fatalf("%s: forecast from point %d, which the uninterrupted run did not forecast from", key, i)
		}
		if p.Yhat == nil || !p.Time.Equal(w.Time) {
			t.Fatalf("%s: forecast from point %d: %v at %v, want %v at %v", key, i, deref(p.Yhat), p.Time, w.Value, w.Time)
		}
		d := math.Abs(*p.Yhat - w.Value)
		if d > 1e-9 || math.IsNaN(d) {
			t.Fatalf("%s: forecast from point %d after the restart: %v, uninterrupted %v (|Δ| = %g > 1e-9)", key, i, *p.Yhat, w.Value, d)
		}
		maxDiff = max(maxDiff, d)
		n++
	}
	return maxDiff, n
}

// TestDaemonCheckpointRestart: a daemon with [state] dir is stopped
// (SIGTERM) in the middle of three series (AOSVR, SOG-SVR, NORMA) and
// started again on the same directory: every forecast after the restart
// equals what an uninterrupted run publishes (bit for bit, checked within
// 1e-9). A corrupt checkpoint file is reported once, naming it, and a
// series whose rule changed starts afresh, logged with its file.
func TestDaemonCheckpointRestart(t *testing.T) {
	ns := startNATS(t, false)
	nc := connectTest(t, ns.ClientURL())
	col := collect(t, nc, "forecast.>")
	stateDir := t.TempDir()
	base := fmt.Sprintf(`
[nats]
servers = [%q]

[input]
subjects = ["st.>"]

[state]
dir = %q
checkpoint_interval = "50ms"
`, ns.ClientURL(), stateDir) + stateModels
	// st.changed: its rule changes between the two runs.
	cfg1 := base + "\n[[rules]]\nmatch = \"st.changed\"\nkind = \"norma\"\ndim = 2\n"
	cfg2 := base + "\n[[rules]]\nmatch = \"st.changed\"\nkind = \"norma\"\ndim = 4\n"

	const n, cut = 200, 110
	t0 := time.Now().Add(-time.Minute - n*time.Second).Truncate(time.Second)
	times := make([]time.Time, n)
	for i := range times {
		times[i] = t0.Add(time.Duration(i) * time.Second)
	}
	want := uninterrupted(t, cfg1, stateSeries, n, times)
	publish := func(from, to int) {
		for i := from; i < to; i++ {
			for k, key := range append(stateSeries, "st.changed") {
				if err := nc.Publish(key, fmt.Appendf(nil, `{"time":%d,"value":%v}`, times[i].Unix(), stateValue(k, i))); err != nil {
					t.Fatal(err)
				}
			}
		}
		if err := nc.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	expect := func(key string, to int) int {
		c := 0
		for i := range want[key] {
			if i < to {
				c++
			}
		}
		return c
	}

	rd := startDaemon(t, cfg1, nil)
	waitSubscribed(t, ns, "st.>")
	publish(0, cut)
	for _, key := range stateSeries {
		waitFor(t, 30*time.Second, key+"'s forecasts before the stop", func() bool { return col.count(key) >= expect(key, cut) })
	}
	waitFor(t, 10*time.Second, "a periodic checkpoint", func() bool { return rd.d.ckpt.Stats().Written > 0 })
	if _, err := rd.stop(t); err != nil {
		t.Fatalf("stop: %v\n%s", err, rd.logs)
	}
	if !strings.Contains(rd.logs.String(), "checkpoints written") {
		t.Fatalf("no final checkpoint logged:\n%s", rd.logs)
	}
	files, _ := filepath.Glob(filepath.Join(stateDir, "*"+statestore.Ext))
	if len(files) != len(stateSeries)+1 {
		t.Fatalf("%d checkpoint files after the stop, want %d: %v", len(files), len(stateSeries)+1, files)
	}
	bad := filepath.Join(stateDir, statestore.FileName("st.gone"))
	if err := os.WriteFile(bad, []byte("FCDSTATE garbage"), 0o600); err != nil {
		t.Fatal(err)
	}

	rd2 := startDaemon(t, cfg2, nil)
	waitSubscribed(t, ns, "st.>")
	publish(cut, n)
	for _, key := range stateSeries {
		waitFor(t, 30*time.Second, key+"'s forecasts after the restart", func() bool { return col.count(key) >= expect(key, n) })
	}
	for _, key := range stateSeries {
		d, m := compareForecasts(t, key, col.series(key), want[key], times, cut)
		if m != expect(key, n)-expect(key, cut) {
			t.Fatalf("%s: %d forecasts after the restart, want %d", key, m, expect(key, n)-expect(key, cut))
		}
		t.Logf("%s: %d forecasts after the restart equal the uninterrupted run's, max |Δ| = %g", key, m, d)
	}
	st := rd2.d.runner.Stats()
	if st.Restored != uint64(len(stateSeries)) || st.RestoreFailed != 1 {
		t.Fatalf("runner stats %+v: want %d restored, 1 refused", st, len(stateSeries))
	}
	logs := rd2.logs.String()
	if c := strings.Count(logs, bad); c != 1 {
		t.Fatalf("the corrupt file is named %d times in the log, want once:\n%s", c, logs)
	}
	if !strings.Contains(logs, "checkpoint not restored") || !strings.Contains(logs, "st.changed") || !strings.Contains(logs, "configuration changed") {
		t.Fatalf("the changed series' refusal is not logged:\n%s", logs)
	}
}
