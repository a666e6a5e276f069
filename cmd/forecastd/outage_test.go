package main

import (
	"encoding/json"
	"fmt"
	"math"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/forecastd/forecastd/internal/testserver/influxtest"
	"github.com/forecastd/forecastd/sinks"
)

// counted counts the records the series hand to the sinks (every one goes
// to both the NATS and the InfluxDB sink).
type counted struct {
	next                sinks.Writer
	forecasts, outcomes atomic.Int64
}

func (c *counted) Write(r sinks.Record) error {
	switch r.Kind {
	case sinks.KindForecast:
		c.forecasts.Add(1)
	case sinks.KindOutcome:
		c.outcomes.Add(1)
	}
	return c.next.Write(r)
}

func (c *counted) records() int64 { return c.forecasts.Load() + c.outcomes.Load() }

// influxCounts returns count(yhat) and count(y) of measurement forecast
// matching where (an InfluxQL condition, or ""): the forecasts and the
// outcomes written.
func influxCounts(t *testing.T, influx *influxtest.Server, where string) (yhat, y int64) {
	t.Helper()
	q := "SELECT count(yhat), count(y) FROM forecast"
	if where != "" {
		q += " WHERE " + where
	}
	var resp struct {
		Results []struct {
			Series []struct {
				Values [][]any `json:"values"`
			} `json:"series"`
		} `json:"results"`
	}
	body := influx.Query(t, q)
	d := json.NewDecoder(strings.NewReader(body))
	d.UseNumber()
	if err := d.Decode(&resp); err != nil {
		t.Fatalf("%s: %v: %s", q, err, body)
	}
	if len(resp.Results) == 0 || len(resp.Results[0].Series) == 0 {
		return 0, 0
	}
	v := resp.Results[0].Series[0].Values[0]
	yhat, _ = v[1].(json.Number).Int64()
	y, _ = v[2].(json.Number).Int64()
	return yhat, y
}

// runNATS runs a nats-server on port (server.RANDOM_PORT for any); the
// caller shuts it down.
func runNATS(t *testing.T, port int) *server.Server {
	t.Helper()
	ns, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: port, NoLog: true, NoSigs: true, MaxPayload: 2 << 20})
	if err != nil {
		t.Fatal(err)
	}
	ns.Start()
	if !ns.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats-server not ready within 10s")
	}
	return ns
}

