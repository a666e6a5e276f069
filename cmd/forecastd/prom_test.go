package main

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/forecastd/forecastd/internal/config"
	"github.com/forecastd/forecastd/internal/testserver/promtest"
	"github.com/forecastd/forecastd/sinks"
)

// TestDaemonPrometheus: the forecasts of 1 000 series fed through NATS,
// written by [output.prometheus] to a real Prometheus and a real
// VictoriaMetrics and read back by PromQL, are those the daemon
// published on NATS: every one, at its target time, with its bounds.
func TestDaemonPrometheus(t *testing.T) {
	for _, k := range promtest.Kinds {
		t.Run(k.Name, func(t *testing.T) {
			srv := promtest.Start(t, k)
			cfg := fmt.Sprintf(`
[nats]
servers = ["nats://127.0.0.1:0"]
embedded = true

[input]
subjects = ["telegraf"]
data_format = "influx"
max_past = "0s"

[model]
kind = "norma"

[pipeline]
shards = 2

[output.nats]
subject_prefix = "fc"

[output.prometheus]
url = %q
flush_interval = "100ms"
metric_buffer_limit = 200000 # the whole burst: 60 000 records and more
`, srv.WriteURL)
			rd := startDaemon(t, cfg, nil)
			waitSubscribed(t, rd.d.embedded, "telegraf")
			nc := connectTest(t, rd.d.embedded.ClientURL())
			c := collect(t, nc, "fc.>")
			const series, points = 1000, 30
			t0 := time.Now().Add(-2 * time.Hour).Truncate(time.Minute)
			var b strings.Builder
			for i := range points {
				b.Reset()
				for s := range series {
					v := float64(s) + 5*math.Sin(float64(i)/3) + float64(i%4)/7
					fmt.Fprintf(&b, "m,host=h%d v=%v %d\n", s, v, t0.Add(time.Duration(i)*time.Minute).UnixNano())
				}
				if err := nc.Publish("telegraf", []byte(b.String())); err != nil {
					t.Fatal(err)
				}
			}
			waitFor(t, 3*time.Minute, "every point processed", func() bool { return rd.d.runner.Stats().Processed >= series*points })
			// Both converge on the same set: poll both until they hold as
			// many, every forecast written.
			q := `{__name__=~"forecastd_forecast|forecastd_forecast_lower|forecastd_forecast_upper"}[4h]`
			var got []promtest.Sample
			var want map[string]float64 // "<metric> <series> <ms>"
			for deadline := time.Now().Add(3 * time.Minute); ; time.Sleep(200 * time.Millisecond) {
				want = published2prom(c)
				srv.Flush(t)
				got = srv.Query(t, q, t0.Add(2*time.Hour))
				if len(got) == len(want) && len(c.got) == series && len(want) > series*points {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("%d samples in %s after 3 min, %d forecasts and bounds on NATS of %d series\n%s", len(got), k.Name, len(want), len(c.got), rd.logs)
				}
			}
			for _, g := range got {
				key := fmt.Sprint(g.Labels["__name__"], " ", g.Labels["series_key"], " ", g.T)
				w, ok := want[key]
				if !ok || math.Abs(g.V-w) > 1e-12*math.Max(1, math.Abs(w)) || g.Labels["host"] == "" {
					t.Fatalf("%s: %v %v, on NATS %v (%v)", key, g.V, g.Labels, w, ok)
				}
			}
		})
	}
}

// published2prom returns the samples the forecasts c holds should be in
// Prometheus, by "<metric> <series> <ms>".
func published2prom(c *collector) map[string]float64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	want := map[string]float64{}
	for key, ps := range c.got {
		for _, p := range ps {
			ms := p.Time.UnixMilli()
			if p.Yhat != nil {
				want[fmt.Sprint(sinks.PromForecast, " ", key, " ", ms)] = *p.Yhat
			}
			if p.Lower != nil {
				want[fmt.Sprint(sinks.PromLower, " ", key, " ", ms)] = *p.Lower
				want[fmt.Sprint(sinks.PromUpper, " ", key, " ", ms)] = *p.Upper
			}
		}
	}
	return want
}

// TestReadmePrometheus: the README's "With Prometheus" configurations
// load: the first's output and warm start are those of Prometheus, the
// second pulls its series from it, with no NATS subject.
func TestReadmePrometheus(t *testing.T) {
	blocks := codeBlocks(readmeSection(t, "With Prometheus"), "toml")
	if len(blocks) != 2 {
		t.Fatalf("%d toml blocks", len(blocks))
	}
	var cs []*config.Config
	for i, b := range blocks {
		path := filepath.Join(t.TempDir(), "forecastd.toml")
		if err := os.WriteFile(path, []byte(b), 0o644); err != nil {
			t.Fatal(err)
		}
		c, err := config.Load(path, config.DaemonChecks)
		if err != nil {
			t.Fatalf("block %d: %v", i, err)
		}
		cs = append(cs, c)
	}
	pc, _ := cs[0].Output["prometheus"].(*sinks.PromConfig)
	if pc == nil || pc.Timestamp != sinks.PromTimestampOrigin || cs[0].History == nil || !cs[0].History.Prometheus() {
		t.Fatalf("output %+v, history %+v", pc, cs[0].History)
	}
	if in := cs[1].Input; len(in.PromQL) != 1 || len(in.PromQL[0].Queries) != 2 || len(in.Subjects) != 0 {
		t.Fatalf("pull: %+v", in)
	}
}
