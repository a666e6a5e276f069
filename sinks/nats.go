package sinks

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"
	"unsafe"

	"github.com/nats-io/nats.go"

	"github.com/forecastd/forecastd/internal/natsconn"
)

// DefaultSubjectPrefix is the prefix of the subjects forecasts are
// published on when NATSConfig.SubjectPrefix is empty.
const DefaultSubjectPrefix = "forecast"

// timeLayout is RFC 3339 with nanoseconds, fixed width so that times sort
// as strings; times are written in UTC.
const timeLayout = "2006-01-02T15:04:05.000000000Z07:00"

// NATSOptions returns the nats.Connect options a connection used by [NATS]
// should have: reconnect for ever, and buffer at most reconnectBufSize
// bytes of publishes while disconnected (nats.DefaultReconnectBufSize,
// 8 MiB, if reconnectBufSize ≤ 0). Beyond that bound, Write fails at once
// with nats.ErrReconnectBufExceeded and the forecast is counted in
// NATSStats.BufferFull. Append the daemon's own options (name, handlers,
// credentials) after these.
func NATSOptions(reconnectBufSize int) []nats.Option {
	if reconnectBufSize <= 0 {
		reconnectBufSize = nats.DefaultReconnectBufSize
	}
	return []nats.Option{
		nats.MaxReconnects(-1),
		nats.ReconnectBufSize(reconnectBufSize),
	}
}

// DefaultMaxUnconfirmed bounds NATSConfig.MaxUnconfirmed.
const DefaultMaxUnconfirmed = 8 << 20

// NATSConfig configures a [NATS] sink, [output.nats]. The zero value is
// valid.
type NATSConfig struct {
	// SubjectPrefix: a forecast for a series whose points arrive on
	// subject S is published on SubjectPrefix + "." + S. Default
	// DefaultSubjectPrefix ("forecast").
	SubjectPrefix string `toml:"subject_prefix" doc:"subjects forecasts are published on begin with this"`
	// MaxUnconfirmed bounds the bytes of the messages the sink keeps
	// until the server has confirmed them ([NATS.Confirm]), to publish
	// them again on the connection that replaces a closed one
	// ([NATS.Replace]); zero is DefaultMaxUnconfirmed. A message beyond
	// it is published but not kept (NATSStats.Unkept).
	MaxUnconfirmed int `toml:"-"`
	// RefuseWhileClosed: Write refuses (ErrConnectionClosed) while the
	// connection is closed, for an input that redelivers what a sink
	// refuses (JetStream). False: the message is kept, within
	// MaxUnconfirmed, and published on the connection that replaces the
	// closed one.
	RefuseWhileClosed bool `toml:"-"`
	// Queue: Write hands each message to a goroutine of the sink's own
	// through a queue of this many messages, which publishes them in
	// order (and Write waits while the queue is full); zero: Write
	// publishes itself. With a queue the shards that write never wait
	// for the client's lock, which its flusher holds across each write
	// to the socket; but a message the client refuses once queued (its
	// reconnect buffer full, see NATSOptions) is counted in NATSStats,
	// not returned by Write. The daemon's sink has DefaultQueue unless
	// its input redelivers what a sink refuses (JetStream).
	Queue int `toml:"-"`
	// ConfirmEvery: the sink confirms what it keeps (Confirm) this often,
	// on a goroutine of its own that Close stops; zero: the caller calls
	// Confirm. The daemon's sink uses DefaultConfirmEvery.
	ConfirmEvery time.Duration `toml:"-"`
}

// DefaultConfirmEvery is how often the daemon's NATS sink confirms what it
// keeps, by a round trip to the server: at most what was published in
// that time, plus the round trip, is published again when the server
// closes the connection.
const DefaultConfirmEvery = 100 * time.Millisecond

// DefaultQueue is the queue of the daemon's NATS sink (NATSConfig.Queue):
// a few milliseconds of messages at the rates a shard sustains, a few
// hundred kilobytes.
const DefaultQueue = 1024

