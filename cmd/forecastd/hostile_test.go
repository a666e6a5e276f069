package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/forecastd/forecastd/internal/config"
	"github.com/forecastd/forecastd/internal/statestore"
	"github.com/forecastd/forecastd/sinks"
	"github.com/forecastd/forecastd/sources"
)

// TestDaemonReloadDuringCheckpoints: SIGHUPs while the checkpoints run
// every millisecond and points flow. Under -race, the reload must not
// write the configuration the checkpoint loop and the budget loop read.
func TestDaemonReloadDuringCheckpoints(t *testing.T) {
	base := fmt.Sprintf(`
[nats]
servers = ["127.0.0.1:0"]
embedded = true

[input]
subjects = ["hup.>"]

[pipeline]
shutdown_timeout = "20s"
memory_budget = "1GiB"

[state]
dir = %q
checkpoint_interval = "1ms"

[model]
kind = "norma"
scale = "fixed:-2,2"
`, t.TempDir())
	rd := startDaemon(t, base+"dim = 2\n", nil)
	nc := connectTest(t, rd.d.embedded.ClientURL())
	waitSubscribed(t, rd.d.embedded, "hup.>")
	const reloads = 200
	for i := range reloads {
		// Renamed into place: a reload never reads a half-written file.
		tmp := rd.path + ".new"
		if err := os.WriteFile(tmp, []byte(base+fmt.Sprintf("dim = %d\n", 2+i%3)), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, rd.path); err != nil {
			t.Fatal(err)
		}
		for k := range 4 {
			if err := nc.Publish(fmt.Sprintf("hup.s%d", k), fmt.Appendf(nil, `{"time":%d,"value":%v}`, 1_700_000_000+i, float64(i%7)/7)); err != nil {
				t.Fatal(err)
			}
		}
		rd.sigs <- syscall.SIGHUP
	}
	waitFor(t, 60*time.Second, "every reload logged", func() bool {
		return strings.Count(rd.logs.String(), "reloaded") >= reloads
	})
	if n := strings.Count(rd.logs.String(), "reload failed"); n > 0 {
		t.Fatalf("%d reloads failed\n%s", n, rd.logs)
	}
	if _, err := rd.stop(t); err != nil {
		t.Fatalf("stop: %v\n%s", err, rd.logs)
	}
}

