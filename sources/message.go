package sources

import (
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/forecastd/forecastd/runner"
)

// Message is one NATS message with its decoded points, delivered on
// Source.Messages. Messages no point of which could be decoded are not
// delivered: they are counted, and under JetStream terminated.
//
// Under JetStream the message must be settled once: Ack when the points'
// forecasts were accepted by the sinks (or Done per point), Nak to have
// it redelivered, Term never to see it again. For core NATS these are
// no-ops that return nil.
type Message struct {
	// Subject is the NATS subject the message was published to.
	Subject string
	// Points are the decoded points, at least one, in payload order.
	// The Message owns the slice; KeyedPoint.Tags are shared.
	Points []KeyedPoint
	// Err lists the parts of the payload that were refused (see
	// Decoder.Decode), or is nil.
	Err error
	// Received is the receive time, stamped on points without a time and
	// the reference of the MaxPast/MaxFuture window: Config.Now at
	// receipt for core NATS; under JetStream the time the stream stored
	// the message, so that a redelivery or a replay decodes exactly as
	// the first delivery did.
	Received time.Time
	// Sequence is the message's stream sequence under JetStream (the
	// same on every redelivery), 0 for core NATS.
	Sequence uint64
	// NumDelivered counts deliveries of this message, 1 the first time;
	// 0 for core NATS.
	NumDelivered uint64

	js      jetstream.Msg
	src     *Source
	pending atomic.Int64
	failed  atomic.Bool
	// settled, if set, is told by the last Done whether a point failed
	// (a Replay's messages, which nothing redelivers).
	settled func(failed bool)
}

// Origin returns where m's i-th point came from: m's subject and, for line
// protocol, the point's measurement, field and tags. It implements
// runner.Originer.
func (m *Message) Origin(i int) runner.Origin {
	p := &m.Points[i]
	return runner.Origin{Subject: m.Subject, Measurement: p.Measurement, Field: p.Field, Tags: p.Tags}
}

var _ runner.Originer = (*Message)(nil)

// JetStream reports whether m came from JetStream and must be settled.
func (m *Message) JetStream() bool { return m.js != nil }

// Ack acknowledges m: it will not be redelivered.
func (m *Message) Ack() error {
	if m.js == nil {
		return nil
	}
	err := m.js.Ack()
	m.src.count(&m.src.stats.acked, err)
	return err
}

// Nak asks for redelivery after delay (at once when delay ≤ 0); it
// counts against MaxDeliver.
func (m *Message) Nak(delay time.Duration) error {
	if m.js == nil {
		return nil
	}
	var err error
	if delay > 0 {
		err = m.js.NakWithDelay(delay)
	} else {
		err = m.js.Nak()
	}
	m.src.count(&m.src.stats.naked, err)
	return err
}

// Term tells the server never to redeliver m, e.g. for a payload that
// can never be used; reason is recorded in the server's advisory.
func (m *Message) Term(reason string) error {
	if m.js == nil {
		return nil
	}
	err := m.js.TermWithReason(reason)
	m.src.count(&m.src.stats.termed, err)
	return err
}

// InProgress resets m's ack timer on the server, for work that takes
// longer than AckWait.
func (m *Message) InProgress() error {
	if m.js == nil {
		return nil
	}
	return m.js.InProgress()
}

// Done records that one of m's points was handled: err == nil when its
// forecast was accepted by the sinks (or the point was deliberately
// skipped, e.g. as a duplicate), non-nil when it failed. It must be
// called exactly once per point, from any goroutine; the last call acks
// m if every call had a nil error and otherwise naks it with NakDelay.
// An ack or nak that fails is counted (Stats.AckErrors), and the server
// redelivers m after AckWait. Do not mix Done with Ack, Nak or Term.
func (m *Message) Done(err error) {
	if err != nil {
		m.failed.Store(true)
	}
	switch n := m.pending.Add(-1); {
	case n > 0:
		return
	case n < 0:
		panic("sources: Message.Done called more times than there are points")
	}
	if m.js == nil {
		if m.settled != nil {
			m.settled(m.failed.Load())
		}
		return
	}
	// A failed ack or nak is counted by Ack and Nak: nothing else to do.
	if m.failed.Load() {
		_ = m.Nak(m.src.nakDelay)
		return
	}
	_ = m.Ack()
}

