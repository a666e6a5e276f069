// Package promtest runs a real Prometheus or VictoriaMetrics server for
// tests: on a free port, in a temporary directory, stopped at the test's
// cleanup.
//
// The binaries are looked for in $PROMETHEUS and $VICTORIA_METRICS (a
// path each), then PATH, then $(go env GOBIN) and $(go env GOPATH)/bin;
// one in none is built with `go install` of Module (scripts/test does
// this before the tests, several minutes the first time). If one can be
// neither found nor built the test is skipped, except under CI=true,
// where it fails.
//
// Prometheus runs with --web.enable-remote-write-receiver and
// storage.tsdb.out_of_order_time_window set (OutOfOrderWindow), as the
// README's "With Prometheus" asks of a user; VictoriaMetrics with its
// query cache off, so that a query after a write sees it.
package promtest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/klauspost/compress/snappy"
	"google.golang.org/protobuf/encoding/protowire"
)

// Kind is a server kind.
type Kind struct {
	// Name is the kind's name in test names: "prometheus", "victoriametrics".
	Name string
	// Bin is the binary's name, Env the variable that may hold its path.
	Bin, Env string
	// Module is what `go install` builds when the binary is missing.
	Module string
}

// The kinds of server.
var (
	Prometheus = Kind{"prometheus", "prometheus", "PROMETHEUS",
		"github.com/prometheus/prometheus/cmd/prometheus@v0.316.0"}
	VictoriaMetrics = Kind{"victoriametrics", "victoria-metrics", "VICTORIA_METRICS",
		"github.com/VictoriaMetrics/VictoriaMetrics/app/victoria-metrics@v1.151.0"}
	Kinds = []Kind{Prometheus, VictoriaMetrics}
)

// OutOfOrderWindow is Prometheus' storage.tsdb.out_of_order_time_window
// in the tests: samples up to this far behind the newest are taken.
const OutOfOrderWindow = "30d"

// Server is a running server.
type Server struct {
	Kind Kind
	// URL is the HTTP API's base, "http://127.0.0.1:PORT"; WriteURL the
	// remote write endpoint.
	URL, WriteURL string
	// Dir holds the data and the log (server.log).
	Dir string

	cmd    *exec.Cmd
	exited chan struct{}
}

var client = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}

var found sync.Map // Kind.Bin → result

type result struct {
	path string
	err  error
}

// Binary returns the path of k's binary, building it if it is nowhere to
// be found.
func Binary(k Kind) (string, error) {
	if r, ok := found.Load(k.Bin); ok {
		return r.(result).path, r.(result).err
	}
	p, err := find(k)
	found.Store(k.Bin, result{p, err})
	return p, err
}

func find(k Kind) (string, error) {
	if p := os.Getenv(k.Env); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("promtest: $%s: %w", k.Env, err)
		}
		return p, nil
	}
	if p, err := exec.LookPath(k.Bin); err == nil {
		return p, nil
	}
	dirs := goBinDirs()
	look := func() string {
		for _, d := range dirs {
			p := filepath.Join(d, k.Bin)
			if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
				return p
			}
		}
		return ""
	}
	if p := look(); p != "" {
		return p, nil
	}
	if len(dirs) == 0 {
		return "", fmt.Errorf("promtest: %s not in PATH, and no go command to build it", k.Bin)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "install", k.Module)
	cmd.Env = append(os.Environ(), "GOFLAGS=-buildvcs=false", "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("promtest: %s not found; go install %s: %w\n%s", k.Bin, k.Module, err, out)
	}
	if p := look(); p != "" {
		return p, nil
	}
	return "", fmt.Errorf("promtest: go install %s succeeded but %s is not in %v", k.Module, k.Bin, dirs)
}