// TestDaemonReloadFIFO: SIGHUP while the configuration's path is a named
// pipe (whose open and read would wait for a writer for ever) fails the
// reload at once, saying why; the SIGHUPs after it are read, and SIGTERM
// stops the daemon.
func TestDaemonReloadFIFO(t *testing.T) {
	base := `
[nats]
servers = ["127.0.0.1:0"]
embedded = true

[input]
subjects = ["fifo.>"]

[pipeline]
shutdown_timeout = "10s"
`
	rd := startDaemon(t, base, nil)
	good, err := os.ReadFile(rd.path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(rd.path); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(rd.path, 0o644); err != nil {
		t.Fatal(err)
	}
	rd.sigs <- syscall.SIGHUP
	waitFor(t, 10*time.Second, "the reload of a named pipe refused", func() bool {
		return strings.Contains(rd.logs.String(), "not a regular file (a named pipe)")
	})
	rd.sigs <- syscall.SIGHUP // the loop still reads signals
	waitFor(t, 10*time.Second, "a second refusal", func() bool {
		return strings.Count(rd.logs.String(), "not a regular file (a named pipe)") == 2
	})
	if err := os.Remove(rd.path); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(rd.path, good, 0o644); err != nil {
		t.Fatal(err)
	}
	rd.sigs <- syscall.SIGHUP
	waitFor(t, 10*time.Second, "the file reloaded", func() bool {
		return strings.Contains(rd.logs.String(), "reloaded: [model] and [[rules]] unchanged")
	})
	// stop's own bound catches a daemon that ignores SIGTERM.
	if _, err := rd.stop(t); err != nil {
		t.Fatalf("stop: %v\n%s", err, rd.logs)
	}
}

// TestDaemonReloadNeverBlocksSignals: while a SIGHUP's reading of the
// file hangs (a hung file system: made here by a reading that waits),
// the daemon gives the reading up after its bound, reads the next
// SIGHUP, and stops on SIGTERM.
func TestDaemonReloadNeverBlocksSignals(t *testing.T) {
	hang := make(chan struct{})
	defer close(hang)
	var reads atomic.Int32
	d := &daemon{reloadTimeout: 50 * time.Millisecond, readConfig: func(path string) (*config.Config, error) {
		if reads.Add(1) == 1 {
			<-hang
		}
		return config.Load(path, config.DaemonChecks)
	}}
	rd := startDaemon(t, `
[nats]
servers = ["127.0.0.1:0"]
embedded = true

[input]
subjects = ["hang.>"]

[pipeline]
shutdown_timeout = "10s"
`, d)
	rd.sigs <- syscall.SIGHUP // its reading hangs
	waitFor(t, 10*time.Second, "the hung reading given up", func() bool {
		return strings.Contains(rd.logs.String(), "given up")
	})
	rd.sigs <- syscall.SIGHUP
	waitFor(t, 10*time.Second, "the next SIGHUP read", func() bool {
		return strings.Contains(rd.logs.String(), "reloaded: [model] and [[rules]] unchanged")
	})
	rd.sigs <- syscall.SIGHUP // its reading hangs no more, but is under way at SIGTERM perhaps
	// stop's own bound catches a daemon that ignores SIGTERM.
	if _, err := rd.stop(t); err != nil {
		t.Fatalf("stop: %v\n%s", err, rd.logs)
	}
}

// TestDaemonLongSubject: line protocol on a 3 507-byte subject with a
// 600-byte measurement, whose forecasts' subject would make a publish
// nats-server refuses by closing the connection. The points are refused
// at intake (subject_too_long), the output stays connected and another
// series keeps being forecast. If the output connection is closed anyway
// (here by the test publishing such a subject on it), the daemon connects
// again, says so, and the other series' forecasts resume.
func TestDaemonLongSubject(t *testing.T) {
	rd := startDaemon(t, `
[nats]
servers = ["127.0.0.1:0"]
embedded = true

[input]
subjects = ["metrics.>"]
data_format = "influx"

[pipeline]
shutdown_timeout = "20s"

[model]
kind = "norma"
dim = 2
scale = "fixed:-2,2"
`, nil)
	nc := connectTest(t, rd.d.embedded.ClientURL())
	col := collect(t, nc, "forecast.>")
	waitSubscribed(t, rd.d.embedded, "metrics.>")
	t0 := time.Now().Add(-time.Hour).Truncate(time.Second)
	i := 0
	innocent := func(n int) {
		t.Helper()
		for range n {
			line := fmt.Sprintf("cpu usage=%v %d", math.Sin(float64(i)/4), t0.Add(time.Duration(i)*time.Second).UnixNano())
			i++
			if err := nc.Publish("metrics.cpu", []byte(line)); err != nil {
				t.Fatal(err)
			}
		}
	}
	const key = "cpu usage"
	innocent(5)
	waitFor(t, 20*time.Second, "the innocent series' first forecasts", func() bool { return col.count(key) >= 3 })

	long := "metrics." + strings.Repeat("abcdefghi.", 350) + "x"
	measurement := strings.Repeat("m", 600)
	for k := range 10 {
		line := fmt.Sprintf("%s v=%d %d", measurement, k, t0.Add(time.Duration(k)*time.Second).UnixNano())
		if err := nc.Publish(long, []byte(line)); err != nil {
			t.Fatal(err)
		}
	}
	innocent(5)
	waitFor(t, 20*time.Second, "the innocent series' forecasts after the long subjects", func() bool { return col.count(key) >= 8 })
	if n := rd.d.src.Stats().ParseErrors[sources.ReasonSubjectTooLong]; n != 10 {
		t.Fatalf("subject_too_long = %d, want 10\n%s", n, rd.logs)
	}
	if ok, why := rd.d.readiness(); !ok {
		t.Fatalf("not ready after the long subjects: %s\n%s", why, rd.logs)
	}

	// The output connection lost anyway: the server closes it for good.
	out := rd.d.output.Conn()
	if err := out.Publish("forecast."+long+"."+measurement, []byte("x")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "the server closing the output connection", out.IsClosed)
	waitFor(t, 20*time.Second, "the output connected again", func() bool { ok, _ := rd.d.readiness(); return ok })
	if !strings.Contains(rd.logs.String(), "nats output connection closed") {
		t.Fatalf("the closed output connection is not logged:\n%s", rd.logs)
	}
	innocent(5)
	waitFor(t, 20*time.Second, "the innocent series' forecasts after the output connection was closed", func() bool { return col.count(key) >= 13 })
}

// TestDaemonWatchdogStuckShard: while a shard takes no point (its sink
// blocks), the daemon is not alive for the watchdog; once it takes
// points again, it is.
func TestDaemonWatchdogStuckShard(t *testing.T) {
	g := &gate{mode: "hold", changed: make(chan struct{})}
	d := &daemon{wrapOut: func(w sinks.Writer) sinks.Writer { g.next = w; return g }}
	rd := startDaemon(t, `
[nats]
servers = ["127.0.0.1:0"]
embedded = true

[input]
subjects = ["wd.>"]

[pipeline]
shards = 1
queue_size = 4
shutdown_timeout = "20s"

[model]
kind = "norma"
dim = 2
scale = "fixed:-2,2"
`, d)
	nc := connectTest(t, rd.d.embedded.ClientURL())
	waitSubscribed(t, rd.d.embedded, "wd.>")
	var last uint64
	if ok, why := rd.d.live(&last); !ok {
		t.Fatalf("not alive at start: %s", why)
	}
	t0 := time.Now().Add(-time.Hour).Truncate(time.Second)
	for i := range 30 {
		if err := nc.Publish("wd.a", fmt.Appendf(nil, `{"time":%d,"value":%v}`, t0.Unix()+int64(i), math.Sin(float64(i)))); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, 20*time.Second, "the watchdog seeing the stuck shard", func() bool {
		ok, _ := rd.d.live(&last)
		return !ok
	})
	g.set("open")
	waitFor(t, 20*time.Second, "alive again", func() bool {
		ok, _ := rd.d.live(&last)
		return ok
	})
}

// TestDaemonStateFIFO: a FIFO in place of a series' checkpoint file is
// reported with its path at start and skipped; the series' first point
// does not block its shard (the only one): it and another series are
// forecast.
func TestDaemonStateFIFO(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, statestore.FileName("ff.a"))
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	rd := startDaemon(t, fmt.Sprintf(`
[nats]
servers = ["127.0.0.1:0"]
embedded = true

[input]
subjects = ["ff.>"]

[pipeline]
shards = 1
shutdown_timeout = "20s"

[state]
dir = %q

[model]
kind = "norma"
dim = 2
scale = "fixed:-2,2"
`, dir), nil)
	nc := connectTest(t, rd.d.embedded.ClientURL())
	col := collect(t, nc, "forecast.>")
	waitSubscribed(t, rd.d.embedded, "ff.>")
	t0 := time.Now().Add(-time.Hour).Truncate(time.Second)
	for i := range 6 {
		for _, s := range []string{"ff.a", "ff.b"} {
			if err := nc.Publish(s, fmt.Appendf(nil, `{"time":%d,"value":%v}`, t0.Unix()+int64(i), math.Sin(float64(i)))); err != nil {
				t.Fatal(err)
			}
		}
	}
	waitFor(t, 20*time.Second, "both series forecast", func() bool { return col.count("ff.a") >= 4 && col.count("ff.b") >= 4 })
	if !strings.Contains(rd.logs.String(), fifo) {
		t.Fatalf("the FIFO %s is not reported:\n%s", fifo, rd.logs)
	}
}

