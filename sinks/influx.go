package sinks

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	influxdb2 "github.com/influxdata/influxdb-client-go/v2"
	"github.com/influxdata/influxdb-client-go/v2/api"
	ihttp "github.com/influxdata/influxdb-client-go/v2/api/http"

	"github.com/forecastd/forecastd/internal/retry"
)

// InfluxStats counts what an [Influx] sink has done. Every record given to
// Write is, at any time, in exactly one of Written, Dropped, Rejected,
// Invalid and Buffered.
type InfluxStats struct {
	// Written counts records InfluxDB acknowledged.
	Written uint64
	// WriteErrors counts failed write requests, each retry included.
	WriteErrors uint64
	// Dropped counts records lost without being sent: the oldest records
	// when the buffer was full, and those still buffered when Close's
	// deadline expired or Close found no server answering.
	Dropped uint64
	// Rejected counts records InfluxDB refused for good (a 4xx status
	// other than 404 and 429: bad data, a bad token); they are not
	// retried. When InfluxDB writes the good points of a batch and
	// refuses the others (a "partial write", 1.x and 2.x), only the
	// points it says it refused count here, the others in Written.
	Rejected uint64
	// Invalid counts records with nothing to write (no finite value).
	Invalid uint64
	// Buffered is the number of records waiting, the batch being written
	// included.
	Buffered int
}

// The tags the sink writes beside model and step (LegacyTagNames false).
// None is an InfluxQL keyword (influxql's token list: SERIES, MEASUREMENT
// and FIELD are), so that `WHERE series_key = 'x'` needs no quotes.
const (
	TagSeries      = "series_key"      // the series' key
	TagMeasurement = "src_measurement" // influx input: the line's measurement
	TagField       = "src_field"       // influx input: the line's field key
	TagHorizon     = "horizon"         // the step of a path, zero-padded to HorizonDigits
	TagStep        = "step"            // the resolution as configured ("5m", "1h"): matched, never sorted, so not padded
)

// HorizonDigits is the width of the horizon tag: 3, as pipeline's horizon
// is at most 336, so that its values ("001" … "336") sort as numbers,
// in SHOW TAG VALUES, GROUP BY and Grafana alike. It stays a tag and not
// an integer field: InfluxQL groups by tags only, and the steps of
// different origins that reach one time must be points of their own
// series, or they would overwrite each other.
const HorizonDigits = 3

// tagNames are the names of the sink's own tags.
type tagNames struct {
	series, measurement, field string
	padHorizon                 bool
}

var (
	currentTags = tagNames{TagSeries, TagMeasurement, TagField, true}
	legacyTags  = tagNames{"series", "measurement", "field", false}
)

// horizonText returns step h of a path as the horizon tag's value.
func (n tagNames) horizonText(h int) string {
	s := strconv.Itoa(h)
	if n.padHorizon && len(s) < HorizonDigits {
		s = strings.Repeat("0", HorizonDigits-len(s)) + s
	}
	return s
}

