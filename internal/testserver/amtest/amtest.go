// Package amtest runs a real Alertmanager for tests: on a free port, with
// clustering off, its configuration and storage in a temporary
// directory, stopped at the test's cleanup; and a [Receiver], the HTTP
// server of a webhook receiver, to see what Alertmanager notifies.
//
// The alertmanager binary is looked for in $ALERTMANAGER (a path), then
// PATH, then $(go env GOBIN) and $(go env GOPATH)/bin; if it is in none,
// it is built with
//
//	go install github.com/prometheus/alertmanager/cmd/alertmanager@v0.28.1
//
// (scripts/test does this before the tests). If it can be neither found
// nor built the test is skipped, except under CI=true, where it fails.
package amtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
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

// Module is what `go install` builds when alertmanager is missing.
const Module = "github.com/prometheus/alertmanager/cmd/alertmanager@v0.28.1"

// Server is a running Alertmanager.
type Server struct {
	// URL is its base URL, "http://127.0.0.1:PORT".
	URL string
	// Dir holds its configuration, storage and log (alertmanager.log).
	Dir string

	t    testing.TB
	bin  string
	addr string

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
}

var (
	findOnce sync.Once
	findBin  string
	findErr  error
)

// Binary returns the path of alertmanager, building it if it is nowhere
// to be found (see the package documentation).
func Binary() (string, error) {
	findOnce.Do(func() { findBin, findErr = find() })
	return findBin, findErr
}

func find() (string, error) {
	if p := os.Getenv("ALERTMANAGER"); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("amtest: $ALERTMANAGER: %w", err)
		}
		return p, nil
	}
	if p, err := exec.LookPath("alertmanager"); err == nil {
		return p, nil
	}
	dirs := goBinDirs()
	look := func() string {
		for _, d := range dirs {
			p := filepath.Join(d, "alertmanager")
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
		return "", errors.New("amtest: alertmanager not in PATH, and no go command to find or build it")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "install", Module)
	cmd.Env = append(os.Environ(), "GOFLAGS=-buildvcs=false", "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("amtest: alertmanager not found; go install %s: %w\n%s", Module, err, out)
	}
	if p := look(); p != "" {
		return p, nil
	}
	return "", fmt.Errorf("amtest: go install %s succeeded but alertmanager is not in %v", Module, dirs)
}

// goBinDirs returns where go install puts binaries: GOBIN if set, else
// GOPATH's first entry's bin.
func goBinDirs() []string {
	out, err := exec.Command("go", "env", "GOBIN", "GOPATH").Output()
	if err != nil {
		return nil
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) > 0 && strings.TrimSpace(lines[0]) != "" {
		return []string{strings.TrimSpace(lines[0])}
	}
	var dirs []string
	if len(lines) > 1 {
		for _, p := range filepath.SplitList(strings.TrimSpace(lines[1])) {
			if p != "" {
				dirs = append(dirs, filepath.Join(p, "bin"))
			}
		}
	}
	return dirs
}

// DefaultConfig routes every alert to a receiver that notifies no one.
const DefaultConfig = `route:
  receiver: none
receivers:
  - name: none
`