// confirmTimeout bounds one confirming round trip of the sink's own
// goroutine; what is not confirmed is kept, and confirmed next time.
const confirmTimeout = 2 * time.Second

// WithDefaults returns c with its defaults filled in.
func (c NATSConfig) WithDefaults() NATSConfig {
	if c.SubjectPrefix == "" {
		c.SubjectPrefix = DefaultSubjectPrefix
	}
	if c.MaxUnconfirmed <= 0 {
		c.MaxUnconfirmed = DefaultMaxUnconfirmed
	}
	return c
}

// Validate returns the problem of subject_prefix, naming its key.
func (c *NATSConfig) Validate() error {
	if p := c.SubjectPrefix; p != "" {
		if err := natsconn.CheckSubject(p, false); err != nil {
			return fmt.Errorf("subject_prefix: invalid subject prefix %q: %v", p, err)
		}
	}
	return nil
}

// NATSStats counts what a [NATS] sink has done.
type NATSStats struct {
	// Published counts forecasts accepted by the NATS client (buffered
	// for sending; see [NATS.Write]), or with NATSConfig.Queue, queued
	// for it (a refusal after that is counted in Errors too).
	Published uint64
	// Errors counts forecasts the client refused (closed connection,
	// payload too large, reconnect buffer full, …), BufferFull included.
	Errors uint64
	// BufferFull counts forecasts refused because the client's reconnect
	// buffer (nats.ReconnectBufSize) was full while disconnected.
	BufferFull uint64
	// Anomalies counts anomaly events (opened or closed) accepted by the
	// NATS client.
	Anomalies uint64
	// Thresholds counts threshold events (opened, updated or closed)
	// accepted by the NATS client.
	Thresholds uint64
	// Buffered is the number of bytes the client holds unsent, or −1 once
	// the connection is closed.
	Buffered int
	// Republished counts messages published again on a new connection
	// (Replace) because the server had not confirmed them on the closed
	// one; Unkept those published without being kept for that
	// (MaxUnconfirmed reached); Unconfirmed is the bytes kept now.
	Republished, Unkept uint64
	Unconfirmed         int
	// Queued is the number of messages waiting in the sink's queue
	// (NATSConfig.Queue) for its goroutine to publish them.
	Queued int
}

