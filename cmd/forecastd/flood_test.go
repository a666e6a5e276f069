package main

import (
	"fmt"
	"math"
	"testing"
	"time"
)

// TestDaemonFloodSparesHeldSeries: a burst of new subjects on core NATS
// (floodSubjects × floodPoints messages, published as fast as the client
// can, more than the client used to hold for a reader held up by the
// shards) with one point of an established series after every
// floodEvery flood messages. The established series loses none of its
// points: it is forecast once for each. (Before: nats.go dropped
// messages as a slow consumer, the innocent series' among them.)
func TestDaemonFloodSparesHeldSeries(t *testing.T) {
	const (
		floodSubjects = 30_000
		floodPoints   = 4
		floodEvery    = 200
	)
	rd := startDaemon(t, `
[nats]
servers = ["127.0.0.1:0"]
embedded = true

[input]
subjects = ["flood.>"]

[pipeline]
shutdown_timeout = "20s"

[model]
kind = "norma"
dim = 2
scale = "fixed:-2,2"
`, nil)
	nc := connectTest(t, rd.d.embedded.ClientURL())
	const innocentSubject = "flood.innocent"
	col := collect(t, nc, "forecast."+innocentSubject)
	waitSubscribed(t, rd.d.embedded, "flood.>")
	t0 := time.Now().Add(-time.Hour).Truncate(time.Second).Unix()
	sent := 0
	innocent := func() {
		t.Helper()
		p := fmt.Appendf(nil, `{"time":%d,"value":%v}`, t0+int64(sent), math.Sin(float64(sent)/4))
		sent++
		if err := nc.Publish(innocentSubject, p); err != nil {
			t.Fatal(err)
		}
	}
	for range 10 {
		innocent()
	}
	// dim 2: a forecast from the third point on, one for each point.
	waitFor(t, 20*time.Second, "the innocent series' first forecasts", func() bool { return col.count(innocentSubject) == sent-2 })

	n := 0
	for k := range floodPoints {
		for s := range floodSubjects {
			p := fmt.Appendf(nil, `{"time":%d,"value":%d}`, t0+int64(k), s%7)
			if err := nc.Publish(fmt.Sprintf("flood.s%06d", s), p); err != nil {
				t.Fatal(err)
			}
			if n++; n%floodEvery == 0 {
				innocent()
			}
		}
	}
	// Behind 120 000 messages the round trip can take longer than
	// Flush's 10 s on a loaded machine: the bound is for a hang.
	if err := nc.FlushTimeout(2 * time.Minute); err != nil {
		t.Fatal(err)
	}
	// Every message received or dropped by the client, every point
	// processed or dropped by the runner: the forecasts are on their way.
	waitFor(t, 120*time.Second, "the flood settled", func() bool {
		src, run := rd.d.src.Stats(), rd.d.runner.Stats()
		return src.Received+src.Dropped == uint64(n+sent) && run.Submitted == run.Processed+run.DroppedQueueFull
	})
	src, run := rd.d.src.Stats(), rd.d.runner.Stats()
	t.Logf("flood of %d messages: the client dropped %d, the runner shed %d new series' points, processed %d", n, src.Dropped, run.DroppedQueueFull, run.Processed)
	want := sent - 2
	deadline := time.Now().Add(20 * time.Second)
	for col.count(innocentSubject) != want {
		if time.Now().After(deadline) {
			t.Fatalf("the innocent series was forecast %d times for its %d points (want %d); the NATS client dropped %d messages",
				col.count(innocentSubject), sent, want, src.Dropped)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if src.Dropped != 0 {
		t.Errorf("the NATS client dropped %d messages", src.Dropped)
	}
}