// Start starts an Alertmanager with the configuration config (YAML;
// DefaultConfig if empty) and stops it at t's cleanup. A missing binary
// skips t, or fails it under CI=true.
func Start(t testing.TB, config string) *Server {
	t.Helper()
	bin, err := Binary()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("alertmanager is required under CI=true: %v", err)
		}
		t.Skipf("skipping: %v (scripts/test installs it)", err)
	}
	if config == "" {
		config = DefaultConfig
	}
	s := &Server{Dir: t.TempDir(), t: t, bin: bin}
	if err := os.WriteFile(filepath.Join(s.Dir, "alertmanager.yml"), []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	// A free port may be taken between finding and binding it: try again.
	for try := 0; ; try++ {
		port, err := freePort()
		if err != nil {
			t.Fatal(err)
		}
		s.addr = fmt.Sprintf("127.0.0.1:%d", port)
		s.URL = "http://" + s.addr
		err = s.start()
		if err == nil {
			return s
		}
		if try == 2 || !strings.Contains(s.logTail(), "address already in use") {
			t.Fatalf("amtest: %v\n%s", err, s.logTail())
		}
	}
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// start runs alertmanager and waits until /-/ready answers.
func (s *Server) start() error {
	logf, err := os.OpenFile(filepath.Join(s.Dir, "alertmanager.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close()
	cmd := exec.Command(s.bin,
		"--config.file="+filepath.Join(s.Dir, "alertmanager.yml"),
		"--storage.path="+filepath.Join(s.Dir, "data"),
		"--web.listen-address="+s.addr,
		"--cluster.listen-address=", // no gossip: a single instance
		"--log.level=info")
	cmd.Stdout, cmd.Stderr = logf, logf
	exited, err := proc.Start(cmd)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.cmd, s.exited = cmd, exited
	s.mu.Unlock()
	if err := proc.WaitReady(cmd, exited, "alertmanager", s.URL+"/-/ready", http.StatusOK); err != nil {
		s.Stop()
		return err
	}
	return nil
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

// Restart starts the stopped server again, on the same port and storage
// (its silences and notification log; Alertmanager keeps no alerts across
// a restart), and waits until it is ready.
func (s *Server) Restart() {
	s.t.Helper()
	s.mu.Lock()
	running := s.cmd != nil
	s.mu.Unlock()
	if running {
		s.t.Fatal("amtest: Restart of a running server")
	}
	if err := s.start(); err != nil {
		s.t.Fatalf("amtest: restart: %v\n%s", err, s.logTail())
	}
}

// Alert is an alert of GET /api/v2/alerts.
type Alert struct {
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
	StartsAt    time.Time         `json:"startsAt"`
	EndsAt      time.Time         `json:"endsAt"`
	Fingerprint string            `json:"fingerprint"`
	Status      struct {
		State string `json:"state"`
	} `json:"status"`
}

// Alerts returns the alerts Alertmanager holds as active, silenced or
// inhibited (not the resolved ones), those matching every filter
// (`kind="threshold"`), or an error.
func (s *Server) Alerts(filter ...string) ([]Alert, error) {
	q := url.Values{"filter": filter}
	resp, err := proc.Client.Get(s.URL + "/api/v2/alerts?" + q.Encode())
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET /api/v2/alerts: %s: %s", resp.Status, body)
	}
	var as []Alert
	if err := json.Unmarshal(body, &as); err != nil {
		return nil, fmt.Errorf("GET /api/v2/alerts: %v: %s", err, body)
	}
	return as, nil
}

// Log returns the end of the server's log.
func (s *Server) Log() string { return s.logTail() }

func (s *Server) logTail() string {
	b, _ := os.ReadFile(filepath.Join(s.Dir, "alertmanager.log"))
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

// Notification is a webhook notification of Alertmanager (version 4).
type Notification struct {
	Status      string            `json:"status"`
	GroupLabels map[string]string `json:"groupLabels"`
	Alerts      []NotifiedAlert   `json:"alerts"`
}

// NotifiedAlert is an alert of a Notification.
type NotifiedAlert struct {
	// Status is "firing" or "resolved".
	Status      string            `json:"status"`
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
	StartsAt    time.Time         `json:"startsAt"`
	EndsAt      time.Time         `json:"endsAt"`
	Fingerprint string            `json:"fingerprint"`
}

// Receiver is a webhook receiver for an Alertmanager's configuration:
// it records every notification posted to URL.
type Receiver struct {
	// URL is where Alertmanager posts.
	URL string
	srv *httptest.Server

	mu  sync.Mutex
	got []Notification
}

// NewReceiver starts a receiver, closed at t's cleanup.
func NewReceiver(t testing.TB) *Receiver {
	r := &Receiver{}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		var n Notification
		if err := json.NewDecoder(io.LimitReader(req.Body, 1<<20)).Decode(&n); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.mu.Lock()
		r.got = append(r.got, n)
		r.mu.Unlock()
	}))
	r.URL = r.srv.URL
	t.Cleanup(r.srv.Close)
	return r
}

// Notifications returns what was posted so far.
func (r *Receiver) Notifications() []Notification {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Notification(nil), r.got...)
}
