package sources

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/forecastd/forecastd/pipeline"
)

// Defaults of Config and JetStreamConfig.
const (
	DefaultBuffer        = 1024
	DefaultName          = "forecastd"
	DefaultReconnectWait = time.Second
	DefaultAckWait       = 30 * time.Second
	DefaultMaxDeliver    = 5
	DefaultMaxAckPending = 20000
	DefaultPullBatch     = 256
	DefaultNakDelay      = 5 * time.Second
)

// Config configures a Source. The zero value of every field but Subjects
// (core NATS) and JetStream's Stream and Durable selects its documented
// default.
type Config struct {
	// Servers are the NATS server URLs (`servers`); empty is
	// nats.DefaultURL (nats://127.0.0.1:4222).
	Servers []string
	// Subjects to read (`subjects`), wildcards allowed. Core NATS: one
	// subscription each, at least one required. JetStream: the consumer's
	// filter subjects; empty reads the whole stream.
	Subjects []string
	// QueueGroup (`queue_group`) shares core subscriptions among the
	// members of the group; empty subscribes each instance to every
	// message. Ignored under JetStream, where a durable is shared instead.
	QueueGroup string
	// Decoder configures payload decoding (`data_format`,
	// `json_time_format`, …). Each reading goroutine has its own Decoder.
	Decoder DecoderConfig
	// JetStream, when set, reads from a durable JetStream consumer
	// instead of core subscriptions.
	JetStream *JetStreamConfig
	// Buffer is the capacity of the Messages channel; zero is
	// DefaultBuffer. When it is full, reading from NATS pauses: core
	// messages then queue in nats.go up to PendingMsgs/PendingBytes and
	// beyond are dropped and counted (Stats.Dropped); JetStream simply
	// stops pulling. Unused with Deliver.
	Buffer int
	// Deliver, if set, is given each message instead of the Messages
	// channel, on the goroutine that read it: a core subscription's
	// (one per subject) or the JetStream consumer's. While it runs, that
	// reading pauses, as while the channel is full. Its ctx ends when
	// StopIntake's deadline passes: Deliver must then return promptly.
	// StopIntake returns once every call has returned; Messages is
	// closed then, having carried nothing.
	Deliver func(ctx context.Context, m *Message)
	// PendingMsgs and PendingBytes bound each core subscription's queue
	// in the client (nats.Subscription.SetPendingLimits), a list that
	// grows with what it holds; zero keeps nats.go's defaults,
	// nats.DefaultSubPendingMsgsLimit (524 288 messages) and
	// nats.DefaultSubPendingBytesLimit (64 MiB of payload). A burst is
	// lost only beyond them, whatever the pipeline does meanwhile.
	PendingMsgs, PendingBytes int
	// Name is the connection name the server shows; zero is DefaultName.
	Name string
	// ReconnectWait is the pause between reconnect attempts (plus up to
	// half as much again of jitter); zero is DefaultReconnectWait. Reconnection is
	// attempted for ever, including for the first connection.
	ReconnectWait time.Duration
	// Options are extra nats.go options (credentials, TLS, …), applied
	// after the Source's own; do not replace its connection handlers.
	Options []nats.Option
	// Logger receives connection events and, at most once a second,
	// parse errors (keys component, subject, reason, err); nil discards.
	Logger *slog.Logger
	// Now is the clock stamped on messages as their receive time; nil is
	// time.Now.
	Now func() time.Time
}