// TestSystemdStopTimeout: the shipped unit's TimeoutStopSec leaves the
// default shutdown_timeout, the 5 s a stop may take beyond it, and a
// margin, so that systemd does not SIGKILL a stop that keeps its deadline.
func TestSystemdStopTimeout(t *testing.T) {
	b, err := os.ReadFile("../../systemd/forecastd.service")
	if err != nil {
		t.Fatal(err)
	}
	var stop time.Duration
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "TimeoutStopSec="); ok {
			if stop, err = time.ParseDuration(v); err != nil {
				t.Fatalf("TimeoutStopSec=%s: %v", v, err)
			}
		}
	}
	if want := config.DefaultShutdownTimeout + 10*time.Second; stop < want {
		t.Fatalf("TimeoutStopSec %v, want at least shutdown_timeout %v + 10s", stop, config.DefaultShutdownTimeout)
	}
}

// TestHTTPListenExposureWarned: [http] listen on every interface is warned
// about, as the embedded NATS server's is; on loopback it is not.
func TestHTTPListenExposureWarned(t *testing.T) {
	for _, c := range []struct {
		listen string
		warned bool
	}{{":0", true}, {"0.0.0.0:0", true}, {"127.0.0.1:0", false}, {"localhost:0", false}} {
		t.Run(c.listen, func(t *testing.T) {
			rd := startDaemon(t, fmt.Sprintf(`
[nats]
servers = ["127.0.0.1:0"]
embedded = true

[input]
subjects = ["h.>"]

[http]
listen = %q
`, c.listen), nil)
			if got := strings.Contains(rd.logs.String(), "http listens beyond this host"); got != c.warned {
				t.Fatalf("listen %q: warned %v, want %v\n%s", c.listen, got, c.warned, rd.logs)
			}
		})
	}
}

