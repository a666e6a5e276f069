package main

import (
	"context"
	"fmt"
	"math"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/forecastd/forecastd/sinks"
)

// closer is a sinks.Writer that, before its at-th forecast, publishes on
// the daemon's output connection a subject nats-server refuses by closing
// that connection: the forecasts written right after it are in the
// client's buffer when the server closes the connection.
type closer struct {
	next  sinks.Writer
	d     *daemon
	at    int64
	n     atomic.Int64
	fired atomic.Bool
}

func (c *closer) Write(r sinks.Record) error {
	if r.Kind == sinks.KindForecast && c.n.Add(1) == c.at {
		out := c.d.output.Conn()
		_ = out.Publish("forecast."+strings.Repeat("abcdefghi.", 500), []byte("x"))
		c.fired.Store(true)
	}
	return c.next.Write(r)
}

// TestDaemonOutputClosedLosesNoForecast: the server closes the output
// connection while forecasts are in the client's buffer, on their way.
// Every point of the series is forecast all the same: the forecasts the
// server had not confirmed are published again on the new connection
// (core NATS), and under JetStream the points whose forecast was refused
// while the connection was closed are redelivered; every message is
// acknowledged. (Before: the forecasts in the buffer were lost, and under
// JetStream their points acknowledged.)
func TestDaemonOutputClosedLosesNoForecast(t *testing.T) {
	for _, js := range []bool{false, true} {
		t.Run(fmt.Sprintf("jetstream=%v", js), func(t *testing.T) {
			cfg := `
[nats]
servers = ["127.0.0.1:0"]
embedded = true

[input]
subjects = ["oc.>"]
`
			if js {
				cfg += `
[input.jetstream]
stream = "OC"
durable = "fd"
nak_delay = "500ms"
max_deliver = 40  # a series holds its newer points for 20 s, however slow the machine
`
			}
			cfg += `
[pipeline]
shutdown_timeout = "20s"

[model]
kind = "norma"
dim = 2
scale = "fixed:-2,2"
`
			if js {
				cfg += fmt.Sprintf("\n[state]\ndir = %q\n", t.TempDir())
			}
			d := &daemon{}
			c := &closer{d: d, at: 20}
			d.wrapOut = func(w sinks.Writer) sinks.Writer { c.next = w; return c }
			rd := startDaemon(t, cfg, d)
			nc := connectTest(t, rd.d.embedded.ClientURL())
			col := collect(t, nc, "forecast.oc.>")
			if !js {
				waitSubscribed(t, rd.d.embedded, "oc.>")
			}
			var pub func(subj string, data []byte) error
			if js {
				s, err := jetstream.New(nc)
				if err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				pub = func(subj string, data []byte) error { _, err := s.Publish(ctx, subj, data); return err }
			} else {
				pub = nc.Publish
			}
			t0 := time.Now().Add(-time.Hour).Truncate(time.Second).Unix()
			const points = 60
			for i := range points {
				if err := pub("oc.a", fmt.Appendf(nil, `{"time":%d,"value":%v}`, t0+int64(i), math.Sin(float64(i)/4))); err != nil {
					t.Fatal(err)
				}
			}
			// dim 2: a forecast from the third point on, one for each.
			want := points - 2
			times := func() int {
				seen := map[int64]bool{}
				for _, p := range col.series("oc.a") {
					seen[p.Time.UnixNano()] = true
				}
				return len(seen)
			}
			deadline := time.Now().Add(60 * time.Second)
			for times() != want {
				if time.Now().After(deadline) {
					t.Fatalf("%d of %d forecasts (the output closed: %v); nats out %+v; runner %+v\n%s",
						times(), want, c.fired.Load(), sinkOf[*sinks.NATS](rd.d).Stats(), rd.d.runner.Stats(), rd.logs)
				}
				time.Sleep(10 * time.Millisecond)
			}
			if !c.fired.Load() || !strings.Contains(rd.logs.String(), "nats output connection closed") {
				t.Fatalf("the output connection was not closed:\n%s", rd.logs)
			}
			if js {
				waitFor(t, 60*time.Second, "every message acknowledged", func() bool { return rd.d.src.Stats().Acked == points })
			}
			t.Logf("nats out %+v", sinkOf[*sinks.NATS](rd.d).Stats())
		})
	}
}
