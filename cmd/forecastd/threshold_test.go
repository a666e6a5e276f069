package main

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/forecastd/forecastd/anomaly/threshold"
	"github.com/forecastd/forecastd/internal/config"
	"github.com/forecastd/forecastd/internal/testserver/influxtest"
	"github.com/forecastd/forecastd/lab/thresholdbench"
)

// TestDaemonThresholdOpened: through the daemon's embedded nats-server, a
// series falling towards threshold_below raises an opened threshold event
// on forecast.threshold.<subject>, with its ETA ahead of the forecast's
// origin and within the horizon, before the series gets there; a series
// of the same rule that stays level raises none.
func TestDaemonThresholdOpened(t *testing.T) {
	rd := startDaemon(t, `
[nats]
servers = ["127.0.0.1:0"]
embedded = true

[input]
subjects = ["disk.>"]

[pipeline]
shutdown_timeout = "10s"

[[rules]]
match = "disk.*"
horizon = 24
threshold_below = 0.0
`, nil)
	nc := connectTest(t, rd.d.embedded.ClientURL())
	sub, err := nc.SubscribeSync("forecast.threshold.>")
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	waitSubscribed(t, rd.d.embedded, "disk.>")
	t0 := time.Now().Add(-time.Hour).Truncate(time.Second)
	r := rand.New(rand.NewPCG(1, 2))
	const n = 190 // the filling disk reaches 0 at point 200
	for i := range n {
		ts := t0.Unix() + int64(i)
		for _, p := range []struct {
			subject string
			v       float64
		}{{"disk.filling", 100 - 0.5*float64(i) + 0.2*r.NormFloat64()}, {"disk.level", 50 + 0.2*r.NormFloat64()}} {
			if err := nc.Publish(p.subject, fmt.Appendf(nil, `{"time":%d,"value":%v}`, ts, p.v)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	var m *nats.Msg
	for m == nil {
		got, err := sub.NextMsg(20 * time.Second)
		if err != nil {
			t.Fatalf("no threshold event: %v\n%s", err, rd.logs)
		}
		if strings.Contains(string(got.Data), `"state":"opened"`) {
			m = got
		}
	}
	var e struct {
		Series, Direction, State string
		Threshold                float64
		Time, ETA                time.Time
		ETASeconds               float64 `json:"eta_seconds"`
		Horizon                  int
		Probability              float64
	}
	if err := json.Unmarshal(m.Data, &e); err != nil {
		t.Fatalf("%s: %v", m.Data, err)
	}
	if m.Subject != "forecast.threshold.disk.filling" || e.Series != "disk.filling" || e.Direction != "below" || e.Threshold != 0 {
		t.Fatalf("event on %s: %s", m.Subject, m.Data)
	}
	crossing := t0.Add(200 * time.Second)
	if e.Horizon < 1 || e.Horizon > 24 || !e.ETA.Equal(e.Time.Add(time.Duration(e.ETASeconds)*time.Second)) ||
		!e.Time.Before(crossing) || !(e.Probability >= 0.49) {
		t.Errorf("event %s: want an ETA within 24 steps of its origin, before the crossing at %v, probability ≥ 0.49", m.Data, crossing)
	}
	if id := m.Header.Get(nats.MsgIdHdr); !strings.HasPrefix(id, "disk.filling@") || !strings.HasSuffix(id, "#opened#below 0") {
		t.Errorf("Nats-Msg-Id %q", id)
	}
	for {
		got, err := sub.NextMsg(200 * time.Millisecond)
		if err != nil {
			break
		}
		if strings.Contains(string(got.Data), `"series":"disk.level"`) {
			t.Errorf("the level series raised %s", got.Data)
		}
	}
}

// thresholdQuery reports whether a dashboard query reads the threshold
// fields, which only series with thresholds have.
func thresholdQuery(q string) bool {
	return strings.Contains(q, `"eta_seconds"`) || strings.Contains(q, `"threshold_`)
}

// TestDashboardThresholds: the daemon, fed a filling series of a rule
// with threshold_below through its embedded nats-server, writes to a real
// InfluxDB what the dashboard's threshold queries read: the time to
// threshold and its probability per threshold, and an annotation where
// the event opened, as Grafana substitutes the variables.
func TestDashboardThresholds(t *testing.T) {
	influx := influxtest.Shared(t, influxtest.Options{})
	rd := startDaemon(t, fmt.Sprintf(`
[nats]
servers = ["127.0.0.1:0"]
embedded = true

[input]
subjects = ["disk.>"]

[pipeline]
shutdown_timeout = "10s"

[[rules]]
match = "disk.*"
horizon = 24
threshold_below = 0.0

[output.influxdb]
url = %q
bucket = %q
flush_interval = "100ms"
`, influx.URL, influx.Database), nil)
	nc := connectTest(t, rd.d.embedded.ClientURL())
	waitSubscribed(t, rd.d.embedded, "disk.>")
	t0 := time.Now().Add(-time.Hour).Truncate(time.Second)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 190 {
		if err := nc.Publish("disk.filling", fmt.Appendf(nil, `{"time":%d,"value":%v}`, t0.Unix()+int64(i), 100-0.5*float64(i)+0.2*r.NormFloat64())); err != nil {
			t.Fatal(err)
		}
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	vars := map[string]any{"series": "disk.filling", "step": allValue("(?:)")}
	d := readDashboard(t)
	var anns []string
	for _, a := range dashboardAnnotations(t) {
		if thresholdQuery(a) {
			anns = append(anns, a)
		}
	}
	if len(anns) != 1 {
		t.Fatalf("%d threshold annotations, want 1", len(anns))
	}
	waitFor(t, 30*time.Second, "the opened event in InfluxDB", func() bool {
		_, vals := influxSeries(t, influx, grafanaQuery(anns[0], vars))
		return len(vals) == 1
	})
	panels := 0
	for _, p := range d.Panels {
		for _, q := range p.Targets {
			if !thresholdQuery(q.Query) {
				continue
			}
			panels++
			cols, vals := influxSeries(t, influx, grafanaQuery(q.Query, vars))
			if len(vals) == 0 {
				t.Fatalf("panel %q: no data:\n%s", p.Title, q.Query)
			}
			last := vals[len(vals)-1]
			v, ok := last[1].(float64)
			switch cols[1] {
			case "time to threshold":
				if !ok || v <= 0 || v > 24 {
					t.Errorf("panel %q: last time to threshold %v, want within the 24 s of the horizon", p.Title, last[1])
				}
			case "probability":
				if !ok || v < 0.49 || v > 1 {
					t.Errorf("panel %q: last probability %v", p.Title, last[1])
				}
			default:
				t.Errorf("panel %q: column %q", p.Title, cols[1])
			}
		}
	}
	if panels != 2 {
		t.Errorf("%d threshold queries in the panels, want 2 (time to threshold, probability)", panels)
	}
}

// TestReadmeThresholdExample: the docs' Telegraf disk example is a
// valid configuration whose hourly used_percent resolution watches 95 and
// whose free rule watches 1 GiB; its event's JSON is what the NATS sink
// writes (the fields in order); the paging example is the configuration
// BENCHMARKS.md scores beside the 4 h rules (thresholdbench.PageModel).
func TestReadmeThresholdExample(t *testing.T) {
	sec := docSection(t, "docs/events.md", "Alerts before the threshold")
	blocks := codeBlocks(sec, "toml")
	if len(blocks) != 2 {
		t.Fatalf("%d toml blocks, want the worked example and the paging one", len(blocks))
	}
	pp := filepath.Join(t.TempDir(), "page.toml")
	if err := os.WriteFile(pp, []byte("[input]\nsubjects = [\"telegraf\"]\ndata_format = \"influx\"\n"+blocks[1]), 0o644); err != nil {
		t.Fatal(err)
	}
	pcfg, err := config.Load(pp, config.DaemonChecks)
	if err != nil {
		t.Fatal(err)
	}
	page, err := pcfg.Model.Merge(pcfg.Resolutions[0].Keys).Config()
	if err != nil {
		t.Fatal(err)
	}
	wantPage, wantTh := thresholdbench.PageModel(), thresholdbench.PageThreshold(threshold.Config{})
	if len(page.Thresholds) != 1 || page.Step != wantPage.Step || page.Horizon != wantPage.Horizon ||
		page.Thresholds[0].Within != wantTh.Within || page.Thresholds[0].Open != wantTh.Open ||
		page.Thresholds[0].Probability != wantTh.Probability {
		t.Errorf("paging example: step %v horizon %d thresholds %+v; BENCHMARKS scores step %v horizon %d probability %v within %v open %d",
			page.Step, page.Horizon, page.Thresholds, wantPage.Step, wantPage.Horizon, wantTh.Probability, wantTh.Within, wantTh.Open)
	}
	p := filepath.Join(t.TempDir(), "disk.toml")
	if err := os.WriteFile(p, []byte("[input]\nsubjects = [\"telegraf\"]\ndata_format = \"influx\"\n"+blocks[0]), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(p, config.DaemonChecks)
	if err != nil {
		t.Fatal(err)
	}
	res, err := cfg.Model.Merge(cfg.Resolutions[0].Keys).Config()
	if err != nil {
		t.Fatal(err)
	}
	rule, err := cfg.Model.Merge(cfg.Rules[0].Keys).Config()
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Thresholds) != 1 || res.Thresholds[0].String() != "above 95" || res.Horizon != 48 ||
		len(rule.Thresholds) != 1 || rule.Thresholds[0].String() != "below 1073741824" {
		t.Errorf("thresholds %v (horizon %d) and %v", res.Thresholds, res.Horizon, rule.Thresholds)
	}
	js := codeBlocks(sec, "json")
	if len(js) != 1 {
		t.Fatalf("%d json blocks", len(js))
	}
	var keys []string
	dec := json.NewDecoder(strings.NewReader(js[0]))
	if _, err := dec.Token(); err != nil {
		t.Fatal(err)
	}
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k.(string))
		var v any
		if err := dec.Decode(&v); err != nil {
			t.Fatal(err)
		}
	}
	want := "series model step time threshold direction state eta eta_seconds horizon probability yhat yhat_lower yhat_upper"
	if got := strings.Join(keys, " "); got != want {
		t.Errorf("the README's event has the fields %q, the sink writes %q", got, want)
	}
}

// TestThresholdsCommand: `forecastd thresholds DIR` prints the table of
// forecastd's rows and the node-mixin's, by spacing and for all, on the
// scenarios of DIR; --sweep adds a row per probability.
func TestThresholdsCommand(t *testing.T) {
	dir := t.TempDir()
	var ss []thresholdbench.Scenario
	for _, s := range thresholdbench.Generate(1) {
		if s.Name == "linear-1-1m" || s.Name == "backup-1-1m" {
			ss = append(ss, s)
		}
	}
	if len(ss) != 2 {
		t.Fatalf("%d scenarios", len(ss))
	}
	if err := thresholdbench.WriteDir(dir, ss); err != nil {
		t.Fatal(err)
	}
	var out, errOut strings.Builder
	if code := run([]string{"thresholds", "--sweep", "0.5", dir}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	for _, want := range []string{
		"set  method", "1m   forecastd (step 1h, horizon 48)  ", "all  predict_linear(avail[6h], 24h) < 0, for: 1h",
		"node-mixin: avail < 15 % and predict_linear(avail[6h], 4h) < 0, for: 1h", "all  forecastd p=0.5 ",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the table has no %q:\n%s", want, out.String())
		}
	}
	if code := run([]string{"thresholds", "--threshold_probability", "1.5", dir}, &out, &errOut); code != 2 {
		t.Errorf("a bad probability: exit %d, want 2", code)
	}
}