// TestDaemonInfluxOutage: with influxd stopped, learning and the NATS
// output go on while at most metric_buffer_limit records (plus the batch
// in flight) wait; the oldest beyond are dropped and counted exactly;
// restarted on the same port and data directory, influxd receives the
// buffer and every forecast made after the recovery, and the records in
// InfluxDB plus those dropped are the records produced. Then the NATS
// server is restarted on its port: the daemon reconnects, consumption
// resumes, nothing crashes.
func TestDaemonInfluxOutage(t *testing.T) {
	influx := influxtest.Start(t, influxtest.Options{}) // stopped and restarted: its own
	ns := runNATS(t, server.RANDOM_PORT)
	// The server current at the end is shut down after the daemon.
	t.Cleanup(func() { ns.Shutdown(); ns.WaitForShutdown() })
	port := ns.Addr().(*net.TCPAddr).Port

	const limit, batch = 50, 10
	cnt := &counted{}
	d := &daemon{wrapOut: func(w sinks.Writer) sinks.Writer { cnt.next = w; return cnt }}
	rd := startDaemon(t, fmt.Sprintf(`
[nats]
servers = ["nats://127.0.0.1:%d"]

[input]
subjects = ["o.>"]

[http]
listen = "127.0.0.1:0"

[model]
kind = "norma"
dim = 3
scale = "fixed:-2,2"

[output.nats]
subject_prefix = "fc"

[output.influxdb]
url = %q
bucket = %q
metric_buffer_limit = %d
metric_batch_size = %d
flush_interval = "100ms"
`, port, influx.URL, influx.Database, limit, batch), d)
	addr := rd.d.httpAddr.String()
	waitFor(t, 10*time.Second, "/-/ready", func() bool { code, _ := get(t, "http://"+addr+"/-/ready"); return code == 200 })
	waitSubscribed(t, ns, "o.>")
	nc := connectTest(t, ns.ClientURL())
	col := collect(t, nc, "fc.>")

	series := []string{"o.a", "o.b"}
	t0 := time.Now().Add(-30 * time.Minute).Truncate(time.Second)
	step := 0
	// send publishes n steps (a point of each series) in chunks of chunk
	// steps; after each chunk it waits until the points are processed
	// and, with drain, until InfluxDB has every record.
	send := func(nc interface {
		Publish(string, []byte) error
		Flush() error
	}, n, chunk int, drain bool) {
		t.Helper()
		for i := 0; i < n; i += chunk {
			for j := i; j < min(n, i+chunk); j++ {
				ts := t0.Add(time.Duration(step) * time.Second).Unix()
				for k, s := range series {
					v := math.Sin(float64(step)/9 + float64(k))
					if err := nc.Publish(s, fmt.Appendf(nil, `{"time":%d,"value":%v}`, ts, v)); err != nil {
						t.Fatal(err)
					}
				}
				step++
			}
			if err := nc.Flush(); err != nil {
				t.Fatal(err)
			}
			want := float64(len(series) * step)
			what := fmt.Sprintf("%v points processed", want)
			if drain {
				what += " and their records written"
			}
			waitFor(t, 30*time.Second, what, func() bool {
				m := scrape(t, addr)
				if m["forecastd_points_processed_total"] != want {
					return false
				}
				return !drain || m[`forecastd_buffer_size{sink="influxdb"}`] == 0 &&
					m[`forecastd_records_written_total{sink="influxdb"}`]+
						m[`forecastd_records_dropped_total{reason="buffer",sink="influxdb"}`] == float64(cnt.records())
			})
		}
	}

	// A: InfluxDB up; paced so that nothing is dropped.
	send(nc, 100, 5, true)
	if st := sinkOf[*sinks.Influx](rd.d).Stats(); st.Dropped != 0 || st.WriteErrors != 0 || int64(st.Written) != cnt.records() {
		t.Fatalf("before the outage: influx stats %+v, %d records produced", st, cnt.records())
	}
	beforeOutage := cnt.records()
	fcBefore := col.count("o.a") + col.count("o.b")

	// B: InfluxDB down.
	influx.Stop()
	const outageSteps = 300
	send(nc, outageSteps, outageSteps, false)
	producedB := cnt.records() - beforeOutage
	waitFor(t, 30*time.Second, "the NATS forecasts of the outage", func() bool {
		return int64(col.count("o.a")+col.count("o.b")) == cnt.forecasts.Load()
	})
	if got := col.count("o.a") + col.count("o.b") - fcBefore; got < 2*(outageSteps-1) {
		t.Fatalf("%d forecasts published on NATS during the outage, want ≥ %d", got, 2*(outageSteps-1))
	}
	waitFor(t, 30*time.Second, "a failed write", func() bool { return sinkOf[*sinks.Influx](rd.d).Stats().WriteErrors >= 1 })
	var m map[string]float64
	waitFor(t, 10*time.Second, "every record of the outage buffered or dropped", func() bool {
		m = scrape(t, addr)
		return int64(m[`forecastd_buffer_size{sink="influxdb"}`]+m[`forecastd_records_dropped_total{reason="buffer",sink="influxdb"}`]) == producedB
	})
	st := sinkOf[*sinks.Influx](rd.d).Stats()
	buffered := int64(m[`forecastd_buffer_size{sink="influxdb"}`])
	dropped := int64(m[`forecastd_records_dropped_total{reason="buffer",sink="influxdb"}`])
	if buffered < limit || buffered > limit+batch || buffered != int64(st.Buffered) {
		t.Fatalf("during the outage: buffer_size %d (stats %d), want %d…%d", buffered, st.Buffered, limit, limit+batch)
	}
	// Nothing was written during the outage: what is not buffered was
	// dropped, exactly.
	if dropped != producedB-buffered || st.Written != uint64(beforeOutage) || st.Rejected != 0 {
		t.Fatalf("during the outage: %d records produced, %d buffered, dropped_total %d (want %d); stats %+v",
			producedB, buffered, dropped, producedB-buffered, st)
	}
	writeErrors := m[`forecastd_write_errors_total{sink="influxdb"}`]
	t.Logf("outage: %d records produced (%d forecasts published on NATS), %d buffered, %d dropped, %v write errors",
		producedB, col.count("o.a")+col.count("o.b")-fcBefore, buffered, dropped, writeErrors)

	// C: InfluxDB back on the same port and data directory: the buffer
	// drains (within the back-off, 1s doubling), then points are paced.
	influx.Restart()
	recovered := time.Now()
	waitFor(t, 90*time.Second, "the buffer drained", func() bool {
		m := scrape(t, addr)
		return m[`forecastd_buffer_size{sink="influxdb"}`] == 0
	})
	t.Logf("buffer drained %v after influxd restarted", time.Since(recovered).Round(time.Millisecond))
	firstC := t0.Add(time.Duration(step) * time.Second)
	send(nc, 100, 5, true)

	// D: the NATS server restarted on its port.
	ns.Shutdown()
	ns.WaitForShutdown()
	waitFor(t, 20*time.Second, "input_connected 0", func() bool { return scrape(t, addr)["forecastd_input_connected"] == 0 })
	ns = runNATS(t, port)
	waitFor(t, 30*time.Second, "input_connected 1", func() bool { return scrape(t, addr)["forecastd_input_connected"] == 1 })
	waitSubscribed(t, ns, "o.>")
	nc2 := connectTest(t, ns.ClientURL())
	col2 := collect(t, nc2, "fc.>")
	beforeD := cnt.forecasts.Load()
	send(nc2, 50, 5, true)
	waitFor(t, 30*time.Second, "the forecasts after the NATS restart", func() bool {
		return int64(col2.count("o.a")+col2.count("o.b")) == cnt.forecasts.Load()-beforeD
	})
	if n := col2.count("o.a") + col2.count("o.b"); n < 2*49 {
		t.Fatalf("%d forecasts published after the NATS restart, want ≥ 98", n)
	}

	// Every record produced is in InfluxDB or counted as dropped.
	m = scrape(t, addr)
	st = sinkOf[*sinks.Influx](rd.d).Stats()
	dropped = int64(m[`forecastd_records_dropped_total{reason="buffer",sink="influxdb"}`])
	yhat, y := influxCounts(t, influx, "")
	produced := cnt.records()
	if yhat+y+dropped != produced || dropped == 0 || st.Rejected != 0 || st.Invalid != 0 || st.Buffered != 0 {
		t.Fatalf("InfluxDB holds %d forecasts + %d outcomes, %d dropped: %d ≠ %d records produced (%d forecasts, %d outcomes); stats %+v",
			yhat, y, dropped, yhat+y+dropped, produced, cnt.forecasts.Load(), cnt.outcomes.Load(), st)
	}
	// Every forecast made from a point after the recovery is in InfluxDB.
	for _, s := range series {
		// The first connection reconnected too: count each forecast once.
		after := map[time.Time]bool{}
		for _, p := range append(col.series(s), col2.series(s)...) {
			if !p.Origin.Before(firstC) {
				after[p.Time] = true
			}
		}
		want := int64(len(after))
		got, _ := influxCounts(t, influx, fmt.Sprintf(`series_key = '%s' AND time > %d`, s, firstC.UnixNano()))
		if got != want {
			t.Errorf("%s: %d forecasts after the recovery in InfluxDB, %d published", s, got, want)
		}
	}
	if m["forecastd_points_processed_total"] != float64(len(series)*step) {
		t.Errorf("points_processed_total %v, want %d", m["forecastd_points_processed_total"], len(series)*step)
	}
	if strings.Contains(rd.logs.String(), "panic") {
		t.Errorf("daemon log mentions a panic:\n%s", rd.logs)
	}
	if _, err := rd.stop(t); err != nil {
		t.Fatalf("stop: %v\n%s", err, rd.logs)
	}
	// The sink's lines ("write failed…", "write recovered") name their
	// component once (they once read component=sinks component=sinks.influxdb).
	if !strings.Contains(rd.logs.String(), "component=sinks.influxdb") {
		t.Errorf("no line of the InfluxDB sink in the log:\n%s", rd.logs)
	}
	checkLogKeys(t, rd.logs.String())
	t.Logf("%d points; %d records produced (%d forecasts, %d outcomes): %d forecasts + %d outcomes in InfluxDB, %d dropped (buffer of %d); %v write errors",
		len(series)*step, produced, cnt.forecasts.Load(), cnt.outcomes.Load(), yhat, y, dropped, limit, m[`forecastd_write_errors_total{sink="influxdb"}`])
}
