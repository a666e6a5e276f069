package sinks

import (
	"testing"
	"time"
)

// TestAlertQueueVersions: a state changed while its former state was
// being sent stays to be sent; a closed alert is forgotten once its
// closing is delivered, not before; open alerts come again after the
// resend interval; a new event of a closed alert not yet delivered
// replaces it.
func TestAlertQueueVersions(t *testing.T) {
	q := newAlertQueue(10)
	now := t0
	ev := func(opens, closes bool, at time.Time) *alertEvent {
		return &alertEvent{id: "a", opens: opens, closes: closes, at: at, labels: map[string]string{"alertname": "x"}}
	}
	q.update(ev(true, false, t0))
	items := q.collect(now, time.Minute, 10)
	q.update(ev(false, true, t0.Add(time.Hour))) // closed while the opening is in flight
	q.done(items, now)
	if held, pending := q.counts(); held != 1 || pending != 1 {
		t.Fatalf("held %d, pending %d: want the closing still to send", held, pending)
	}
	items = q.collect(now, time.Minute, 10)
	if len(items) != 1 || items[0].st.open() || !items[0].st.endsAt.Equal(t0.Add(time.Hour)) || !items[0].st.startsAt.Equal(t0) {
		t.Fatalf("items %+v: want the closing, from the opening's start", items)
	}
	q.update(ev(true, false, t0.Add(2*time.Hour))) // opened again before the closing was delivered
	q.done(items, now)
	items = q.collect(now, time.Minute, 10)
	if len(items) != 1 || !items[0].st.open() || !items[0].st.startsAt.Equal(t0.Add(2*time.Hour)) {
		t.Fatalf("items %+v: want the new event, open", items)
	}
	q.done(items, now)
	if items := q.collect(now.Add(30*time.Second), time.Minute, 10); len(items) != 0 {
		t.Fatalf("an open alert sent again before its resend interval: %+v", items)
	}
	if items := q.collect(now.Add(time.Minute), time.Minute, 10); len(items) != 1 {
		t.Fatalf("an open alert not sent again after its resend interval: %+v", items)
	}
	q.update(ev(false, true, t0.Add(3*time.Hour)))
	q.done(q.collect(now, time.Minute, 10), now)
	if held, pending := q.counts(); held != 0 || pending != 0 {
		t.Fatalf("held %d, pending %d after the closing was delivered", held, pending)
	}
}
