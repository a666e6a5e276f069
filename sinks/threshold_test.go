package sinks

import (
	"fmt"
	"github.com/forecastd/forecastd/internal/config/schema"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/forecastd/forecastd/anomaly/threshold"
	"github.com/forecastd/forecastd/internal/testserver/influxtest"
	"github.com/forecastd/forecastd/pipeline"
)

// thresholdRec is a forecast of the disk series at step 1h made at point i
// with one observation of "below 0" whose event is ev: crossing 21 h
// ahead, unless closed.
func thresholdRec(i int, ev threshold.Event) Record {
	origin := t0.Add(time.Duration(i) * time.Hour)
	f := pipeline.Forecast{Origin: origin, Time: origin.Add(time.Hour), Value: 5, Lower: 4, Upper: 6}
	o := threshold.Observation{Value: 0, Direction: threshold.Below, Probability: 0.5, Forecast: -0.25, Lower: -6, Upper: 5.5, Event: ev}
	if ev != threshold.Closed {
		o.Crossing, o.Step, o.ETA = true, 21, 21*time.Hour
		o.At = origin.Add(o.ETA)
	} else {
		o.Probability, o.Forecast = 0.125, 3
	}
	f.Thresholds = []threshold.Observation{o}
	return Record{Kind: KindForecast, Series: "disk", Model: "aosvr", Subject: "in.disk", Step: "1h", Forecast: f}
}

// TestNATSThresholdEvents: a forecast whose observation opened, updated
// or closed an event publishes it on <prefix>.threshold.<subject> with its
// JSON and Nats-Msg-Id, after the forecast, whose message is as without
// thresholds; an observation without an event publishes nothing.
func TestNATSThresholdEvents(t *testing.T) {
	for _, queue := range []int{0, 2} { // published by Write, or by the sink's goroutine
		t.Run(fmt.Sprint("queue=", queue), func(t *testing.T) { testNATSThresholdEvents(t, queue) })
	}
}

