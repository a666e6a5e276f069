// Package influxtest runs a real InfluxDB 1.8 server (influxd) for tests:
// on free ports, in a temporary directory, stopped at the test's cleanup.
//
// The influxd binary is looked for in $INFLUXD (a path), then PATH, then
// $(go env GOBIN) and $(go env GOPATH)/bin; if it is in none, it is built
// with
//
//	go install github.com/influxdata/influxdb/cmd/influxd@v1.8.10
//
// (about a minute and a half from the Go module proxy on a fresh machine;
// scripts/test does this before the tests). If it can be neither found nor
// built the test is skipped, except under CI=true, where it fails.
package influxtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Module is what `go install` builds when influxd is missing.
const Module = "github.com/influxdata/influxdb/cmd/influxd@v1.8.10"

// Options configure Start. The zero value is valid.
type Options struct {
	// Database to create (default "db").
	Database string
	// Auth enables authentication, with an admin user whose credentials
	// are in Server.Token ("admin:secret"), as influxdb-client-go takes
	// them for 1.8.
	Auth bool
}

// Server is a running influxd.
type Server struct {
	// URL is the HTTP API's base URL, "http://127.0.0.1:PORT".
	URL string
	// Database is the database created; Bucket is its default retention
	// policy as a 2.x-compatibility bucket name ("db/autogen").
	Database, Bucket string
	// Token is "user:password" with Options.Auth, empty without.
	Token string
	// Dir holds the server's configuration, data and log (influxd.log).
	Dir string

	t        testing.TB
	bin      string
	config   string
	logPath  string
	user, pw string

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
}

// httpClient keeps no idle connection (and so no goroutine) behind.
var httpClient = &http.Client{
	Timeout:   10 * time.Second,
	Transport: &http.Transport{DisableKeepAlives: true},
}

var (
	findOnce sync.Once
	findBin  string
	findErr  error
)

// Binary returns the path of influxd, building it if it is nowhere to be
// found (see the package documentation).
func Binary() (string, error) {
	findOnce.Do(func() { findBin, findErr = find() })
	return findBin, findErr
}

func find() (string, error) {
	if p := os.Getenv("INFLUXD"); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("influxtest: $INFLUXD: %w", err)
		}
		return p, nil
	}
	if p, err := exec.LookPath("influxd"); err == nil {
		return p, nil
	}
	dirs := goBinDirs()
	for _, d := range dirs {
		p := filepath.Join(d, "influxd")
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
			return p, nil
		}
	}
	if len(dirs) == 0 {
		return "", errors.New("influxtest: influxd not in PATH, and no go command to find or build it")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "install", Module)
	cmd.Env = append(os.Environ(), "GOFLAGS=-buildvcs=false", "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("influxtest: influxd not found; go install %s: %w\n%s", Module, err, out)
	}
	for _, d := range dirs {
		p := filepath.Join(d, "influxd")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("influxtest: go install %s succeeded but influxd is not in %v", Module, dirs)
}

// goBinDirs returns where go install puts binaries: GOBIN if set, else
// GOPATH's first entry's bin.
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
			if p != "" {
				dirs = append(dirs, filepath.Join(p, "bin"))
			}
		}
	}
	return dirs
}

// Start starts an influxd for t, creates the database, and stops the
// server at t's cleanup. A missing influxd skips t, or fails it under
// CI=true.
func Start(t testing.TB, opts Options) *Server {
	t.Helper()
	bin, err := Binary()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("influxd is required under CI=true: %v", err)
		}
		t.Skipf("skipping: %v (scripts/test installs it)", err)
	}
	if opts.Database == "" {
		opts.Database = "db"
	}
	s := &Server{
		Database: opts.Database,
		Bucket:   opts.Database + "/autogen",
		Dir:      t.TempDir(),
		t:        t,
		bin:      bin,
	}
	s.config = filepath.Join(s.Dir, "influxdb.conf")
	s.logPath = filepath.Join(s.Dir, "influxd.log")
	if opts.Auth {
		s.user, s.pw = "admin", "secret"
		s.Token = s.user + ":" + s.pw
	}
	t.Cleanup(s.Stop)
	// A free port may be taken between finding and binding it: try again
	// on new ports.
	for try := 0; ; try++ {
		httpPort, rpcPort := freePort(t), freePort(t)
		s.URL = fmt.Sprintf("http://127.0.0.1:%d", httpPort)
		if err := os.WriteFile(s.config, []byte(configFile(s.Dir, httpPort, rpcPort, opts.Auth)), 0o644); err != nil {
			t.Fatal(err)
		}
		err := s.start()
		if err == nil {
			break
		}
		if try == 2 || !strings.Contains(s.logTail(), "address already in use") {
			t.Fatalf("influxtest: %v\n%s", err, s.logTail())
		}
	}
	if opts.Auth {
		s.query(t, fmt.Sprintf("CREATE USER %q WITH PASSWORD '%s' WITH ALL PRIVILEGES", s.user, s.pw))
	}
	s.query(t, fmt.Sprintf("CREATE DATABASE %q", s.Database))
	return s
}

