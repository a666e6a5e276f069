package main

import (
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/forecastd/forecastd/internal/testserver/natstest"
	"github.com/forecastd/forecastd/internal/testserver/promtest"
)

// pullDaemonConfig is a daemon that reads no NATS subject: its series
// are pulled from url by [[input.promql]] at a step of 1s, with lag.
func pullDaemonConfig(natsURL, url, lag, stateDir string) string {
	return fmt.Sprintf(`
[nats]
servers = [%q]

[input]
max_past = "0s"

[[input.promql]]
url = %q
queries = ['pull_load{job="t"}']
step = "1s"
lag = %q
lookback = "1h"

[state]
dir = %q

[output.nats]
subject_prefix = "fc"
`, natsURL, url, lag, stateDir)
}

// pullSample is sample k of host h (0 or 1): a daily-ish wave and a
// deterministic wobble.
func pullSample(h, k int) float64 {
	return 50 + 10*float64(h) + 20*math.Sin(float64(k)/9) + 3*math.Sin(float64(k*k%97))
}

// TestDaemonPullPromQL: two series written to a real Prometheus and
// VictoriaMetrics are pulled by [[input.promql]], over many evaluations
// and across a restart of the daemon (its state in [state] dir): every
// sample becomes exactly one point of its series, in order, none twice,
// and the forecasts published on NATS are those of a daemon sent the
// same points on NATS directly (within VictoriaMetrics' 12 significant
// digits of a stored value from it).
func TestDaemonPullPromQL(t *testing.T) {
	for _, k := range promtest.Kinds {
		t.Run(k.Name, func(t *testing.T) {
			srv := promtest.Start(t, k)
			// VictoriaMetrics leaves out of a range query the last 30s
			// (-search.latencyOffset): the lag covers them.
			// It keeps about 12 significant digits of a value.
			lag, tol := "0s", 0.0
			if k == promtest.VictoriaMetrics {
				lag, tol = "40s", 1e-9
			}
			now := time.Now().Truncate(time.Second)
			base := now.Add(-3 * time.Minute)
			const n = 8 * 60 // up to 5 minutes ahead: taken by both servers
			for h, host := range []string{"a", "b"} {
				var ss []promtest.Sample
				for i := range n {
					ss = append(ss, promtest.Sample{T: base.Add(time.Duration(i) * time.Second).UnixMilli(), V: pullSample(h, i)})
				}
				srv.Write(t, map[string]string{"__name__": "pull_load", "job": "t", "host": host}, ss)
			}
			srv.Write(t, map[string]string{"__name__": "pull_load", "job": "other", "host": "a"}, []promtest.Sample{{T: base.UnixMilli(), V: 1}})
			srv.Flush(t)
			// What a query after the lag sees, before the daemon asks:
			// VictoriaMetrics makes new series searchable a moment later.
			waitFor(t, time.Minute, "the samples searchable", func() bool {
				got := srv.Query(t, `count_over_time(pull_load{job="t"}[10m])`, now.Add(-45*time.Second))
				return len(got) == 2 && got[0].V == got[1].V && got[0].V >= 130
			})
			keys := []string{`pull_load{host="a",job="t"}`, `pull_load{host="b",job="t"}`}
			dir := t.TempDir()
			ns := natstest.Run(t, &server.Options{Host: "127.0.0.1", Port: -1})
			cfg := pullDaemonConfig(ns.ClientURL(), srv.URL, lag, filepath.Join(dir, "state"))
			var pulled []map[string][]published
			var outOfOrder uint64
			for run := range 2 {
				// Subscribed before the daemon starts: its first
				// evaluation publishes at once.
				nc := connectTest(t, ns.ClientURL())
				col := collect(t, nc, "fc.>")
				if err := nc.Flush(); err != nil {
					t.Fatal(err)
				}
				rd := startDaemon(t, cfg, nil)
				// Evaluations after the first (lookback's) one, at least 3
				// of them: each adds a second.
				first := time.Time{}
				waitFor(t, 2*time.Minute, "forecasts of three evaluations after the first", func() bool {
					f := col.series(keys[0])
					if len(f) == 0 {
						return false
					}
					if first.IsZero() {
						first = f[len(f)-1].Origin
					}
					return f[len(f)-1].Origin.Sub(first) >= 3*time.Second
				})
				if _, err := rd.stop(t); err != nil {
					t.Fatalf("%v\n%s", err, rd.logs)
				}
				if err := nc.Flush(); err != nil { // what the daemon published has reached nc
					t.Fatal(err)
				}
				st := rd.d.runner.Stats()
				// The subscription's handler runs on a goroutine of its
				// own: wait until it has taken every forecast the daemon
				// published, before reading them.
				waitFor(t, time.Minute, "every forecast the daemon published", func() bool {
					n := uint64(0)
					for _, key := range keys {
						n += uint64(len(col.series(key)))
					}
					return n >= st.Forecasts
				})
				nc.Close()
				outOfOrder += st.OutOfOrder
				got := map[string][]published{}
				for _, key := range keys {
					got[key] = col.series(key)
				}
				pulled = append(pulled, got)
				if run == 0 && st.OutOfOrder != 0 {
					t.Fatalf("first run: %d points out of order", st.OutOfOrder)
				}
			}
			// The restart read the hour back: what the restored series had
			// learned was refused as out of order, not learned again.
			if outOfOrder == 0 {
				t.Fatal("the restart's re-read points were not refused as out of order")
			}
			direct := directForecasts(t, ns, keys, base, pulled)
			for h, key := range keys {
				all := append(pulled[0][key], pulled[1][key]...)
				for i, f := range all {
					if i > 0 && f.Origin.Sub(all[i-1].Origin) != time.Second {
						t.Fatalf("%s: forecast %d from %v after one from %v: want one point a second, once each", key, i, f.Origin, all[i-1].Origin)
					}
				}
				want := direct[h]
				if len(all) != len(want) {
					t.Fatalf("%s: %d forecasts pulled (from %v to %v), %d sent on NATS (from %v to %v)", key, len(all), all[0].Origin, all[len(all)-1].Origin,
						len(want), want[0].Origin, want[len(want)-1].Origin)
				}
				for i, f := range all {
					w := want[i]
					if !f.Time.Equal(w.Time) || !f.Origin.Equal(w.Origin) || !within(f.Yhat, w.Yhat, tol) || !within(f.Lower, w.Lower, tol) || !within(f.Upper, w.Upper, tol) {
						t.Fatalf("%s forecast %d: %v from %v: %v; on NATS %v from %v: %v", key, i, f.Time, f.Origin, deref(f.Yhat), w.Time, w.Origin, deref(w.Yhat))
					}
				}
			}
		})
	}
}

