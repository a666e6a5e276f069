package main

import (
	"fmt"
	"math"
	"testing"
	"time"
)

// TestDaemonFloodSparesHeldSeries: a burst of new subjects on core NATS
// (floodSubjects × floodPoints messages, published as fast as the client
// can) with one point of an established series after every floodEvery
// flood messages. Every message is read or counted as dropped by the
// client, every point processed or counted as shed by the runner, which
// sheds only new series' points: the established series is forecast once
// for each of its points the client read (all of them, unless the machine
// was too busy for the client to keep up: core NATS then drops, and
// counts). The shedding itself is TestDeliverShedsNewSeriesUnderBacklog's.
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
	// Flush's own bound (10 s) is too short for the server to take 120 000
	// messages on a loaded machine under the race detector: a bound only
	// against a hang.
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
	// dim 2: a forecast for each point from the third; the client may
	// have dropped some of the innocent series' points among the
	// messages it counts as dropped, the runner none.
	want := sent - 2
	least := max(0, want-int(src.Dropped))
	waitFor(t, 120*time.Second, "the innocent series' forecasts", func() bool { return col.count(innocentSubject) >= least })
	if got := col.count(innocentSubject); got > want {
		t.Errorf("the innocent series was forecast %d times for its %d points (want at most %d)", got, sent, want)
	}
}