// Influx writes forecasts and outcomes to InfluxDB (1.8+ or 2.x) through
// influxdb-client-go's blocking write API, from a bounded buffer of its
// own, in batches, by one goroutine.
//
// Each forecast is a point at its target time:
//
//	forecast,model=aosvr,series_key=cpu yhat=0.42,yhat_lower=0.4,yhat_upper=0.44 1714564810000000000
//
// with tags series_key and model, for line-protocol input src_measurement
// and src_field (the series' measurement and field key), and the record's
// source tags (sorted; one with an empty key or value is left out, and one
// whose key is reserved, see [Record.Tags], is renamed "tag_<key>");
// with LegacyTagNames the first three are named series, measurement and
// field; a trailing backslash of a
// tag key or value, which line protocol cannot encode, is written "%5C";
// yhat_lower and yhat_upper are left out while the forecast has no
// interval, and any non-finite value is left out. The outcome of that
// forecast is written to the same point (same measurement, tags and
// timestamp, the forecast's target time, even if the actual point came at
// another time), adding its fields:
//
//	forecast,model=aosvr,series_key=cpu error=0.01,y=0.43 1714564810000000000
//
// where error = y − yhat, with anomaly_score (the outcome's, while the
// forecast has an interval), and on an outcome that opened an anomaly
// event anomaly = 1 and anomaly_reason, "deviation" (a miss beyond the
// threshold) or "extreme" (a new high or low after a quiet period); so a
// query of the point returns yhat, its bounds, y and error together.
//
// A forecast with a path (pipeline.Config.Horizon H > 1) is H points, one
// per step at the step's target time, tagged horizon=h ("001"…, padded
// to HorizonDigits; unpadded with LegacyTagNames), each with
// its own bounds; each outcome completes the step forecast for its point
// the same way (y and error on the point of that step), so Grafana draws
// the path ahead of now and charts each step's error. Each step is a
// record of the buffer (MetricBufferLimit, MetricBatchSize). A forecast
// with threshold observations (pipeline.Forecast.Thresholds) also writes
// a point per threshold at its origin, tagged threshold, with the fields
// eta_seconds, threshold_probability and threshold_state (see
// lineEncoder.thresholdLine), each a record of the buffer.
//
// Write only buffers. A write that fails for a cause that can be fixed
// while forecastd runs (network error, 5xx, 429, and 404: the database or
// bucket does not exist yet) is retried with exponential back-off for
// ever, the same batch, in order, while new records wait in the bounded
// buffer (MetricBufferLimit), whose oldest are dropped when it overflows,
// each counted. A write refused for good (another 4xx: bad data, a bad
// token) is counted and its batch discarded. Every write error is counted
// in InfluxStats.
//
// The choice of the blocking API over the client's non-blocking one: the
// latter keeps its own retry queue, whose overflow drops whole batches and
// is not reported per record; with our own buffer the drop count is exact.
type Influx struct {
	cfg    InfluxConfig
	client influxdb2.Client
	api    api.WriteAPIBlocking
	http   *http.Client // Prepare's queries
	log    *slog.Logger
	tags   tagNames

	// lanes take Write's records, a series always into the same lane, so
	// that the shards writing different series seldom meet on a lock; the
	// flusher (and Stats) move them into buf, under mu, before each batch.
	// waiting counts the records in buf and the lanes; beyond
	// MetricBufferLimit + slack, Write moves the lanes into buf, which
	// drops its oldest: the lanes hold at most slack records beyond the
	// bound, and are gathered once per slack records while it overflows.
	lanes   [influxLanes]influxLane
	waiting atomic.Int64
	slack   int

	mu       sync.Mutex
	buf      ring
	nextLane int // the lane the next batch starts at (take)
	inflight int
	stats    InfluxStats // Buffered unused; guarded by mu
	closed   atomic.Bool

	kick     chan struct{}      // a full batch waits
	flushReq chan chan struct{} // Flush: write what waits, then close the channel
	stop     chan struct{}      // closed by Close: flush, then exit
	runCtx   context.Context
	abort    context.CancelFunc // Close's deadline expired: give up
	done     chan struct{}
	lastDrop uint64 // drops last logged; flusher only
	// unreachable, set by the flusher at Close, is why what is left is
	// not written: the server did not answer the last attempt. Read by
	// Close after the flusher has exited.
	unreachable error
}

// influxLanes is the number of lanes of an Influx sink: a few times the
// shards a daemon runs on a small machine, so that two shards seldom
// write into the same lane at once.
const influxLanes = 16

// influxLane is one lane of an Influx sink's intake; the padding keeps
// two lanes' locks off one cache line.
type influxLane struct {
	mu     sync.Mutex
	recs   []Record
	closed bool
	_      [64]byte
}

// NewInflux validates cfg, and returns a sink writing to the InfluxDB it
// names, with its flushing goroutine started; it does not contact the
// server. Close it.
func NewInflux(cfg InfluxConfig) (*Influx, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("sinks: influxdb: %w", err)
	}
	cfg = cfg.WithDefaults()
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	opts := influxdb2.DefaultOptions().
		SetPrecision(time.Nanosecond).
		SetHTTPRequestTimeout(uint(max(1, (cfg.Timeout.D+time.Second-1)/time.Second)))
	if cfg.transport != nil {
		opts.SetHTTPClient(&http.Client{Transport: cfg.transport})
	}
	client := influxdb2.NewClientWithOptions(cfg.URL, cfg.Token, opts)
	s := &Influx{
		cfg:      cfg,
		client:   client,
		api:      client.WriteAPIBlocking(cfg.Organization, cfg.Bucket),
		http:     &http.Client{Timeout: cfg.Timeout.D},
		log:      cfg.Logger.With("component", "sinks.influxdb"),
		tags:     currentTags,
		buf:      newRing(cfg.MetricBufferLimit),
		kick:     make(chan struct{}, 1),
		flushReq: make(chan chan struct{}),
		stop:     make(chan struct{}),
		done:     make(chan struct{}),
	}
	if cfg.LegacyTagNames {
		s.tags = legacyTags
	}
	s.slack = max(1, cfg.MetricBufferLimit/16)
	s.runCtx, s.abort = context.WithCancel(context.Background())
	go s.run()
	return s, nil
}