// TestDaemonStateDirBoundAtStop: after a flood of new series and a stop,
// then a start and a flood of other series and a stop, the state dir
// holds at most max_series + keep_evicted files: the states loaded at
// start whose series do not come back count among the evicted kept, and
// so do the series evicted unchanged since their periodic checkpoint.
func TestDaemonStateDirBoundAtStop(t *testing.T) {
	dir := t.TempDir()
	for run := range 2 {
		stateFlood(t, dir, fmt.Sprintf("r%d", run))
		ents, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		files := 0
		for _, e := range ents {
			if strings.HasSuffix(e.Name(), statestore.Ext) {
				files++
			}
		}
		if files > 300 {
			t.Fatalf("run %d: %d state files after the stop, bound max_series + keep_evicted = 300", run, files)
		}
	}
}

// stateFlood runs the daemon on dir (max_series 200, keep_evicted 100),
// sends three points each of 1200 series sd.<prefix>.<n>, and stops it.
func stateFlood(t *testing.T, dir, prefix string) {
	rd := startDaemon(t, fmt.Sprintf(`
[nats]
servers = ["127.0.0.1:0"]
embedded = true

[input]
subjects = ["sd.>"]

[pipeline]
max_series = 200
shutdown_timeout = "60s"

[state]
dir = %q
keep_evicted = 100
checkpoint_interval = "100ms"

[model]
kind = "norma"
dim = 2
scale = "fixed:-2,2"
`, dir), nil)
	nc := connectTest(t, rd.d.embedded.ClientURL())
	waitSubscribed(t, rd.d.embedded, "sd.>")
	t0 := time.Now().Add(-time.Hour).Truncate(time.Second)
	const n = 1200
	for i := range 3 {
		for k := range n {
			if err := nc.Publish(fmt.Sprintf("sd.%s.%d", prefix, k), fmt.Appendf(nil, `{"time":%d,"value":%v}`, t0.Unix()+int64(i), math.Sin(float64(k+i)))); err != nil {
				t.Fatal(err)
			}
		}
		if err := nc.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, 60*time.Second, "every point processed", func() bool {
		st := rd.d.runner.Stats()
		return st.Processed+st.DroppedQueueFull >= 3*n
	})
	if _, err := rd.stop(t); err != nil {
		t.Fatalf("stop: %v\n%s", err, rd.logs)
	}
}

