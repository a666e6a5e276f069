package sinks

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/forecastd/forecastd/anomaly"
	"github.com/forecastd/forecastd/anomaly/threshold"
)

// TestNATSSubjectTooLong: a record whose subject is longer than
// MaxSubjectLen is refused and counted, never sent, so the server keeps
// the connection, and the next record is published. SubjectLen counts the
// longest subject a record of the series is published on.
func TestNATSSubjectTooLong(t *testing.T) {
	ns := runNATS(t, server.Options{})
	nc := connect(t, ns.ClientURL())
	sub := connect(t, ns.ClientURL())
	got := make(chan string, 10)
	if _, err := sub.Subscribe("forecast.>", func(m *nats.Msg) { got <- m.Subject }); err != nil {
		t.Fatal(err)
	}
	if err := sub.Flush(); err != nil {
		t.Fatal(err)
	}
	s := NewNATS(nc, NATSConfig{})

	long := "metrics." + strings.Repeat("abcdefghi.", 350) + "x"
	r := forecastRec("cpu", long, 0, true)
	r.Measurement, r.Field = strings.Repeat("m", 600), "value"
	if err := s.Write(r); !errors.Is(err, ErrSubjectTooLong) {
		t.Fatalf("Write on a %d-byte subject: %v, want ErrSubjectTooLong", SubjectLen("", long, r.Measurement, r.Field), err)
	}
	o := Record{Kind: KindOutcome, Series: "cpu", Model: "aosvr", Subject: long, Measurement: r.Measurement, Field: r.Field}
	o.Outcome.Time, o.Outcome.Anomaly.Event = t0, anomaly.Opened
	if err := s.Write(o); !errors.Is(err, ErrSubjectTooLong) {
		t.Fatalf("anomaly event on a long subject: %v, want ErrSubjectTooLong", err)
	}
	if err := nc.Flush(); err != nil || !nc.IsConnected() {
		t.Fatalf("the connection after the refusals: %v (connected %v)", err, nc.IsConnected())
	}
	if err := s.Write(forecastRec("cpu", "metrics.cpu", 1, true)); err != nil {
		t.Fatal(err)
	}
	select {
	case subj := <-got:
		if subj != "forecast.metrics.cpu" {
			t.Fatalf("published on %q", subj)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the next forecast was not published")
	}
	if st := s.Stats(); st.Errors != 2 || st.Published != 1 {
		t.Fatalf("stats %+v: want 2 errors, 1 published", st)
	}

	// SubjectLen is the length of the longest subject: of the forecasts,
	// the anomaly events and the threshold events.
	for _, c := range []struct{ subject, measurement, field string }{{"a.b", "", ""}, {"a.b", "cpu", "usage"}, {"a", "", "f"}} {
		r := Record{Subject: c.subject, Measurement: c.measurement, Field: c.field}
		want := 0
		for _, infix := range []string{"", ".anomaly", ".threshold"} {
			want = max(want, len(appendSubject([]byte("forecast"), infix, &r)))
		}
		if n := SubjectLen("", c.subject, c.measurement, c.field); n != want {
			t.Errorf("SubjectLen(%q, %q, %q) = %d, want %d", c.subject, c.measurement, c.field, n, want)
		}
	}
}

// TestNATSSubjectAtBound: for a subject whose SubjectLen is exactly
// MaxSubjectLen, as the input's check lets through, every record the
// series makes is published: its forecast, its threshold event and its
// anomaly event (the threshold event's subject is the longest: counted
// as the anomaly event's, it was two bytes too long and refused).
func TestNATSSubjectAtBound(t *testing.T) {
	ns := runNATS(t, server.Options{})
	sub := connect(t, ns.ClientURL())
	got := make(chan string, 10)
	if _, err := sub.Subscribe("forecast.>", func(m *nats.Msg) { got <- m.Subject }); err != nil {
		t.Fatal(err)
	}
	if err := sub.Flush(); err != nil {
		t.Fatal(err)
	}
	s := NewNATS(connect(t, ns.ClientURL()), NATSConfig{})
	for _, lp := range []bool{false, true} {
		r := thresholdRec(1, threshold.Opened)
		if lp {
			r.Measurement, r.Field = "disk", "used"
		}
		r.Subject = "in." + strings.Repeat("x", MaxSubjectLen-SubjectLen("", "in.", r.Measurement, r.Field))
		if n := SubjectLen("", r.Subject, r.Measurement, r.Field); n != MaxSubjectLen {
			t.Fatalf("SubjectLen = %d, want %d", n, MaxSubjectLen)
		}
		if err := s.Write(r); err != nil {
			t.Fatalf("forecast and threshold event at the bound: %v", err)
		}
		o := Record{Kind: KindOutcome, Series: r.Series, Model: r.Model, Subject: r.Subject, Measurement: r.Measurement, Field: r.Field}
		o.Outcome.Time, o.Outcome.Anomaly.Event = t0, anomaly.Opened
		if err := s.Write(o); err != nil {
			t.Fatalf("anomaly event at the bound: %v", err)
		}
		want := map[string]bool{"forecast": true, "forecast.threshold": true, "forecast.anomaly": true}
		for range len(want) {
			select {
			case subj := <-got:
				prefix, _, _ := strings.Cut(subj, ".in.")
				if !want[prefix] || len(subj) > MaxSubjectLen {
					t.Fatalf("published on %.40q… (%d bytes)", subj, len(subj))
				}
				delete(want, prefix)
			case <-time.After(10 * time.Second):
				t.Fatalf("not published: %v", want)
			}
		}
	}
	if st := s.Stats(); st.Errors != 0 {
		t.Fatalf("stats %+v: want no error", st)
	}
}