// Write buffers r for writing; it never blocks on the network, and takes
// no lock but its series' lane's. If the buffer is full the oldest records
// are dropped (and counted). It returns ErrClosed after Close, and an
// error for a record of no valid Kind.
func (s *Influx) Write(r Record) error {
	if r.Kind != KindForecast && r.Kind != KindOutcome {
		return fmt.Errorf("sinks: influxdb: record of kind %d", r.Kind)
	}
	l := &s.lanes[laneOf(r.Series)]
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return ErrClosed
	}
	n := len(l.recs)
	r.steps(func(q Record) { // one record per step of a path
		l.recs = append(l.recs, q)
	})
	if r.Kind == KindForecast {
		for _, o := range r.Forecast.Thresholds { // one per threshold
			l.recs = append(l.recs, thresholdRecord(r, o))
		}
	}
	waiting := s.waiting.Add(int64(len(l.recs) - n))
	l.mu.Unlock()
	if waiting > int64(s.cfg.MetricBufferLimit+s.slack) {
		s.mu.Lock()
		s.gather()
		s.mu.Unlock()
	}
	if waiting >= int64(s.cfg.MetricBatchSize) {
		select {
		case s.kick <- struct{}{}:
		default:
		}
	}
	return nil
}

// laneOf returns the lane of a series (FNV-1a of its key).
func laneOf(series string) int {
	h := uint32(2166136261)
	for i := 0; i < len(series); i++ {
		h ^= uint32(series[i])
		h *= 16777619
	}
	return int(h % influxLanes)
}

// gather moves the lanes' records into buf, in each lane's order, the
// oldest of buf dropped (and counted) when it overflows. s.mu is held.
func (s *Influx) gather() {
	for i := range s.lanes {
		l := &s.lanes[i]
		l.mu.Lock()
		for _, r := range l.recs {
			if s.buf.push(r) {
				s.stats.Dropped++
				s.waiting.Add(-1)
			}
		}
		l.reset(len(l.recs), s.cfg.MetricBatchSize)
		l.mu.Unlock()
	}
}

// reset drops the first k records of l (moved elsewhere), keeping the
// rest in order. With keep ≥ 0, an emptied lane keeps room for at most
// twice keep records (keep: MetricBatchSize, what it fills between two
// batches in normal operation): one that grew beyond (an outage, a burst)
// gives its memory back. gather, which runs at every Stats and on
// overflow, lets it; take, every batch, keeps the room for the next.
// l.mu is held.
func (l *influxLane) reset(k, keep int) {
	rest := copy(l.recs, l.recs[k:])
	clear(l.recs[rest:])
	l.recs = l.recs[:rest]
	if rest == 0 && keep >= 0 && cap(l.recs) > 2*keep {
		l.recs = nil
	}
}

// take moves up to n of the records waiting into dst and returns it:
// buf's first, the oldest (what overflowed into it), then the lanes', in
// each lane's order, without passing them through buf, from the lane
// after the one the last batch started at, so that no lane waits behind
// the others. s.mu is held.
func (s *Influx) take(dst []Record, n int) []Record {
	dst = s.buf.pop(dst, n)
	first := s.nextLane
	s.nextLane = (first + 1) % influxLanes
	for j := range influxLanes {
		if len(dst) >= n {
			break
		}
		l := &s.lanes[(first+j)%influxLanes]
		l.mu.Lock()
		k := min(n-len(dst), len(l.recs))
		dst = append(dst, l.recs[:k]...)
		l.reset(k, -1)
		l.mu.Unlock()
	}
	s.waiting.Add(-int64(len(dst)))
	return dst
}

// Stats returns the sink's counters, the lanes gathered first so that
// Buffered and Dropped are exact.
func (s *Influx) Stats() InfluxStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gather()
	st := s.stats
	st.Buffered = int(s.waiting.Load()) + s.inflight
	return st
}

// Backlog implements [Backlogger]: InfluxStats.Buffered, the batch being
// written included, as a share of MetricBufferLimit.
func (s *Influx) Backlog() float64 {
	return float64(s.Stats().Buffered) / float64(s.cfg.MetricBufferLimit)
}