// goBinDirs returns where go install puts binaries.
func goBinDirs() []string {
	out, err := exec.Command("go", "env", "GOBIN", "GOPATH").Output()
	if err != nil {
		return nil
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	var dirs []string
	if len(lines) > 0 && strings.TrimSpace(lines[0]) != "" {
		dirs = append(dirs, strings.TrimSpace(lines[0]))
	}
	if len(lines) > 1 {
		for _, p := range filepath.SplitList(strings.TrimSpace(lines[1])) {
			dirs = append(dirs, filepath.Join(p, "bin"))
		}
	}
	return dirs
}

// Start starts a server of kind k for t, stopped at t's cleanup. A
// missing binary skips t, or fails it under CI=true.
func Start(t testing.TB, k Kind) *Server {
	t.Helper()
	bin, err := Binary(k)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is required under CI=true: %v", k.Bin, err)
		}
		t.Skipf("skipping: %v (scripts/test installs it)", err)
	}
	s := &Server{Kind: k, Dir: t.TempDir()}
	t.Cleanup(s.Stop)
	if err := s.start(bin); err != nil {
		t.Fatal(err)
	}
	return s
}

// freePort returns a port free now.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// args returns the command line of s's server on port.
func (s *Server) args(port int) ([]string, error) {
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	if s.Kind == VictoriaMetrics {
		return []string{"-storageDataPath=" + filepath.Join(s.Dir, "data"), "-httpListenAddr=" + addr,
			"-retentionPeriod=100y", "-search.disableCache", "-search.latencyOffset=0s", "-loggerLevel=WARN"}, nil
	}
	cfg := filepath.Join(s.Dir, "prometheus.yml")
	yml := "global:\n  scrape_interval: 1h\nstorage:\n  tsdb:\n    out_of_order_time_window: " + OutOfOrderWindow + "\n"
	if err := os.WriteFile(cfg, []byte(yml), 0o644); err != nil {
		return nil, err
	}
	return []string{"--config.file=" + cfg, "--storage.tsdb.path=" + filepath.Join(s.Dir, "data"),
		"--web.listen-address=" + addr, "--web.enable-remote-write-receiver", "--log.level=warn"}, nil
}

// start launches the server and waits until it is ready (two minutes at
// most: a loaded machine is slow to start one).
func (s *Server) start(bin string) error {
	var lastErr error
	for try := 0; try < 3; try++ { // a port taken meanwhile: another
		port, err := freePort()
		if err != nil {
			return err
		}
		args, err := s.args(port)
		if err != nil {
			return err
		}
		logf, err := os.Create(filepath.Join(s.Dir, "server.log"))
		if err != nil {
			return err
		}
		cmd := exec.Command(bin, args...)
		cmd.Stdout, cmd.Stderr = logf, logf
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if err := cmd.Start(); err != nil {
			logf.Close()
			return fmt.Errorf("promtest: start %s: %w", bin, err)
		}
		s.cmd, s.exited = cmd, make(chan struct{})
		go func() { cmd.Wait(); logf.Close(); close(s.exited) }()
		s.URL = fmt.Sprintf("http://127.0.0.1:%d", port)
		s.WriteURL = s.URL + "/api/v1/write"
		if lastErr = s.waitReady(2 * time.Minute); lastErr == nil {
			return nil
		}
		s.Stop()
	}
	return fmt.Errorf("promtest: %s did not start: %w\n%s", s.Kind.Bin, lastErr, s.logTail())
}

func (s *Server) waitReady(d time.Duration) error {
	path := "/-/ready"
	if s.Kind == VictoriaMetrics {
		path = "/health"
	}
	deadline := time.Now().Add(d)
	for {
		resp, err := client.Get(s.URL + path)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = errors.New(resp.Status)
		}
		select {
		case <-s.exited:
			return errors.New("exited")
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return err
		}
	}
}

// Stop stops the server (SIGTERM; SIGKILL after 15 s) and waits for it.
func (s *Server) Stop() {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(15 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.exited
	}
	s.cmd = nil
}

