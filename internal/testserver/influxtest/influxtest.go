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
//
// An influxd takes seconds to start, far more on a loaded machine, so a
// package's tests share one: Shared gives each test a database of its own
// on it, and the package's TestMain stops it after the last test:
//
//	func TestMain(m *testing.M) { goleak.VerifyTestMain(influxtest.Wrap(m)) }
//
// Start runs a server of the test's own, for a test that stops or
// restarts it.
package influxtest

import (
	"context"
	"encoding/json"
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

	"github.com/forecastd/forecastd/internal/testserver/proc"
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
	// shared is set on a test's view of a shared server, which it may
	// neither stop nor restart.
	shared bool
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
	bin := binary(t)
	s, err := launch(bin, t.TempDir(), opts)
	if s != nil {
		s.t = t
		t.Cleanup(s.Stop)
	}
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// binary returns influxd's path, or skips t (fails it under CI=true).
func binary(t testing.TB) string {
	t.Helper()
	bin, err := Binary()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("influxd is required under CI=true: %v", err)
		}
		t.Skipf("skipping: %v (scripts/test installs it)", err)
	}
	return bin
}

// launch starts influxd in dir and creates the database. On an error
// after the process started, the server is returned with the error, to
// be stopped.
func launch(bin, dir string, opts Options) (*Server, error) {
	if opts.Database == "" {
		opts.Database = "db"
	}
	s := &Server{
		Database: opts.Database,
		Bucket:   opts.Database + "/autogen",
		Dir:      dir,
		bin:      bin,
	}
	s.config = filepath.Join(s.Dir, "influxdb.conf")
	s.logPath = filepath.Join(s.Dir, "influxd.log")
	if opts.Auth {
		s.user, s.pw = "admin", "secret"
		s.Token = s.user + ":" + s.pw
	}
	// A free port may be taken between finding and binding it: try again
	// on new ports.
	for try := 0; ; try++ {
		httpPort, rpcPort, err := freePort()
		if err != nil {
			return nil, err
		}
		s.URL = fmt.Sprintf("http://127.0.0.1:%d", httpPort)
		if err := os.WriteFile(s.config, []byte(configFile(s.Dir, httpPort, rpcPort, opts)), 0o644); err != nil {
			return nil, err
		}
		err = s.start()
		if err == nil {
			break
		}
		if try == 2 || !strings.Contains(s.logTail(), "address already in use") {
			return nil, fmt.Errorf("influxtest: %v\n%s", err, s.logTail())
		}
	}
	if opts.Auth {
		if _, err := s.do(fmt.Sprintf("CREATE USER %q WITH PASSWORD '%s' WITH ALL PRIVILEGES", s.user, s.pw)); err != nil {
			return s, err
		}
	}
	if _, err := s.do(fmt.Sprintf("CREATE DATABASE %q", s.Database)); err != nil {
		return s, err
	}
	return s, nil
}

// The package's shared servers, one without and one with Options.Auth,
// each started by the first test that asks for it.
var shared struct {
	mu      sync.Mutex
	wrapped bool
	servers map[bool]*sharedServer
	next    int // numbers the databases handed out
}

type sharedServer struct {
	once sync.Once
	srv  *Server
	err  error
}

// Shared returns a database of t's own, created for it and dropped at its
// cleanup, on the package's shared influxd with opts.Auth (started by the
// first test that asks). The database's name is opts.Database (default
// "db") with a number appended; tests name it by Server.Database and
// Server.Bucket. The server must not be stopped or restarted: a test that
// does uses Start. The package's TestMain must run its tests through
// Wrap, which stops the server after them.
func Shared(t testing.TB, opts Options) *Server {
	t.Helper()
	bin := binary(t)
	shared.mu.Lock()
	wrapped := shared.wrapped
	key := opts.Auth
	if shared.servers == nil {
		shared.servers = map[bool]*sharedServer{}
	}
	if shared.servers[key] == nil {
		shared.servers[key] = &sharedServer{}
	}
	ss := shared.servers[key]
	shared.next++
	n := shared.next
	shared.mu.Unlock()
	if !wrapped {
		t.Fatal("influxtest.Shared: the package's TestMain does not run its tests through influxtest.Wrap, which stops the shared influxd")
	}
	ss.once.Do(func() {
		dir, err := os.MkdirTemp("", "influxtest-")
		if err != nil {
			ss.err = err
			return
		}
		ss.srv, ss.err = launch(bin, dir, Options{Database: "influxtest", Auth: opts.Auth})
		if ss.err != nil {
			if ss.srv != nil {
				ss.srv.Stop()
			}
			os.RemoveAll(dir)
		}
	})
	if ss.err != nil {
		t.Fatalf("influxtest: the shared influxd: %v", ss.err)
	}
	if opts.Database == "" {
		opts.Database = "db"
	}
	base := ss.srv
	s := &Server{
		URL:      base.URL,
		Database: fmt.Sprintf("%s_%d", opts.Database, n),
		Token:    base.Token,
		Dir:      base.Dir,
		t:        t,
		logPath:  base.logPath,
		user:     base.user,
		pw:       base.pw,
		shared:   true,
	}
	s.Bucket = s.Database + "/autogen"
	s.query(t, fmt.Sprintf("CREATE DATABASE %q", s.Database))
	t.Cleanup(func() {
		if _, err := s.do(fmt.Sprintf("DROP DATABASE %q", s.Database)); err != nil {
			t.Errorf("influxtest: %v", err)
		}
	})
	return s
}

