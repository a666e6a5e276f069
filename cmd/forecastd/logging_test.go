package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/forecastd/forecastd/internal/config"
)

// TestLogFormatJSON: log_format = "json" makes every log line a JSON
// object, with slog's keys and the daemon's; another value is refused.
func TestLogFormatJSON(t *testing.T) {
	rd := startDaemon(t, `
log_format = "json"
[nats]
servers = ["127.0.0.1:0"]
embedded = true
[input]
subjects = ["lj.>"]
`, nil)
	if _, err := rd.stop(t); err != nil {
		t.Fatal(err)
	}
	var ready bool
	for _, line := range strings.Split(strings.TrimSpace(rd.logs.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if m["msg"] == "forecastd ready" && m["component"] == "daemon" && m["level"] == "INFO" && m["time"] != nil {
			ready = true
		}
	}
	if !ready {
		t.Errorf("no JSON line forecastd ready:\n%s", rd.logs)
	}

	path := filepath.Join(t.TempDir(), "f.toml")
	if err := os.WriteFile(path, []byte("log_format = \"xml\"\n[input]\nsubjects = [\"a\"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := config.Load(path, config.DaemonChecks); err == nil || !strings.Contains(err.Error(), `log_format: want "text" or "json", got "xml"`) {
		t.Errorf("config.Load: %v", err)
	}
}