// Flush writes what waits, retrying as usual, and returns once it is
// written (or refused for good, or dropped), or ctx's error.
func (s *Influx) Flush(ctx context.Context) error {
	done := make(chan struct{})
	select {
	case s.flushReq <- done:
	case <-s.done:
		return ErrClosed
	case <-ctx.Done():
		return fmt.Errorf("sinks: influxdb: flush: %w", ctx.Err())
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("sinks: influxdb: flush: %w", ctx.Err())
	}
}

// Close stops the sink (Write then returns ErrClosed) and writes what is
// buffered at once, retrying as usual, until the buffer is empty or ctx is
// done, or a write finds no server that answers (a shutdown does not wait
// out the back-off for one); then records not written are counted as
// dropped. It returns after the sink's goroutine has exited: nil if
// everything buffered was written, or an error counting what was lost
// and why (wrapping ctx's error at its deadline).
func (s *Influx) Close(ctx context.Context) error {
	if s.closed.Swap(true) {
		return ErrClosed
	}
	for i := range s.lanes {
		l := &s.lanes[i]
		l.mu.Lock()
		l.closed = true
		l.mu.Unlock()
	}
	s.mu.Lock()
	s.gather() // what overflowed before Close is not Close's loss
	before := s.stats.Dropped
	s.mu.Unlock()
	close(s.stop)
	var err error
	select {
	case <-s.done:
	case <-ctx.Done():
		s.abort()
		<-s.done
		err = ctx.Err()
	}
	s.abort()
	s.client.Close()
	s.http.CloseIdleConnections()
	s.mu.Lock()
	lost := s.stats.Dropped - before
	s.mu.Unlock()
	switch {
	case err != nil:
		return fmt.Errorf("sinks: influxdb: close: %d records not written: %w", lost, err)
	case s.unreachable != nil:
		return fmt.Errorf("sinks: influxdb: close: %d records not written: InfluxDB at %s does not answer: %w", lost, s.cfg.URL, s.unreachable)
	case lost > 0:
		return fmt.Errorf("sinks: influxdb: close: %d records not written", lost)
	}
	return nil
}

// run is the flushing goroutine: it writes full batches as soon as they
// are, everything buffered every FlushInterval, at Flush, and everything
// it can at Close.
func (s *Influx) run() {
	defer close(s.done)
	tick := time.NewTicker(s.cfg.FlushInterval.D)
	defer tick.Stop()
	batch := make([]Record, 0, s.cfg.MetricBatchSize)
	enc := &lineEncoder{measurement: s.cfg.Measurement, names: s.tags}
	var lines []byte
	for {
		all, closing := false, false
		var flushed chan struct{}
		select {
		case <-s.stop:
			all, closing = true, true
		case <-tick.C:
			all = true
		case flushed = <-s.flushReq:
			all = true
		case <-s.kick:
		}
		for s.runCtx.Err() == nil && s.unreachable == nil {
			s.mu.Lock()
			n := s.waiting.Load()
			if n == 0 || (!all && n < int64(s.cfg.MetricBatchSize)) {
				s.mu.Unlock()
				break
			}
			batch = s.take(batch[:0], s.cfg.MetricBatchSize)
			s.inflight = len(batch)
			s.mu.Unlock()
			lines = s.writeBatch(enc, batch, lines[:0])
			clear(batch)
		}
		if flushed != nil {
			close(flushed)
		}
		s.logDrops()
		if closing || s.runCtx.Err() != nil || s.unreachable != nil {
			s.mu.Lock()
			s.gather()
			left := s.buf.len()
			lost := uint64(left + s.inflight)
			s.stats.Dropped += lost
			s.buf.pop(nil, left)
			s.waiting.Add(-int64(left))
			s.inflight = 0
			s.lastDrop = s.stats.Dropped // lost at Close, not for a full buffer
			s.mu.Unlock()
			if lost > 0 {
				why := "the shutdown deadline passed"
				if s.unreachable != nil {
					why = "InfluxDB does not answer"
				}
				s.log.Warn("shutdown: records not written", "records", lost, "reason", why, "url", s.cfg.URL, "err", s.unreachable)
			}
			return
		}
	}
}

// closing reports whether Close has begun.
func (s *Influx) closing() bool {
	select {
	case <-s.stop:
		return true
	default:
		return false
	}
}

