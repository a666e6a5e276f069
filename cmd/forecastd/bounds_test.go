package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/forecastd/forecastd/internal/statestore"
)

// TestDaemonHostilePublishers sends the daemon, through its embedded NATS
// server, what issue #11's table lists a careless or hostile publisher
// sending, and checks each bound holds and is counted in /metrics:
//   - a point whose "series" names another subject's series, sent first:
//     the victim's forecasts stay its own (key and subject), the sender's
//     point makes a series of the sender's subject;
//   - one point of a series 59 min in the future: refused
//     (out_of_range_time), and the real points after it are all learned;
//   - a 1 MB series key: refused (key_too_long);
//   - a 1 MB JSON array of points with bad times: refused, and no log line
//     longer than 4 KiB;
//   - points for 60 distinct series at max_series = 10: at most 10 held,
//     the least recently used evicted (counted), checkpointed first, and
//     restored when it comes back.
func TestDaemonHostilePublishers(t *testing.T) {
	rd := startDaemon(t, fmt.Sprintf(`
[nats]
servers = ["127.0.0.1:0"]
embedded = true

[input]
subjects = ["m.>"]

[http]
listen = "127.0.0.1:0"

[state]
dir = %q
keep_evicted = 100 # the victim's state outlives the flood below

[pipeline]
max_series = 10

[model]
kind = "norma"
dim = 3
scale = "fixed:-2,2"
`, t.TempDir()), nil)
	addr := rd.d.httpAddr.String()
	nc := connectTest(t, rd.d.embedded.ClientURL())
	waitSubscribed(t, rd.d.embedded, "m.>")

	var mu sync.Mutex
	got := map[string][]string{} // forecast subject → series keys
	sub, err := nc.Subscribe("forecast.>", func(m *nats.Msg) {
		var p published
		if err := json.Unmarshal(m.Data, &p); err != nil {
			t.Errorf("forecast %q: %v", m.Data, err)
			return
		}
		mu.Lock()
		got[m.Subject] = append(got[m.Subject], p.Series)
		mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}

	t0 := time.Now().Add(-time.Hour).Truncate(time.Second)
	pub := func(subject, payload string) {
		t.Helper()
		if err := nc.Publish(subject, []byte(payload)); err != nil {
			t.Fatal(err)
		}
	}
	// The takeover attempt, first; then the victim's own points. And a
	// point of m.clock from a clock 59 min ahead, then its real points.
	pub("m.attacker", fmt.Sprintf(`{"series":"m.victim","time":%d,"value":1000}`, t0.Add(-time.Second).Unix()))
	pub("m.clock", fmt.Sprintf(`{"time":%d,"value":1}`, time.Now().Add(59*time.Minute).Unix()))
	const real = 40
	for i := range real {
		ts := t0.Add(time.Duration(i) * time.Second).Unix()
		v := float64(i%7) / 7
		pub("m.victim", fmt.Sprintf(`{"time":%d,"value":%v}`, ts, v))
		pub("m.clock", fmt.Sprintf(`{"time":%d,"value":%v}`, ts, v))
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	var m map[string]float64
	waitFor(t, 20*time.Second, "the real points processed", func() bool {
		m = scrape(t, addr)
		return m["forecastd_points_processed_total"] == 1+2*real
	})
	if n := m[`forecastd_points_dropped_total{reason="out_of_order"}`]; n != 0 {
		t.Errorf("%v points dropped out of order: the future point silenced its series", n)
	}
	if n := m[`forecastd_parse_errors_total{reason="out_of_range_time"}`]; n != 1 {
		t.Errorf("out_of_range_time = %v, want 1 (the point 59 min ahead)", n)
	}
	waitFor(t, 10*time.Second, "the victim's forecasts", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(got["forecast.m.victim"]) >= real/2
	})
	mu.Lock()
	for subj, keys := range got {
		for _, k := range keys {
			want := strings.TrimPrefix(subj, "forecast.")
			if k != want && !strings.HasPrefix(k, want+" ") {
				t.Errorf("a forecast of series %q published on %s", k, subj)
			}
		}
	}
	mu.Unlock()

	// A 1 MB array of points with bad times, and a 1 MB key, each more
	// than a second after the last warning, so that each is logged (the
	// source logs refusals at most once a second).
	var arr strings.Builder
	arr.WriteByte('[')
	for arr.Len() < 1<<20-200 {
		if arr.Len() > 1 {
			arr.WriteByte(',')
		}
		fmt.Fprintf(&arr, `{"time":"%s","value":1}`, strings.Repeat("x", 100))
	}
	arr.WriteByte(']')
	for _, c := range []struct{ subject, payload, logged string }{
		{"m.times", arr.String(), "reason=bad_time"},
		{"m.keys", `{"series":"` + strings.Repeat("k", 1<<20-100) + `","value":1}`, "reason=key_too_long"},
	} {
		after := time.Now().Add(1100 * time.Millisecond)
		waitFor(t, 2*time.Second, "the log's rate limit", func() bool { return time.Now().After(after) })
		pub(c.subject, c.payload)
		waitForLog(t, rd, c.logged)
	}
	// 60 series at max_series = 10.
	for i := range 60 {
		pub(fmt.Sprintf("m.flood.%d", i), fmt.Sprintf(`{"time":%d,"value":1}`, t0.Unix()))
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for m = scrape(t, addr); m["forecastd_points_processed_total"] != 1+2*real+60; m = scrape(t, addr) {
		if time.Now().After(deadline) {
			t.Fatalf("the flood not processed in 20 s: /metrics %v", m)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if n := m["forecastd_series_active"]; n > 10 {
		t.Errorf("series_active = %v, more than max_series 10", n)
	}
	if n := m[`forecastd_series_evicted_total{reason="max_series"}`]; n < 60+3-10 {
		t.Errorf("series_evicted_total{max_series} = %v, want at least %d", n, 60+3-10)
	}
	if n := m[`forecastd_points_dropped_total{reason="max_series"}`]; n != 0 {
		t.Errorf("points_dropped_total{max_series} = %v: new series were refused rather than the oldest evicted", n)
	}
	if n := m[`forecastd_parse_errors_total{reason="key_too_long"}`]; n != 1 {
		t.Errorf("key_too_long = %v, want 1", n)
	}
	if n := m[`forecastd_parse_errors_total{reason="bad_time"}`]; n < 1000 {
		t.Errorf("bad_time = %v, want every element of the array", n)
	}
	// The victim was evicted by the flood, checkpointed first: its next
	// point is taken by its restored state, which forecasts at once (a
	// series started afresh would need dim+1 points before its first).
	if n := m[`forecastd_series_active`]; n != 10 {
		t.Fatalf("series_active %v", n)
	}
	mu.Lock()
	before := len(got["forecast.m.victim"])
	mu.Unlock()
	pub("m.victim", fmt.Sprintf(`{"time":%d,"value":0.5}`, t0.Add(real*time.Second).Unix()))
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("logs:\n%.5000s\nmetrics %v", rd.logs, scrape(t, addr))
		}
	})
	waitFor(t, 10*time.Second, "a forecast of the victim restored from its eviction checkpoint", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(got["forecast.m.victim"]) > before
	})
	for _, line := range strings.Split(rd.logs.String(), "\n") {
		if len(line) > 4096 {
			t.Errorf("a log line of %d bytes: %.300s…", len(line), line)
		}
	}
}

