package main

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

// TestDaemonThresholdOpened: through the daemon's embedded nats-server, a
// series falling towards threshold_below raises an opened threshold event
// on forecast.threshold.<subject>, with its ETA ahead of the forecast's
// origin and within the horizon, before the series gets there; a series
// of the same rule that stays level raises none.
func TestDaemonThresholdOpened(t *testing.T) {
	rd := startDaemon(t, `
[nats]
servers = ["127.0.0.1:0"]
embedded = true

[input]
subjects = ["disk.>"]

[pipeline]
shutdown_timeout = "10s"

[[rules]]
match = "disk.*"
horizon = 24
threshold_below = 0.0
`, nil)
	nc := connectTest(t, rd.d.embedded.ClientURL())
	sub, err := nc.SubscribeSync("forecast.threshold.>")
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	waitSubscribed(t, rd.d.embedded, "disk.>")
	t0 := time.Now().Add(-time.Hour).Truncate(time.Second)
	r := rand.New(rand.NewPCG(1, 2))
	const n = 190 // the filling disk reaches 0 at point 200
	for i := range n {
		ts := t0.Unix() + int64(i)
		for _, p := range []struct {
			subject string
			v       float64
		}{{"disk.filling", 100 - 0.5*float64(i) + 0.2*r.NormFloat64()}, {"disk.level", 50 + 0.2*r.NormFloat64()}} {
			if err := nc.Publish(p.subject, fmt.Appendf(nil, `{"time":%d,"value":%v}`, ts, p.v)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	var m *nats.Msg
	for m == nil {
		got, err := sub.NextMsg(20 * time.Second)
		if err != nil {
			t.Fatalf("no threshold event: %v\n%s", err, rd.logs)
		}
		if strings.Contains(string(got.Data), `"state":"opened"`) {
			m = got
		}
	}
	var e struct {
		Series, Direction, State string
		Threshold                float64
		Time, ETA                time.Time
		ETASeconds               float64 `json:"eta_seconds"`
		Horizon                  int
		Probability              float64
	}
	if err := json.Unmarshal(m.Data, &e); err != nil {
		t.Fatalf("%s: %v", m.Data, err)
	}
	if m.Subject != "forecast.threshold.disk.filling" || e.Series != "disk.filling" || e.Direction != "below" || e.Threshold != 0 {
		t.Fatalf("event on %s: %s", m.Subject, m.Data)
	}
	crossing := t0.Add(200 * time.Second)
	if e.Horizon < 1 || e.Horizon > 24 || !e.ETA.Equal(e.Time.Add(time.Duration(e.ETASeconds)*time.Second)) ||
		!e.Time.Before(crossing) || !(e.Probability >= 0.49) {
		t.Errorf("event %s: want an ETA within 24 steps of its origin, before the crossing at %v, probability ≥ 0.49", m.Data, crossing)
	}
	if id := m.Header.Get(nats.MsgIdHdr); !strings.HasPrefix(id, "disk.filling@") || !strings.HasSuffix(id, "#opened#below 0") {
		t.Errorf("Nats-Msg-Id %q", id)
	}
	for {
		got, err := sub.NextMsg(200 * time.Millisecond)
		if err != nil {
			break
		}
		if strings.Contains(string(got.Data), `"series":"disk.level"`) {
			t.Errorf("the level series raised %s", got.Data)
		}
	}
}
