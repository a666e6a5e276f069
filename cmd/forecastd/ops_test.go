package main

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/forecastd/forecastd/internal/config"
	"github.com/forecastd/forecastd/internal/testserver/influxtest"
	"github.com/forecastd/forecastd/sources"
)

// TestCheckConfigStateDir: a [state] dir forecastd cannot write in fails
// check-config (and so the start of `run`, which loads the file the same
// way), naming state.dir and why: a path through a regular file, a
// regular file, and, for a user who is not root, a directory without
// write permission. One it can create, or write in, passes.
func TestCheckConfigStateDir(t *testing.T) {
	tmp := t.TempDir()
	file := filepath.Join(tmp, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	readOnly := filepath.Join(tmp, "ro")
	if err := os.Mkdir(readOnly, 0o500); err != nil {
		t.Fatal(err)
	}
	cases := []struct{ dir, want string }{
		{filepath.Join(file, "state"), "not a directory"},
		{file, "not a directory"},
		{filepath.Join(tmp, "new", "state"), ""},
		{tmp, ""},
	}
	if os.Geteuid() != 0 { // root writes anywhere
		cases = append(cases, struct{ dir, want string }{readOnly, "cannot write in"},
			struct{ dir, want string }{filepath.Join(readOnly, "state"), "permission denied"})
	}
	for _, c := range cases {
		path := filepath.Join(t.TempDir(), "f.toml")
		cfg := fmt.Sprintf("[nats]\nservers = [\"127.0.0.1:4222\"]\n\n[input]\nsubjects = [\"a.>\"]\n\n[state]\ndir = %q\n", c.dir)
		if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
			t.Fatal(err)
		}
		var out strings.Builder
		err := config.CheckCommand([]string{path}, &out, io.Discard)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.dir, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), "state.dir: ") || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: %v, want an error naming state.dir: %q", c.dir, err, c.want)
		}
	}
	if entries, _ := os.ReadDir(tmp); len(entries) != 2 { // file and ro: the checks left nothing
		t.Errorf("the check left files behind: %v", entries)
	}
}

