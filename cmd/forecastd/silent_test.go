package main

import (
	"fmt"
	"math"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/forecastd/forecastd/internal/statestore"
	"github.com/forecastd/forecastd/internal/testserver/influxtest"
	"github.com/forecastd/forecastd/sinks"
)

// freeTCPPort returns a loopback port nothing listens on now.
func freeTCPPort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// notifySocket listens where sd_notify writes (NOTIFY_SOCKET, set for the
// test: not parallel) and returns the channel of the states received.
func notifySocket(t *testing.T) <-chan string {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "notify")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sock, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	t.Setenv("NOTIFY_SOCKET", sock)
	notes := make(chan string, 1000)
	go func() {
		buf := make([]byte, 4096)
		for {
			n, _, err := conn.ReadFromUnix(buf)
			if err != nil {
				return
			}
			notes <- string(buf[:n])
		}
	}()
	return notes
}

// sawNote reports whether want arrives on notes within d.
func sawNote(notes <-chan string, want string, d time.Duration) bool {
	deadline := time.After(d)
	for {
		select {
		case s := <-notes:
			if s == want {
				return true
			}
		case <-deadline:
			return false
		}
	}
}

// waitForLog waits until the daemon's logs contain s.
func waitForLog(t *testing.T, rd *runningDaemon, s string) {
	t.Helper()
	deadline := time.Now().Add(minWait)
	for !strings.Contains(rd.logs.String(), s) {
		if time.Now().After(deadline) {
			t.Fatalf("no %q logged within %v\n%s", s, minWait, rd.logs)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestDaemonNATSUnreachable: with its NATS server down, the daemon says
// so, naming the URL and the error, rate-limited; it does not tell systemd
// READY=1 and /-/ready says why; Ctrl-C then stops it at once without
// blaming the (healthy) InfluxDB. Once the server comes up, the daemon
// connects, tells systemd READY=1, and a clean stop logs no warning.
func TestDaemonNATSUnreachable(t *testing.T) {
	notes := notifySocket(t)
	influx := influxtest.Shared(t, influxtest.Options{})
	port := freeTCPPort(t)
	cfg := fmt.Sprintf(`
[nats]
servers = ["nats://127.0.0.1:%d"]

[input]
subjects = ["u.>"]

[http]
listen = "127.0.0.1:0"

[pipeline]
shutdown_timeout = "10m"

[output.influxdb]
url = %q
bucket = %q
flush_interval = "100ms"
`, port, influx.URL, influx.Database)
	url := fmt.Sprintf("nats://127.0.0.1:%d", port)

	t.Run("stop while unreachable", func(t *testing.T) {
		rd := startDaemon(t, cfg, nil)
		waitForLog(t, rd, "connection refused")
		if sawNote(notes, "READY=1", 3*time.Second) {
			t.Errorf("READY=1 sent while NATS is unreachable\n%s", rd.logs)
		}
		code, body := get(t, "http://"+rd.d.httpAddr.String()+"/-/ready")
		if code != 503 || !strings.Contains(body, "nats input not connected") {
			t.Errorf("/-/ready = %d %q, want 503 nats input not connected", code, body)
		}
		// At once: a stop that waited for NATS would wait out
		// shutdown_timeout's 10 minutes, and stop's bound (a hang) fails
		// the test first.
		_, err := rd.stop(t)
		logs := rd.logs.String()
		if err != nil {
			t.Errorf("stop: %v\n%s", err, logs)
		}
		if strings.Contains(logs, "influx") && strings.Contains(logs, "level=ERROR") {
			t.Errorf("InfluxDB blamed\n%s", logs)
		}
		var fails []string
		for _, l := range strings.Split(logs, "\n") {
			if strings.Contains(l, "connection refused") {
				fails = append(fails, l)
			}
		}
		// Rate-limited: a few lines over the 3 s, not one per attempt.
		if len(fails) == 0 || len(fails) > 6 {
			t.Errorf("%d lines about the failed connection, want 1 to 6\n%s", len(fails), logs)
		}
		for _, l := range fails {
			if !strings.Contains(l, url) || !strings.Contains(l, "level=WARN") {
				t.Errorf("log line %q: want level=WARN and the url %s", l, url)
			}
		}
	})

	t.Run("connects later", func(t *testing.T) {
		rd := startDaemon(t, cfg, nil)
		waitForLog(t, rd, "connection refused")
		if sawNote(notes, "READY=1", time.Second) {
			t.Fatalf("READY=1 sent while NATS is unreachable\n%s", rd.logs)
		}
		ns := runNATS(t, port)
		defer func() { ns.Shutdown(); ns.WaitForShutdown() }()
		if !sawNote(notes, "READY=1", 15*time.Second) {
			t.Fatalf("no READY=1 within 15s of NATS starting\n%s", rd.logs)
		}
		waitFor(t, 10*time.Second, "/-/ready", func() bool {
			code, _ := get(t, "http://"+rd.d.httpAddr.String()+"/-/ready")
			return code == 200
		})
		if _, err := rd.stop(t); err != nil {
			t.Fatalf("stop: %v\n%s", err, rd.logs)
		}
		logs := rd.logs.String()
		if i := strings.Index(logs, "msg=stopping"); i < 0 || strings.Contains(logs[i:], "level=WARN") || strings.Contains(logs[i:], "level=ERROR") {
			t.Errorf("a clean stop logged a warning\n%s", logs)
		}
	})
}

// TestDaemonCheckpointWriteFails: a checkpoint file that cannot be
// written (replaced by a directory) is counted in /metrics and tried
// again at every checkpoint, though its series has not changed, until it
// is written; still failing at shutdown, the stop reports it. The final
// line counts the files the final checkpoint wrote, not every file since
// start.
func TestDaemonCheckpointWriteFails(t *testing.T) {
	ns := startNATS(t, false)
	nc := connectTest(t, ns.ClientURL())
	stateDir := t.TempDir()
	cfg := fmt.Sprintf(`
[nats]
servers = [%q]

[input]
subjects = ["ck.>"]

[http]
listen = "127.0.0.1:0"

[state]
dir = %q
checkpoint_interval = "50ms"
`, ns.ClientURL(), stateDir)
	keys := []string{"ck.a", "ck.b"}
	t0 := time.Now().Add(-time.Hour).Truncate(time.Second)
	step := 0
	publish := func(rd *runningDaemon, n int) {
		t.Helper()
		before := rd.d.runner.Stats().Processed
		for range n {
			for k, key := range keys {
				v := math.Sin(float64(step)/7 + float64(k))
				if err := nc.Publish(key, fmt.Appendf(nil, `{"time":%d,"value":%v}`, t0.Add(time.Duration(step)*time.Second).Unix(), v)); err != nil {
					t.Fatal(err)
				}
			}
			step++
		}
		if err := nc.Flush(); err != nil {
			t.Fatal(err)
		}
		want := before + uint64(n*len(keys))
		waitFor(t, 10*time.Second, "the points processed", func() bool { return rd.d.runner.Stats().Processed >= want })
	}
	file := filepath.Join(stateDir, statestore.FileName("ck.a"))
	isFile := func() bool { fi, err := os.Stat(file); return err == nil && fi.Mode().IsRegular() }
	breakFile := func() {
		t.Helper()
		if err := os.RemoveAll(file); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Join(file, "x"), 0o755); err != nil {
			t.Fatal(err)
		}
	}

	rd := startDaemon(t, cfg, nil)
	addr := rd.d.httpAddr.String()
	waitSubscribed(t, ns, "ck.>")
	publish(rd, 20)
	waitFor(t, 10*time.Second, "ck.a's checkpoint", isFile)
	breakFile()
	publish(rd, 5)
	m := map[string]float64{}
	// The gauge reads 0 while a flush retries the write, 1 after it
	// failed again: wait for a scrape between flushes.
	waitFor(t, 10*time.Second, "three failed writes, one series unwritten", func() bool {
		m = scrape(t, addr)
		return m["forecastd_checkpoint_write_errors_total"] >= 3 && m["forecastd_checkpoints_unwritten"] == 1
	})
	if c := strings.Count(rd.logs.String(), "checkpoint not written"); c < 1 {
		t.Errorf("the failed write is not logged\n%s", rd.logs)
	}
	// No new point: only the retry can write it.
	if err := os.RemoveAll(file); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "ck.a's checkpoint written again", isFile)
	waitFor(t, 10*time.Second, "no checkpoint left unwritten", func() bool {
		m = scrape(t, addr)
		return m["forecastd_checkpoints_unwritten"] == 0
	})
	if m["forecastd_checkpoint_writes_total"] < 3 {
		t.Errorf("forecastd_checkpoint_writes_total = %v, want at least 3", m["forecastd_checkpoint_writes_total"])
	}

	// Broken at shutdown: the stop fails, naming the checkpoint.
	breakFile()
	publish(rd, 1)
	_, err := rd.stop(t)
	if err == nil || !strings.Contains(err.Error(), "not written") {
		t.Errorf("stop with an unwritable checkpoint: err = %v, want \"not written\"\n%s", err, rd.logs)
	}
	rd.err = nil
	if err := os.RemoveAll(file); err != nil {
		t.Fatal(err)
	}

	// A clean run: the final line counts the two files it wrote.
	rd2 := startDaemon(t, cfg, nil)
	waitSubscribed(t, ns, "ck.>")
	for i := range 3 {
		publish(rd2, 3)
		waitFor(t, 10*time.Second, "a checkpoint", func() bool { return rd2.d.ckpt.Stats().Written >= uint64(2*(i+1)) })
	}
	publish(rd2, 1)
	if _, err := rd2.stop(t); err != nil {
		t.Fatalf("stop: %v\n%s", err, rd2.logs)
	}
	logs := rd2.logs.String()
	if !strings.Contains(logs, `msg="checkpoints written" component=state files=2 `) {
		t.Errorf("final checkpoint line: want files=2\n%s", logs)
	}
}

// TestDaemonModelErrors: a series whose values overflow its model stops
// forecasting, and says so: its learn and predict errors and its AOSVR's
// rollbacks are in /metrics by model kind, and the series is named in the
// log.
func TestDaemonModelErrors(t *testing.T) {
	ns := startNATS(t, false)
	nc := connectTest(t, ns.ClientURL())
	rd := startDaemon(t, fmt.Sprintf(`
[nats]
servers = [%q]

[input]
subjects = ["me.>"]

[http]
listen = "127.0.0.1:0"

[[rules]]
match = "me.bad"
target = "level"
scale = "fixed:-1,1"
kernel = "linear"
combine = false
seasons = ""
`, ns.ClientURL()), nil)
	waitSubscribed(t, ns, "me.>")
	t0 := time.Now().Add(-time.Hour).Truncate(time.Second)
	const n = 150
	for i := range n {
		v := math.Sin(float64(i) / 5)
		if i >= 100 && i%3 == 0 {
			v = 1e300 * float64(i%7-3)
		}
		for _, key := range []string{"me.bad", "me.good"} {
			if err := nc.Publish(key, fmt.Appendf(nil, `{"time":%d,"value":%v}`, t0.Add(time.Duration(i)*time.Second).Unix(), v)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	// Seconds under -race (the failing series rebuilds its model at every
	// refusal), more on a loaded machine: the bound is for a hang.
	waitFor(t, 5*time.Minute, "every point processed", func() bool { return rd.d.runner.Stats().Processed == 2*n })
	m := scrape(t, rd.d.httpAddr.String())
	for _, name := range []string{
		`forecastd_model_errors_total{model="aosvr",reason="learn"}`,
		`forecastd_model_errors_total{model="aosvr",reason="predict"}`,
		`forecastd_model_events_total{event="rollback",model="aosvr"}`,
		`forecastd_model_events_total{event="failure",model="aosvr"}`,
	} {
		if m[name] == 0 {
			t.Errorf("%s = %v, want > 0", name, m[name])
		}
	}
	if _, ok := m[`forecastd_model_errors_total{model="norma",reason="learn"}`]; !ok {
		t.Errorf("no forecastd_model_errors_total for norma (at zero)")
	}
	if logs := rd.logs.String(); !strings.Contains(logs, "model failed") || !strings.Contains(logs, "series=me.bad") {
		t.Errorf("the failing series is not logged\n%s", logs)
	}
}

// TestDaemonNonFinite: values at the edge of float64 never put a number
// that is not finite in /metrics or in a published forecast: the error
// histogram's sum stays finite, every message has a yhat, and its
// interval whole or absent.
func TestDaemonNonFinite(t *testing.T) {
	ns := startNATS(t, false)
	nc := connectTest(t, ns.ClientURL())
	col := collect(t, nc, "forecast.>")
	rd := startDaemon(t, fmt.Sprintf(`
[nats]
servers = [%q]

[input]
subjects = ["nf.>"]

[http]
listen = "127.0.0.1:0"

[[rules]]
match = "nf.level"
target = "level"
scale = "fixed:-1,1"
combine = false
seasons = ""
`, ns.ClientURL()), nil)
	waitSubscribed(t, ns, "nf.>")
	keys := []string{"nf.level", "nf.change"}
	t0 := time.Now().Add(-time.Hour).Truncate(time.Second)
	for i := range 120 {
		v := math.Sin(float64(i) / 5)
		if i >= 60 && i%4 < 2 {
			v = math.MaxFloat64 * float64(1-2*(i%2))
		}
		for _, key := range keys {
			if err := nc.Publish(key, fmt.Appendf(nil, `{"time":%d,"value":%v}`, t0.Add(time.Duration(i)*time.Second).Unix(), v)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "every point processed", func() bool { return rd.d.runner.Stats().Processed == 240 })
	waitFor(t, 10*time.Second, "the forecasts published", func() bool {
		return uint64(col.count(keys[0])+col.count(keys[1])) == sinkOf[*sinks.NATS](rd.d).Stats().Published
	})
	m := scrape(t, rd.d.httpAddr.String())
	for name, v := range m {
		if math.IsNaN(v) || math.IsInf(v, 0) && !strings.Contains(name, `le="+Inf"`) {
			t.Errorf("/metrics: %s = %v", name, v)
		}
	}
	if m["forecastd_forecast_abs_error_count"] == 0 {
		t.Errorf("no forecast scored: the test does not test")
	}
	for _, key := range keys {
		ps := col.series(key)
		if len(ps) == 0 {
			t.Errorf("%s: no forecast", key)
		}
		for _, p := range ps {
			if p.Yhat == nil || (p.Lower == nil) != (p.Upper == nil) {
				t.Errorf("%s: forecast %+v: want a yhat and both bounds or none", key, p)
			}
		}
	}
}

// TestDaemonJetStreamWaitsForNATS: under JetStream with checkpoints, the
// daemon checks the consumer's position before consuming, so it waits for
// NATS at start, saying so; a SIGTERM then stops it at once and cleanly.
func TestDaemonJetStreamWaitsForNATS(t *testing.T) {
	port := freeTCPPort(t)
	path := filepath.Join(t.TempDir(), "forecastd.toml")
	cfg := fmt.Sprintf(`
[nats]
servers = ["nats://127.0.0.1:%d"]

[input]
subjects = ["jw.>"]

[input.jetstream]
stream = "JW"
durable = "fd"

[state]
dir = %q
`, port, t.TempDir())
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	logs := &syncBuffer{}
	sigs := make(chan os.Signal, 1)
	errc := make(chan error, 1)
	go func() { errc <- runDaemon([]string{"-config", path}, logs, sigs, nil) }()
	waitFor(t, 10*time.Second, "the wait and the failed connection logged", func() bool {
		l := logs.String()
		return strings.Contains(l, "waiting for nats") && strings.Contains(l, "connection refused")
	})
	sigs <- syscall.SIGTERM
	// Not a measure: stopping at once is stopping before the 30 s
	// shutdown deadline (the default) could have run out.
	select {
	case err := <-errc:
		if err != nil {
			t.Errorf("runDaemon: %v\n%s", err, logs)
		}
	case <-time.After(25 * time.Second):
		t.Fatalf("still running 25s after SIGTERM\n%s", logs)
	}
}