// directForecasts runs a daemon sent on NATS (json) the samples of each
// key from base up to the last one the pulled runs forecast from, and
// returns its forecasts, by key.
func directForecasts(t *testing.T, ns *server.Server, keys []string, base time.Time, pulled []map[string][]published) [][]published {
	t.Helper()
	rd := startDaemon(t, `
[nats]
servers = ["`+ns.ClientURL()+`"]

[input]
subjects = ["direct"]
data_format = "json"
series_across_subjects = true
max_past = "0s"

[output.nats]
subject_prefix = "fc"
`, nil)
	waitSubscribed(t, ns, "direct")
	nc := connectTest(t, ns.ClientURL())
	col := collect(t, nc, "fc.>")
	var out [][]published
	for h, key := range keys {
		last := pulled[1][key]
		if len(last) == 0 {
			t.Fatalf("%s: no forecast after the restart", key)
		}
		end := last[len(last)-1].Origin
		var b strings.Builder
		for i := 0; !base.Add(time.Duration(i) * time.Second).After(end); i++ {
			p, _ := json.Marshal(map[string]any{"series": key, "time": base.Add(time.Duration(i) * time.Second).Format(time.RFC3339Nano), "value": pullSample(h, i)})
			b.Write(p)
			if err := nc.Publish("direct", p); err != nil {
				t.Fatal(err)
			}
			b.Reset()
		}
		want := len(pulled[0][key]) + len(pulled[1][key])
		waitFor(t, time.Minute, key+"'s forecasts from NATS", func() bool { return col.count(key) >= want })
		out = append(out, col.series(key))
	}
	if _, err := rd.stop(t); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestDaemonPullBesideNATS: [[input.promql]] runs beside the NATS input
// (the embedded server): a series pulled from a real Prometheus and one
// published as line protocol are both forecast; the pull's counters are
// on /metrics, a query refused by the server counted by class.
func TestDaemonPullBesideNATS(t *testing.T) {
	srv := promtest.Start(t, promtest.Prometheus)
	now := time.Now().Truncate(time.Second)
	var ss []promtest.Sample
	for i := range 300 {
		ss = append(ss, promtest.Sample{T: now.Add(time.Duration(i-240) * time.Second).UnixMilli(), V: pullSample(0, i)})
	}
	srv.Write(t, map[string]string{"__name__": "beside", "host": "p"}, ss)
	started := time.Now()
	rd := startDaemon(t, fmt.Sprintf(`
[nats]
servers = ["nats://127.0.0.1:0"]
embedded = true

[input]
subjects = ["telegraf"]
data_format = "influx"
max_past = "0s"

[[input.promql]]
url = %q
queries = ['beside', 'sum(']   # the second is not PromQL: refused, counted
step = "1s"
lag = "0s"
lookback = "10m"

[output.nats]
subject_prefix = "fc"

[http]
listen = "127.0.0.1:0"
`, srv.URL), nil)
	waitSubscribed(t, rd.d.embedded, "telegraf")
	nc := connectTest(t, rd.d.embedded.ClientURL())
	col := collect(t, nc, "fc.>")
	for i := range 60 {
		line := fmt.Sprintf("cpu,host=n usage=%v %d\n", pullSample(1, i), now.Add(time.Duration(i-60)*time.Second).UnixNano())
		if err := nc.Publish("telegraf", []byte(line)); err != nil {
			t.Fatal(err)
		}
	}
	const pulled, published = `beside{host="p"}`, "cpu,host=n usage"
	// The collector subscribes after the embedded server starts: the
	// pull's first evaluation (240 past samples) may be published before
	// it, the samples still ahead come one a second after it; how many
	// points were pulled is /metrics' forecastd_promql_points_total below.
	waitFor(t, time.Minute, "forecasts of both inputs", func() bool { return col.count(pulled) >= 1 && col.count(published) >= 50 })
	if f := col.series(pulled)[0]; f.Subject != "fc.promql.beside._" {
		t.Errorf("pulled series' forecasts on %q", f.Subject)
	}
	addr := rd.d.httpAddr.String()
	waitFor(t, time.Minute, "the refused query counted", func() bool {
		m := scrape(t, addr)
		return m[`forecastd_promql_query_failures_total{class="query"}`] >= 3 && m["forecastd_promql_points_total"] >= 200
	})
	// Retried at each step, logged once a minute.
	if n, most := strings.Count(rd.logs.String(), "query failed; retried"), 1+int(time.Since(started)/time.Minute); n < 1 || n > most {
		t.Errorf("the failing query logged %d times, want 1 to %d (once a minute)\n%s", n, most, rd.logs)
	}
	if _, err := rd.stop(t); err != nil {
		t.Fatal(err)
	}
}
