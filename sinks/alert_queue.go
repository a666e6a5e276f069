package sinks

import (
	"sync"
	"time"
)

// alertQueue holds the latest state of each alert that is open or not
// yet delivered, keyed by its identity, at most max of them: memory stays
// bounded however long the receiver is down, and an alert's states in
// between are not kept (only the last one is sent). It is safe for
// concurrent use.
type alertQueue struct {
	mu  sync.Mutex
	m   map[string]*alertEntry
	max int
}

type alertEntry struct {
	st alertState
	// version counts the entry's changes; sent is the version last
	// delivered.
	version, sent uint64
	// lastSent is when the state was last delivered (wall clock).
	lastSent time.Time
}

// alertItem is a state taken to be sent, with the version it had.
type alertItem struct {
	st      alertState
	version uint64
}

func newAlertQueue(max int) *alertQueue {
	return &alertQueue{m: map[string]*alertEntry{}, max: max}
}

// update applies ev to its alert's state. It reports false, changing
// nothing, when ev is of an alert the queue does not hold and it holds
// max alerts already.
func (q *alertQueue) update(ev *alertEvent) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	e := q.m[ev.id]
	switch {
	case e == nil:
		if len(q.m) >= q.max {
			return false
		}
		// A closing or an update without its opening (dropped, or before
		// a restart) starts at its own time.
		e = &alertEntry{st: alertState{id: ev.id, labels: ev.labels, startsAt: ev.at}}
		q.m[ev.id] = e
	case ev.opens && !e.st.open():
		// A new event of the same alert before the last one's closing
		// was delivered: the latest state replaces it.
		e.st = alertState{id: ev.id, labels: ev.labels, startsAt: ev.at}
	}
	e.st.annotations = ev.annotations
	if ev.closes {
		e.st.endsAt = ev.at
		if e.st.endsAt.Before(e.st.startsAt) {
			e.st.endsAt = e.st.startsAt
		}
	}
	e.version++
	return true
}

// collect returns up to n states to send: those changed since last
// delivered, then the open ones last delivered resend or longer before
// now (none if resend is 0).
func (q *alertQueue) collect(now time.Time, resend time.Duration, n int) []alertItem {
	q.mu.Lock()
	defer q.mu.Unlock()
	var items []alertItem
	for _, e := range q.m {
		if len(items) == n {
			return items
		}
		if e.version != e.sent {
			items = append(items, alertItem{e.st, e.version})
		}
	}
	if resend <= 0 {
		return items
	}
	for _, e := range q.m {
		if len(items) == n {
			break
		}
		if e.version == e.sent && e.st.open() && now.Sub(e.lastSent) >= resend {
			items = append(items, alertItem{e.st, e.version})
		}
	}
	return items
}

// done marks items delivered at now: a state not changed since is
// delivered, and a closed alert delivered is forgotten.
func (q *alertQueue) done(items []alertItem, now time.Time) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, it := range items {
		e := q.m[it.st.id]
		if e == nil || e.version != it.version {
			continue
		}
		e.sent, e.lastSent = it.version, now
		if !e.st.open() {
			delete(q.m, it.st.id)
		}
	}
}

// counts returns the alerts held, and those of them with a state not yet
// delivered.
func (q *alertQueue) counts() (held, pending int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, e := range q.m {
		if e.version != e.sent {
			pending++
		}
	}
	return len(q.m), pending
}
