package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/forecastd/forecastd/internal/config"
	"github.com/forecastd/forecastd/pipeline"
)

// TestServiceUnderSystemd runs the forecastd binary as systemd would
// (Type=notify, WatchdogSec): READY=1 once running, WATCHDOG=1 at half the
// watchdog interval, /-/healthy served, SIGHUP with an invalid file keeps
// it running, SIGTERM sends STOPPING=1 and exits 0 within the deadline.
func TestServiceUnderSystemd(t *testing.T) {
	dir := t.TempDir()
	bin := forecastdBinary(t)
	sock := filepath.Join(dir, "notify")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sock, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	notes := make(chan string, 1000)
	go func() {
		buf := make([]byte, 4096)
		for {
			n, _, err := conn.ReadFromUnix(buf)
			if err != nil {
				close(notes)
				return
			}
			notes <- string(buf[:n])
		}
	}()
	next := func(want string, within time.Duration) {
		t.Helper()
		deadline := time.After(within)
		for {
			select {
			case s := <-notes:
				if s == want {
					return
				}
			case <-deadline:
				t.Fatalf("no %s within %v", want, within)
			}
		}
	}

	cfgPath := filepath.Join(dir, "forecastd.toml")
	good := `
[nats]
servers = ["nats://127.0.0.1:0"]
embedded = true
[input]
subjects = ["svc.>"]
[http]
listen = "127.0.0.1:0"
[pipeline]
shutdown_timeout = "10s"
`
	if err := os.WriteFile(cfgPath, []byte(good), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "run", "-config", cfgPath)
	cmd.Env = append(os.Environ(), "NOTIFY_SOCKET="+sock, "WATCHDOG_USEC=200000")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	logs := &syncBuffer{}
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			logs.Write([]byte(sc.Text() + "\n"))
		}
		exited <- cmd.Wait()
	}()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
		}
	})

	next("READY=1", 30*time.Second)
	var addr []string // the log line is written before READY=1, read from the pipe after
	waitFor(t, 10*time.Second, "the http address in the log", func() bool {
		addr = httpAddrRE.FindStringSubmatch(logs.String())
		return addr != nil
	})
	resp, err := http.Get("http://" + addr[1] + "/-/healthy")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/-/healthy: %s %s", resp.Status, body)
	}
	next("WATCHDOG=1", 2*time.Second)
	next("WATCHDOG=1", 2*time.Second)

	if err := os.WriteFile(cfgPath, []byte(good+"[model]\nkind = \"svm\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the failed reload in the log", func() bool { return strings.Contains(logs.String(), "reload failed") })
	next("WATCHDOG=1", 2*time.Second) // still alive
	resp, err = http.Get("http://" + addr[1] + "/-/healthy")
	if err != nil {
		t.Fatalf("not serving after a bad reload: %v", err)
	}
	resp.Body.Close()

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	next("STOPPING=1", 10*time.Second)
	// Exit 0 is a stop within the deadline: past it, the stop fails and
	// says what it lost. The wait is a bound to catch a hang.
	select {
	case err := <-exited:
		var ee *exec.ExitError
		if errors.As(err, &ee) || err != nil {
			t.Fatalf("exit: %v\n%s", err, logs)
		}
	case <-time.After(time.Minute):
		t.Fatalf("still running a minute after SIGTERM (shutdown_timeout 10s)\n%s", logs)
	}
	if !strings.Contains(logs.String(), "msg=stopped") {
		t.Errorf("no stop line in the log:\n%s", logs)
	}
}