// NATS publishes each forecast as a JSON message on a NATS subject, and
// delivers it at least once while the daemon runs: a message is kept
// until the server has confirmed it has it (Confirm, every ConfirmEvery),
// and published again on the connection that replaces one the server
// closed (Replace); a subscriber may see it twice, which a JetStream
// stream drops by its Nats-Msg-Id. A message beyond MaxUnconfirmed bytes
// of kept ones is published but not kept (NATSStats.Unkept).
//
// Its messages:
//
//	subject  <SubjectPrefix>.<input subject>[.<measurement>.<field>]
//	header   Nats-Msg-Id: <series>@<target time> (<series>@<step>@<target time>
//	         for a series forecast at a step)
//	body     {"series":"cpu","model":"aosvr",
//	          "time":"2024-05-01T12:00:10.000000000Z",
//	          "origin":"2024-05-01T12:00:00.000000000Z","horizon":1,
//	          "yhat":0.42,"yhat_lower":0.40,"yhat_upper":0.44}
//
// A series forecast at a resolution (pipeline.Config.Step) has "step" (its
// duration, "5m") after "model". With a horizon H > 1
// (pipeline.Forecast.Path) the body also carries the whole path, steps
// 1…H, the 1-step fields above unchanged:
//
//	"path":[{"horizon":1,"time":"…","yhat":0.42,"yhat_lower":0.40,"yhat_upper":0.44},
//	        {"horizon":2,"time":"…","yhat":0.45,"yhat_lower":0.39,"yhat_upper":0.51},…]
//
// each step's bounds null as the 1-step's are, and a step whose yhat is not
// finite null in "yhat" (the message is still sent: its step 1 is finite).
//
// The subject ends in .<measurement>.<field> for line-protocol input
// (Record.Measurement, Record.Field), each a subject token ('.', '*', '>',
// spaces and control characters replaced by '_'), so that a subscriber
// can follow one measurement or field.
//
// Times are RFC 3339 in UTC with nine fractional digits; "time" is the
// target time and "origin" the time of the last point. "yhat_lower" and
// "yhat_upper" are always present: both numbers, or both null when the
// forecast has no prediction interval (pipeline.Forecast.HasInterval
// false) or a bound is not finite. Write takes forecasts whose "yhat" is
// finite, as a [SeriesSink]'s [Gate] passes them (a record that is not is
// published with "yhat":null): no message carries NaN, an infinity or
// half an interval. The header lets a JetStream stream capturing
// the subjects drop the duplicates a replay republishes (within the
// stream's duplicate window), the target time being formatted as in the
// body; CR and LF in the series key are replaced by spaces in the header.
//
// Outcomes are not published, but the anomaly events they open or close
// are, on <SubjectPrefix>.anomaly.<input subject> (see writeAnomaly), and
// the threshold events of forecasts on <SubjectPrefix>.threshold.<input
// subject> (see writeThresholds).
//
// NATS is safe for concurrent use; it starts a goroutine with
// ConfirmEvery and one with Queue, which Close stops. It does not own the connection: the
// caller closes (or drains) it after [NATS.Close].
type NATS struct {
	nc     atomic.Pointer[nats.Conn] // replaced by Replace
	prefix string
	cfg    NATSConfig

	// mu orders publishing against Replace: a publication holds it for
	// reading from its send to its keeping, so that shards publish at
	// once, each waiting only for the client's own lock, and Replace,
	// holding it for writing, sees every message sent on the old
	// connection kept. keptMu guards kept, the messages published since
	// the last Confirm's mark, each as subject, id and body with their
	// lengths (appendKept), and gen, the connections Replace installed.
	// A message is kept after it was sent, so that a Confirm's mark
	// (len(kept) before its round trip) covers only messages the round
	// trip follows; a message sent before the mark but kept after it is
	// kept until the next Confirm.
	mu          sync.RWMutex
	keptMu      sync.Mutex
	kept        []byte
	gen         uint64
	republished atomic.Uint64
	unkept      atomic.Uint64

	closed     atomic.Bool
	published  atomic.Uint64
	errors     atomic.Uint64
	bufferFull atomic.Uint64
	anomalies  atomic.Uint64
	thresholds atomic.Uint64

	pool sync.Pool // of *natsScratch

	// queue feeds publishLoop (nil without NATSConfig.Queue); qmu,
	// held for reading by every send on it, lets Close close it once
	// no Write is sending; drained is closed when publishLoop has
	// published everything queued and exited.
	queue   chan queued
	qmu     sync.RWMutex
	drained chan struct{}

	stopConfirm chan struct{} // closed by Close; nil without ConfirmEvery
	confirmed   chan struct{} // closed when the confirming goroutine exits
}

// natsScratch is one message being built and published. msg.Header
// holds the Nats-Msg-Id entry from the start, its value slice over
// hdrVal, so that a publication sets hdrVal[0] instead of assigning the
// map.
type natsScratch struct {
	body, subj, id []byte
	hdrVal         [1]string
	msg            nats.Msg
}

// NewNATS returns a sink that publishes on nc, which should have been
// connected with [NATSOptions].
func NewNATS(nc *nats.Conn, cfg NATSConfig) *NATS {
	if nc == nil {
		panic("sinks: NewNATS with a nil connection")
	}
	cfg = cfg.WithDefaults()
	s := &NATS{prefix: cfg.SubjectPrefix, cfg: cfg}
	s.nc.Store(nc)
	s.pool.New = func() any {
		sc := &natsScratch{}
		sc.msg.Header = nats.Header{nats.MsgIdHdr: sc.hdrVal[:]}
		return sc
	}
	if cfg.ConfirmEvery > 0 {
		s.stopConfirm, s.confirmed = make(chan struct{}), make(chan struct{})
		go s.confirmLoop(cfg.ConfirmEvery)
	}
	if cfg.Queue > 0 {
		s.queue, s.drained = make(chan queued, cfg.Queue), make(chan struct{})
		go s.publishLoop()
	}
	return s
}

