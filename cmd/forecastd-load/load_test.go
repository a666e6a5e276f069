package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestValidate(t *testing.T) {
	good := Config{Servers: []string{"nats://127.0.0.1:4222"}, Series: 1, Duration: time.Second,
		SubjectPrefix: "load", ForecastPrefix: "forecast", Format: "json", Inflight: 1, Timeout: time.Second}
	for _, tc := range []struct {
		name string
		edit func(*Config)
		want string // "" valid
	}{
		{"good", func(*Config) {}, ""},
		{"localhost", func(c *Config) { c.Servers = []string{"localhost:4222"} }, ""},
		{"ipv6 loopback", func(c *Config) { c.Servers = []string{"nats://[::1]:4222"} }, ""},
		{"127.1.2.3", func(c *Config) { c.Servers = []string{"nats://127.1.2.3:4222"} }, ""},
		{"remote ip", func(c *Config) { c.Servers = []string{"nats://10.0.0.1:4222"} }, "not a loopback address"},
		{"remote name", func(c *Config) { c.Servers = []string{"nats://demo.nats.io:4222"} }, "not a loopback address"},
		{"one remote of two", func(c *Config) { c.Servers = []string{"127.0.0.1:4222", "0.0.0.0:4222"} }, "not a loopback address"},
		{"no servers", func(c *Config) { c.Servers = nil }, "-servers"},
		{"format", func(c *Config) { c.Format = "csv" }, "-format"},
		{"series", func(c *Config) { c.Series = 0 }, "-series"},
		{"rate", func(c *Config) { c.Rate = -1 }, "-rate"},
		{"prefix", func(c *Config) { c.SubjectPrefix = "a.>" }, "-subject_prefix"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := good
			tc.edit(&c)
			err := c.Validate()
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestQuantile(t *testing.T) {
	ns := []int64{1e6, 2e6, 3e6, 4e6, 5e6, 6e6, 7e6, 8e6, 9e6, 10e6}
	for _, tc := range []struct{ q, want float64 }{{0.5, 5}, {0.9, 9}, {0.99, 10}, {1, 10}, {0, 1}} {
		if got := quantile(ns, tc.q); got != tc.want {
			t.Errorf("quantile(%v) = %v, want %v", tc.q, got, tc.want)
		}
	}
	if got := quantile(nil, 0.5); got != 0 {
		t.Errorf("quantile of nothing = %v", got)
	}
}

func TestParseOrigin(t *testing.T) {
	body := `{"series":"load.s00001","model":"norma","time":"2026-11-22T03:30:28.000000002Z","origin":"2026-11-22T03:30:27.123456789Z","horizon":1,"yhat":1,"yhat_lower":null,"yhat_upper":null}`
	got, ok := parseOrigin([]byte(body))
	want := time.Date(2026, 11, 22, 3, 30, 27, 123456789, time.UTC).UnixNano()
	if !ok || got != want {
		t.Fatalf("parseOrigin = %d, %v; want %d", got, ok, want)
	}
	if _, ok := parseOrigin([]byte(`{"origin":"yesterday"}`)); ok {
		t.Fatal("a bad origin parsed")
	}
}

// TestAgainstDaemon builds forecastd, runs one daemon per data format
// against an in-process nats-server, and puts each under a short load:
// every measured point's forecast comes back, matched exactly (value:
// in order), and the report's figures are consistent. How fast is the
// machine's business: nothing here asserts a speed.
func TestAgainstDaemon(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the daemon")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "forecastd")
	build := exec.Command("go", "build", "-o", bin, "github.com/forecastd/forecastd/cmd/forecastd")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	ns, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, NoSigs: true, NoLog: true})
	if err != nil {
		t.Fatal(err)
	}
	ns.Start()
	t.Cleanup(func() { ns.Shutdown(); ns.WaitForShutdown() })
	if !ns.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats-server not ready")
	}
	url := ns.ClientURL()

	// A forecast as the daemon publishes it, decoded in full.
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	sample, err := nc.SubscribeSync("forecast.json.>")
	if err != nil {
		t.Fatal(err)
	}
	if err := sample.AutoUnsubscribe(1); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}

	formats := []string{formatJSON, formatValue, formatInflux}
	var wg sync.WaitGroup
	pids := map[string]int{}
	for _, f := range formats {
		pids[f] = startDaemon(t, bin, dir, url, f)
	}
	for _, f := range formats {
		waitFor(t, 20*time.Second, "the daemon's subscription to "+f+".>", func() bool {
			return ns.GlobalAccount().SubscriptionInterest(f + ".s00000")
		})
	}
	results := make([]*Result, len(formats))
	errs := make([]error, len(formats))
	for k, f := range formats {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[k], errs[k] = Run(context.Background(), Config{
				Servers: []string{url}, Series: 20, Rate: 1000, Duration: 1500 * time.Millisecond,
				SubjectPrefix: f, ForecastPrefix: "forecast", Format: f, Warmup: 10,
				Inflight: 2000, Timeout: 5 * time.Second, Seed: 1,
			})
		}()
	}
	wg.Wait()
	for k, f := range formats {
		r, err := results[k], errs[k]
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		var buf bytes.Buffer
		printResult(&buf, r)
		t.Logf("\n%s", buf.String())
		checkResult(t, f, r, 1000)
	}

	m, err := sample.NextMsg(5 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var fc struct {
		Series, Model, Time, Origin string
		Horizon                     int
		Yhat                        *float64
	}
	if err := json.Unmarshal(m.Data, &fc); err != nil {
		t.Fatalf("%s: %v", m.Data, err)
	}
	if !strings.HasPrefix(m.Subject, "forecast.json.s000") || fc.Series != strings.TrimPrefix(m.Subject, "forecast.") ||
		fc.Model != "norma" || fc.Horizon != 1 || fc.Yhat == nil || fc.Time <= fc.Origin {
		t.Errorf("forecast on %s: %s", m.Subject, m.Data)
	}

	// As fast as the window allows: the throughput is the daemon's.
	r, err := Run(context.Background(), Config{
		Servers: []string{url}, Series: 20, Duration: time.Second,
		SubjectPrefix: formatJSON, ForecastPrefix: "forecast", Format: formatJSON, Warmup: 0,
		Inflight: 500, Timeout: 5 * time.Second, Seed: 2, PID: pids[formatJSON],
	})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	printResult(&buf, r)
	t.Logf("\n%s", buf.String())
	checkResult(t, "json, maximal rate", r, 0)
	// A Go process with a NATS connection is resident for more than 4 MB.
	if r.RSSStart < 4<<20 || r.RSSWarm < 4<<20 || r.RSSEnd < 4<<20 ||
		r.RSSPerSeries != float64(r.RSSEnd-r.RSSStart)/float64(r.Series) || !strings.Contains(buf.String(), "B per series") {
		t.Errorf("the daemon's memory (pid %d): start %d, warm %d, end %d bytes, %v per series", pids[formatJSON], r.RSSStart, r.RSSWarm, r.RSSEnd, r.RSSPerSeries)
	}
	// A second at the maximal rate keeps both processes busy for many
	// ticks; the per-point figure is the phase's CPU time ÷ Published.
	if r.CPUSeconds <= 0 || math.Abs(r.CPUPerPoint*float64(r.Published)-r.CPUSeconds*1e6) > 1 ||
		r.LoadCPUPerPoint <= 0 || !strings.Contains(buf.String(), "µs per point") {
		t.Errorf("the daemon's CPU (pid %d): %v s, %v µs per point of %d, this tool %v µs per point", pids[formatJSON], r.CPUSeconds, r.CPUPerPoint, r.Published, r.LoadCPUPerPoint)
	}
}