func (s *Server) logTail() string {
	b, _ := os.ReadFile(filepath.Join(s.Dir, "server.log"))
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

// Flush makes what was written searchable: VictoriaMetrics' buffers are
// flushed (/internal/force_flush); Prometheus' head is at once.
func (s *Server) Flush(t testing.TB) {
	t.Helper()
	if s.Kind != VictoriaMetrics {
		return
	}
	resp, err := client.Get(s.URL + "/internal/force_flush")
	if err != nil {
		t.Fatalf("promtest: force_flush: %v", err)
	}
	resp.Body.Close()
}

// Sample is one sample of a query's answer: the series' labels, its time
// (ms) and value.
type Sample struct {
	Labels map[string]string
	T      int64
	V      float64
}

// Query runs the PromQL query at time at (/api/v1/query) and returns the
// samples of its answer: a vector's, or each of a matrix's (a range
// selector: the raw samples).
func (s *Server) Query(t testing.TB, q string, at time.Time) []Sample {
	t.Helper()
	v := url.Values{"query": {q}, "time": {fmt.Sprintf("%.3f", float64(at.UnixMilli())/1000)}}
	resp, err := client.PostForm(s.URL+"/api/v1/query", v)
	if err != nil {
		t.Fatalf("promtest: query %s: %v", q, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var ans struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			ResultType string `json:"resultType"`
			Result     []struct {
				Metric map[string]string `json:"metric"`
				Value  []any             `json:"value"`
				Values [][]any           `json:"values"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &ans); err != nil || ans.Status != "success" {
		t.Fatalf("promtest: query %s: %s %v: %.500s", q, resp.Status, err, body)
	}
	var out []Sample
	for _, r := range ans.Data.Result {
		rows := r.Values
		if r.Value != nil {
			rows = append(rows, r.Value)
		}
		for _, row := range rows {
			out = append(out, Sample{Labels: r.Metric, T: int64(row[0].(float64)*1000 + 0.5), V: parseValue(row[1])})
		}
	}
	return out
}

func parseValue(v any) float64 {
	s, _ := v.(string)
	f, _ := strconv.ParseFloat(s, 64)
	return f
}

// Write writes the samples of one series, its labels (__name__
// included) and samples (T in ms) in time order, by remote write 1.0,
// and fails t if the server refuses them.
func (s *Server) Write(t testing.TB, labels map[string]string, samples []Sample) {
	t.Helper()
	if err := s.Post(labels, samples); err != nil {
		t.Fatal(err)
	}
}

// Post is Write returning the server's refusal.
func (s *Server) Post(labels map[string]string, samples []Sample) error {
	names := make([]string, 0, len(labels))
	for k := range labels {
		names = append(names, k)
	}
	slices.Sort(names)
	var ts []byte
	for _, k := range names {
		var l []byte
		l = protowire.AppendTag(l, 1, protowire.BytesType)
		l = protowire.AppendString(l, k)
		l = protowire.AppendTag(l, 2, protowire.BytesType)
		l = protowire.AppendString(l, labels[k])
		ts = protowire.AppendTag(ts, 1, protowire.BytesType)
		ts = protowire.AppendBytes(ts, l)
	}
	for _, p := range samples {
		var m []byte
		m = protowire.AppendTag(m, 1, protowire.Fixed64Type)
		m = protowire.AppendFixed64(m, math.Float64bits(p.V))
		m = protowire.AppendTag(m, 2, protowire.VarintType)
		m = protowire.AppendVarint(m, uint64(p.T))
		ts = protowire.AppendTag(ts, 2, protowire.BytesType)
		ts = protowire.AppendBytes(ts, m)
	}
	var req []byte
	req = protowire.AppendTag(req, 1, protowire.BytesType)
	req = protowire.AppendBytes(req, ts)
	hr, err := http.NewRequest(http.MethodPost, s.WriteURL, bytes.NewReader(snappy.Encode(nil, req)))
	if err != nil {
		return err
	}
	hr.Header.Set("Content-Type", "application/x-protobuf")
	hr.Header.Set("Content-Encoding", "snappy")
	hr.Header.Set("X-Prometheus-Remote-Write-Version", "0.1.0")
	resp, err := client.Do(hr)
	if err != nil {
		return fmt.Errorf("promtest: remote write: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1000))
		return fmt.Errorf("promtest: remote write: %s: %s", resp.Status, b)
	}
	return nil
}