// JetStreamConfig selects a durable pull consumer on a stream, with
// explicit acks. The consumer is created, or updated to this config, at
// start and after it is lost.
type JetStreamConfig struct {
	// Stream is the stream's name (`stream`); required.
	Stream string
	// Durable is the consumer's durable name (`durable`); required.
	// Instances sharing it share the work.
	Durable string
	// AckWait is how long the server waits for an ack before the first
	// redelivery; zero is DefaultAckWait (30 s). Every message must be
	// acked (see Message.Done) within it, from its arrival in the
	// Messages channel through the pipeline to the sinks' acceptance,
	// or be redelivered; Message.InProgress extends it.
	AckWait time.Duration
	// MaxDeliver is the most deliveries of one message; zero is
	// DefaultMaxDeliver (5), -1 unlimited. After the last, the server
	// gives up on the message.
	MaxDeliver int
	// BackOff are the waits before successive redeliveries of a message
	// not acked in time; the server uses BackOff[0] as the ack wait. Nil
	// selects AckWait doubling at each attempt (AckWait, 2·AckWait, …)
	// with min(MaxDeliver−1, 4) entries (4 when unlimited). Its length
	// must not exceed MaxDeliver.
	BackOff []time.Duration
	// MaxAckPending bounds the messages delivered and not yet acked;
	// zero is DefaultMaxAckPending. It must exceed what the caller holds
	// unacked (queues plus sink batches), or delivery pauses until acks.
	MaxAckPending int
	// PullBatch is how many messages the client buffers ahead of the
	// Messages channel; zero is DefaultPullBatch.
	PullBatch int
	// NakDelay is the redelivery delay Message.Done asks for when a point
	// failed; zero is DefaultNakDelay.
	NakDelay time.Duration
	// Checkpointed, when not nil, resumes the consumer where the caller's
	// saved state ends: *Checkpointed is the stream sequence up to which
	// every message had been applied when that state was saved (0:
	// none). Before its first pull the Source reads the consumer's ack
	// floor; if the consumer acknowledged more (the caller stopped
	// between acknowledging messages and saving their effect), the
	// Source deletes the consumer and creates it again to deliver from
	// *Checkpointed+1 (nats-server's DeliverByStartSequence), so that
	// nothing acknowledged but unsaved is lost. A message at or below
	// *Checkpointed delivered anyway is acknowledged by the Source and
	// not delivered (Stats.Skipped). Until the floor is read (NATS
	// reachable), nothing is consumed.
	Checkpointed *uint64
}

// backOff returns the effective back-off of c (defaults filled in).
func (c *JetStreamConfig) backOff() []time.Duration {
	if c.BackOff != nil {
		return c.BackOff
	}
	n := 4
	if c.MaxDeliver > 0 {
		n = min(c.MaxDeliver-1, 4)
	}
	var bo []time.Duration
	for i, w := 0, c.AckWait; i < n; i, w = i+1, 2*w {
		bo = append(bo, w)
	}
	return bo
}

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
// pipeline.Originer.
func (m *Message) Origin(i int) pipeline.Origin {
	p := &m.Points[i]
	return pipeline.Origin{Subject: m.Subject, Measurement: p.Measurement, Field: p.Field, Tags: p.Tags}
}

var _ pipeline.Originer = (*Message)(nil)

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

// Source reads points from NATS: core subscriptions or a JetStream
// durable consumer. It reconnects for ever and never exits the process.
// Its goroutines run from New until StopIntake or Close.
type Source struct {
	cfg      Config
	log      *slog.Logger
	now      func() time.Time
	nakDelay time.Duration
	nc       *nats.Conn
	out      chan *Message
	stats    counters
	errLog   rateLimiter

	runCtx      context.Context // cancelled to abandon reading
	cancelRun   context.CancelFunc
	setupCtx    context.Context // cancelled when intake stops
	cancelSetup context.CancelFunc
	abort       chan struct{} // closed to abandon blocked deliveries
	// deliverCtx is Config.Deliver's, cancelled with abort.
	deliverCtx    context.Context
	cancelDeliver context.CancelFunc
	wg            sync.WaitGroup
	closed        chan struct{} // closed by the connection's ClosedHandler

	// sendMu guards sends on out against its close: a reader abandoned by
	// stopIntake may still return with a message afterwards. Senders hold
	// it read-locked; stopIntake closes out under the write lock, once
	// abort has released any sender blocked on a full out.
	sendMu    sync.RWMutex
	outClosed bool

	mu      sync.Mutex
	subs    []*subscription
	iter    jetstream.MessagesContext // current JetStream iterator
	stopped bool                      // intake stopped
	stopErr error
	stopMu  sync.Mutex // serializes StopIntake and Close
	isDone  bool
	doneErr error
	// final is the consumer's ack floor read by Close once its last acks
	// had reached the server, for the checkpoint written after Close.
	final struct {
		floor uint64
		found bool
		err   error
	}
}

// subscription is one core subscription: nats.go's goroutine for it
// decodes each message in its callback (read), off the client's reading
// of the socket, so that a burst waits in the client's pending list, not
// in the kernel's socket buffer where the server would count it against
// forecastd.
type subscription struct {
	sub     *nats.Subscription
	dec     *Decoder // used by the callback alone
	dropped atomic.Int64
	busy    atomic.Bool // in the callback
	// maxMsgs and maxBytes are the pending limits set (≤ 0: none).
	maxMsgs, maxBytes int
}

