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
	"golang.org/x/time/rate"

	"github.com/forecastd/forecastd/internal/retry"
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
	errLog   *rate.Limiter

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
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	s := &Source{
		cfg:      cfg,
		log:      cfg.Logger,
		now:      cfg.Now,
		nakDelay: DefaultNakDelay,
		out:      make(chan *Message, cfg.Buffer),
		abort:    make(chan struct{}),
		closed:   make(chan struct{}),
	}
	if cfg.JetStream != nil {
		s.nakDelay = cfg.JetStream.NakDelay
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	s.log = s.log.With("component", "sources")
	if s.now == nil {
		s.now = time.Now
	}
	s.errLog = retry.Every(time.Second)
	s.runCtx, s.cancelRun = context.WithCancel(context.Background())
	s.setupCtx, s.cancelSetup = context.WithCancel(s.runCtx)
	s.deliverCtx, s.cancelDeliver = context.WithCancel(context.Background())

	servers := nats.DefaultURL
	if len(cfg.Servers) > 0 {
		servers = joinURLs(cfg.Servers)
	}
	nc, err := nats.Connect(servers, append(s.connOptions(), cfg.Options...)...)
	if err != nil {
		s.cancelSetup()
		s.cancelRun()
		s.cancelDeliver()
		return nil, fmt.Errorf("sources: connect to %s: %w", servers, err)
	}
	s.nc = nc
	if cfg.JetStream != nil {
		s.wg.Add(1)
		go s.readJetStream()
		return s, nil
	}
	if err := s.subscribe(); err != nil {
		s.cancelSetup()
		s.cancelRun()
		s.cancelDeliver()
		nc.Close()
		<-s.closed
		return nil, err
	}
	return s, nil
}

// withDefaults returns c with its defaults filled in, or every problem
// of it at once.
func (c Config) withDefaults() (Config, error) {
	var errs []error
	if c.JetStream == nil && len(c.Subjects) == 0 {
		errs = append(errs, errors.New("sources: subjects: at least one subject is required"))
	}
	for i, s := range c.Subjects {
		if s == "" {
			errs = append(errs, fmt.Errorf("sources: subjects[%d] is empty", i))
		}
	}
	if c.Buffer <= 0 {
		c.Buffer = DefaultBuffer
	}
	if c.Name == "" {
		c.Name = DefaultName
	}
	if c.ReconnectWait <= 0 {
		c.ReconnectWait = DefaultReconnectWait
	}
	if c.JetStream != nil {
		js, jerrs := c.JetStream.withDefaults()
		c.JetStream, errs = &js, append(errs, jerrs...)
	}
	if _, err := NewDecoder(c.Decoder); err != nil {
		errs = append(errs, err)
	}
	return c, errors.Join(errs...)
}

// connOptions are the nats.go options of the source's connection, before
// the caller's (Config.Options).
func (s *Source) connOptions() []nats.Option {
	return []nats.Option{
		nats.Name(s.cfg.Name),
		nats.MaxReconnects(-1),
		nats.RetryOnFailedConnect(true),
		nats.ReconnectWait(s.cfg.ReconnectWait),
		nats.ReconnectJitter(s.cfg.ReconnectWait/2, s.cfg.ReconnectWait/2),
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
			if s.errLog.Allow() {
				subj := ""
				if sub != nil {
					subj = sub.Subject
				}
				s.log.Warn("nats async error", "subject", subj, "err", err)
			}
		}),
	}
}

// subscribe makes the core NATS subscriptions, each with a decoder of
// its own, and waits for the server to have them.
func (s *Source) subscribe() error {
	cfg := s.cfg
	for _, subj := range cfg.Subjects {
		dec, _ := NewDecoder(cfg.Decoder) // validated by New
		ss := &subscription{dec: dec}
		sub, err := s.nc.QueueSubscribe(subj, cfg.QueueGroup, func(m *nats.Msg) { s.readCore(ss, m) })
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
			return fmt.Errorf("sources: subscribe to %q: %w", subj, err)
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
	// A round trip, so that the server has the subscriptions when New
	// returns: a point published after that is read. Not connected (the
	// first attempt failed), there is no server to ask, and nats.go
	// subscribes on connecting: a flush would only hold the start for its
	// 10 s timeout.
	if s.nc.IsConnected() {
		_ = s.nc.Flush()
	}
	return nil
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
	if first != nil && s.errLog.Allow() {
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