// confirmLoop confirms what the sink keeps every period until Close.
func (s *NATS) confirmLoop(every time.Duration) {
	defer close(s.confirmed)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-s.stopConfirm:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), confirmTimeout)
		_ = s.Confirm(ctx) // not confirmed: kept, tried again
		cancel()
	}
}

// Replace has the sink publish on nc from now on, in place of its
// connection, which nats-server may have closed for good (nats.go does not
// reconnect after a protocol error); the caller closes the old one. The
// messages the server had not confirmed on the old connection (see
// Confirm) are published again on nc first: a subscriber may see one
// twice (a JetStream stream drops the copy by its Nats-Msg-Id), but none
// in flight when the connection closed is lost.
func (s *NATS) Replace(nc *nats.Conn) {
	if nc == nil {
		panic("sinks: NATS.Replace with a nil connection")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.keptMu.Lock()
	defer s.keptMu.Unlock()
	s.nc.Store(nc)
	s.gen++
	sc := s.pool.Get().(*natsScratch)
	defer s.pool.Put(sc)
	for rest := s.kept; len(rest) > 0; {
		rest = nextKept(rest, sc)
		if err := sendOn(nc, sc, "publish again"); err == nil {
			s.republished.Add(1)
		} else {
			s.refused(err)
		}
	}
}

// Confirm flushes the connection (a PING/PONG round trip) and forgets the
// messages kept for Replace that were published before it: the server
// has them. The daemon calls it every fraction of a second; it blocks for
// the round trip, or until ctx ends (nothing forgotten then; without a
// deadline, 10 s).
func (s *NATS) Confirm(ctx context.Context) error {
	s.keptMu.Lock()
	nc, gen, mark := s.nc.Load(), s.gen, len(s.kept)
	s.keptMu.Unlock()
	if mark == 0 {
		return nil
	}
	if _, ok := ctx.Deadline(); !ok { // nats.go needs one
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
	}
	if err := nc.FlushWithContext(ctx); err != nil {
		return fmt.Errorf("sinks: nats: confirm: %w", err)
	}
	s.keptMu.Lock()
	defer s.keptMu.Unlock()
	if s.gen == gen { // else they were published again, on the new connection
		s.kept = s.kept[:copy(s.kept, s.kept[mark:])]
	}
	return nil
}

// Subject returns the subject the forecasts of a series whose points
// arrive on inputSubject are published on.
func (s *NATS) Subject(inputSubject string) string {
	return s.prefix + "." + inputSubject
}

// Write publishes r's forecast; KindOutcome records are ignored. With
// NATSConfig.Queue it returns once the message is queued for the sink's
// goroutine, which gives it to the client in the order queued; without,
// it returns once the NATS client has the message in its outgoing buffer:
// nats.go's flusher sends it within moments while connected, and while
// the connection is reconnecting it is kept in the reconnect buffer
// (bounded by nats.ReconnectBufSize) and sent once reconnected. A message
// is kept until [NATS.Confirm] has seen the server take it: if the server
// closes the connection meanwhile, [NATS.Replace] publishes it again on
// the next. [NATS.Close] flushes.
// Write never waits for a server: at most it writes to the socket under
// the client's write deadline when the client's buffer is full. Every
// error is counted in NATSStats and returned, wrapped (with a queue, one
// the client returns for a queued message is only counted).
func (s *NATS) Write(r Record) error {
	if r.Kind == KindOutcome {
		return s.writeAnomaly(&r)
	}
	if r.Kind != KindForecast {
		return nil
	}
	if s.closed.Load() {
		return ErrClosed
	}
	sc := s.pool.Get().(*natsScratch)
	defer s.pool.Put(sc)

	sc.body = appendForecastJSON(sc.body[:0], &r)
	sc.subj = appendSubject(sc.subj[:0], s.prefix, &r)
	sc.id = appendMsgID(sc.id[:0], r.Series, r.Step, r.Forecast.Time)
	if err := s.publish(sc, "publish"); err != nil {
		return err
	}
	s.published.Add(1)
	if r.Forecast.Thresholds != nil {
		return s.writeThresholds(sc, &r)
	}
	return nil
}

// publish publishes sc's body on sc's subject with sc's id as
// Nats-Msg-Id (send), or queues it for publishLoop to (with
// NATSConfig.Queue); what names the message in an error. sc is the
// caller's again when it returns (its buffers may be others).
func (s *NATS) publish(sc *natsScratch, what string) error {
	if len(sc.subj) > MaxSubjectLen {
		// Never sent: the server would close the connection.
		s.errors.Add(1)
		return fmt.Errorf("sinks: nats: %s on a subject of %d bytes (it starts %.64q): %w", what, len(sc.subj), sc.subj, ErrSubjectTooLong)
	}
	if s.queue != nil {
		return s.enqueue(sc, what)
	}
	return s.send(sc, what)
}

// send publishes sc on the current connection, counting a refusal, and
// keeps it until Confirm. While the connection is closed, the message is
// kept for the next one (or refused, with RefuseWhileClosed).
func (s *NATS) send(sc *natsScratch, what string) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	nc := s.nc.Load()
	if nc.IsClosed() && !s.cfg.RefuseWhileClosed && s.keep(sc) {
		return nil // for Replace
	}
	if err := sendOn(nc, sc, what); err != nil {
		if !s.cfg.RefuseWhileClosed && errors.Is(err, nats.ErrConnectionClosed) && s.keep(sc) {
			// Closed since IsClosed above: kept, as it would have been.
			return nil
		}
		s.refused(err)
		return err
	}
	if !s.keep(sc) {
		s.unkept.Add(1)
	}
	return nil
}