// New validates cfg, connects and starts reading. The connection is
// retried in the background if no server is reachable yet, so New fails
// only on an invalid config. Read Messages until it is closed, and call
// Close.
func New(cfg Config) (*Source, error) {
	var errs []error
	js := cfg.JetStream
	if js == nil && len(cfg.Subjects) == 0 {
		errs = append(errs, errors.New("sources: subjects: at least one subject is required"))
	}
	for i, s := range cfg.Subjects {
		if s == "" {
			errs = append(errs, fmt.Errorf("sources: subjects[%d] is empty", i))
		}
	}
	if cfg.Buffer <= 0 {
		cfg.Buffer = DefaultBuffer
	}
	if cfg.Name == "" {
		cfg.Name = DefaultName
	}
	if cfg.ReconnectWait <= 0 {
		cfg.ReconnectWait = DefaultReconnectWait
	}
	nakDelay := DefaultNakDelay
	if js != nil {
		c := *js
		if c.Stream == "" {
			errs = append(errs, errors.New("sources: jetstream: stream is required"))
		}
		if c.Durable == "" {
			errs = append(errs, errors.New("sources: jetstream: durable is required"))
		}
		if c.AckWait <= 0 {
			c.AckWait = DefaultAckWait
		}
		if c.MaxDeliver == 0 {
			c.MaxDeliver = DefaultMaxDeliver
		}
		if c.MaxDeliver < -1 {
			errs = append(errs, fmt.Errorf("sources: jetstream: max_deliver %d is invalid", c.MaxDeliver))
		}
		c.BackOff = c.backOff()
		if c.MaxDeliver > 0 && len(c.BackOff) > c.MaxDeliver {
			errs = append(errs, fmt.Errorf("sources: jetstream: %d back-off intervals exceed max_deliver %d", len(c.BackOff), c.MaxDeliver))
		}
		for i, d := range c.BackOff {
			if d <= 0 {
				errs = append(errs, fmt.Errorf("sources: jetstream: back-off[%d] %v is not positive", i, d))
			}
		}
		if c.MaxAckPending <= 0 {
			c.MaxAckPending = DefaultMaxAckPending
		}
		if c.PullBatch <= 0 {
			c.PullBatch = DefaultPullBatch
		}
		if c.NakDelay <= 0 {
			c.NakDelay = DefaultNakDelay
		}
		nakDelay = c.NakDelay
		cfg.JetStream = &c
	}
	if _, err := NewDecoder(cfg.Decoder); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}

	s := &Source{
		cfg:      cfg,
		log:      cfg.Logger,
		now:      cfg.Now,
		nakDelay: nakDelay,
		out:      make(chan *Message, cfg.Buffer),
		abort:    make(chan struct{}),
		closed:   make(chan struct{}),
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	s.log = s.log.With("component", "sources")
	if s.now == nil {
		s.now = time.Now
	}
	s.errLog.every = time.Second
	s.runCtx, s.cancelRun = context.WithCancel(context.Background())
	s.setupCtx, s.cancelSetup = context.WithCancel(s.runCtx)
	s.deliverCtx, s.cancelDeliver = context.WithCancel(context.Background())

	opts := []nats.Option{
		nats.Name(cfg.Name),
		nats.MaxReconnects(-1),
		nats.RetryOnFailedConnect(true),
		nats.ReconnectWait(cfg.ReconnectWait),
		nats.ReconnectJitter(cfg.ReconnectWait/2, cfg.ReconnectWait/2),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			if err == nil { // a clean close: nothing was lost
				return
			}
			s.stats.disconnects.Add(1)
			s.log.Warn("nats disconnected", "err", err)
		}),
		nats.ReconnectHandler(func(nc *nats.Conn) {
			s.stats.reconnects.Add(1)
			s.log.Info("nats reconnected", "url", nc.ConnectedUrlRedacted())
		}),
		nats.ConnectHandler(func(nc *nats.Conn) {
			s.log.Info("nats connected", "url", nc.ConnectedUrlRedacted())
		}),
		nats.ClosedHandler(func(*nats.Conn) { close(s.closed) }),
		nats.ErrorHandler(func(_ *nats.Conn, sub *nats.Subscription, err error) {
			if s.errLog.allow() {
				subj := ""
				if sub != nil {
					subj = sub.Subject
				}
				s.log.Warn("nats async error", "subject", subj, "err", err)
			}
		}),
	}
	opts = append(opts, cfg.Options...)
	servers := nats.DefaultURL
	if len(cfg.Servers) > 0 {
		servers = joinURLs(cfg.Servers)
	}
	nc, err := nats.Connect(servers, opts...)
	if err != nil {
		s.cancelSetup()
		s.cancelRun()
		s.cancelDeliver()
		return nil, fmt.Errorf("sources: connect to %s: %w", servers, err)
	}
	s.nc = nc

	if js == nil {
		for _, subj := range cfg.Subjects {
			dec, _ := NewDecoder(cfg.Decoder) // validated above
			ss := &subscription{dec: dec}
			sub, err := nc.QueueSubscribe(subj, cfg.QueueGroup, func(m *nats.Msg) { s.readCore(ss, m) })
			if err == nil && (cfg.PendingMsgs != 0 || cfg.PendingBytes != 0) {
				pm, pb, _ := sub.PendingLimits()
				if cfg.PendingMsgs != 0 {
					pm = cfg.PendingMsgs
				}
				if cfg.PendingBytes != 0 {
					pb = cfg.PendingBytes
				}
				err = sub.SetPendingLimits(pm, pb)
			}
			if err != nil {
				s.cancelSetup()
				s.cancelRun()
				s.cancelDeliver()
				nc.Close()
				<-s.closed
				return nil, fmt.Errorf("sources: subscribe to %q: %w", subj, err)
			}
			ss.sub = sub
			ss.maxMsgs, ss.maxBytes, _ = sub.PendingLimits()
			s.subs = append(s.subs, ss)
			// The subscription ends (drained, unsubscribed) or the
			// connection closes.
			ended := sub.StatusChanged(nats.SubscriptionClosed)
			s.wg.Go(func() {
				select {
				case <-ended:
				case <-s.closed:
				}
			})
		}
		// A round trip, so that the server has the subscriptions when
		// New returns: a point published after that is read. Not
		// connected (the first attempt failed), there is no server to
		// ask, and nats.go subscribes on connecting: a flush would only
		// hold the start for its 10 s timeout.
		if nc.IsConnected() {
			_ = nc.Flush()
		}
	} else {
		s.wg.Add(1)
		go s.readJetStream()
	}
	return s, nil
}