// logDrops logs, at most once per flush, the records dropped since the
// last time.
func (s *Influx) logDrops() {
	s.mu.Lock()
	d := s.stats.Dropped
	s.mu.Unlock()
	if d > s.lastDrop {
		s.log.Warn("buffer full: dropped the oldest records", "dropped", d-s.lastDrop,
			"dropped_total", d, "metric_buffer_limit", s.cfg.MetricBufferLimit)
		s.lastDrop = d
	}
}

// writeBatch writes batch, as line protocol encoded by enc into lines,
// retrying while the failure is transient, until it is written, refused
// for good, or the sink is aborted (the batch then stays in flight, for
// run to count as dropped). It returns lines, for reuse.
func (s *Influx) writeBatch(enc *lineEncoder, batch []Record, lines []byte) []byte {
	invalid := 0
	for i := range batch {
		var ok bool
		if lines, ok = enc.line(lines, &batch[i]); !ok {
			invalid++
		}
	}
	n := len(batch) - invalid
	s.mu.Lock()
	s.stats.Invalid += uint64(invalid)
	s.inflight -= invalid
	s.mu.Unlock()
	if n == 0 {
		return lines
	}

	// The request's body is a copy of lines, one per batch: net/http may
	// go on reading a body after the call returned (at a timeout, or
	// after an early answer), while lines is already the next batch's.
	body := string(lines)
	wait := retry.Backoff(s.cfg.RetryInterval, s.cfg.MaxRetryInterval, 0.2)
	for attempt := 0; ; attempt++ {
		ctx, cancel := context.WithTimeout(s.runCtx, s.cfg.Timeout.D)
		err := s.api.WriteRecord(ctx, body)
		cancel()
		if err == nil {
			s.mu.Lock()
			s.stats.Written += uint64(n)
			s.inflight = 0
			s.mu.Unlock()
			if attempt > 0 {
				s.log.Info("write recovered", "attempts", attempt+1)
			}
			return lines
		}
		if s.runCtx.Err() != nil {
			return lines // aborted by Close; not a write error
		}
		retryable, after := classify(err)
		if !retryable {
			s.refused(err, n)
			return lines
		}
		if !s.retryWait(err, attempt, n, max(wait.NextBackOff(), min(after, s.cfg.MaxRetryInterval))) {
			return lines
		}
	}
}

// retryWait counts and logs the transient failure err of the attempt-th
// write of a batch of n points, and waits d before the next (at once
// when Close begins meanwhile). It reports false when the batch is to be
// given up: the sink is aborted, or closing while no server answers (the
// batch then stays in flight, for run to count as lost).
func (s *Influx) retryWait(err error, attempt, n int, d time.Duration) bool {
	s.mu.Lock()
	s.stats.WriteErrors++
	s.mu.Unlock()
	if s.closing() && noAnswer(err) {
		// Closing, and no server answered: back-off would only spend
		// the shutdown's deadline.
		s.unreachable = err
		return false
	}
	if notFound(err) && s.cfg.CreateDatabase {
		if cerr := s.Prepare(s.runCtx); cerr != nil && attempt == 0 {
			s.log.Warn("database not found, and not created", "err", cerr)
		}
	}
	if attempt == 0 {
		msg := "write failed; keeping the records and retrying"
		if notFound(err) && !s.cfg.CreateDatabase {
			s.log.Warn(msg, "records", n, "err", err, "fix", s.createCommand())
		} else {
			s.log.Warn(msg, "records", n, "err", err)
		}
	}
	s.logDrops()
	t := time.NewTimer(d)
	defer t.Stop()
	stop := s.stop
	if s.closing() {
		stop = nil // closing already: the back-off runs to the deadline
	}
	select {
	case <-t.C:
	case <-stop: // Close: try again at once
	case <-s.runCtx.Done():
		return false
	}
	return true
}

// refused counts a batch of n points InfluxDB refused for good, or wrote
// in part, and logs the server's message, which names the bad line or
// field.
func (s *Influx) refused(err error, n int) {
	bad, partial := n, false
	var he *ihttp.Error
	if errors.As(err, &he) {
		if b, ok := partialWriteRefused(he.Message, n); ok {
			bad, partial = b, true
		}
	}
	s.mu.Lock()
	s.stats.WriteErrors++
	s.stats.Rejected += uint64(bad)
	s.stats.Written += uint64(n - bad)
	s.inflight = 0
	s.mu.Unlock()
	if partial {
		s.log.Warn("write partly refused; refused points discarded", "records", n,
			"written", n-bad, "refused", bad, "err", err)
		return
	}
	s.log.Warn("write refused; batch discarded", "records", n, "err", err)
}

