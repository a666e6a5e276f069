package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/forecastd/forecastd/internal/testserver/influxtest"
)

// TestRunRefusesMissingDatabase: `forecastd run` with an InfluxDB that
// lacks the database does not start, and says how to create it; with
// create_database = true it creates it and starts.
func TestRunRefusesMissingDatabase(t *testing.T) {
	influx := influxtest.Shared(t, influxtest.Options{})
	db := influx.Database + "_forecastd" // on the shared server, not yet created
	cfg := func(extra string) string {
		return `
[nats]
servers = ["nats://127.0.0.1:0"]
embedded = true
[input]
subjects = ["m.>"]
[output.influxdb]
url = "` + influx.URL + `"
bucket = "` + db + `"
` + extra
	}
	path := filepath.Join(t.TempDir(), "forecastd.toml")
	if err := os.WriteFile(path, []byte(cfg("")), 0o644); err != nil {
		t.Fatal(err)
	}
	logs := &syncBuffer{}
	err := runDaemon([]string{"-config", path}, logs, make(chan os.Signal), nil)
	if err == nil || !strings.Contains(err.Error(), `curl -XPOST '`+influx.URL+`/query' --data-urlencode 'q=CREATE DATABASE "`+db+`"'`) {
		t.Fatalf("run: %v, want the command that creates the database\n%s", err, logs)
	}

	startDaemon(t, cfg("create_database = true\n"), nil)
	if out := influx.Query(t, "SHOW DATABASES"); !strings.Contains(out, `["`+db+`"]`) {
		t.Fatalf("SHOW DATABASES: %s", out)
	}
}