func joinURLs(urls []string) string {
	out := urls[0]
	for _, u := range urls[1:] {
		out += "," + u
	}
	return out
}

// Messages returns the channel of decoded messages. It is closed once
// intake has stopped (StopIntake or Close) and every message received
// before has been delivered or, past a shutdown deadline, dropped.
func (s *Source) Messages() <-chan *Message { return s.out }

// pullExpiry is how long one JetStream pull request waits for messages.
const pullExpiry = 5 * time.Second

// Connected reports whether the NATS connection is up.
func (s *Source) Connected() bool { return s.nc.IsConnected() }

// Stats returns the counters.
func (s *Source) Stats() Stats {
	st := s.stats.snapshot()
	st.Connected = s.nc.IsConnected()
	s.mu.Lock()
	for _, ss := range s.subs {
		if n, err := ss.sub.Dropped(); err == nil {
			ss.dropped.Store(int64(n))
		}
		st.Dropped += uint64(ss.dropped.Load())
	}
	s.mu.Unlock()
	return st
}

// Backlog returns the largest share of its pending limits (messages or
// bytes) that a core subscription's client queue holds now: 0 when the
// reading keeps up, 1 when the client drops what arrives; 0 under
// JetStream. A few locks, no allocation.
func (s *Source) Backlog() float64 {
	var b float64
	for _, ss := range s.subs { // set in New, never changed
		m, n, err := ss.sub.Pending()
		if err != nil {
			continue
		}
		if ss.maxMsgs > 0 {
			b = max(b, float64(m)/float64(ss.maxMsgs))
		}
		if ss.maxBytes > 0 {
			b = max(b, float64(n)/float64(ss.maxBytes))
		}
	}
	return b
}

// count counts a settlement in c, or an ack error.
func (s *Source) count(c *atomic.Uint64, err error) {
	if err != nil {
		s.stats.ackErrors.Add(1)
		return
	}
	c.Add(1)
}

// readCore is the callback of ss: it decodes m and delivers it, waiting
// while the Messages channel is full; meanwhile nats.go holds what
// arrives, up to the pending limits.
func (s *Source) readCore(ss *subscription, m *nats.Msg) {
	ss.busy.Store(true)
	defer ss.busy.Store(false)
	s.handle(ss.dec, m.Subject, m.Data, nil)
	if n, err := m.Sub.Dropped(); err == nil {
		ss.dropped.Store(int64(n))
	}
}

