package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/BurntSushi/toml"
	"github.com/nats-io/nats.go"

	"github.com/forecastd/forecastd/internal/config/schema"
	"github.com/forecastd/forecastd/internal/memory"
)

func TestByteSize(t *testing.T) {
	for _, c := range []struct {
		text string
		want int64
	}{{"0", 0}, {"512", 512}, {"64KiB", 64 << 10}, {"512MiB", 512 << 20}, {"2GiB", 2 << 30}, {"1TiB", 1 << 40}, {"100B", 100}, {" 3 GiB ", 3 << 30}} {
		var b schema.ByteSize
		if err := b.UnmarshalText([]byte(c.text)); err != nil || b.N != c.want {
			t.Errorf("%q: %d, %v; want %d", c.text, b.N, err, c.want)
		}
	}
	for _, bad := range []string{"", "-1", "2GB", "1.5GiB", "GiB", "99999999999TiB"} {
		var b schema.ByteSize
		if err := b.UnmarshalText([]byte(bad)); err == nil {
			t.Errorf("%q: %d, want an error", bad, b.N)
		}
	}
	var c struct {
		B schema.ByteSize `toml:"b"`
	}
	if _, err := toml.Decode(`b = "2GiB"`, &c); err != nil || c.B.N != 2<<30 || c.B.Text != "2GiB" {
		t.Errorf("decoded %+v, %v", c.B, err)
	}
}

// TestDaemonMemoryBudget: the forecastd binary (a child process, so that
// its soft memory limit is its own) with memory_budget = "64MiB" is
// flooded with more new series than fit; it bounds the series it holds
// (forecastd_series_limit), keeps its live heap near the budget, and
// still forecasts.
func TestDaemonMemoryBudget(t *testing.T) {
	ns := startNATS(t, false)
	nc := connectTest(t, ns.ClientURL())
	addr := startPipelineChild(t, ns.ClientURL(), "mb.>", `memory_budget = "64MiB"`)
	// Only the series the test reads: decoding the flood's forecasts
	// would take the CPU the daemon needs.
	col := collect(t, nc, "forecast.mb.after")
	// 30 000 series of 8 points each (about 15 KB each once they
	// forecast: some 450 MB without a bound).
	t0 := time.Now().Add(-time.Hour).Truncate(time.Second)
	const series, points = 30000, 8
	// In chunks, each waited for: the daemon's core NATS subscription
	// drops what overflows its bounded buffer (a slow consumer), and a
	// loaded CI machine is slow.
	const chunk = 2000
	var last map[string]float64
	defer func() {
		if t.Failed() && last != nil {
			for k, v := range last {
				if strings.HasPrefix(k, "forecastd_points") || strings.HasPrefix(k, "forecastd_messages") || strings.HasPrefix(k, "forecastd_series") {
					t.Logf("last scrape: %s %v", k, v)
				}
			}
		}
	}()
	for i := range points {
		for k0 := 0; k0 < series; k0 += chunk {
			for k := k0; k < min(series, k0+chunk); k++ {
				if err := nc.Publish(fmt.Sprintf("mb.s%d", k), fmt.Appendf(nil, `{"time":%d,"value":%d}`, t0.Add(time.Duration(i)*time.Second).Unix(), (k+i)%7)); err != nil {
					t.Fatal(err)
				}
			}
			if err := nc.Flush(); err != nil {
				t.Fatal(err)
			}
			sent := float64(i*series + min(series, k0+chunk))
			waitFor(t, 2*time.Minute, fmt.Sprintf("round %d, series %d…: the points processed (or dropped by a slow consumer)", i, k0), func() bool {
				m := scrape(t, addr)
				last = m
				return m["forecastd_points_processed_total"]+m["forecastd_messages_dropped_total"] >= sent*0.99
			})
		}
	}
	var m map[string]float64
	waitFor(t, 30*time.Second, "a series limit set and held to", func() bool {
		m = scrape(t, addr)
		l := m["forecastd_series_limit"]
		return l > 0 && m["forecastd_series_active"] <= l
	})
	if m["forecastd_series_limit"] >= series {
		t.Errorf("series_limit %v: not below the %d series sent", m["forecastd_series_limit"], series)
	}
	if n := m[`forecastd_series_evicted_total{reason="max_series"}`]; n == 0 {
		t.Error("no series evicted for the budget")
	}
	if heap := m["go_memstats_heap_alloc_bytes"]; heap > 2*64<<20 {
		t.Errorf("heap %v bytes after the flood, twice the budget of 64 MiB", heap)
	}
	// Still forecasting: a new series forecasts once it has enough points.
	for i := range 12 {
		if err := nc.Publish("mb.after", fmt.Appendf(nil, `{"time":%d,"value":%d}`, t0.Add(time.Duration(i)*time.Second).Unix(), i%5)); err != nil {
			t.Fatal(err)
		}
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "mb.after's forecasts", func() bool { return col.count("mb.after") > 0 })
	if !nc.IsConnected() {
		t.Fatal(nats.ErrConnectionClosed)
	}
	t.Logf("after %d series: series_limit %v, active %v, heap %.1f MiB, evicted %v", series, m["forecastd_series_limit"],
		m["forecastd_series_active"], m["go_memstats_heap_alloc_bytes"]/(1<<20), m[`forecastd_series_evicted_total{reason="max_series"}`])
}

// TestDaemonGCPercent: the daemon's collector runs at [pipeline]
// gc_percent, memory.DefaultGCPercent (20) without it, and at GOGC when the environment sets it, as
// its Go metrics (go_gc_gogc_percent) report.
func TestDaemonGCPercent(t *testing.T) {
	ns := startNATS(t, false)
	for _, c := range []struct {
		name, toml string
		env        []string
		want       float64
	}{
		{"default", "", []string{"GOGC="}, memory.DefaultGCPercent},
		{"configured", "gc_percent = 40", []string{"GOGC="}, 40},
		{"GOGC wins", "gc_percent = 40", []string{"GOGC=70"}, 70},
	} {
		t.Run(c.name, func(t *testing.T) {
			addr := startPipelineChild(t, ns.ClientURL(), "gc.>", c.toml, c.env...)
			m := scrape(t, addr)
			if got, ok := m["go_gc_gogc_percent"]; !ok || got != c.want {
				t.Errorf("go_gc_gogc_percent %v (reported: %v), want %v", got, ok, c.want)
			}
		})
	}
}

// startPipelineChild starts the forecastd binary on the NATS server at
// url, reading subjects, with its HTTP endpoint on a free port and
// pipeline as its [pipeline] table, env added to its environment; it
// returns the HTTP endpoint's address once the daemon logs it.
func startPipelineChild(t *testing.T, url, subjects, pipeline string, env ...string) (addr string) {
	t.Helper()
	cfgPath := filepath.Join(t.TempDir(), "c.toml")
	if err := os.WriteFile(cfgPath, []byte(fmt.Sprintf(`
[nats]
servers = [%q]

[input]
subjects = [%q]

[http]
listen = "127.0.0.1:0"

[pipeline]
%s
`, url, subjects, pipeline)), 0o644); err != nil {
		t.Fatal(err)
	}
	c := startChildEnv(t, cfgPath, env...)
	waitFor(t, 30*time.Second, "the http address in the log", func() bool {
		m := httpAddrRE.FindStringSubmatch(c.logs.String())
		if m != nil {
			addr = m[1]
		}
		return m != nil
	})
	return addr
}
