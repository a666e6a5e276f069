package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/forecastd/forecastd/sources"
)

// readmeSection returns the text of the README's section under the
// heading "## name", up to the next "## ".
func readmeSection(t *testing.T, name string) string {
	t.Helper()
	return docSection(t, "README.md", name)
}

// docSection returns the text of the section under the heading "## name"
// of the Markdown file doc (a path from the repository's root, such as
// docs/operations.md), up to the next "## ".
func docSection(t *testing.T, doc, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("../..", doc))
	if err != nil {
		t.Fatal(err)
	}
	_, s, ok := strings.Cut(string(b), "\n## "+name+"\n")
	if !ok {
		t.Fatalf("%s has no section %q", doc, name)
	}
	if i := strings.Index(s, "\n## "); i >= 0 {
		s = s[:i]
	}
	return s
}

// codeBlocks returns the fenced blocks of language lang in text.
func codeBlocks(text, lang string) []string {
	re := regexp.MustCompile("(?ms)^```" + lang + "\n(.*?)^```\n")
	var out []string
	for _, m := range re.FindAllStringSubmatch(text, -1) {
		out = append(out, m[1])
	}
	return out
}

// TestSystemdInstall: the README's systemd steps install the config, which
// may hold an InfluxDB token, readable by root and the group the unit's
// dynamic user gets (0640, never world-readable), create that group, and
// create no group named like the dynamic user (systemd refuses to start a
// dynamic user whose name exists as a group but not as a user); every
// Documentation= of the unit is something the steps install.
func TestSystemdInstall(t *testing.T) {
	steps := strings.Join(codeBlocks(readmeSection(t, "Running as a systemd service"), "sh"), "\n")
	unit, err := os.ReadFile("../../systemd/forecastd.service")
	if err != nil {
		t.Fatal(err)
	}
	checkSystemdSteps(t, steps, string(unit), "forecastd")
	// The comment at the top of the unit repeats the steps.
	if strings.Contains(string(unit), "0644 config.example.toml") {
		t.Error("the unit's comment installs the config 0644")
	}
	docs := regexp.MustCompile(`(?m)^Documentation=(.*)$`).FindAllSubmatch(unit, -1)
	if len(docs) == 0 {
		t.Fatal("no Documentation=")
	}
	for _, d := range docs {
		for _, u := range strings.Fields(string(d[1])) {
			p, ok := strings.CutPrefix(u, "file:")
			if !ok {
				t.Errorf("Documentation=%s: not a file the install puts in place (there is no public URL)", u)
				continue
			}
			if !strings.Contains(steps, p) {
				t.Errorf("Documentation=%s: the README's steps do not install %s", u, p)
			}
		}
	}
}

// TestReadmeBacktest: the README's backtest example prints what the README
// shows, every line of it, but for the times measured.
func TestReadmeBacktest(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	const cmd = "go run ./cmd/forecastd backtest testdata/nab/nyc_taxi.csv"
	m := regexp.MustCompile("(?s)```sh\n" + regexp.QuoteMeta(cmd) + "\n```\n\n```\n(.*?)```\n").FindSubmatch(b)
	if m == nil {
		t.Fatalf("README.md has no block %q followed by its output", cmd)
	}
	out := strings.ReplaceAll(mustCLI(t, "backtest", "../../testdata/nab/nyc_taxi.csv"), "../../", "")
	// The model's bytes count the capacity of buffers it takes from
	// process-wide pools, which the collector may have emptied or not: they
	// vary from run to run like the times.
	timing := regexp.MustCompile(`\d+ ns/(update|forecast)|[0-9.]+ s$|\d+ bytes;`)
	mask := func(s string) []string {
		lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
		for i, l := range lines {
			lines[i] = timing.ReplaceAllString(l, "TIME")
		}
		return lines
	}
	got, want := mask(out), mask(string(m[1]))
	if len(got) != len(want) {
		t.Errorf("%d lines, the README shows %d:\n%s", len(got), len(want), out)
	}
	for i := range min(len(got), len(want)) {
		if got[i] != want[i] {
			t.Errorf("line %d:\n got %s\nwant %s", i+1, got[i], want[i])
		}
	}
}