func TestReadCPU(t *testing.T) {
	before, err := readCPU("self")
	if err != nil {
		t.Fatal(err)
	}
	// Spin until the kernel has charged this process another tick or more.
	var after time.Duration
	for deadline := time.Now().Add(10 * time.Second); after <= before && time.Now().Before(deadline); {
		for i := 0; i < 1e6; i++ {
			_ = math.Sqrt(float64(i))
		}
		if after, err = readCPU("self"); err != nil {
			t.Fatal(err)
		}
	}
	if after <= before {
		t.Fatalf("readCPU(self) = %v then %v after spinning; want it to grow", before, after)
	}
	if _, err := readCPU(strconv.Itoa(1 << 23)); err == nil || !strings.Contains(err.Error(), "-pid") {
		t.Fatalf("readCPU(no such process) = %v, want an error naming -pid", err)
	}
}

func TestReadRSS(t *testing.T) {
	rss, err := readRSS(os.Getpid())
	if err != nil || rss < 1<<20 {
		t.Fatalf("readRSS(own pid) = %d, %v; want more than 1 MiB", rss, err)
	}
	// A pid above the kernel's maximum (2²² on 64-bit Linux) names no process.
	if _, err := readRSS(1 << 23); err == nil || !strings.Contains(err.Error(), "-pid") {
		t.Fatalf("readRSS(no such process) = %v, want an error naming -pid", err)
	}
}

// checkResult checks what a run must report however fast the machine:
// every measured point's forecast back, latencies in order, and rates
// that are rates; at a target rate, never published faster than it (the
// schedule's own bound: a busy machine only publishes slower).
func checkResult(t *testing.T, name string, r *Result, rate float64) {
	t.Helper()
	if r.Err != "" || r.Lost != 0 || r.Unmatched != 0 || r.Silent != 0 || r.Forecasts != r.Published || r.Published == 0 {
		t.Errorf("%s: %+v", name, r)
	}
	if !(0 < r.P50 && r.P50 <= r.P90 && r.P90 <= r.P99 && r.P99 <= r.Max) {
		t.Errorf("%s: latencies p50 %v p90 %v p99 %v max %v ms", name, r.P50, r.P90, r.P99, r.Max)
	}
	if !(r.OfferedRate > 0 && r.ForecastRate > 0) || rate > 0 && r.OfferedRate > 1.2*rate {
		t.Errorf("%s: offered %v/s, forecasts %v/s at a rate of %v/s", name, r.OfferedRate, r.ForecastRate, rate)
	}
}

// startDaemon runs the forecastd binary reading <format>.> in format,
// NORMA with a fixed scale (forecasts from the sixth point), and stops it
// with SIGTERM at cleanup.
func startDaemon(t *testing.T, bin, dir, url, format string) (pid int) {
	t.Helper()
	cfg := filepath.Join(dir, format+".toml")
	body := fmt.Sprintf(`[nats]
servers = [%q]
[input]
subjects = ["%s.>"]
data_format = %q
[model]
kind = "norma"
norma_tau = 100
scale = "fixed:0,100"
[pipeline]
shutdown_timeout = "5s"
`, url, format, format)
	if err := os.WriteFile(cfg, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "run", "-config", cfg)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	exited := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			logs.WriteString(sc.Text() + "\n")
		}
		exited <- cmd.Wait()
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-exited:
			if err != nil {
				t.Errorf("forecastd (%s): %v\n%s", format, err, logs.String())
			}
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
			t.Errorf("forecastd (%s) did not stop within 15s\n%s", format, logs.String())
		}
	})
	return cmd.Process.Pid
}

func waitFor(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("no %s within %v", what, within)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