// TestCheckConfigBoundsTheWhole: keys each within its ceiling whose
// products cannot fit are refused, naming what to lower: the queues of
// 1024 shards of 65 536 points, an AOSVR series with window 2000, dim 256,
// horizon 64 and interval_window 100 000, NORMA with τ = 100 000 at dim
// 256, a memory_budget the queues alone exceed. check-config prints the
// memory a configuration can need.
func TestCheckConfigBoundsTheWhole(t *testing.T) {
	head := "[nats]\nservers = [\"127.0.0.1:4222\"]\n\n[input]\nsubjects = [\"a.>\"]\n\n"
	for _, c := range []struct {
		name, cfg string
		want      []string // in the error; none: valid
	}{
		{"defaults", "", nil},
		{"issue", "[pipeline]\nshards = 1024\nqueue_size = 65536\nmax_series = 10000000\n\n[model]\nkind = \"aosvr\"\nwindow = 2000\ndim = 256\nhorizon = 64\ninterval_window = 100000\n",
			[]string{"model: a series' state can reach"}},
		{"issue with a budget", "[pipeline]\nshards = 1024\nqueue_size = 65536\nmax_series = 10000000\nmemory_budget = \"8GiB\"\n",
			[]string{"the queues and buffers alone can take 10.0 GiB"}},
		{"norma tau", "[model]\nkind = \"norma\"\ndim = 256\nnorma_tau = 100000\n", []string{"model: a series' state can reach 2"}},
		{"norma rule", "[[rules]]\nmatch = \"a.*\"\nkind = \"norma\"\ndim = 256\nnorma_tau = 100000\n", []string{"rules[0]: a series' state can reach"}},
		{"aosvr 2000", "[model]\nkind = \"aosvr\"\nwindow = 2000\ndim = 256\n", nil},
		{"budget", "[pipeline]\nshards = 128\nqueue_size = 65536\nmemory_budget = \"1GiB\"\n", []string{"over memory_budget 1GiB"}},
		{"budget over the host", "[pipeline]\nmemory_budget = \"1000TiB\"\n", []string{"exceeds this host's memory"}},
		// Warm start's loads count: 4 at once of 200 000 points each.
		{"budget and history", "[pipeline]\nmemory_budget = \"64MiB\"\n\n[history]\nurl = \"http://127.0.0.1:8086\"\nbucket = \"db\"\n",
			[]string{"the queues and buffers alone can take", "[history] concurrency and max_points"}},
		{"budget and smaller history", "[pipeline]\nmemory_budget = \"64MiB\"\n\n[history]\nurl = \"http://127.0.0.1:8086\"\nbucket = \"db\"\nconcurrency = 1\nmax_points = 20000\n", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "f.toml")
			if err := os.WriteFile(path, []byte(head+c.cfg), 0o644); err != nil {
				t.Fatal(err)
			}
			var out strings.Builder
			err := config.CheckCommand([]string{path}, &out, io.Discard)
			if c.want == nil {
				if err != nil || !strings.Contains(out.String(), "memory: queues") {
					t.Fatalf("check-config: %v\n%s", err, out.String())
				}
				return
			}
			if err == nil {
				t.Fatalf("check-config accepted it:\n%s", out.String())
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("the error does not say %q:\n%v", w, err)
				}
			}
		})
	}
}

// TestCheckConfigMemoryWarnings: the shipped configurations print their
// memory and OK, and no warning (every series at its largest state is no
// forecast of the memory used, and max_series bounds them); a budget
// that cannot hold one series at its largest beside the queues and
// buffers is warned of, naming the key.
func TestCheckConfigMemoryWarnings(t *testing.T) {
	for _, path := range []string{"../../config.example.toml", "../../telegraf/forecastd.toml"} {
		var out strings.Builder
		if err := config.CheckCommand([]string{path}, &out, io.Discard); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
			if strings.HasPrefix(line, path+": warning: output.influxdb.url: ") {
				continue // no InfluxDB where it says: TestCheckConfigInfluxReach
			}
			if !strings.HasPrefix(line, path+": memory: ") && line != path+": OK" {
				t.Errorf("%s: check-config says more than its memory and OK: %q", path, line)
			}
		}
	}
	path := filepath.Join(t.TempDir(), "f.toml")
	cfg := "[nats]\nservers = [\"127.0.0.1:4222\"]\n\n[input]\nsubjects = [\"a.>\"]\n\n[pipeline]\nmemory_budget = \"64MiB\"\n\n[model]\nwindow = 2000\ndim = 200\n"
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := config.CheckCommand([]string{path}, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "warning: pipeline.memory_budget: 64MiB leaves room for no series at its largest state") {
		t.Errorf("a budget too small for one series:\n%s", out.String())
	}
}

