package sinks

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/forecastd/forecastd/internal/retry"
)

// PromStats counts what a [Prom] sink has done. Every record given to
// Write (each step of a path and each threshold observation a record of
// its own) is, at any time, in exactly one of Written, Dropped, Rejected,
// Invalid and Buffered.
type PromStats struct {
	// Written counts records the receiver acknowledged (2xx).
	Written uint64
	// WriteErrors counts failed requests, each retry included.
	WriteErrors uint64
	// Dropped counts records lost unsent: the oldest when the buffer was
	// full, and those left at Close's deadline or with no receiver
	// answering at Close.
	Dropped uint64
	// Rejected counts records of requests refused for good (a 4xx other
	// than 429), not retried. Prometheus answers 400 to a request of
	// which it refused some samples (out of order, out of bounds) and
	// keeps the others: all of its records count here.
	Rejected uint64
	// Invalid counts records with no finite value to write.
	Invalid uint64
	// Buffered is the records waiting, the batch being written included.
	Buffered int
}

// Prom writes forecasts, outcomes and threshold observations to a
// Prometheus remote write receiver (protocol 1.0: a snappy-compressed
// protobuf WriteRequest), from a bounded buffer, in batches, by one
// goroutine.
//
// Each record is a sample of one or more series at its time in
// milliseconds, labelled series_key, model, step (a resolution's),
// src_measurement and src_field (line-protocol input), and the input's
// tags (a reserved key renamed "tag_<key>" as in InfluxDB, any other
// byte than [a-zA-Z0-9_] of a key replaced by '_', at most MaxLabels
// labels in all, values cut to MaxLabelLength bytes):
//
//	forecastd_forecast{series_key="cpu",model="aosvr"}        ŷ at the target time
//	forecastd_forecast_lower, forecastd_forecast_upper        its interval, once calibrated
//	forecastd_actual                                          y, at the target time of the forecast it closed
//	forecastd_anomaly_score                                   the outcome's score
//	forecastd_threshold_eta_seconds{threshold="below 0"}      at the forecast's origin
//	forecastd_threshold_probability{threshold="below 0"}
//
// A path's steps are series of their own, labelled horizon="1"…"H" (as
// InfluxDB's tag horizon, unpadded: PromQL matches, never sorts it),
// each sample at its step's target time. Non-finite values are left out.
// Within a request each series' samples are in time order.
//
// Forecasts are dated at their target time, in the future, or with
// Timestamp "origin" at the time they were made from. Prometheus' remote
// write receiver refuses samples more than 10 minutes ahead of its clock
// (a 400 for the request, whose other samples it keeps): "origin" is for
// it. Samples behind a later one of their series (a replay, a retried
// batch) need its storage.tsdb.out_of_order_time_window (see the README,
// "With Prometheus"); VictoriaMetrics takes them as they are.
//
// Write only buffers. A request that fails for a cause that can pass
// (no answer, 429, 5xx) is retried with exponential back-off
// (internal/retry), Retry-After honoured, while new records wait in the
// bounded buffer, whose oldest are dropped when it overflows; one refused
// for good (another 4xx) is counted and discarded.
type Prom struct {
	cfg    PromConfig
	client *http.Client
	log    *slog.Logger

	mu       sync.Mutex
	buf      ring
	inflight int
	closed   bool
	stats    PromStats // Buffered unused; guarded by mu

	kick     chan struct{}
	flushReq chan chan struct{}
	stop     chan struct{}
	runCtx   context.Context
	abort    context.CancelFunc
	done     chan struct{}
	lastDrop uint64 // flusher only
	// unreachable is set by the flusher at Close when no receiver
	// answered; read by Close after the flusher exited.
	unreachable error
}

var _ Sink = (*Prom)(nil)

// NewProm validates cfg and returns a sink writing to the receiver it
// names, its flushing goroutine started; it does not contact the
// receiver. Close it.
func NewProm(cfg PromConfig) (*Prom, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("sinks: prometheus: %w", err)
	}
	cfg = cfg.WithDefaults()
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Prom{
		cfg:      cfg,
		client:   &http.Client{Transport: cfg.transport},
		log:      cfg.Logger.With("component", "sinks.prometheus"),
		buf:      newRing(cfg.MetricBufferLimit),
		kick:     make(chan struct{}, 1),
		flushReq: make(chan chan struct{}),
		stop:     make(chan struct{}),
		done:     make(chan struct{}),
	}
	s.runCtx, s.abort = context.WithCancel(context.Background())
	go s.run()
	return s, nil
}