// keep keeps sc for Replace, if it fits within MaxUnconfirmed.
func (s *NATS) keep(sc *natsScratch) bool {
	s.keptMu.Lock()
	defer s.keptMu.Unlock()
	if len(s.kept)+keptLen(sc) > s.cfg.MaxUnconfirmed {
		return false
	}
	s.kept = appendKept(s.kept, sc)
	return true
}

// sendOn publishes sc on nc. The message's subject and id are strings
// over sc's bytes, without a copy: PublishMsg copies them into the
// client's buffer before it returns, and they are cleared then.
func sendOn(nc *nats.Conn, sc *natsScratch, what string) error {
	sc.hdrVal[0] = unsafe.String(unsafe.SliceData(sc.id), len(sc.id))
	sc.msg.Subject = unsafe.String(unsafe.SliceData(sc.subj), len(sc.subj))
	sc.msg.Data = sc.body
	err := nc.PublishMsg(&sc.msg)
	sc.msg.Data, sc.msg.Subject, sc.hdrVal[0] = nil, "", ""
	if err != nil {
		return fmt.Errorf("sinks: nats: %s %q: %w", what, sc.subj, err)
	}
	return nil
}

// refused counts a message the client refused (err from send).
func (s *NATS) refused(err error) {
	s.errors.Add(1)
	if errors.Is(err, nats.ErrReconnectBufExceeded) {
		s.bufferFull.Add(1)
	}
}

// keptLen is what appendKept adds for sc.
func keptLen(sc *natsScratch) int { return 12 + len(sc.subj) + len(sc.id) + len(sc.body) }

// appendKept appends sc's subject, id and body, each after its length.
func appendKept(b []byte, sc *natsScratch) []byte {
	b = binary.LittleEndian.AppendUint32(b, uint32(len(sc.subj)))
	b = binary.LittleEndian.AppendUint32(b, uint32(len(sc.id)))
	b = binary.LittleEndian.AppendUint32(b, uint32(len(sc.body)))
	b = append(b, sc.subj...)
	b = append(b, sc.id...)
	return append(b, sc.body...)
}