// TestReadmePub: the pub.go of docs/data.md, run as it says (saved in the
// repository, go run), publishes its 300 points ending now to the
// server NATS_URL names (here an in-process nats-server on a free port),
// each a point the json decoder accepts.
func TestReadmePub(t *testing.T) {
	if testing.Short() {
		t.Skip("go run")
	}
	blocks := codeBlocks(docSection(t, "docs/data.md", "Publishing from a program"), "go")
	if len(blocks) != 1 {
		t.Fatalf("%d Go blocks in docs/data.md's Publishing from a program, want pub.go", len(blocks))
	}
	ns, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, NoLog: true, NoSigs: true})
	if err != nil {
		t.Fatal(err)
	}
	go ns.Start()
	defer func() { ns.Shutdown(); ns.WaitForShutdown() }()
	if !ns.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats-server not ready")
	}
	nc, err := nats.Connect(ns.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	msgs := make(chan *nats.Msg, 1000)
	sub, err := nc.ChanSubscribe("metrics.demo", msgs)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}

	// "save it as pub.go in the repository": a directory of its own there,
	// so that it builds in this module without clashing with other files.
	dir, err := os.MkdirTemp("../..", ".readme-pub-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	if err := os.WriteFile(filepath.Join(dir, "pub.go"), []byte(blocks[0]), 0o644); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	cmd := exec.Command("go", "run", "pub.go")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "NATS_URL="+ns.ClientURL())
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go run pub.go: %v\n%s", err, out)
	}
	dec, err := sources.NewDecoder(sources.DecoderConfig{Format: sources.FormatJSON})
	if err != nil {
		t.Fatal(err)
	}
	var last time.Time
	for i := range 300 {
		select {
		case m := <-msgs:
			pts, err := dec.Decode(nil, m.Subject, m.Data, time.Now())
			if err != nil || len(pts) != 1 {
				t.Fatalf("message %d %q: %d points, %v", i, m.Data, len(pts), err)
			}
			last = pts[0].Time
		case <-time.After(10 * time.Second):
			t.Fatalf("%d messages of 300", i)
		}
	}
	if last.Before(start.Add(-2*time.Second)) || last.After(time.Now()) {
		t.Errorf("the last point is at %v, want about now (%v)", last, start)
	}
}

// TestReadmeDataFormats runs the `nats pub` examples of docs/data.md's
// "Data formats" in bash, with nats a function that writes each payload to a
// file, and decodes every payload as the daemon would now (json for the
// metrics.* subjects, influx for telegraf, value for a bare number): none
// is refused, so pasted they are accepted whatever the date.
func TestReadmeDataFormats(t *testing.T) {
	blocks := codeBlocks(docSection(t, "docs/data.md", "Data formats"), "sh")
	var script string
	for _, b := range blocks {
		if strings.Contains(b, "nats pub") {
			script = b
		}
	}
	if script == "" {
		t.Fatal("no nats pub examples in the Data formats section")
	}
	dir := t.TempDir()
	cmd := exec.Command("bash", "-euc", `n=0; nats() { n=$((n+1)); printf '%s\n%s' "$2" "$3" > "$DIR/$n"; }; `+script)
	cmd.Env = append(os.Environ(), "DIR="+dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the examples: %v\n%s", err, out)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*"))
	if len(files) < 4 {
		t.Fatalf("%d payloads, want the section's 4", len(files))
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		subject, payload, _ := strings.Cut(string(b), "\n")
		format := sources.FormatJSON
		switch {
		case subject == "telegraf":
			format = sources.FormatInflux
		case !strings.HasPrefix(payload, "{") && !strings.HasPrefix(payload, "["):
			format = sources.FormatValue
		}
		dec, err := sources.NewDecoder(sources.DecoderConfig{Format: format})
		if err != nil {
			t.Fatal(err)
		}
		pts, err := dec.Decode(nil, subject, []byte(payload), time.Now())
		if err != nil || len(pts) == 0 {
			t.Errorf("nats pub %s %q: %d points, %v", subject, payload, len(pts), err)
		}
	}
}