// Stats are a Source's counters, totals since New.
type Stats struct {
	// Received counts NATS messages received (JetStream redeliveries
	// included).
	Received uint64
	// Delivered counts messages sent on the Messages channel (or given
	// to Config.Deliver), and Points their points.
	Delivered, Points uint64
	// ParseErrors counts refused parts of payloads (whole payloads,
	// array elements, lines, fields) by reason; every Reason is present.
	ParseErrors map[Reason]uint64
	// Refused counts messages of which no point could be decoded; they
	// are not delivered (under JetStream they are terminated).
	Refused uint64
	// Filtered counts messages every field of which the decoder's field
	// filter left out (fieldpass / fielddrop): not delivered, not refused
	// (under JetStream they are acknowledged).
	Filtered uint64
	// Dropped counts messages lost before delivery: core messages nats.go
	// dropped for a full client queue (slow consumer), and messages
	// abandoned when a shutdown deadline passed (JetStream redelivers
	// those).
	Dropped uint64
	// Acked, Naked and Termed count JetStream settlements made through
	// Message (Term of refused messages included); AckErrors counts the
	// settlements that failed (the server will then redeliver).
	Acked, Naked, Termed, AckErrors uint64
	// Redelivered counts JetStream messages received with
	// NumDelivered > 1.
	Redelivered uint64
	// Skipped counts JetStream messages acknowledged without delivery
	// because the caller's checkpoints cover them
	// (JetStreamConfig.Checkpointed).
	Skipped uint64
	// Resets counts the consumers deleted and created again because they
	// had acknowledged messages the checkpoints do not cover.
	Resets uint64
	// Disconnects and Reconnects count connection losses and recoveries.
	Disconnects, Reconnects uint64
	// ConsumerErrors counts failures to create the JetStream consumer
	// and errors reported while pulling (e.g. missed heartbeats).
	ConsumerErrors uint64
	// Connected reports whether the connection is up now.
	Connected bool
}

type counters struct {
	received, delivered, points, refused, filtered, dropped atomic.Uint64
	acked, naked, termed, ackErrors, redelivered            atomic.Uint64
	skipped, resets                                         atomic.Uint64
	disconnects, reconnects, consumerErrors                 atomic.Uint64
	parse                                                   [reasonEnd]atomic.Uint64
}

// snapshot reads every counter into a Stats (Connected left false).
func (c *counters) snapshot() Stats {
	st := Stats{
		Received:       c.received.Load(),
		Delivered:      c.delivered.Load(),
		Points:         c.points.Load(),
		Refused:        c.refused.Load(),
		Filtered:       c.filtered.Load(),
		Dropped:        c.dropped.Load(),
		Acked:          c.acked.Load(),
		Naked:          c.naked.Load(),
		Termed:         c.termed.Load(),
		AckErrors:      c.ackErrors.Load(),
		Redelivered:    c.redelivered.Load(),
		Skipped:        c.skipped.Load(),
		Resets:         c.resets.Load(),
		Disconnects:    c.disconnects.Load(),
		Reconnects:     c.reconnects.Load(),
		ConsumerErrors: c.consumerErrors.Load(),
		ParseErrors:    make(map[Reason]uint64, reasonEnd-1),
	}
	for r := Reason(1); r < reasonEnd; r++ {
		st.ParseErrors[r] = c.parse[r].Load()
	}
	return st
}

// NewMessage returns a message of pts that no server delivered (a
// recording's, a test's): its Done settles nothing but counts the points
// handled, as a NATS message's does.
func NewMessage(subject string, pts []KeyedPoint) *Message {
	m := &Message{Subject: subject, Points: pts}
	m.pending.Store(int64(len(pts)))
	return m
}