// TestDaemonKeepEvicted: the states of series evicted at max_series are
// kept for their return up to [state] keep_evicted, so a flood of new
// series cannot fill the state dir; a start that finds more states than
// max_series + keep_evicted (the dir of a run with larger bounds) loads
// the newest and deletes the rest.
func TestDaemonKeepEvicted(t *testing.T) {
	dir := t.TempDir()
	cfgText := func(maxSeries, keep int) string {
		return fmt.Sprintf(`
[nats]
servers = ["127.0.0.1:0"]
embedded = true

[input]
subjects = ["m.>"]

[http]
listen = "127.0.0.1:0"

[state]
dir = %q
keep_evicted = %d

[pipeline]
max_series = %d
shards = 1

[model]
kind = "norma"
dim = 3
scale = "fixed:-2,2"
`, dir, keep, maxSeries)
	}
	files := func() int {
		ents, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, e := range ents {
			if strings.HasSuffix(e.Name(), statestore.Ext) {
				n++
			}
		}
		return n
	}
	rd := startDaemon(t, cfgText(5, 10), nil)
	addr := rd.d.httpAddr.String()
	nc := connectTest(t, rd.d.embedded.ClientURL())
	waitSubscribed(t, rd.d.embedded, "m.>")
	t0 := time.Now().Add(-time.Hour).Truncate(time.Second)
	const flood = 100
	for i := range flood {
		if err := nc.Publish(fmt.Sprintf("m.flood.%d", i), fmt.Appendf(nil, `{"time":%d,"value":1}`, t0.Add(time.Duration(i)*time.Second).Unix())); err != nil {
			t.Fatal(err)
		}
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	var m map[string]float64
	waitFor(t, 20*time.Second, "the flood processed and its states discarded", func() bool {
		m = scrape(t, addr)
		return m["forecastd_points_processed_total"] == flood && m["forecastd_checkpoints_discarded_total"] == flood-5-10
	})
	if _, err := rd.stop(t); err != nil {
		t.Fatalf("stop: %v\n%s", err, rd.logs)
	}
	// The 5 live series, checkpointed at the stop, and the 10 evicted last.
	if n := files(); n != 5+10 {
		t.Fatalf("%d states in the dir after %d series at max_series 5, keep_evicted 10; want 15", n, flood)
	}

	rd = startDaemon(t, cfgText(2, 3), nil)
	waitForLog(t, rd, "kept=5")
	waitFor(t, 10*time.Second, "the states beyond 5 deleted", func() bool { return files() == 5 })
	m = scrape(t, rd.d.httpAddr.String())
	if n := m["forecastd_checkpoints_discarded_total"]; n != 10 {
		t.Errorf("checkpoints_discarded_total = %v at a start with 15 states and room for 5, want 10", n)
	}
	if _, err := rd.stop(t); err != nil {
		t.Fatalf("stop: %v\n%s", err, rd.logs)
	}
}
