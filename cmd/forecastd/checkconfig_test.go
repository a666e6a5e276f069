package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/forecastd/forecastd/internal/config"
	"github.com/nats-io/nats-server/v2/server"
)

// writeConfig writes a configuration file into a temporary directory.
func writeConfig(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "forecastd.toml")
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestCheckConfigEveryProblem: a TOML type error does not hide the file's
// other problems; each is reported on its own line as FILE:LINE, a typo
// gets the nearest key, and no package-internal prefix is shown.
func TestCheckConfigEveryProblem(t *testing.T) {
	p := writeConfig(t, `[input]
subjects = ["a.>"]
data_format = "xml"

[pipeline]
idle_ttl = 3600
shards = "two"

[model]
kind = "norma"
gama = 0.5
norma_tau = -1
norma_eta = -0.5

[[rules]]
match = "cpu.*"
dim = 0

[[rules]]
match = "mem.*"
windw = 3

[outputs.nats]
subject_prefix = "f"
`)
	_, errOut, code := cli(t, "check-config", p)
	if code != 1 {
		t.Fatalf("exit %d, want 1; stderr:\n%s", code, errOut)
	}
	for _, want := range []string{
		p + `:3: input.data_format: `,
		p + `:6: pipeline.idle_ttl: durations are strings, like "30s" or "1h"; got the integer 3600`,
		p + `:7: pipeline.shards: want an integer, got the string "two"`,
		p + `:11: unknown key "model.gama" (did you mean "gamma"?)`,
		p + `:12: model: norma_tau must be at least 1, got -1`,
		p + `:13: model: norma_eta must be positive and finite, got -0.5`,
		p + `:17: rules[0] (match "cpu.*"): dim must be at least 1, got 0`,
		p + `:21: unknown key "rules[1].windw" (did you mean "window"?)`,
		p + `:23: unknown key "outputs" (did you mean "output"?)`,
	} {
		if !strings.Contains(errOut, want+"\n") && !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q", want)
		}
	}
	for _, internal := range []string{"bad configuration", "pipeline:", "svr:", "norma:", "Tau", "toml: line", "incompatible types", "model: model"} {
		if strings.Contains(errOut, internal) {
			t.Errorf("stderr shows the internal %q", internal)
		}
	}
	// In the order of the file's lines.
	if i, j := strings.Index(errOut, ":6: "), strings.Index(errOut, ":23: "); i < 0 || j < i {
		t.Errorf("problems not in line order:\n%s", errOut)
	}
	t.Logf("stderr:\n%s", errOut)
}

// TestCheckConfigSuggestsTable: a key of another table is said to belong
// there; a key far from every known one gets no suggestion.
func TestCheckConfigSuggestsTable(t *testing.T) {
	p := writeConfig(t, `[input]
subjects = ["a"]

[model]
idle_ttl = "1h"
colour = "blue"
`)
	_, err := config.Load(p, config.DaemonChecks)
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{
		p + `:5: unknown key "model.idle_ttl" (it belongs in [pipeline])`,
		p + `:6: unknown key "model.colour"`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	if strings.Contains(err.Error(), "colour\" (") {
		t.Errorf("a suggestion for colour:\n%v", err)
	}
}

// TestCheckConfigSyntaxError: a TOML syntax error, after which nothing
// can be read, is reported with its line, without the parser's prefix.
func TestCheckConfigSyntaxError(t *testing.T) {
	p := writeConfig(t, "[input]\nsubjects = [\"a\"\n\n[model]\n")
	_, errOut, code := cli(t, "check-config", p)
	if code != 1 || !strings.Contains(errOut, p+":") || strings.Contains(errOut, "toml: line") {
		t.Errorf("exit %d, stderr:\n%s", code, errOut)
	}
}

// TestCheckConfigSubjects: a subject or prefix NATS would refuse, or that
// makes every forecast unroutable, is a problem of check-config, never a
// failure at run or forecasts counted as written and lost; the verdict on
// each agrees with nats-server's own (server.IsValidSubject, and
// IsValidPublishSubject for the subjects forecasts go to).
func TestCheckConfigSubjects(t *testing.T) {
	for _, c := range []struct {
		subject, prefix string
		bad             string // "" if valid
	}{
		{"metrics.>", "forecast", ""},
		{"a.*.c", "f.g", ""},
		{"telegraf", "", ""},
		{"a*b.c", "fc-1", ""},
		{"a..b", "forecast", `input.subjects[0]: invalid subject "a..b": an empty token`},
		{".x", "forecast", `input.subjects[0]: invalid subject ".x": an empty token`},
		{"x.", "forecast", `input.subjects[0]: invalid subject "x.": an empty token`},
		{"a.>.b", "forecast", `input.subjects[0]: invalid subject "a.>.b": ">" must be the last token`},
		{"a b", "forecast", `input.subjects[0]: invalid subject "a b": a space or control character`},
		{"a\tb", "forecast", `input.subjects[0]: invalid subject "a\tb": a space or control character`},
		{"metrics.>", "a..b", `output.nats.subject_prefix: invalid subject prefix "a..b": an empty token`},
		{"metrics.>", ".x", `output.nats.subject_prefix: invalid subject prefix ".x": an empty token`},
		{"metrics.>", "x.", `output.nats.subject_prefix: invalid subject prefix "x.": an empty token`},
		{"metrics.>", "fc.>", `output.nats.subject_prefix: invalid subject prefix "fc.>": no wildcards (* or >)`},
		{"metrics.>", "fc.*", `output.nats.subject_prefix: invalid subject prefix "fc.*": no wildcards (* or >)`},
		{"metrics.>", "f c", `output.nats.subject_prefix: invalid subject prefix "f c": a space or control character`},
	} {
		t.Run(c.subject+"|"+c.prefix, func(t *testing.T) {
			p := writeConfig(t, fmt.Sprintf("[input]\nsubjects = [%q]\n[output.nats]\nsubject_prefix = %q\n", c.subject, c.prefix))
			_, err := config.Load(p, config.DaemonChecks)
			switch {
			case c.bad == "" && err != nil:
				t.Errorf("refused: %v", err)
			case c.bad != "" && err == nil:
				t.Errorf("accepted, want %q", c.bad)
			case c.bad != "" && !strings.Contains(err.Error(), c.bad):
				t.Errorf("error %q, want %q", err, c.bad)
			}
			prefix := c.prefix
			if prefix == "" {
				prefix = "forecast"
			}
			natsOK := server.IsValidSubject(c.subject) && server.IsValidPublishSubject(prefix+".x") && !strings.ContainsAny(prefix, " \t")
			if natsOK != (c.bad == "") {
				t.Errorf("nats-server says valid=%v, the test case %v", natsOK, c.bad == "")
			}
		})
	}
}

// TestCheckConfigJetStreamNames: stream, durable and queue group names NATS
// would refuse at run are problems of check-config.
func TestCheckConfigJetStreamNames(t *testing.T) {
	p := writeConfig(t, `[input]
subjects = ["a"]
queue_group = "q 1"

[input.jetstream]
stream = "METRICS.1"
durable = "fd>"
`)
	_, err := config.Load(p, config.DaemonChecks)
	for _, want := range []string{
		`:3: input.queue_group: invalid queue group "q 1": a space or control character`,
		`:6: input.jetstream.stream: invalid name "METRICS.1": no '.', '*', '>', spaces, '/' or '\'`,
		`:7: input.jetstream.durable: invalid name "fd>": no '.', '*', '>', spaces, '/' or '\'`,
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
}