// TestDaemonReadyWhileStatesUnwritten: while the checkpoints cannot write
// a series' state (its [state] dir became a file), /-/ready says so, with
// 503; once they can again, the daemon is ready again.
func TestDaemonReadyWhileStatesUnwritten(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	rd := startDaemon(t, fmt.Sprintf(`
[nats]
servers = ["127.0.0.1:0"]
embedded = true

[input]
subjects = ["st.>"]

[http]
listen = "127.0.0.1:0"

[pipeline]
shutdown_timeout = "10s"

[state]
dir = %q
checkpoint_interval = "20ms"

[model]
kind = "norma"
dim = 2
scale = "fixed:-2,2"
`, dir), nil)
	ready := "http://" + rd.d.httpAddr.String() + "/-/ready"
	waitFor(t, 10*time.Second, "/-/ready", func() bool { code, _ := get(t, ready); return code == 200 })
	nc := connectTest(t, rd.d.embedded.ClientURL())
	waitSubscribed(t, rd.d.embedded, "st.>")
	t0 := time.Now().Add(-time.Hour).Truncate(time.Second)
	i := 0
	publish := func() {
		t.Helper()
		if err := nc.Publish("st.a", fmt.Appendf(nil, `{"time":%d,"value":%v}`, t0.Unix()+int64(i), float64(i%5)/5)); err != nil {
			t.Fatal(err)
		}
		i++
	}
	publish()
	waitFor(t, 10*time.Second, "a checkpoint written", func() bool { return rd.d.ckpt.Stats().Written > 0 })

	if err := os.Rename(dir, dir+".away"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dir, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	var body string
	waitFor(t, 10*time.Second, "/-/ready 503 while the states cannot be written", func() bool {
		publish() // a change to write
		var code int
		code, body = get(t, ready)
		return code == 503
	})
	if !strings.Contains(body, "could not be written to [state]") {
		t.Errorf("/-/ready: %q, want it to say the states are not written", body)
	}
	if err := os.Remove(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(dir+".away", dir); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "/-/ready 200 once the states are written again", func() bool { code, _ := get(t, ready); return code == 200 })
}

// closedURL is an http URL on a loopback port nothing listens on.
func closedURL(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return "http://" + addr
}

// TestCheckConfigInfluxReach: check-config warns, without failing, of an
// [output.influxdb] or [history] InfluxDB that does not answer, naming
// the key and the url; of a real one it says nothing. And the daemon
// says so at start, not at its first flush.
func TestCheckConfigInfluxReach(t *testing.T) {
	influx := influxtest.Shared(t, influxtest.Options{})
	down, down2 := closedURL(t), closedURL(t)
	for _, c := range []struct {
		name, out, hist string
		want            []string
	}{
		{"both down", down, down2, []string{"warning: output.influxdb.url: InfluxDB at " + down + " does not answer", "forecasts are buffered",
			"warning: history.url: InfluxDB at " + down2 + " does not answer", "new series start cold"}},
		{"one down, one url", down, "", []string{"warning: output.influxdb.url: InfluxDB at " + down}},
		{"up", influx.URL, "", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := fmt.Sprintf("[nats]\nservers = [\"127.0.0.1:4222\"]\n\n[input]\nsubjects = [\"a.>\"]\n\n[output.influxdb]\nurl = %q\nbucket = %q\n\n[history]\n", c.out, influx.Bucket)
			if c.hist != "" {
				cfg += fmt.Sprintf("url = %q\n", c.hist)
			}
			path := filepath.Join(t.TempDir(), "f.toml")
			if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
				t.Fatal(err)
			}
			var out strings.Builder
			if err := config.CheckCommand([]string{path}, &out, io.Discard); err != nil {
				t.Fatalf("check-config fails: %v", err)
			}
			got := out.String()
			if !strings.HasSuffix(got, path+": OK\n") {
				t.Errorf("check-config does not end with OK:\n%s", got)
			}
			if c.want == nil && strings.Contains(got, "warning") {
				t.Errorf("a warning for an InfluxDB that answers:\n%s", got)
			}
			if c.hist == "" && strings.Count(got, "does not answer") > 1 {
				t.Errorf("one url warned of twice:\n%s", got)
			}
			for _, w := range c.want {
				if !strings.Contains(got, w) {
					t.Errorf("check-config does not say %q:\n%s", w, got)
				}
			}
		})
	}

	rd := startDaemon(t, fmt.Sprintf(`
[nats]
servers = ["127.0.0.1:0"]
embedded = true

[input]
subjects = ["down.>"]

[pipeline]
shutdown_timeout = "10s"

[output.influxdb]
url = %q
bucket = "db"
`, down), nil)
	if logs := rd.logs.String(); !strings.Contains(logs, "InfluxDB not reachable") || !strings.Contains(logs, down) {
		t.Errorf("the daemon starts without saying InfluxDB does not answer:\n%s", logs)
	}
}

// TestDaemonInputStartFails: an input the dispatcher would read (a
// replay) that fails to start stops the daemon with its error: shutdown waits on no dispatcher
// that was never started, and closes the input.
func TestDaemonInputStartFails(t *testing.T) {
	path := filepath.Join(t.TempDir(), "forecastd.toml")
	cfg := "[nats]\nservers = [\"127.0.0.1:0\"]\nembedded = true\n\n[input]\nsubjects = [\"x.>\"]\n\n[pipeline]\nshutdown_timeout = \"10s\"\n"
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	failed := errors.New("the input failed to start")
	d := &daemon{newInput: func() (dispatchInput, error) {
		r, err := sources.NewReplay(sources.ReplayConfig{Decoder: sources.DecoderConfig{Format: sources.FormatJSON}})
		if err != nil {
			return nil, err
		}
		return r, failed // made, then failed: as partition.Set.Start
	}}
	var logs syncBuffer
	errc := make(chan error, 1)
	go func() { errc <- runDaemon([]string{"-config", path}, &logs, make(chan os.Signal), d) }()
	select {
	case err := <-errc:
		if !errors.Is(err, failed) {
			t.Fatalf("runDaemon: %v, want the input's error", err)
		}
	case <-time.After(minWait): // a hang only
		t.Fatalf("the daemon did not stop after its input failed to start\n%s", logs.String())
	}
}