// readJetStream creates the consumer and reads it until intake stops,
// recreating it if it is lost.
func (s *Source) readJetStream() {
	defer s.wg.Done()
	c := s.cfg.JetStream
	dec, _ := NewDecoder(s.cfg.Decoder)
	js, err := jetstream.New(s.nc)
	if err != nil { // only for invalid options
		s.log.Error("jetstream", "err", err)
		return
	}
	ccfg := jetstream.ConsumerConfig{
		Durable:        c.Durable,
		AckPolicy:      jetstream.AckExplicitPolicy,
		AckWait:        c.AckWait,
		MaxDeliver:     c.MaxDeliver,
		BackOff:        c.BackOff,
		MaxAckPending:  c.MaxAckPending,
		FilterSubjects: s.cfg.Subjects,
		DeliverPolicy:  jetstream.DeliverAllPolicy,
	}
	if len(c.BackOff) > 0 {
		ccfg.AckWait = c.BackOff[0] // what the server does anyway
	}
	if len(s.cfg.Subjects) == 1 {
		ccfg.FilterSubjects, ccfg.FilterSubject = nil, s.cfg.Subjects[0]
	}
	if !s.resume(js, &ccfg) {
		return
	}
	wait := newBackoff(100*time.Millisecond, 5*time.Second)
	for s.setupCtx.Err() == nil {
		ctx, cancel := context.WithTimeout(s.setupCtx, 10*time.Second)
		cons, err := js.CreateOrUpdateConsumer(ctx, c.Stream, ccfg)
		cancel()
		var it jetstream.MessagesContext
		if err == nil {
			// A short pull expiry bounds how long draining at shutdown
			// waits for an outstanding pull (nats.go's default is 30 s).
			it, err = cons.Messages(jetstream.PullMaxMessages(c.PullBatch),
				jetstream.PullExpiry(pullExpiry), jetstream.PullHeartbeat(pullExpiry*2/5))
		}
		if err != nil {
			if s.setupCtx.Err() != nil {
				return
			}
			s.stats.consumerErrors.Add(1)
			s.log.Warn("jetstream consumer", "stream", c.Stream, "durable", c.Durable, "err", err)
			if !wait.sleep(s.setupCtx) {
				return
			}
			continue
		}
		s.mu.Lock()
		if s.stopped {
			s.mu.Unlock()
			it.Stop()
			return
		}
		s.iter = it
		s.mu.Unlock()
		wait.reset()
		if s.consume(it, dec) {
			return
		}
		if !wait.sleep(s.setupCtx) {
			return
		}
	}
}

// resume settles where the consumer starts, before anything is pulled:
// an existing consumer keeps its deliver policy (CreateOrUpdateConsumer
// cannot change it); under JetStreamConfig.Checkpointed, one whose ack
// floor lies beyond the checkpoints is deleted and ccfg set to deliver
// from the first message they do not cover. It waits for NATS as long as
// it takes, and reports false if intake stopped first.
func (s *Source) resume(js jetstream.JetStream, ccfg *jetstream.ConsumerConfig) bool {
	c := s.cfg.JetStream
	log := s.log.With("stream", c.Stream, "durable", c.Durable)
	wait := newBackoff(20*time.Millisecond, time.Second)
	for waited := false; ; {
		if !s.nc.IsConnected() {
			if !waited && c.Checkpointed != nil {
				log.Info("waiting for nats to check the consumer's position against the checkpoints")
			}
			waited = true
			if !wait.sleep(s.setupCtx) {
				return false
			}
			continue
		}
		ctx, cancel := context.WithTimeout(s.setupCtx, 10*time.Second)
		err := s.settleStart(ctx, js, ccfg, log)
		cancel()
		if err == nil {
			return true
		}
		if s.setupCtx.Err() != nil {
			return false
		}
		s.stats.consumerErrors.Add(1)
		log.Warn("jetstream consumer position", "err", err)
		if !wait.sleep(s.setupCtx) {
			return false
		}
	}
}

func (s *Source) settleStart(ctx context.Context, js jetstream.JetStream, ccfg *jetstream.ConsumerConfig, log *slog.Logger) error {
	c := s.cfg.JetStream
	cons, err := js.Consumer(ctx, c.Stream, c.Durable)
	if errors.Is(err, jetstream.ErrConsumerNotFound) {
		return nil // created by the caller as ccfg says
	}
	if err != nil {
		return fmt.Errorf("consumer %q of stream %q: %w", c.Durable, c.Stream, err)
	}
	info := cons.CachedInfo()
	if c.Checkpointed == nil || info.AckFloor.Stream <= *c.Checkpointed {
		ccfg.DeliverPolicy, ccfg.OptStartSeq = info.Config.DeliverPolicy, info.Config.OptStartSeq
		return nil
	}
	if err := js.DeleteConsumer(ctx, c.Stream, c.Durable); err != nil && !errors.Is(err, jetstream.ErrConsumerNotFound) {
		return fmt.Errorf("reset consumer %q of stream %q: %w", c.Durable, c.Stream, err)
	}
	s.stats.resets.Add(1)
	if at := *c.Checkpointed; at > 0 {
		ccfg.DeliverPolicy, ccfg.OptStartSeq = jetstream.DeliverByStartSequencePolicy, at+1
	}
	log.Warn("the consumer acknowledged messages the checkpoints do not cover (forecastd was killed): replaying the stream from the first message they do not cover; the points already applied are skipped",
		"acked", info.AckFloor.Stream, "checkpointed", *c.Checkpointed)
	return nil
}