// nextKept reads the first message of b into sc and returns the rest.
func nextKept(b []byte, sc *natsScratch) []byte {
	ns, ni, nb := int(binary.LittleEndian.Uint32(b)), int(binary.LittleEndian.Uint32(b[4:])), int(binary.LittleEndian.Uint32(b[8:]))
	b = b[12:]
	sc.subj = append(sc.subj[:0], b[:ns]...)
	sc.id = append(sc.id[:0], b[ns:ns+ni]...)
	sc.body = append(sc.body[:0], b[ns+ni:ns+ni+nb]...)
	return b[ns+ni+nb:]
}

// Stats returns the sink's counters.
func (s *NATS) Stats() NATSStats {
	b, err := s.nc.Load().Buffered()
	if err != nil {
		b = -1
	}
	s.keptMu.Lock()
	kept := len(s.kept)
	s.keptMu.Unlock()
	return NATSStats{
		Published:   s.published.Load(),
		Errors:      s.errors.Load(),
		BufferFull:  s.bufferFull.Load(),
		Anomalies:   s.anomalies.Load(),
		Thresholds:  s.thresholds.Load(),
		Buffered:    b,
		Republished: s.republished.Load(),
		Unkept:      s.unkept.Load(),
		Unconfirmed: kept,
		Queued:      len(s.queue),
	}
}

// Close stops the sink (Write then returns ErrClosed) and flushes the
// connection: it returns nil once the server has acknowledged, with a
// PING/PONG round trip, everything published before, or ctx's error
// (nats.go needs a deadline: without one Close uses 10 s). A connection
// still reconnecting when ctx expires keeps its buffer: it is sent if the
// connection comes back before the caller closes it. A connection that is
// not connected and holds nothing unsent has nothing to flush: Close then
// returns nil at once rather than wait for a server. Close does not close
// the connection.
func (s *NATS) Close(ctx context.Context) error {
	if !s.closed.Swap(true) {
		var err error
		if s.queue != nil {
			s.qmu.Lock() // no Write is queueing: none will again
			close(s.queue)
			s.qmu.Unlock()
			select {
			case <-s.drained:
			case <-ctx.Done():
				err = fmt.Errorf("sinks: nats: close: %d messages still queued: %w", len(s.queue), ctx.Err())
			}
		}
		if s.stopConfirm != nil {
			close(s.stopConfirm)
			<-s.confirmed
		}
		if err != nil {
			return err
		}
	}
	return s.flushConn(ctx)
}

// Flush returns nil once the server has acknowledged, with a PING/PONG
// round trip, everything published before, or ctx's error (without a
// deadline, 10 s); at once if the connection is not connected and holds
// nothing unsent.
func (s *NATS) Flush(ctx context.Context) error {
	if err := s.drain(ctx); err != nil {
		return err
	}
	return s.flushConn(ctx)
}

// flushConn is Flush's round trip to the server.
func (s *NATS) flushConn(ctx context.Context) error {
	nc := s.nc.Load()
	if !nc.IsConnected() {
		if b, err := nc.Buffered(); err == nil && b == 0 {
			return nil
		}
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
	}
	if err := nc.FlushWithContext(ctx); err != nil {
		return fmt.Errorf("sinks: nats: flush: %w", err)
	}
	return nil
}

// appendMsgID appends series + "@" + the target time, with CR and LF
// replaced (a header value cannot hold them).
func appendMsgID(b []byte, series, step string, t time.Time) []byte {
	// Two IndexByte scans (vectorised) cost less than ContainsAny's
	// byte-by-byte loop, on every forecast.
	if strings.IndexByte(series, '\r') >= 0 || strings.IndexByte(series, '\n') >= 0 {
		for i := 0; i < len(series); i++ {
			c := series[i]
			if c == '\r' || c == '\n' {
				c = ' '
			}
			b = append(b, c)
		}
	} else {
		b = append(b, series...)
	}
	if step != "" { // a resolution's series: its own ids
		b = append(b, '@')
		b = append(b, step...)
	}
	b = append(b, '@')
	return appendTime(b, t)
}