// TestDaemonLongSubjectJetStream: under JetStream, the long-subject
// messages are refused at intake (terminated, not redelivered), the
// innocent series loses no point, and when the output connection is
// closed by the server anyway the forecasts refused meanwhile are naked
// and redelivered, those in the client's buffer are published again, and
// the daemon connects again: every message is settled and every point of
// the innocent series is forecast.
func TestDaemonLongSubjectJetStream(t *testing.T) {
	rd := startDaemon(t, fmt.Sprintf(`
[nats]
servers = ["127.0.0.1:0"]
embedded = true

[input]
subjects = ["metrics.>"]
data_format = "influx"

[input.jetstream]
stream = "M"
durable = "fd"
nak_delay = "200ms"
max_deliver = 40  # a series holds its newer points for 8 s, however slow the machine

[pipeline]
shutdown_timeout = "20s"

[model]
kind = "norma"
dim = 2
scale = "fixed:-2,2"

[state]
dir = %q
`, t.TempDir()), nil)
	nc := connectTest(t, rd.d.embedded.ClientURL())
	col := collect(t, nc, "forecast.>")
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	t0 := time.Now().Add(-time.Hour).Truncate(time.Second)
	i := 0
	innocent := func(n int) {
		t.Helper()
		for range n {
			line := fmt.Sprintf("cpu usage=%v %d", math.Sin(float64(i)/4), t0.Add(time.Duration(i)*time.Second).UnixNano())
			i++
			if _, err := js.Publish(ctx, "metrics.cpu", []byte(line)); err != nil {
				t.Fatal(err)
			}
		}
	}
	forecastTimes := func() int {
		seen := map[int64]bool{}
		for _, p := range col.series("cpu usage") {
			seen[p.Time.UnixNano()] = true
		}
		return len(seen)
	}
	long := "metrics." + strings.Repeat("abcdefghi.", 350) + "x"
	innocent(5)
	for k := range 10 {
		line := fmt.Sprintf("%s v=%d %d", strings.Repeat("m", 600), k, t0.Add(time.Duration(k)*time.Second).UnixNano())
		if _, err := js.Publish(ctx, long, []byte(line)); err != nil {
			t.Fatal(err)
		}
	}
	innocent(5)
	waitFor(t, 30*time.Second, "8 forecasts of the innocent series", func() bool { return forecastTimes() >= 8 })

	out := rd.d.output.Conn()
	if err := out.Publish("forecast."+long+"."+strings.Repeat("m", 600), []byte("x")); err != nil {
		t.Fatal(err)
	}
	innocent(5) // some may meet the closed connection: refused, naked, redelivered
	waitFor(t, 30*time.Second, "the server closing the output connection", out.IsClosed)
	waitFor(t, 30*time.Second, "the output connected again", func() bool { ok, _ := rd.d.readiness(); return ok })
	innocent(5)
	// Every point's forecast (from the third point on, dim 2): the
	// point's time + 1 s; those in the client's buffer when the server
	// closed the connection are published again on the new one.
	deadline := time.Now().Add(60 * time.Second)
	for {
		seen := map[int64]bool{}
		for _, p := range col.series("cpu usage") {
			seen[p.Time.UnixNano()] = true
		}
		missing := 0
		for k := 2; k < 20; k++ {
			if !seen[t0.Add(time.Duration(k+1)*time.Second).UnixNano()] {
				missing++
			}
		}
		if missing == 0 {
			break
		}
		if time.Now().After(deadline) {
			var got []string
			for _, p := range col.series("cpu usage") {
				got = append(got, p.Time.Sub(t0).String())
			}
			t.Fatalf("%d of the 18 forecasts missing (got %v); nats out %+v; source %+v; runner %+v\n%s", missing, got, sinkOf[*sinks.NATS](rd.d).Stats(), rd.d.src.Stats(), rd.d.runner.Stats(), rd.logs)
		}
		time.Sleep(10 * time.Millisecond)
	}
	waitFor(t, 60*time.Second, "every message settled", func() bool {
		st := rd.d.src.Stats()
		return st.Acked+st.Termed == 30
	})
	if st := rd.d.src.Stats(); st.Termed != 10 || st.ParseErrors[sources.ReasonSubjectTooLong] < 10 {
		t.Fatalf("stats %+v: want the 10 long-subject messages terminated", st)
	}
}
