// Package promql is the input of [[input.promql]]: series pulled from
// Prometheus or VictoriaMetrics by PromQL queries evaluated at a step, as
// vmanomaly reads them, for hosts whose metrics no one publishes on NATS.
//
// Each evaluation runs /api/v1/query_range over the steps since the last
// one evaluated, up to the clock less a lag, and hands each series'
// new samples to the daemon as a message of points in time order; the
// answer is decoded as it streams in within bounds (internal/history's
// decoder). The windows of successive evaluations do not overlap, and a
// series' last time delivered is kept besides, so that no sample is
// handed over twice while the daemon runs. The first evaluation after
// start reads back Lookback: what a series restored from its checkpoint
// has already learned is refused there as out of order (the pipeline
// learns no point not after its last), the rest fills the gap.
package promql

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"

	"github.com/forecastd/forecastd/internal/history"
	"github.com/forecastd/forecastd/internal/retry"
	"github.com/forecastd/forecastd/pipeline"
	"github.com/forecastd/forecastd/sources"
)

// Options are what the daemon gives a Source beside its Config.
type Options struct {
	// Deliver takes each message of points, on the Source's goroutine,
	// with Ctx (required).
	Deliver func(ctx context.Context, m *sources.Message)
	Ctx     context.Context
	// MaxKeyLen bounds a series key (0: sources.DefaultMaxKeyLen).
	MaxKeyLen int
	// Client sends the queries (nil: a client of its own); Logger logs
	// (nil: none); Now is the clock (nil: time.Now).
	Client *http.Client
	Logger *slog.Logger
	Now    func() time.Time
}

// Stats are a Source's counters, totals since start.
type Stats struct {
	// Queries counts query_range requests, Failures the failed ones by
	// class (history.FailureClasses).
	Queries  uint64
	Failures map[string]uint64
	// Points counts the samples delivered; Refused the series of
	// answers left out for a key beyond max_key_len; Duplicates the
	// samples not after their series' last delivered.
	Points, Refused, Duplicates uint64
}

// Source evaluates its Config's queries every step on one goroutine,
// started by Start and stopped by StopIntake.
type Source struct {
	cfg    Config
	opt    Options
	log    *slog.Logger
	stop   chan struct{}
	done   chan struct{}
	cancel context.CancelFunc

	queries, points, refused, dups atomic.Uint64
	fails                          [6]atomic.Uint64
	logs                           [7]*rate.Limiter // by class, then refusals
}

// logEvery is how often a repeated failure is logged.
const logEvery = time.Minute

// New validates cfg and returns a Source, not started.
func New(cfg Config, opt Options) (*Source, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("promql: %w", err)
	}
	cfg = cfg.WithDefaults()
	if opt.Client == nil {
		opt.Client = &http.Client{}
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	if opt.MaxKeyLen <= 0 {
		opt.MaxKeyLen = sources.DefaultMaxKeyLen
	}
	if opt.Ctx == nil {
		opt.Ctx = context.Background()
	}
	log := opt.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Source{cfg: cfg, opt: opt, log: log.With("component", "sources.promql", "url", cfg.URL),
		stop: make(chan struct{}), done: make(chan struct{})}
	for i := range s.logs {
		s.logs[i] = retry.Every(logEvery)
	}
	return s, nil
}

// Start starts the evaluations.
func (s *Source) Start() {
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	go s.run(ctx)
}

// StopIntake stops the evaluations (a query in flight is abandoned) and
// returns once the goroutine has exited, its last delivery made, or ctx
// ends.
func (s *Source) StopIntake(ctx context.Context) error {
	select {
	case <-s.stop:
	default:
		close(s.stop)
		if s.cancel != nil {
			s.cancel()
		} else {
			close(s.done) // never started
		}
	}
	select {
	case <-s.done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("promql: stopping: %w", ctx.Err())
	}
}

// Stats returns the counters.
func (s *Source) Stats() Stats {
	st := Stats{Queries: s.queries.Load(), Points: s.points.Load(), Refused: s.refused.Load(), Duplicates: s.dups.Load(),
		Failures: make(map[string]uint64, len(history.FailureClasses))}
	for i, c := range history.FailureClasses {
		st.Failures[c] = s.fails[i].Load()
	}
	return st
}

// queryState is what a query's evaluations remember: the last time
// evaluated, and each series' last sample delivered (the series of the
// last answer only, bounded by max_series).
type queryState struct {
	done time.Time
	last map[string]time.Time
}

// run evaluates every query at each step, at the step's end plus Lag; a
// failed evaluation is retried with back-off within the step, its
// window growing to cover what it missed.
func (s *Source) run(ctx context.Context) {
	defer close(s.done)
	step := s.cfg.Step.D
	st := make([]queryState, len(s.cfg.Queries))
	bo := retry.Backoff(time.Second, max(step/2, time.Second), 0.2)
	for {
		end := evalTime(s.opt.Now().Add(-s.cfg.Lag.D), step)
		failed := false
		for i := range st {
			if ctx.Err() != nil {
				return
			}
			if err := s.evaluate(ctx, i, &st[i], end); err != nil {
				failed = true
			}
		}
		wait := end.Add(step + s.cfg.Lag.D).Sub(s.opt.Now())
		if failed {
			wait = min(wait, bo.NextBackOff())
		} else {
			bo.Reset()
		}
		if !retry.Sleep(ctx, max(wait, 0)) {
			return
		}
	}
}