// appendTime appends t in UTC as t.UTC().AppendFormat(b, timeLayout)
// does, digit by digit for the years 0 to 9999 instead of through time's
// layout interpreter, which is a noticeable part of a forecast message's
// cost (BENCHMARKS.md, "Publishing forecasts"). Other years, which no
// point reaches past the input's bounds, take the interpreter.
func appendTime(b []byte, t time.Time) []byte {
	t = t.UTC()
	y, mo, d := t.Date()
	if y < 0 || y > 9999 {
		return t.AppendFormat(b, timeLayout)
	}
	h, mi, s := t.Clock()
	b = appendDigits(b, y, 4)
	b = append(b, '-')
	b = appendDigits(b, int(mo), 2)
	b = append(b, '-')
	b = appendDigits(b, d, 2)
	b = append(b, 'T')
	b = appendDigits(b, h, 2)
	b = append(b, ':')
	b = appendDigits(b, mi, 2)
	b = append(b, ':')
	b = appendDigits(b, s, 2)
	b = append(b, '.')
	b = appendDigits(b, t.Nanosecond(), 9)
	return append(b, 'Z')
}

// appendDigits appends the n last decimal digits of v ≥ 0, zero-padded.
func appendDigits(b []byte, v, n int) []byte {
	b = append(b, make([]byte, n)...)
	for i := len(b) - 1; i >= len(b)-n; i-- {
		b[i] = byte('0' + v%10)
		v /= 10
	}
	return b
}

// appendForecastJSON appends the JSON body of a forecast record.
func appendForecastJSON(b []byte, r *Record) []byte {
	f := &r.Forecast
	b = append(b, `{"series":`...)
	b = appendJSONString(b, r.Series)
	b = append(b, `,"model":`...)
	b = appendJSONString(b, r.Model)
	if r.Step != "" {
		b = append(b, `,"step":`...)
		b = appendJSONString(b, r.Step)
	}
	b = append(b, `,"time":"`...)
	b = appendTime(b, f.Time)
	b = append(b, `","origin":"`...)
	b = appendTime(b, f.Origin)
	b = append(b, `","horizon":1,"yhat":`...)
	b = appendJSONFloat(b, f.Value)
	lo, hi := math.NaN(), math.NaN()
	if f.HasInterval() && finite(f.Lower) && finite(f.Upper) {
		lo, hi = f.Lower, f.Upper
	}
	b = append(b, `,"yhat_lower":`...)
	b = appendJSONFloat(b, lo)
	b = append(b, `,"yhat_upper":`...)
	b = appendJSONFloat(b, hi)
	if f.Path != nil {
		b = append(b, `,"path":[`...)
		for i, st := range f.Path {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"horizon":`...)
			b = strconv.AppendInt(b, int64(st.Horizon), 10)
			b = append(b, `,"time":"`...)
			b = appendTime(b, st.Time)
			b = append(b, `","yhat":`...)
			b = appendJSONFloat(b, st.Value)
			lo, hi := math.NaN(), math.NaN()
			if st.HasInterval() && finite(st.Lower) && finite(st.Upper) {
				lo, hi = st.Lower, st.Upper
			}
			b = append(b, `,"yhat_lower":`...)
			b = appendJSONFloat(b, lo)
			b = append(b, `,"yhat_upper":`...)
			b = appendJSONFloat(b, hi)
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	return append(b, '}')
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// appendJSONFloat appends v in the shortest form that reads back exactly,
// or null if v is NaN or infinite.
func appendJSONFloat(b []byte, v float64) []byte {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return append(b, "null"...)
	}
	return strconv.AppendFloat(b, v, 'g', -1, 64)
}

const hexDigits = "0123456789abcdef"

// appendJSONString appends s as a JSON string: quotes, backslashes and
// control characters escaped, invalid UTF-8 replaced by U+FFFD, as
// encoding/json does (without its HTML escaping).
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		// U+2028 and U+2029 are valid JSON but not JavaScript; escape
		// them as encoding/json does.
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
