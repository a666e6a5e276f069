package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/forecastd/forecastd/internal/config"
	"github.com/forecastd/forecastd/sources"
)

// [input] fieldpass and fielddrop reach the daemon's decoder: with
// Telegraf's line protocol, the fields they leave out make no point, and
// are counted.
func TestInputFieldFilter(t *testing.T) {
	p := filepath.Join(t.TempDir(), "fields.toml")
	if err := os.WriteFile(p, []byte(`[input]
subjects = ["telegraf"]
data_format = "influx"
fieldpass = ["usage_*", "*_percent", "load?"]
fielddrop = ["usage_guest*", "usage_irq", "usage_nice"]
`), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(p, config.DaemonChecks)
	if err != nil {
		t.Fatal(err)
	}
	dc, err := cfg.Input.Decoder()
	if err != nil {
		t.Fatal(err)
	}
	if dc.Fields == nil {
		t.Fatal("no field filter")
	}
	payload := []byte(`cpu,cpu=cpu0,host=a usage_user=1.5,usage_guest=0,usage_guest_nice=0,usage_irq=0,usage_idle=97 1795384479000000000
mem,host=a used_percent=0.59,total=25276510208i,available_percent=98.1 1795384479000000000
system,host=a load1=1.75,load15=1.73,n_cpus=2i 1795384479000000000
system,host=a uptime_format=" 0:19" 1795384479000000000
`)
	dec, err := sources.NewDecoder(dc)
	if err != nil {
		t.Fatal(err)
	}
	pts, err := dec.Decode(nil, "telegraf", payload, time.Unix(1795384479, 0))
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, p := range pts {
		keys = append(keys, p.Key)
	}
	want := "cpu,cpu=cpu0,host=a usage_user|cpu,cpu=cpu0,host=a usage_idle|mem,host=a used_percent|mem,host=a available_percent|system,host=a load1"
	if got := strings.Join(keys, "|"); got != want {
		t.Fatalf("series\n%s\nwant\n%s", got, want)
	}
	if d := dc.Fields.Dropped(); d != 7 { // usage_guest, usage_guest_nice, usage_irq, total, load15, n_cpus, uptime_format
		t.Fatalf("%d fields dropped, want 7", d)
	}

	// Without the keys: no filter, every numeric field a series.
	cfg.Input.FieldPass, cfg.Input.FieldDrop = nil, nil
	if dc, err := cfg.Input.Decoder(); err != nil || dc.Fields != nil {
		t.Fatal("a filter without fieldpass or fielddrop")
	}
}
