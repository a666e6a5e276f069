package sources

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/forecastd/forecastd/internal/retry"
)

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

// withDefaults returns c with its defaults filled in, or its problems.
func (c JetStreamConfig) withDefaults() (JetStreamConfig, []error) {
	var errs []error
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
	return c, errs
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
	wait := retry.Backoff(100*time.Millisecond, 5*time.Second, 0)
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
			if !retry.Sleep(s.setupCtx, wait.NextBackOff()) {
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
		wait.Reset()
		if s.consume(it, dec) {
			return
		}
		if !retry.Sleep(s.setupCtx, wait.NextBackOff()) {
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
	wait := retry.Backoff(20*time.Millisecond, time.Second, 0)
	for waited := false; ; {
		if !s.nc.IsConnected() {
			if !waited && c.Checkpointed != nil {
				log.Info("waiting for nats to check the consumer's position against the checkpoints")
			}
			waited = true
			if !retry.Sleep(s.setupCtx, wait.NextBackOff()) {
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
		if !retry.Sleep(s.setupCtx, wait.NextBackOff()) {
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
			if s.errLog.Allow() {
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