// AckFloor returns the JetStream consumer's ack floor: every message of
// the stream up to it has been acknowledged (or terminated). found is
// false if the consumer does not exist (yet). It fails at once without
// JetStream or while NATS is disconnected, rather than wait for the
// connection. A round trip to the server.
func (s *Source) AckFloor(ctx context.Context) (floor uint64, found bool, err error) {
	c := s.cfg.JetStream
	if c == nil {
		return 0, false, errors.New("sources: ack floor: not reading JetStream")
	}
	s.mu.Lock()
	done := s.isDone
	s.mu.Unlock()
	if done {
		return s.final.floor, s.final.found, s.final.err
	}
	return s.ackFloor(ctx)
}

// settledAckFloor is Close's reading of the ack floor: the acks already
// sent are flushed to the server, which applies them to the consumer
// asynchronously, so it is read again while acks await there, until none
// does, the floor has not moved for settleStill (a message refused with a
// nak holds it back), or settleAcks (at most a quarter of what ctx
// leaves) has passed. A floor read early is still safe: the restart reads
// again what it does not cover and skips the points its checkpoints had
// applied.
func (s *Source) settledAckFloor(ctx context.Context) (floor uint64, found bool, err error) {
	if !s.nc.IsConnected() { // no server to ask: a flush would wait for one
		return 0, false, fmt.Errorf("sources: ack floor of consumer %q: %w", s.cfg.JetStream.Durable, nats.ErrConnectionReconnecting)
	}
	wait := settleAcks
	if dl, ok := ctx.Deadline(); ok {
		wait = min(wait, time.Until(dl)/4)
	}
	// The flush, the reads and the waits between them all within wait:
	// the rest of ctx is for draining the connection.
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	if err := s.nc.FlushWithContext(ctx); err != nil {
		return 0, false, fmt.Errorf("sources: ack floor: flushing the acks: %w", err)
	}
	moved := time.Now()
	for read := false; ; read = true {
		f, ok, pending, rerr := s.consumerAcks(ctx)
		if rerr != nil {
			if read { // the floor read before stands
				return floor, found, nil
			}
			return 0, false, rerr
		}
		now := time.Now()
		if f != floor {
			moved = now
		}
		floor, found = f, ok
		if !found || pending == 0 || now.Sub(moved) >= settleStill {
			return floor, found, nil
		}
		select {
		case <-ctx.Done():
			return floor, found, nil
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// settleAcks bounds how long Close waits for the server to apply the
// acks it has received; settleStill is how long a floor that does not
// move ends the wait.
const (
	settleAcks  = time.Second
	settleStill = 100 * time.Millisecond
)

// ackFloor is AckFloor, read from the server.
func (s *Source) ackFloor(ctx context.Context) (floor uint64, found bool, err error) {
	floor, found, _, err = s.consumerAcks(ctx)
	return floor, found, err
}

// consumerAcks returns the consumer's ack floor and how many messages
// delivered to it await their ack, in one round trip.
func (s *Source) consumerAcks(ctx context.Context) (floor uint64, found bool, pending int, err error) {
	c := s.cfg.JetStream
	if !s.nc.IsConnected() {
		return 0, false, 0, fmt.Errorf("sources: ack floor of consumer %q: %w", c.Durable, nats.ErrConnectionReconnecting)
	}
	js, err := jetstream.New(s.nc)
	if err != nil {
		return 0, false, 0, fmt.Errorf("sources: ack floor: %w", err)
	}
	cons, err := js.Consumer(ctx, c.Stream, c.Durable)
	if errors.Is(err, jetstream.ErrConsumerNotFound) {
		return 0, false, 0, nil
	}
	if err != nil {
		return 0, false, 0, fmt.Errorf("sources: ack floor of consumer %q of stream %q: %w", c.Durable, c.Stream, err)
	}
	info := cons.CachedInfo()
	return info.AckFloor.Stream, true, info.NumAckPending, nil
}

// consume reads it until it closes; it reports whether intake stopped
// (false: the consumer was lost and must be recreated).
func (s *Source) consume(it jetstream.MessagesContext, dec *Decoder) (stopped bool) {
	for {
		msg, err := it.Next()
		if err != nil {
			if errors.Is(err, jetstream.ErrMsgIteratorClosed) {
				s.mu.Lock()
				stopped := s.stopped
				s.mu.Unlock()
				return stopped || s.runCtx.Err() != nil
			}
			if errors.Is(err, nats.ErrConnectionClosed) {
				return true
			}
			s.stats.consumerErrors.Add(1)
			if s.errLog.allow() {
				s.log.Warn("jetstream pull", "err", err)
			}
			if errors.Is(err, jetstream.ErrConsumerDeleted) || errors.Is(err, jetstream.ErrConsumerNotFound) ||
				errors.Is(err, jetstream.ErrStreamNotFound) {
				it.Stop()
				return s.setupCtx.Err() != nil
			}
			continue
		}
		s.handle(dec, msg.Subject(), msg.Data(), msg)
	}
}

// handle decodes one message and delivers it: to Config.Deliver, or on
// the channel, blocking while it is full.
func (s *Source) handle(dec *Decoder, subject string, data []byte, jm jetstream.Msg) {
	s.stats.received.Add(1)
	now := s.now()
	var md *jetstream.MsgMetadata
	if jm != nil {
		var err error
		if md, err = jm.Metadata(); err == nil {
			// The stream's time, so that a redelivery or a replay decodes
			// exactly as the first delivery did.
			now = md.Timestamp
			if md.NumDelivered > 1 {
				s.stats.redelivered.Add(1)
			}
			if cp := s.cfg.JetStream.Checkpointed; cp != nil && md.Sequence.Stream <= *cp {
				// Applied before the caller's checkpoints were saved.
				s.stats.skipped.Add(1)
				s.count(&s.stats.acked, jm.Ack())
				return
			}
		}
	}
	pts, err := dec.Decode(nil, subject, data, now)
	var first *ParseError
	EachParseError(err, func(pe *ParseError) {
		if first == nil {
			first = pe
		}
		s.stats.parse[pe.Reason].Add(1)
	})
	if first != nil && s.errLog.allow() {
		s.log.Warn("refused input", "subject", truncate([]byte(subject)), "reason", first.Reason.String(), "err", err)
	}
	if len(pts) == 0 && err == nil { // every field left out by fieldpass / fielddrop
		s.stats.filtered.Add(1)
		if jm != nil {
			s.count(&s.stats.acked, jm.Ack())
		}
		return
	}
	if len(pts) == 0 {
		s.stats.refused.Add(1)
		if jm != nil {
			reason := "unparsable"
			if first != nil {
				reason = truncate([]byte(first.Error()))
			}
			s.count(&s.stats.termed, jm.TermWithReason(reason))
		}
		return
	}
	m := &Message{Subject: subject, Points: pts, Err: err, Received: now, js: jm, src: s}
	m.pending.Store(int64(len(pts)))
	if md != nil {
		m.Sequence, m.NumDelivered = md.Sequence.Stream, md.NumDelivered
	}
	s.sendMu.RLock()
	defer s.sendMu.RUnlock()
	if s.outClosed {
		s.dropAbandoned(jm)
		return
	}
	if d := s.cfg.Deliver; d != nil {
		s.stats.delivered.Add(1)
		s.stats.points.Add(uint64(len(pts)))
		d(s.deliverCtx, m)
		return
	}
	select {
	case s.out <- m:
		s.stats.delivered.Add(1)
		s.stats.points.Add(uint64(len(pts)))
	case <-s.abort:
		s.dropAbandoned(jm)
	}
}

// dropAbandoned counts a message that can no longer be delivered, intake
// having stopped past its deadline; JetStream redelivers it.
func (s *Source) dropAbandoned(jm jetstream.Msg) {
	s.stats.dropped.Add(1)
	if jm != nil {
		_ = jm.Nak() // redeliver it to whoever reads next
	}
}

// StopIntake stops reading from NATS: it drains the subscriptions (or
// the JetStream consumer), delivers what was already received, then
// closes the Messages channel, and returns. The connection stays up, so
// delivered JetStream messages can still be acked while the caller
// drains its pipeline and flushes its sinks; then call Close. If ctx ends
// first, messages not yet delivered are dropped (counted; JetStream
// redelivers them) and StopIntake returns ctx's error once its goroutines
// have exited. Safe to call more than once and concurrently with Close.
func (s *Source) StopIntake(ctx context.Context) error {
	s.stopMu.Lock()
	defer s.stopMu.Unlock()
	return s.stopIntake(ctx)
}

// stuckReaderGrace is how long stopIntake waits, after its deadline and
// stopping the iterator, for a reader before abandoning it.
const stuckReaderGrace = 2 * time.Second

func (s *Source) stopIntake(ctx context.Context) error {
	s.mu.Lock()
	if s.stopped {
		s.mu.Unlock()
		return s.stopErr
	}
	s.stopped = true
	// Draining needs the server; when it is unreachable, stop at once.
	connected := s.nc.IsConnected()
	for _, ss := range s.subs {
		if !connected || ss.sub.Drain() != nil {
			s.cancelRun()
			s.unsubscribe(ss)
		}
	}
	if s.iter != nil {
		if connected {
			s.iter.Drain()
		} else {
			s.iter.Stop()
		}
	}
	s.mu.Unlock()
	s.cancelSetup() // a consumer set-up in progress; the iterator drains

	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	var err error
	select {
	case <-done:
	case <-ctx.Done():
		err = fmt.Errorf("sources: stop intake: %w", ctx.Err())
		close(s.abort)
		s.cancelDeliver()
		s.cancelRun()
		s.mu.Lock()
		if s.iter != nil {
			s.iter.Stop()
		}
		s.mu.Unlock()
		// Core subscriptions drain on: each message left is dropped
		// (abort), counted, at once.
		// A reader inside the pull iterator's Next can be stuck for good:
		// nats.go (v1.53) asks for another batch on a channel its puller
		// no longer reads once Drain has begun. Abandon it, bounded,
		// rather than hang the shutdown; its messages are unacked and
		// JetStream redelivers them.
		select {
		case <-done:
		case <-time.After(stuckReaderGrace):
			s.log.Warn("a JetStream reader did not return at shutdown; abandoned (its unacknowledged messages are redelivered)",
				"component", "sources", "grace", stuckReaderGrace)
		}
	}
	// The readers have exited: what is left in the client's queues is
	// lost.
	for _, ss := range s.subs {
		s.unsubscribe(ss)
	}
	s.cancelRun()
	s.sendMu.Lock() // once the deliveries under way have returned
	s.outClosed = true
	close(s.out)
	s.sendMu.Unlock()
	s.stopErr = err
	return err
}

// unsubscribe ends ss at once, counting what its client queue still
// held as dropped (but the message in its callback, which counts itself);
// a no-op once it has ended.
func (s *Source) unsubscribe(ss *subscription) {
	if n, _, err := ss.sub.Pending(); err == nil {
		if ss.busy.Load() {
			n--
		}
		s.stats.dropped.Add(uint64(max(n, 0)))
	}
	_ = ss.sub.Unsubscribe()
}

// Close stops intake (see StopIntake), then drains the connection,
// flushing pending acks, and closes it. Under JetStream it reads the
// consumer's ack floor before closing, once the acks have reached the
// server: AckFloor returns that one from then on, so that the final
// checkpoint, written after Close, records the position it covers. It
// returns once every goroutine the Source started has exited; if ctx ends
// first, the connection is closed at once and ctx's error returned. Safe
// to call more than once.
func (s *Source) Close(ctx context.Context) error {
	s.stopMu.Lock()
	defer s.stopMu.Unlock()
	if s.isDone {
		return s.doneErr
	}
	err := s.stopIntake(ctx)
	if s.cfg.JetStream != nil {
		f := &s.final
		f.floor, f.found, f.err = s.settledAckFloor(ctx)
	}
	s.mu.Lock()
	s.isDone = true
	s.mu.Unlock()
	if derr := s.nc.Drain(); derr != nil {
		s.nc.Close()
	}
	select {
	case <-s.closed:
	case <-ctx.Done():
		s.nc.Close()
		<-s.closed
		if err == nil {
			err = fmt.Errorf("sources: close: %w", ctx.Err())
		}
	}
	s.cancelDeliver()
	s.doneErr = err
	return err
}

// rateLimiter allows one event per interval.
type rateLimiter struct {
	every time.Duration
	last  atomic.Int64
}

func (r *rateLimiter) allow() bool {
	now := time.Now().UnixNano()
	last := r.last.Load()
	return now-last >= int64(r.every) && r.last.CompareAndSwap(last, now)
}

// backoff is an exponential wait between retries.
type backoff struct{ min, max, cur time.Duration }

func newBackoff(min, max time.Duration) *backoff { return &backoff{min: min, max: max, cur: min} }

func (b *backoff) reset() { b.cur = b.min }

// sleep waits the current interval, doubling it; it reports false if ctx
// ended first.
func (b *backoff) sleep(ctx context.Context) bool {
	t := time.NewTimer(b.cur)
	defer t.Stop()
	b.cur = min(2*b.cur, b.max)
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