// Wrap returns m for goleak.VerifyTestMain (or a TestMain that calls its
// Run and exits with the code): Run runs the tests, then stops the
// package's shared influxd and removes its directory.
func Wrap(m *testing.M) Main { return Main{m} }

// Main is a *testing.M whose Run stops the shared servers after the tests.
type Main struct{ m *testing.M }

// Run runs the tests and stops the shared servers.
func (w Main) Run() int {
	shared.mu.Lock()
	shared.wrapped = true
	shared.mu.Unlock()
	code := w.m.Run()
	shared.mu.Lock()
	defer shared.mu.Unlock()
	for _, ss := range shared.servers {
		if ss == nil || ss.srv == nil {
			continue
		}
		ss.srv.Stop()
		os.RemoveAll(ss.srv.Dir)
	}
	return code
}

// freePort returns two ports free now, for influxd's HTTP and RPC.
func freePort() (httpPort, rpcPort int, err error) {
	var ports [2]int
	for i := range ports {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, 0, err
		}
		defer l.Close()
		ports[i] = l.Addr().(*net.TCPAddr).Port
	}
	return ports[0], ports[1], nil
}

func configFile(dir string, httpPort, rpcPort int, opts Options) string {
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
  flux-enabled = false
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
`, rpcPort, filepath.Join(dir, "meta"), filepath.Join(dir, "data"), filepath.Join(dir, "wal"), httpPort, opts.Auth)
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
	exited, err := proc.Start(cmd)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.cmd, s.exited = cmd, exited
	s.mu.Unlock()
	if err := proc.WaitReady(cmd, exited, "influxd", s.URL+"/ping", http.StatusNoContent); err != nil {
		s.Stop()
		return err
	}
	return nil
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
	if s.shared {
		s.t.Helper()
		s.t.Fatal("influxtest: Stop of a shared server: use Start for a server of the test's own")
	}
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
	if s.shared {
		s.t.Fatal("influxtest: Restart of a shared server: use Start for a server of the test's own")
	}
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
	body, err := s.do(q)
	if err != nil {
		t.Fatal(err)
	}
	return body
}

// do runs an InfluxQL statement and returns the response body, or an
// error on an HTTP or statement error.
func (s *Server) do(q string) (string, error) {
	form := url.Values{"q": {q}, "db": {s.Database}}
	req, err := http.NewRequest(http.MethodPost, s.URL+"/query", strings.NewReader(form.Encode()))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if s.user != "" {
		req.SetBasicAuth(s.user, s.pw)
	}
	resp, err := proc.Client.Do(req)
	if err != nil {
		return "", fmt.Errorf("influxtest: %s: %v", q, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	// An error is the answer's or a statement's "error" (a field may be
	// named error too).
	var answer struct {
		Error   string
		Results []struct{ Error string }
	}
	err = json.Unmarshal(body, &answer)
	for _, r := range answer.Results {
		if r.Error != "" {
			answer.Error = r.Error
		}
	}
	if resp.StatusCode != http.StatusOK || err != nil || answer.Error != "" {
		return "", fmt.Errorf("influxtest: %s: %s: %s", q, resp.Status, body)
	}
	return string(body), nil
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
	resp, err := proc.Client.Do(req)
	if err != nil {
		t.Fatalf("influxtest: write: %v", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("influxtest: write: %s: %s", resp.Status, body)
	}
}
