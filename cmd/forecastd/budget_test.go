package main

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"
	"time"

	"github.com/BurntSushi/toml"
	"github.com/nats-io/nats.go"
)

func TestByteSize(t *testing.T) {
	for _, c := range []struct {
		text string
		want int64
	}{{"0", 0}, {"512", 512}, {"64KiB", 64 << 10}, {"512MiB", 512 << 20}, {"2GiB", 2 << 30}, {"1TiB", 1 << 40}, {"100B", 100}, {" 3 GiB ", 3 << 30}} {
		var b ByteSize
		if err := b.UnmarshalText([]byte(c.text)); err != nil || b.N != c.want {
			t.Errorf("%q: %d, %v; want %d", c.text, b.N, err, c.want)
		}
	}
	for _, bad := range []string{"", "-1", "2GB", "1.5GiB", "GiB", "99999999999TiB"} {
		var b ByteSize
		if err := b.UnmarshalText([]byte(bad)); err == nil {
			t.Errorf("%q: %d, want an error", bad, b.N)
		}
	}
	var c struct {
		B ByteSize `toml:"b"`
	}
	if _, err := toml.Decode(`b = "2GiB"`, &c); err != nil || c.B.N != 2<<30 || c.B.Text != "2GiB" {
		t.Errorf("decoded %+v, %v", c.B, err)
	}
}

// seriesLimit sizes the series to 90 % of the budget by the heap per
// series held now, raises the bound back as the heap falls, and sets none
// while the series fit.
func TestSeriesLimit(t *testing.T) {
	const mib = 1 << 20
	for _, c := range []struct {
		name                  string
		live, transit, budget uint64
		active, current       int64
		maxSeries             int
		want                  int64
	}{
		{"under the budget, no bound", 50 * mib, 0, 100 * mib, 1000, 0, 100000, 0},
		{"over: 1000 series in 200 MiB, 90 MiB allowed", 200 * mib, 0, 100 * mib, 1000, 0, 100000, 450},
		{"the bound holds at 90 %", 90 * mib, 0, 100 * mib, 450, 450, 100000, 450},
		{"raised as the heap falls", 45 * mib, 0, 100 * mib, 450, 450, 100000, 900},
		{"raised to max_series: no bound", 10 * mib, 0, 100 * mib, 450, 450, 1000, 0},
		{"at least one", 1000 * mib, 0, 100 * mib, 5, 0, 100000, 1},
		{"nothing held: unchanged", 80 * mib, 0, 100 * mib, 0, 7, 100000, 7},
		// 450 series in 90 MiB, and 12 MiB of evicted states waiting to
		// be written: the series do not look dearer (it was 397), and
		// the queue takes its 12 MiB of the 90 (78 MiB: 390 series).
		{"the checkpoint queue is not the series'", 102 * mib, 12 * mib, 100 * mib, 450, 450, 100000, 390},
		{"the checkpoint queue takes at most half", 145 * mib, 100 * mib, 100 * mib, 450, 450, 100000, 450},
	} {
		if got := seriesLimit(c.live, c.transit, c.budget, c.active, c.current, c.maxSeries); got != c.want {
			t.Errorf("%s: %d, want %d", c.name, got, c.want)
		}
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
	col := collect(t, nc, "forecast.>")
	// 30 000 series of 8 points each (about 15 KB each once they
	// forecast: some 450 MB without a bound).
	t0 := time.Now().Add(-time.Hour).Truncate(time.Second)
	const series, points = 30000, 8
	// In chunks, each waited for: the daemon's core NATS subscription
	// drops what overflows its bounded buffer (a slow consumer), and a
	// loaded CI machine is slow.
	const chunk = 2000
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

// setGCPercent sets [pipeline] gc_percent, 25 when absent, and leaves
// the runtime's value alone when GOGC is in the environment.
func TestSetGCPercent(t *testing.T) {
	orig := debug.SetGCPercent(100)
	defer debug.SetGCPercent(orig)
	current := func() int {
		p := debug.SetGCPercent(-1)
		debug.SetGCPercent(p)
		return p
	}
	forty := 40
	for _, c := range []struct {
		name     string
		cfg      *int
		gogc     string
		runtime  int // the value before the call
		want     int
		wantFrom string
	}{
		{"default", nil, "", 100, defaultGCPercent, "pipeline.gc_percent"},
		{"configured", &forty, "", 100, 40, "pipeline.gc_percent"},
		{"GOGC wins", &forty, "70", 70, 70, "GOGC"},
		{"GOGC=off is kept", nil, "off", -1, -1, "GOGC"},
	} {
		debug.SetGCPercent(c.runtime)
		got, from := setGCPercent(c.cfg, c.gogc)
		if got != c.want || from != c.wantFrom || current() != c.want {
			t.Errorf("%s: %d from %s, runtime %d; want %d from %s", c.name, got, from, current(), c.want, c.wantFrom)
		}
	}
}

// TestDaemonGCPercent: the daemon's collector runs at [pipeline]
// gc_percent, 25 without it, and at GOGC when the environment sets it, as
// its Go metrics (go_gc_gogc_percent) report.
func TestDaemonGCPercent(t *testing.T) {
	ns := startNATS(t, false)
	for _, c := range []struct {
		name, toml string
		env        []string
		want       float64
	}{
		{"default", "", []string{"GOGC="}, defaultGCPercent},
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
