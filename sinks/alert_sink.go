package sinks

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/time/rate"

	"github.com/forecastd/forecastd/internal/retry"
)

// Defaults shared by the alert sinks ([Alertmanager], [Webhook]).
const (
	DefaultMaxAlerts          = 10000
	DefaultAlertTimeout       = 10 * time.Second
	DefaultAlertRetryInterval = time.Second
	DefaultAlertMaxRetry      = 30 * time.Second
	// alertBatch is the most alerts one request carries.
	alertBatch = 256
	// alertTick is how often the sender looks for open alerts due to be
	// sent again, at most.
	alertTick = time.Second
)

// alertOptions are what an alert sink's configuration gives the engine.
type alertOptions struct {
	name     string // the kind: sink="<name>", component sinks.<name>
	endpoint string // the URL posted to
	timeout  time.Duration
	resend   time.Duration // 0: no resend
	max      int
	bounds   alertBounds
	retry    time.Duration
	maxRetry time.Duration
	logger   *slog.Logger
	// encode returns the body of a request carrying items at now.
	encode func(items []alertItem, now time.Time) ([]byte, error)
	now    func() time.Time // nil: time.Now
	client *http.Client     // nil: one of the sink's own
}

// alertSink delivers the threshold and anomaly events of the records it
// is given as alerts, a state per alert: the latest state of each waits
// in a bounded queue until delivered; open alerts are sent again every
// resend interval. One goroutine posts, retrying with back-off.
type alertSink struct {
	o    alertOptions
	q    *alertQueue
	wake chan struct{}

	closed atomic.Bool
	ctx    context.Context // cancelled to stop the sender
	cancel context.CancelFunc
	done   chan struct{}

	written, errs, dropped, rejected atomic.Uint64
	// dropLog and errLog log a repeated drop or failure once a minute.
	dropLog, errLog *rate.Limiter
}

func newAlertSink(o alertOptions) *alertSink {
	if o.now == nil {
		o.now = time.Now
	}
	if o.logger == nil {
		o.logger = slog.New(slog.DiscardHandler)
	}
	o.logger = o.logger.With("component", "sinks."+o.name)
	if o.client == nil {
		o.client = &http.Client{Timeout: o.timeout}
	}
	s := &alertSink{
		o:       o,
		q:       newAlertQueue(o.max),
		wake:    make(chan struct{}, 1),
		done:    make(chan struct{}),
		dropLog: retry.Every(time.Minute),
		errLog:  retry.Every(time.Minute),
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	go s.run()
	return s
}

// Write queues the events r opens, updates or closes, if any; it never
// blocks on the network. An event of a new alert when max_alerts are
// held is dropped, counted and logged.
func (s *alertSink) Write(r Record) error {
	if s.closed.Load() {
		return ErrClosed
	}
	evs := alertEvents(&r, s.o.bounds)
	if len(evs) == 0 {
		return nil
	}
	for i := range evs {
		if !s.q.update(&evs[i]) {
			n := s.dropped.Add(1)
			if s.dropLog.Allow() {
				s.o.logger.Warn("alert dropped: the queue holds max_alerts alerts", "series", r.Series, "max_alerts", s.o.max, "dropped", n)
			}
		}
	}
	s.signal()
	return nil
}

func (s *alertSink) signal() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// run is the sender: it delivers what changed as soon as it changes, and
// the open alerts every resend interval, until the sink is stopped.
func (s *alertSink) run() {
	defer close(s.done)
	bo := retry.Backoff(s.o.retry, s.o.maxRetry, 0.2)
	every := alertTick // resends are looked for this often; changes wake the sender at once
	if s.o.resend > 0 {
		every = min(alertTick, max(s.o.resend/4, 10*time.Millisecond))
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	failing := false
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-s.wake:
		case <-tick.C:
		}
		for {
			items := s.q.collect(s.o.now(), s.o.resend, alertBatch)
			if len(items) == 0 {
				break
			}
			err := s.post(items)
			if err == nil || errors.Is(err, errRejected) {
				if failing {
					failing = false
					s.o.logger.Info("delivering alerts again")
				}
				bo.Reset()
				s.q.done(items, s.o.now())
				if err == nil {
					s.written.Add(uint64(len(items)))
				} else {
					s.rejected.Add(uint64(len(items)))
					if s.errLog.Allow() {
						s.o.logger.Warn("alerts rejected", "alerts", len(items), "err", err)
					}
				}
				continue
			}
			s.errs.Add(1)
			if !failing || s.errLog.Allow() {
				held, pending := s.q.counts()
				s.o.logger.Warn("cannot deliver alerts; retrying", "err", err, "held", held, "pending", pending)
			}
			failing = true
			if !retry.Sleep(s.ctx, bo.NextBackOff()) {
				return
			}
		}
	}
}