func testNATSThresholdEvents(t *testing.T, queue int) {
	srv := runNATS(t, server.Options{})
	nc := connect(t, srv.ClientURL())
	sub, err := nc.SubscribeSync("fc.>")
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	s := NewNATS(connect(t, srv.ClientURL(), NATSOptions(0)...), NATSConfig{SubjectPrefix: "fc", Queue: queue})
	recs := []Record{thresholdRec(0, threshold.None), thresholdRec(1, threshold.Opened), thresholdRec(2, threshold.Updated), thresholdRec(3, threshold.Closed)}
	for _, r := range recs {
		if err := s.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(ctxTimeout(t, 10*time.Second)); err != nil {
		t.Fatal(err)
	}
	plain := recs[0]
	plain.Forecast.Thresholds = nil
	forecastBody := string(appendForecastJSON(nil, &plain))
	var got []*nats.Msg
	for range 7 { // 4 forecasts, 3 events
		m, err := sub.NextMsg(5 * time.Second)
		if err != nil {
			t.Fatalf("after %d messages: %v", len(got), err)
		}
		got = append(got, m)
	}
	if m, err := sub.NextMsg(100 * time.Millisecond); err == nil {
		t.Fatalf("extra message on %s: %s", m.Subject, m.Data)
	}
	if got[0].Subject != "fc.in.disk" || string(got[0].Data) != forecastBody {
		t.Errorf("forecast without event: %s %s, want fc.in.disk %s", got[0].Subject, got[0].Data, forecastBody)
	}
	wantOpened := `{"series":"disk","model":"aosvr","step":"1h","time":"2024-05-01T13:00:00.123456789Z","threshold":0,"direction":"below","state":"opened",` +
		`"eta":"2024-05-02T10:00:00.123456789Z","eta_seconds":75600,"horizon":21,"probability":0.5,"yhat":-0.25,"yhat_lower":-6,"yhat_upper":5.5}`
	wantClosed := `{"series":"disk","model":"aosvr","step":"1h","time":"2024-05-01T15:00:00.123456789Z","threshold":0,"direction":"below","state":"closed",` +
		`"eta":null,"eta_seconds":null,"horizon":null,"probability":0.125,"yhat":3,"yhat_lower":-6,"yhat_upper":5.5}`
	for i, c := range []struct {
		subject, id, body string
	}{
		{"fc.in.disk", "", ""},
		{"fc.threshold.in.disk", "disk@1h@2024-05-01T13:00:00.123456789Z#opened#below 0", wantOpened},
		{"fc.in.disk", "", ""},
		{"fc.threshold.in.disk", "disk@1h@2024-05-01T14:00:00.123456789Z#updated#below 0", ""},
		{"fc.in.disk", "", ""},
		{"fc.threshold.in.disk", "disk@1h@2024-05-01T15:00:00.123456789Z#closed#below 0", wantClosed},
	} {
		m := got[i+1]
		if m.Subject != c.subject {
			t.Errorf("message %d on %s, want %s", i+1, m.Subject, c.subject)
		}
		if c.id != "" && m.Header.Get(nats.MsgIdHdr) != c.id {
			t.Errorf("message %d: Nats-Msg-Id %q, want %q", i+1, m.Header.Get(nats.MsgIdHdr), c.id)
		}
		if c.body != "" && string(m.Data) != c.body {
			t.Errorf("message %d:\n got %s\nwant %s", i+1, m.Data, c.body)
		}
	}
	if st := s.Stats(); st.Thresholds != 3 || st.Published != 4 {
		t.Errorf("stats %+v, want 3 threshold events and 4 forecasts", st)
	}
}

// TestInfluxThresholdPoints: each observation is a point at the forecast's
// origin tagged threshold, with eta_seconds (absent without a crossing),
// threshold_probability and, on an event, threshold_state; the forecast's
// own points are as without thresholds. Through a real InfluxDB.
func TestInfluxThresholdPoints(t *testing.T) {
	t.Parallel()
	srv := influxtest.Shared(t, influxtest.Options{})
	s := newInflux(t, InfluxConfig{URL: srv.URL, Bucket: srv.Bucket, MetricBatchSize: 100, FlushInterval: schema.Dur(time.Hour)})
	recs := []Record{thresholdRec(0, threshold.None), thresholdRec(1, threshold.Opened), thresholdRec(3, threshold.Closed)}
	for _, r := range recs {
		r.Tags = []Tag{{Key: "threshold", Value: "input's"}}
		if err := s.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(ctxTimeout(t, 10*time.Second)); err != nil {
		t.Fatal(err)
	}
	if st := s.Stats(); st.Written != 6 {
		t.Fatalf("stats %+v, want 6 points written (3 forecasts, 3 observations)", st)
	}
	rows := queryAll(t, srv, "forecast")
	got := map[string]string{}
	for _, r := range rows {
		if !strings.HasPrefix(r.Field, "threshold_") && r.Field != "eta_seconds" {
			if r.Tags["threshold"] != "input's" {
				t.Errorf("forecast point's tags %v: want the input's tag threshold as it is", r.Tags)
			}
			continue
		}
		if r.Tags["threshold"] != "below 0" || r.Tags["tag_threshold"] != "input's" || r.Tags["step"] != "1h" {
			t.Errorf("tags %v", r.Tags)
		}
		v := r.Str
		if !math.IsNaN(r.Value) {
			v = strconv.FormatFloat(r.Value, 'g', -1, 64)
		}
		got[r.Time.UTC().Format("15")+" "+r.Field] = v
	}
	want := map[string]string{
		"12 eta_seconds": "75600", "12 threshold_probability": "0.5",
		"13 eta_seconds": "75600", "13 threshold_probability": "0.5", "13 threshold_state": "opened",
		"15 threshold_probability": "0.125", "15 threshold_state": "closed",
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	if len(got) != len(want) {
		t.Errorf("fields %v, want %v", got, want)
	}
}
