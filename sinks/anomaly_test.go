package sinks

import (
	"encoding/json"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/forecastd/forecastd/anomaly"
	"github.com/forecastd/forecastd/pipeline"
)

// outcomeRec returns an outcome of series at point i whose actual y fell
// against the forecast 10 ± [1, 2], with the detector's event ev.
func anomalyRec(series, subject string, i int, y float64, ev anomaly.Event) Record {
	f := pipeline.Forecast{Origin: t0.Add(time.Duration(i-1) * 10 * time.Second), Time: t0.Add(time.Duration(i) * 10 * time.Second),
		Value: 10, Lower: 9, Upper: 12}
	o := pipeline.Outcome{Forecast: f, Time: f.Time, Actual: y}
	o.Anomaly = anomaly.Observation{Score: anomaly.Score(y, 10, 9, 12), Side: anomaly.Side(y, 10), Event: ev, Open: ev == anomaly.Opened}
	return Record{Kind: KindOutcome, Series: series, Model: "aosvr", Subject: subject, Outcome: o}
}

type anomalyBody struct {
	Series, Model, Time, Direction, State string
	Y, Yhat, Score                        float64
	Extreme                               *bool
	Seasonal                              *bool
	Lower                                 *float64 `json:"yhat_lower"`
	Upper                                 *float64 `json:"yhat_upper"`
}

// TestNATSAnomalyEvents: outcomes that open or close an event are published
// on <prefix>.anomaly.<subject> with their JSON and a Nats-Msg-Id; the
// others publish nothing; a JetStream stream drops the replayed event.
func TestNATSAnomalyEvents(t *testing.T) {
	for _, queue := range []int{0, 2} { // published by Write, or by the sink's goroutine
		t.Run(fmt.Sprint("queue=", queue), func(t *testing.T) { testNATSAnomalyEvents(t, queue) })
	}
}

func testNATSAnomalyEvents(t *testing.T, queue int) {
	srv := runNATS(t, server.Options{JetStream: true, StoreDir: t.TempDir()})
	nc := connect(t, srv.ClientURL())
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctxTimeout(t, 20*time.Second)
	stream, err := js.CreateStream(ctx, jetstream.StreamConfig{
		Name: "ANOMALIES", Subjects: []string{"fc.anomaly.>"}, Duplicates: time.Minute, Storage: jetstream.MemoryStorage,
	})
	if err != nil {
		t.Fatal(err)
	}
	sub, err := nc.SubscribeSync("fc.>")
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	s := NewNATS(connect(t, srv.ClientURL(), NATSOptions(0)...), NATSConfig{SubjectPrefix: "fc", Queue: queue})
	opened := anomalyRec("cpu", "in.cpu", 1, 16, anomaly.Opened) // (16 − 10)/(12 − 10) = 3 above
	recs := []Record{
		anomalyRec("cpu", "in.cpu", 0, 10.5, anomaly.None),
		opened,
		opened, // replayed
		anomalyRec("cpu", "in.cpu", 2, 7, anomaly.None),
		anomalyRec("cpu", "in.cpu", 3, 9.5, anomaly.Closed),
	}
	for _, r := range recs {
		if err := s.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	var got []*nats.Msg
	for range 3 {
		m, err := sub.NextMsg(5 * time.Second)
		if err != nil {
			t.Fatalf("after %d messages: %v", len(got), err)
		}
		got = append(got, m)
	}
	if m, err := sub.NextMsg(200 * time.Millisecond); err == nil {
		t.Fatalf("unexpected message %s on %s", m.Data, m.Subject)
	}
	for i, want := range []struct {
		id, state, dir string
		score          float64
	}{
		{"cpu@2024-05-01T12:00:10.123456789Z#opened", "opened", "above", 3},
		{"cpu@2024-05-01T12:00:10.123456789Z#opened", "opened", "above", 3},
		{"cpu@2024-05-01T12:00:30.123456789Z#closed", "closed", "below", 0.5},
	} {
		m := got[i]
		if m.Subject != "fc.anomaly.in.cpu" || m.Header.Get(nats.MsgIdHdr) != want.id {
			t.Errorf("message %d on %q with id %q, want fc.anomaly.in.cpu and %q", i, m.Subject, m.Header.Get(nats.MsgIdHdr), want.id)
		}
		var b anomalyBody
		if err := json.Unmarshal(m.Data, &b); err != nil {
			t.Fatalf("message %d: %v: %s", i, err, m.Data)
		}
		if b.Series != "cpu" || b.State != want.state || b.Direction != want.dir || math.Abs(b.Score-want.score) > 1e-12 ||
			b.Extreme == nil || *b.Extreme ||
			b.Yhat != 10 || b.Lower == nil || *b.Lower != 9 || b.Upper == nil || *b.Upper != 12 {
			t.Errorf("message %d: %s, want state %s direction %s score %v", i, m.Data, want.state, want.dir, want.score)
		}
	}
	var info *jetstream.StreamInfo
	waitFor(t, 10*time.Second, "the stream to hold the closing event", func() bool {
		info, err = stream.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return info.State.LastSeq >= 2
	})
	if info.State.Msgs != 2 {
		t.Errorf("stream holds %d events, want 2 (the replayed opening de-duplicated)", info.State.Msgs)
	}
	if st := s.Stats(); st.Anomalies != 3 || st.Published != 0 {
		t.Errorf("stats %+v, want 3 anomaly events and no forecast", st)
	}
}

func TestAppendAnomalyJSONNoInterval(t *testing.T) {
	r := anomalyRec("a\"b", "in", 1, 16, anomaly.Opened)
	r.Outcome.Forecast.Lower, r.Outcome.Forecast.Upper = math.NaN(), math.NaN()
	r.Outcome.Anomaly.Score = math.NaN()
	var b anomalyBody
	if err := json.Unmarshal(appendAnomalyJSON(nil, &r), &b); err != nil || b.Lower != nil || b.Series != "a\"b" {
		t.Fatalf("%s: %v", appendAnomalyJSON(nil, &r), err)
	}
}

func TestAppendAnomalyJSONSeasonal(t *testing.T) {
	r := anomalyRec("cpu", "in", 1, 10.5, anomaly.Opened) // inside the interval
	r.Outcome.Anomaly.Seasonal = true                     // but far from yesterday's values
	var b anomalyBody
	if err := json.Unmarshal(appendAnomalyJSON(nil, &r), &b); err != nil || b.Seasonal == nil || !*b.Seasonal ||
		b.Extreme == nil || *b.Extreme || b.State != "opened" {
		t.Fatalf("%s: %v", appendAnomalyJSON(nil, &r), err)
	}
}

func TestAppendAnomalyJSONExtreme(t *testing.T) {
	r := anomalyRec("cpu", "in", 1, 10.5, anomaly.Opened) // inside the interval
	r.Outcome.Anomaly.Extreme = true                      // but a new high after a quiet period
	var b anomalyBody
	if err := json.Unmarshal(appendAnomalyJSON(nil, &r), &b); err != nil || b.Extreme == nil || !*b.Extreme || b.State != "opened" {
		t.Fatalf("%s: %v", appendAnomalyJSON(nil, &r), err)
	}
}
