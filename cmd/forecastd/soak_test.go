// The soak test takes a minute: it runs in scripts/test's slow step (go
// test -tags slow). Under the race detector it would take several, so it
// is left out of the race pass.
//go:build slow && !race

package main

import (
	"bytes"
	"fmt"
	"math"
	"runtime"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// TestDaemonSoak runs the daemon for 60 s at 200 good points a second over
// 20 series, mixed with bad input (invalid JSON, non-numeric and
// non-finite values, oversized payloads, duplicate and out-of-order
// times), sampling the goroutines and the heap in use (after a GC) every
// 5 s. After a 10 s warm-up, memory is flat: the last third's largest
// heap is at most 1.5× the first third's (the series and their models are
// bounded once every series is warm, so the heap may only wander with the
// GC's pacing and the NATS buffers, which 1.5× covers); the goroutines at
// the end are at most 5 more than after the warm-up; and /metrics counts
// exactly what was sent.
func TestDaemonSoak(t *testing.T) {
	const (
		dur     = 60 * time.Second
		tick    = 100 * time.Millisecond
		nSeries = 20 // × 10 ticks/s = 200 good points/s
		warmup  = 10 * time.Second
		every   = 5 * time.Second
	)
	ns := runNATS(t, server.RANDOM_PORT)
	t.Cleanup(func() { ns.Shutdown(); ns.WaitForShutdown() })
	rd := startDaemon(t, fmt.Sprintf(`
[nats]
servers = [%q]

[input]
subjects = ["s.>"]

[http]
listen = "127.0.0.1:0"

[model]
kind = "norma"
dim = 3
scale = "fixed:-2,2"
`, ns.ClientURL()), nil)
	addr := rd.d.httpAddr.String()
	waitSubscribed(t, ns, "s.>")
	nc := connectTest(t, ns.ClientURL())

	huge := append([]byte(`{"time":1,"value":1,"pad":"`), bytes.Repeat([]byte{'x'}, 1<<20)...)
	huge = append(huge, `"}`...)
	var sent, good, ooo int
	bad := map[string]int{}
	pub := func(subj string, p []byte) {
		if err := nc.Publish(subj, p); err != nil {
			t.Fatal(err)
		}
		sent++
	}
	t0 := time.Now().Add(-30 * time.Minute).Truncate(time.Second)
	type sample struct {
		at         time.Duration
		heap       uint64
		goroutines int
	}
	var samples []sample
	start := time.Now()
	next := start
	nextSample := start.Add(warmup)
	for i := 0; time.Since(start) < dur; i++ {
		ts := t0.Add(time.Duration(i) * time.Second).Unix()
		for k := range nSeries {
			pub(fmt.Sprintf("s.%d", k), fmt.Appendf(nil, `{"time":%d,"value":%v}`, ts, math.Sin(float64(i)/7+float64(k))))
			good++
		}
		k := i % nSeries
		subj := fmt.Sprintf("s.%d", k)
		pub(subj, fmt.Appendf(nil, `{"time":%d,"value":0.5}`, ts)) // duplicate time
		ooo++
		if i >= 5 {
			pub(subj, fmt.Appendf(nil, `{"time":%d,"value":0.5}`, ts-5)) // out of order
			ooo++
		}
		pub(subj, []byte(`{"time":`))
		bad["invalid_json"]++
		pub(subj, fmt.Appendf(nil, `{"time":%d,"value":1e999}`, ts))
		bad["non_finite"]++
		pub(subj, fmt.Appendf(nil, `{"time":%d,"value":"high"}`, ts))
		bad["invalid_value"]++
		pub(subj, fmt.Appendf(nil, `{"time":%d,"value":true}`, ts))
		bad["invalid_value"]++
		if i%20 == 0 {
			pub(subj, huge)
			bad["too_large"]++
		}
		if err := nc.Flush(); err != nil {
			t.Fatal(err)
		}
		if now := time.Now(); !now.Before(nextSample) {
			runtime.GC()
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			samples = append(samples, sample{now.Sub(start).Round(time.Second), ms.HeapInuse, runtime.NumGoroutine()})
			nextSample = nextSample.Add(every)
		}
		next = next.Add(tick)
		time.Sleep(time.Until(next))
	}
	var m map[string]float64
	waitFor(t, 30*time.Second, "every message received and every point processed", func() bool {
		m = scrape(t, addr)
		return m["forecastd_messages_received_total"] == float64(sent) &&
			m[`forecastd_points_dropped_total{reason="out_of_order"}`] == float64(ooo)
	})
	// Points taken by a series: the good ones, and those it dropped as
	// out of order.
	if got := m["forecastd_points_processed_total"]; got != float64(good+ooo) {
		t.Errorf("points_processed_total %v, want %d good + %d out of order", got, good, ooo)
	}
	for _, r := range []string{"invalid_json", "non_finite", "invalid_value", "too_large", "missing_value", "bad_time", "out_of_range_time"} {
		if got := m[fmt.Sprintf("forecastd_parse_errors_total{reason=%q}", r)]; got != float64(bad[r]) {
			t.Errorf("parse_errors_total{reason=%q} = %v, want %d", r, got, bad[r])
		}
	}
	if got := m["forecastd_series_active"]; got != nSeries {
		t.Errorf("series_active %v, want %d", got, nSeries)
	}

	if len(samples) < 9 {
		t.Fatalf("%d samples", len(samples))
	}
	third := len(samples) / 3
	maxHeap := func(ss []sample) uint64 {
		var mx uint64
		for _, s := range ss {
			mx = max(mx, s.heap)
		}
		return mx
	}
	first, last := maxHeap(samples[:third]), maxHeap(samples[len(samples)-third:])
	for _, s := range samples {
		t.Logf("%v: heap in use %.1f MiB, %d goroutines", s.at, float64(s.heap)/(1<<20), s.goroutines)
	}
	if float64(last) > 1.5*float64(first) {
		t.Errorf("heap grows: last third's max %d B > 1.5 × first third's %d B", last, first)
	}
	if g0, g1 := samples[0].goroutines, samples[len(samples)-1].goroutines; g1 > g0+5 {
		t.Errorf("goroutines grow: %d after the warm-up, %d at the end", g0, g1)
	}
	t.Logf("sent %d messages in %v: %d good points, %d duplicate or out of order, bad %v; /metrics: received %v, processed %v, out_of_order %v",
		sent, dur, good, ooo, bad, m["forecastd_messages_received_total"], m["forecastd_points_processed_total"], m[`forecastd_points_dropped_total{reason="out_of_order"}`])
}