// partialWriteRefused reads the message of a refused write of n points
// and, if InfluxDB says it wrote part of them, returns how many it
// refused (1 ≤ refused ≤ n). InfluxDB 1.x (and 2.x's storage) report
//
//	partial write: <reason> dropped=<points refused by the storage>
//
// where, for lines that did not parse (1.x writes the others), the reason
// lists one "unable to parse '<line>': …" per line, each on a line of
// its own, and dropped is 0. A message naming no refused point is not
// read as a partial write.
func partialWriteRefused(msg string, n int) (int, bool) {
	i := strings.Index(msg, "partial write:")
	if i < 0 {
		return 0, false
	}
	msg = msg[i+len("partial write:"):]
	bad := 0
	if j := strings.LastIndex(msg, " dropped="); j >= 0 {
		if d, err := strconv.Atoi(strings.TrimSpace(msg[j+len(" dropped="):])); err == nil && d > 0 {
			bad = d
		}
		msg = msg[:j]
	}
	for _, line := range strings.Split(msg, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "unable to parse '") {
			bad++
		}
	}
	if bad == 0 {
		return 0, false
	}
	return min(bad, n), true
}

// classify tells whether a write error can pass without forecastd's help
// (no response, 429, 5xx; 404, a database or bucket not created yet) and
// the server's Retry-After. An error from the client before any request
// (encoding) cannot.
func classify(err error) (retry bool, after time.Duration) {
	var he *ihttp.Error
	if !errors.As(err, &he) {
		return false, 0
	}
	after = time.Duration(he.RetryAfter) * time.Second
	switch c := he.StatusCode; {
	case c == 0, c == http.StatusNotFound, c == http.StatusTooManyRequests, c >= 500:
		return true, after
	}
	return false, 0
}

// noAnswer reports whether err is a write no server answered (refused,
// reset, timed out): no status at all.
func noAnswer(err error) bool {
	var he *ihttp.Error
	return errors.As(err, &he) && he.StatusCode == 0
}

// notFound reports whether err is InfluxDB's answer to a write into a
// database or bucket that does not exist.
func notFound(err error) bool {
	var he *ihttp.Error
	return errors.As(err, &he) && he.StatusCode == http.StatusNotFound
}

// reservedKey reports whether an input tag named k would collide with
// the sink's own tags or fields, or is refused by InfluxDB: "time" (1.x
// refuses it), keys beginning with "_" (2.x's own: _measurement, _field,
// …), the sink's tags under both namings (series_key, src_measurement,
// src_field; series, measurement, field; model, horizon, step), so that
// an input tag means the same whichever LegacyTagNames, and the fields
// yhat, yhat_lower, yhat_upper, y, error, anomaly_score, anomaly,
// anomaly_reason (a tag named like a field makes InfluxQL's SELECT *
// rename one of them).
func reservedKey(k string) bool {
	switch k {
	case "time", TagSeries, TagMeasurement, TagField, "series", "model", "measurement", "field", TagHorizon, TagStep,
		"yhat", "yhat_lower", "yhat_upper", "y", "error", "anomaly_score", "anomaly", "anomaly_reason":
		return true
	}
	return strings.HasPrefix(k, "_")
}

// inputTagKey returns the key an input tag k of tags is written under: k,
// or, if k is reserved, k prefixed with "tag_" as many times as it takes
// to name neither a reserved key nor another of tags.
func inputTagKey(k string, tags []Tag) string {
	if !reservedKey(k) {
		return k
	}
	taken := func(k string) bool {
		for _, t := range tags {
			if t.Key == k {
				return true
			}
		}
		return false
	}
	k = "tag_" + k
	for reservedKey(k) || taken(k) {
		k = "tag_" + k
	}
	return k
}

// tagText returns s as a tag key or value InfluxDB can take: with each
// trailing backslash replaced by "%5C", since line protocol has no
// encoding of a tag ending in a backslash (1.8 refuses the line; Telegraf
// leaves such a tag out). Other backslashes are kept as they are.
func tagText(s string) string {
	n := len(s) - len(strings.TrimRight(s, `\`))
	if n == 0 {
		return s
	}
	return s[:len(s)-n] + strings.Repeat("%5C", n)
}