// Write buffers r: one record per step of a path and per threshold
// observation. It never blocks on the network; when the buffer is full
// the oldest records are dropped and counted. ErrClosed after Close.
func (s *Prom) Write(r Record) error {
	if r.Kind != KindForecast && r.Kind != KindOutcome {
		return fmt.Errorf("sinks: prometheus: record of kind %d", r.Kind)
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ErrClosed
	}
	push := func(q Record) {
		if s.buf.push(q) {
			s.stats.Dropped++
		}
	}
	r.steps(push)
	if r.Kind == KindForecast {
		for _, o := range r.Forecast.Thresholds {
			push(thresholdRecord(r, o))
		}
	}
	full := s.buf.len() >= s.cfg.MetricBatchSize
	s.mu.Unlock()
	if full {
		select {
		case s.kick <- struct{}{}:
		default:
		}
	}
	return nil
}

// Stats returns the sink's counters.
func (s *Prom) Stats() PromStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.stats
	st.Buffered = s.buf.len() + s.inflight
	return st
}

// Backlog implements [Backlogger].
func (s *Prom) Backlog() float64 {
	return float64(s.Stats().Buffered) / float64(s.cfg.MetricBufferLimit)
}

// Flush writes what waits and returns once it is written, refused or
// dropped, or ctx's error.
func (s *Prom) Flush(ctx context.Context) error {
	done := make(chan struct{})
	select {
	case s.flushReq <- done:
	case <-s.done:
		return ErrClosed
	case <-ctx.Done():
		return fmt.Errorf("sinks: prometheus: flush: %w", ctx.Err())
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("sinks: prometheus: flush: %w", ctx.Err())
	}
}

// Close stops the sink (Write then returns ErrClosed), writes what is
// buffered until ctx is done or no receiver answers, counts the rest as
// dropped, and returns after its goroutine has exited: nil if everything
// was written, else an error saying what was lost and why.
func (s *Prom) Close(ctx context.Context) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ErrClosed
	}
	s.closed = true
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
	s.client.CloseIdleConnections()
	s.mu.Lock()
	lost := s.stats.Dropped - before
	s.mu.Unlock()
	switch {
	case err != nil:
		return fmt.Errorf("sinks: prometheus: close: %d records not written: %w", lost, err)
	case s.unreachable != nil:
		return fmt.Errorf("sinks: prometheus: close: %d records not written: %s does not answer: %w", lost, s.cfg.URL, s.unreachable)
	case lost > 0:
		return fmt.Errorf("sinks: prometheus: close: %d records not written", lost)
	}
	return nil
}

// run is the flushing goroutine: full batches as soon as they are,
// everything every FlushInterval, at Flush, and at Close.
func (s *Prom) run() {
	defer close(s.done)
	tick := time.NewTicker(s.cfg.FlushInterval.D)
	defer tick.Stop()
	batch := make([]Record, 0, s.cfg.MetricBatchSize)
	enc := newPromEncoder(s.cfg.MaxLabels, s.cfg.MaxLabelLength)
	enc.atOrigin = s.cfg.Timestamp == PromTimestampOrigin
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
			n := s.buf.len()
			if n == 0 || (!all && n < s.cfg.MetricBatchSize) {
				s.mu.Unlock()
				break
			}
			batch = s.buf.pop(batch[:0], s.cfg.MetricBatchSize)
			s.inflight = len(batch)
			s.mu.Unlock()
			s.writeBatch(enc, batch)
			clear(batch)
		}
		if flushed != nil {
			close(flushed)
		}
		s.logDrops()
		if closing || s.runCtx.Err() != nil || s.unreachable != nil {
			s.dropLeft()
			return
		}
	}
}

// dropLeft counts what is left at Close as dropped.
func (s *Prom) dropLeft() {
	s.mu.Lock()
	left := s.buf.len()
	lost := uint64(left + s.inflight)
	s.stats.Dropped += lost
	s.buf.pop(nil, left)
	s.inflight = 0
	s.lastDrop = s.stats.Dropped
	s.mu.Unlock()
	if lost > 0 {
		why := "the shutdown deadline passed"
		if s.unreachable != nil {
			why = "the receiver does not answer"
		}
		s.log.Warn("shutdown: records not written", "records", lost, "reason", why, "url", s.cfg.URL, "err", s.unreachable)
	}
}