func freePort(t testing.TB) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func configFile(dir string, httpPort, rpcPort int, auth bool) string {
	return fmt.Sprintf(`reporting-disabled = true
bind-address = "127.0.0.1:%d"

[meta]
  dir = %q
  logging-enabled = false

[data]
  dir = %q
  wal-dir = %q
  query-log-enabled = false
  wal-fsync-delay = "0s"

[coordinator]
  log-queries-after = "0s"

[retention]
  enabled = false

[shard-precreation]
  enabled = false

[monitor]
  store-enabled = false

[http]
  enabled = true
  bind-address = "127.0.0.1:%d"
  auth-enabled = %t
  log-enabled = false
  flux-enabled = true
  pprof-enabled = false

[logging]
  level = "warn"

[subscriber]
  enabled = false

[[graphite]]
  enabled = false

[[collectd]]
  enabled = false

[[opentsdb]]
  enabled = false

[[udp]]
  enabled = false

[continuous_queries]
  enabled = false
`, rpcPort, filepath.Join(dir, "meta"), filepath.Join(dir, "data"), filepath.Join(dir, "wal"), httpPort, auth)
}

// start runs influxd and waits until /ping answers.
func (s *Server) start() error {
	logf, err := os.OpenFile(s.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close()
	cmd := exec.Command(s.bin, "run", "-config", s.config)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Env = influxEnv()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", s.bin, err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	s.mu.Lock()
	s.cmd, s.exited = cmd, exited
	s.mu.Unlock()

	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := httpClient.Get(s.URL + "/ping")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusNoContent {
				return nil
			}
		}
		select {
		case <-exited:
			return fmt.Errorf("influxd exited before answering /ping (%v)", cmd.ProcessState)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			s.Stop()
			return fmt.Errorf("influxd did not answer /ping on %s within 30s", s.URL)
		}
	}
}

// influxEnv is the environment without INFLUXDB_* variables, which would
// override the generated configuration.
func influxEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "INFLUXDB_") {
			env = append(env, kv)
		}
	}
	return env
}

// Stop stops the server (SIGTERM; SIGKILL after 15 s) and waits for it to
// exit. Stopping a stopped server does nothing.
func (s *Server) Stop() {
	s.mu.Lock()
	cmd, exited := s.cmd, s.exited
	s.cmd = nil
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(15 * time.Second):
		_ = cmd.Process.Kill()
		<-exited
	}
}

// Restart starts the stopped server again, on the same port and data
// directory, and waits until it answers.
func (s *Server) Restart() {
	s.t.Helper()
	s.mu.Lock()
	running := s.cmd != nil
	s.mu.Unlock()
	if running {
		s.t.Fatal("influxtest: Restart of a running server")
	}
	if err := s.start(); err != nil {
		s.t.Fatalf("influxtest: restart: %v\n%s", err, s.logTail())
	}
}

// Query runs an InfluxQL statement (POST /query) and returns the response
// body, failing t on an HTTP or statement error.
func (s *Server) Query(t testing.TB, q string) string {
	t.Helper()
	return s.query(t, q)
}

func (s *Server) query(t testing.TB, q string) string {
	t.Helper()
	form := url.Values{"q": {q}, "db": {s.Database}}
	req, err := http.NewRequest(http.MethodPost, s.URL+"/query", strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if s.user != "" {
		req.SetBasicAuth(s.user, s.pw)
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		t.Fatalf("influxtest: %s: %v", q, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || bytes.Contains(body, []byte(`"error"`)) {
		t.Fatalf("influxtest: %s: %s: %s", q, resp.Status, body)
	}
	return string(body)
}

// logTail returns the end of the server's log.
func (s *Server) logTail() string {
	b, _ := os.ReadFile(s.logPath)
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

// Write writes line protocol (precision ns) to the database, failing t
// unless the server accepts all of it.
func (s *Server) Write(t testing.TB, lines string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, s.URL+"/write?db="+url.QueryEscape(s.Database)+"&precision=ns", strings.NewReader(lines))
	if err != nil {
		t.Fatal(err)
	}
	if s.user != "" {
		req.SetBasicAuth(s.user, s.pw)
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		t.Fatalf("influxtest: write: %v", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("influxtest: write: %s: %s", resp.Status, body)
	}
}