// evalTime is t rounded down to a multiple of step since the Unix epoch
// (the buckets' alignment, pipeline.Buckets), in milliseconds.
func evalTime(t time.Time, step time.Duration) time.Time {
	ms, st := t.UnixMilli(), step.Milliseconds()
	return time.UnixMilli(ms - ((ms%st)+st)%st).UTC()
}

// evaluate runs query i over the steps after st.done up to end and
// delivers each series' new samples.
func (s *Source) evaluate(ctx context.Context, i int, st *queryState, end time.Time) error {
	step := s.cfg.Step.D
	start := st.done.Add(step)
	if st.done.IsZero() {
		start = end.Add(-s.cfg.Lookback.D / step * step)
	}
	if start.After(end) {
		return nil
	}
	if n := end.Sub(start) / step; n >= maxSteps {
		start = end.Add(-(maxSteps - 1) * step)
	}
	qctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout.D)
	res, class, err := history.QueryRange(qctx, s.opt.Client, history.PromRange{URL: s.cfg.URL, Token: s.cfg.Token,
		Expr: s.cfg.Queries[i], Start: start, End: end, Step: step}, s.limits(start, end))
	cancel()
	s.queries.Add(1)
	if err != nil {
		if ctx.Err() == nil {
			s.fail(class, i, err)
		}
		return err
	}
	last := make(map[string]time.Time, len(res))
	for _, r := range res {
		key, name, tags := Key(r.Labels)
		if err := s.checkKey(key); err != nil {
			s.refused.Add(1)
			if s.logs[len(s.logs)-1].Allow() {
				s.log.Warn("series refused", "query", s.cfg.Queries[i], "refused", s.refused.Load(), "err", err)
			}
			continue
		}
		prev, seen := st.last[key]
		pts := make([]sources.KeyedPoint, 0, len(r.Points))
		for _, p := range r.Points {
			if seen && !p.Time.After(prev) {
				s.dups.Add(1)
				continue
			}
			prev, seen = p.Time, true
			pts = append(pts, sources.KeyedPoint{Key: key, Time: p.Time, Value: p.Value, Measurement: name, Tags: tags})
		}
		if seen {
			last[key] = prev
		}
		if len(pts) > 0 {
			s.points.Add(uint64(len(pts)))
			s.opt.Deliver(s.opt.Ctx, sources.NewMessage(s.cfg.Subject, pts))
		}
	}
	st.done, st.last = end, last
	return nil
}

// limits are the decoder's bounds of an answer from start to end.
func (s *Source) limits(start, end time.Time) history.PromLimits {
	steps := int(end.Sub(start)/s.cfg.Step.D) + 1
	return history.PromLimits{MaxBytes: int64(s.cfg.MaxBytes), MaxSeries: s.cfg.MaxSeries, MaxPoints: s.cfg.MaxSeries * steps,
		MaxLabels: s.cfg.MaxLabels, MaxLabelLength: s.cfg.MaxLabelLength}
}

// checkKey returns why key cannot be a series', or nil.
func (s *Source) checkKey(key string) error {
	if len(key) > s.opt.MaxKeyLen {
		return fmt.Errorf("series key of %d bytes, over max_key_len (%d): %.64s…", len(key), s.opt.MaxKeyLen, key)
	}
	return pipeline.CheckKey(key)
}

// fail counts a failed query and logs its class at most once a minute.
func (s *Source) fail(class string, query int, err error) {
	c := max(0, slices.Index(history.FailureClasses, class))
	s.fails[c].Add(1)
	if s.logs[c].Allow() {
		s.log.Warn("query failed; retried", "class", class, "failures", s.fails[c].Load(),
			"query", s.cfg.Queries[query], "err", err)
	}
}

// Key returns the series key of a result's labels, sorted by name:
// name{label="value",…} in PromQL's notation (the labels but __name__,
// each value a quoted string, a name outside [a-zA-Z_][a-zA-Z0-9_]*
// quoted too; a metric name outside PromQL's syntax is a label
// __name__ among them), with the metric's name and the other labels, the
// series' tags (shared with labels).
func Key(labels []pipeline.Tag) (key, name string, tags []pipeline.Tag) {
	tags = labels
	if i := slices.IndexFunc(labels, func(t pipeline.Tag) bool { return t.Key == "__name__" }); i >= 0 {
		name = labels[i].Value
		tags = slices.Delete(slices.Clone(labels), i, i+1)
	}
	b := make([]byte, 0, 64)
	ls := tags
	if plainName(name, true) || name == "" {
		b = append(b, name...)
	} else {
		ls = labels // __name__ among them, quoted
	}
	b = append(b, '{')
	for i, t := range ls {
		if i > 0 {
			b = append(b, ',')
		}
		if plainName(t.Key, false) {
			b = append(b, t.Key...)
		} else {
			b = strconv.AppendQuote(b, t.Key)
		}
		b = append(b, '=')
		b = strconv.AppendQuote(b, t.Value)
	}
	return string(append(b, '}')), name, tags
}

// plainName reports whether s is a label name (or, with metric, a
// metric name, ':' allowed) that PromQL takes unquoted.
func plainName(s string, metric bool) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9' || metric && c == ':') {
			return false
		}
	}
	return s != ""
}