// logDrops logs, at most once per flush, the records dropped since the
// last time.
func (s *Prom) logDrops() {
	s.mu.Lock()
	d := s.stats.Dropped
	s.mu.Unlock()
	if d > s.lastDrop {
		s.log.Warn("buffer full: dropped the oldest records", "dropped", d-s.lastDrop,
			"dropped_total", d, "metric_buffer_limit", s.cfg.MetricBufferLimit)
		s.lastDrop = d
	}
}

// writeBatch encodes batch and posts it, retrying while the failure can
// pass, until it is written, refused for good, or the sink is aborted
// (the batch then stays in flight, for run to count as dropped).
func (s *Prom) writeBatch(enc *promEncoder, batch []Record) {
	invalid := 0
	for i := range batch {
		if !enc.add(&batch[i]) {
			invalid++
		}
	}
	body := enc.encode()
	n := len(batch) - invalid
	s.mu.Lock()
	s.stats.Invalid += uint64(invalid)
	s.inflight -= invalid
	s.mu.Unlock()
	if n == 0 {
		return
	}
	wait := retry.Backoff(s.cfg.RetryInterval, s.cfg.MaxRetryInterval, 0.2)
	for attempt := 0; ; attempt++ {
		err := s.post(body)
		if err == nil {
			s.mu.Lock()
			s.stats.Written += uint64(n)
			s.inflight = 0
			s.mu.Unlock()
			if attempt > 0 {
				s.log.Info("write recovered", "attempts", attempt+1)
			}
			return
		}
		if s.runCtx.Err() != nil {
			return
		}
		var se *promStatusError
		if errors.As(err, &se) && !se.retryable() {
			s.mu.Lock()
			s.stats.WriteErrors++
			s.stats.Rejected += uint64(n)
			s.inflight = 0
			s.mu.Unlock()
			s.log.Warn("write refused; batch discarded", "records", n, "err", err)
			return
		}
		d := wait.NextBackOff()
		if se != nil {
			d = max(d, min(se.after, s.cfg.MaxRetryInterval))
		}
		if !s.retryWait(err, se == nil, attempt, n, d) {
			return
		}
	}
}

// retryWait counts the transient failure err (noAnswer: no status) and
// waits d; false when the batch is to be given up (aborted, or closing
// with no receiver answering).
func (s *Prom) retryWait(err error, noAnswer bool, attempt, n int, d time.Duration) bool {
	s.mu.Lock()
	s.stats.WriteErrors++
	s.mu.Unlock()
	closing := false
	select {
	case <-s.stop:
		closing = true
	default:
	}
	if closing && noAnswer {
		s.unreachable = err
		return false
	}
	if attempt == 0 {
		s.log.Warn("write failed; keeping the records and retrying", "records", n, "err", err)
	}
	s.logDrops()
	t := time.NewTimer(d)
	defer t.Stop()
	stop := s.stop
	if closing {
		stop = nil
	}
	select {
	case <-t.C:
	case <-stop:
	case <-s.runCtx.Done():
		return false
	}
	return true
}

// promStatusError is a request answered with a status other than 2xx.
type promStatusError struct {
	code  int
	after time.Duration // Retry-After
	msg   string
}

func (e *promStatusError) Error() string {
	return fmt.Sprintf("%d %s: %s", e.code, http.StatusText(e.code), e.msg)
}

func (e *promStatusError) retryable() bool {
	return e.code == http.StatusTooManyRequests || e.code >= 500
}

// post sends one remote write request of body.
func (s *Prom) post(body []byte) error {
	ctx, cancel := context.WithTimeout(s.runCtx, s.cfg.Timeout.D)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.cfg.URL, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/x-protobuf")
	req.Header.Set("Content-Encoding", "snappy")
	req.Header.Set("X-Prometheus-Remote-Write-Version", "0.1.0")
	req.Header.Set("User-Agent", "forecastd")
	switch {
	case s.cfg.Username != "":
		req.SetBasicAuth(s.cfg.Username, s.cfg.Password)
	case s.cfg.BearerToken != "":
		req.Header.Set("Authorization", "Bearer "+s.cfg.BearerToken)
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10)) // keep the connection
	if resp.StatusCode/100 == 2 {
		return nil
	}
	e := &promStatusError{code: resp.StatusCode, msg: strings.TrimSpace(string(msg))}
	if sec, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && sec > 0 {
		e.after = time.Duration(sec) * time.Second
	}
	return e
}
