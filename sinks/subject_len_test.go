package sinks

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/forecastd/forecastd/anomaly"
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

	// SubjectLen is the anomaly subject's length, the longest.
	for _, c := range []struct{ subject, measurement, field string }{{"a.b", "", ""}, {"a.b", "cpu", "usage"}, {"a", "", "f"}} {
		r := Record{Subject: c.subject, Measurement: c.measurement, Field: c.field}
		want := len(appendSubject([]byte("forecast"), ".anomaly", &r))
		if n := SubjectLen("", c.subject, c.measurement, c.field); n != want {
			t.Errorf("SubjectLen(%q, %q, %q) = %d, want %d", c.subject, c.measurement, c.field, n, want)
		}
	}
}