// TestConfigExample: config.example.toml loads, runs without a broker or
// InfluxDB (embedded NATS, no [output.influxdb]), and its comments mention
// every key of the schema.
func TestConfigExample(t *testing.T) {
	const path = "../../config.example.toml"
	cfg, err := config.Load(path, config.DaemonChecks)
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.NATS.Embedded || cfg.Output.Influx() != nil || cfg.Input.JetStream != nil {
		t.Errorf("config.example.toml must run alone: embedded %v, influxdb %v, jetstream %v",
			cfg.NATS.Embedded, cfg.Output.Influx() != nil, cfg.Input.JetStream != nil)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	keys := pipeline.KeyNames()
	for _, k := range []pipeline.Kind{pipeline.AOSVR, pipeline.SOGSVR, pipeline.NORMA} { // not the tests' kinds
		for _, mk := range k.Model().Keys() {
			keys = append(keys, mk.Key)
		}
	}
	keys = append(keys, "servers", "embedded", "subjects", "data_format", "json_time_format", "queue_group",
		"[input.jetstream]", "stream", "durable", "ack_wait", "max_deliver", "nak_delay", "max_ack_pending",
		"[[rules]]", "[[resolutions]]", "match", "shards", "queue_size", "max_series", "idle_ttl", "shutdown_timeout",
		"[output.nats]", "subject_prefix", "[output.influxdb]", "url", "token", "organization", "bucket",
		"measurement", "metric_batch_size", "metric_buffer_limit", "flush_interval", "timeout", "listen", "dir",
		"max_past", "max_future", "max_key_len", "max_points", "series_across_subjects",
		"[history]", "lookback", "concurrency", "max_buffered", "max_queued", "field", "series_tag")
	for _, k := range keys {
		if !strings.Contains(text, k) {
			t.Errorf("config.example.toml does not explain %q", k)
		}
	}
	// The commented-out tables are valid too.
	uncommented := regexp.MustCompile(`(?m)^# (\[input\.jetstream\]|\[\[input\.promql\]\]|\[output\.influxdb\]|\[output\.prometheus\]|\[history\]|\[\[resolutions\]\]|[a-z_]+ = .*)$`).ReplaceAllString(text, "$1")
	uncommented = strings.Replace(uncommented, `dir = ""`, fmt.Sprintf("dir = %q", t.TempDir()), 1)
	p := filepath.Join(t.TempDir(), "all.toml")
	if err := os.WriteFile(p, []byte(uncommented), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := config.Load(p, config.DaemonChecks); err != nil {
		t.Errorf("config.example.toml with every table uncommented: %v", err)
	}
}

// TestCheckConfig: `forecastd check-config` exits 0 on a good file and 1
// on a bad one, printing every problem.
func TestCheckConfig(t *testing.T) {
	out := mustCLI(t, "check-config", "../../config.example.toml")
	if !strings.Contains(out, "OK") {
		t.Errorf("stdout %q", out)
	}
	_, errOut, code := cli(t, "check-config", "testdata/daemon_values.bad.toml")
	if code != 1 || strings.Count(errOut, "\n") < 10 {
		t.Errorf("exit %d, stderr:\n%s", code, errOut)
	}
	if _, _, code := cli(t, "check-config"); code != 2 {
		t.Errorf("no FILE: exit %d, want 2", code)
	}
}

// TestGrafanaDashboard: the dashboard is well-formed JSON with an InfluxDB
// datasource and panels querying the forecast's fields.
func TestGrafanaDashboard(t *testing.T) {
	b, err := os.ReadFile("../../grafana/forecastd.json")
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Title  string `json:"title"`
		Panels []struct {
			Title   string `json:"title"`
			Type    string `json:"type"`
			Targets []struct {
				Query string `json:"query"`
			} `json:"targets"`
		} `json:"panels"`
		Templating struct {
			List []struct {
				Name  string `json:"name"`
				Type  string `json:"type"`
				Query any    `json:"query"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("grafana/forecastd.json: %v", err)
	}
	if !strings.Contains(string(b), `"influxdb"`) {
		t.Error("no InfluxDB datasource")
	}
	var all string
	for _, p := range d.Panels {
		for _, q := range p.Targets {
			all += q.Query + "\n"
		}
	}
	for _, field := range []string{"yhat", "yhat_lower", "yhat_upper", `"y"`, "error", "anomaly_score"} {
		if !strings.Contains(all, field) {
			t.Errorf("no panel queries %s", field)
		}
	}
	if !strings.Contains(string(b), `"annotations"`) || !strings.Contains(string(b), `\"anomaly\" = 1`) {
		t.Error("no annotation of the points where anomaly events open")
	}
	if len(d.Panels) < 2 {
		t.Errorf("%d panels, want actual vs forecast and error", len(d.Panels))
	}
}