// errRejected marks a request the receiver refused for good (a 4xx but
// 408 and 429): sending it again would not help.
var errRejected = errors.New("rejected")

// post sends items in one request.
func (s *alertSink) post(items []alertItem) error {
	body, err := s.o.encode(items, s.o.now())
	if err != nil {
		return fmt.Errorf("%w: encode: %v", errRejected, err)
	}
	req, err := http.NewRequestWithContext(s.ctx, http.MethodPost, s.o.endpoint, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "forecastd")
	resp, err := s.o.client.Do(req)
	if err != nil {
		return err
	}
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	switch c := resp.StatusCode; {
	case c/100 == 2:
		return nil
	case c/100 == 4 && c != http.StatusRequestTimeout && c != http.StatusTooManyRequests:
		return fmt.Errorf("%w: POST %s: %s: %s", errRejected, s.o.endpoint, resp.Status, bytes.TrimSpace(msg))
	default:
		return fmt.Errorf("POST %s: %s: %s", s.o.endpoint, resp.Status, bytes.TrimSpace(msg))
	}
}

// Flush returns once every state written before has been delivered (or
// refused), or with ctx's error.
func (s *alertSink) Flush(ctx context.Context) error {
	s.signal()
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for {
		if _, pending := s.q.counts(); pending == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("sinks.%s: flush: %w", s.o.name, ctx.Err())
		case <-s.done:
			return fmt.Errorf("sinks.%s: flush: %w", s.o.name, ErrClosed)
		case <-t.C:
		}
	}
}

// Close stops taking records, delivers what waits within ctx, then stops
// the sender and returns once it has exited. What is left undelivered at
// ctx's end is counted as dropped.
func (s *alertSink) Close(ctx context.Context) error {
	if s.closed.Swap(true) {
		<-s.done
		return nil
	}
	err := s.Flush(ctx)
	s.cancel()
	<-s.done
	s.o.client.CloseIdleConnections()
	if err != nil {
		_, pending := s.q.counts()
		s.dropped.Add(uint64(pending))
		return err
	}
	return nil
}

// AlertStats are an alert sink's counts since it started.
type AlertStats struct {
	// Delivered counts alert states the receiver accepted (each resend
	// of an open alert included).
	Delivered uint64
	// Errors counts failed requests, each retry included.
	Errors uint64
	// Dropped counts events of new alerts refused while max_alerts
	// alerts were held, and states left undelivered at Close.
	Dropped uint64
	// Rejected counts alert states the receiver refused for good.
	Rejected uint64
	// Held is the alerts held now (open, or not yet delivered);
	// Pending those with a state not yet delivered.
	Held, Pending int
}

// Stats returns the sink's counts.
func (s *alertSink) Stats() AlertStats {
	held, pending := s.q.counts()
	return AlertStats{Delivered: s.written.Load(), Errors: s.errs.Load(), Dropped: s.dropped.Load(),
		Rejected: s.rejected.Load(), Held: held, Pending: pending}
}

// Reasons of records_dropped_total{sink="alertmanager"|"webhook"}.
const (
	// DropFull: AlertStats.Dropped.
	DropFull = "full"
)

type alertDescs struct{ written, errors, dropped, bufSize *prometheus.Desc }

func newAlertDescs(name string) alertDescs {
	return alertDescs{NewDesc(MetricWritten, name), NewDesc(MetricWriteErrors, name),
		NewDesc(MetricDropped, name), NewDesc(MetricBufferSize, name)}
}

func (d alertDescs) describe(ch chan<- *prometheus.Desc) {
	ch <- d.written
	ch <- d.errors
	ch <- d.dropped
	ch <- d.bufSize
}

func (d alertDescs) collect(ch chan<- prometheus.Metric, st AlertStats) {
	ch <- prometheus.MustNewConstMetric(d.written, prometheus.CounterValue, float64(st.Delivered))
	ch <- prometheus.MustNewConstMetric(d.errors, prometheus.CounterValue, float64(st.Errors))
	ch <- prometheus.MustNewConstMetric(d.dropped, prometheus.CounterValue, float64(st.Dropped), DropFull)
	ch <- prometheus.MustNewConstMetric(d.dropped, prometheus.CounterValue, float64(st.Rejected), DropRejected)
	ch <- prometheus.MustNewConstMetric(d.bufSize, prometheus.GaugeValue, float64(st.Held))
}
