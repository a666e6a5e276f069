package sinks

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"net/http"
	"sync"
	"time"

	influxdb2 "github.com/influxdata/influxdb-client-go/v2"
	"github.com/influxdata/influxdb-client-go/v2/api"
	ihttp "github.com/influxdata/influxdb-client-go/v2/api/http"
	"github.com/influxdata/influxdb-client-go/v2/api/write"
)

// Defaults of InfluxConfig's zero fields.
const (
	DefaultMeasurement       = "forecast"
	DefaultMetricBatchSize   = 1000
	DefaultMetricBufferLimit = 10000
	DefaultFlushInterval     = 10 * time.Second
	DefaultInfluxTimeout     = 5 * time.Second
	DefaultRetryInterval     = time.Second
	DefaultMaxRetryInterval  = time.Minute
)

// InfluxConfig configures an [Influx] sink; the keys are Telegraf's
// (outputs.influxdb_v2). Zero fields take the defaults named.
type InfluxConfig struct {
	// URL of the InfluxDB server, e.g. "http://127.0.0.1:8086". Required.
	URL string
	// Token: an InfluxDB 2.x API token; for InfluxDB 1.8+,
	// "user:password", or empty without authentication.
	Token string
	// Organization: the 2.x organization; ignored by 1.8.
	Organization string
	// Bucket: the 2.x bucket; for 1.8, "database/retention-policy" or
	// "database" (its default retention policy). Required.
	Bucket string
	// Measurement of the points (default DefaultMeasurement, "forecast").
	Measurement string
	// MetricBatchSize is the most records one write carries (default
	// 1000). A write starts as soon as this many records wait.
	MetricBatchSize int
	// MetricBufferLimit is the most records that wait to be written
	// (default 10000), not counting the batch being written; when the
	// buffer is full the oldest record is dropped and counted.
	MetricBufferLimit int
	// FlushInterval: records waiting are written at least this often
	// (default 10s).
	FlushInterval time.Duration
	// Timeout of one write request (default 5s).
	Timeout time.Duration
	// RetryInterval is the first wait before retrying a failed write
	// (default 1s); each further failure doubles it, up to
	// MaxRetryInterval (default 1m). A Retry-After from the server is
	// honoured within the same bound. Waits have ±20 % jitter.
	RetryInterval, MaxRetryInterval time.Duration
	// Logger receives write failures and recoveries (Warn/Info) and drops
	// (Warn), never a line per record; nil discards.
	Logger *slog.Logger
}

// Validate returns every problem of c at once, each naming its key.
func (c *InfluxConfig) Validate() error {
	var errs []error
	if c.URL == "" {
		errs = append(errs, errors.New("url: required"))
	}
	if c.Bucket == "" {
		errs = append(errs, errors.New("bucket: required"))
	}
	for _, v := range []struct {
		key string
		n   int64
	}{
		{"metric_batch_size", int64(c.MetricBatchSize)},
		{"metric_buffer_limit", int64(c.MetricBufferLimit)},
		{"flush_interval", int64(c.FlushInterval)},
		{"timeout", int64(c.Timeout)},
		{"retry_interval", int64(c.RetryInterval)},
		{"max_retry_interval", int64(c.MaxRetryInterval)},
	} {
		if v.n < 0 {
			errs = append(errs, fmt.Errorf("%s: negative", v.key))
		}
	}
	return errors.Join(errs...)
}

func (c InfluxConfig) withDefaults() InfluxConfig {
	def := func(v *time.Duration, d time.Duration) {
		if *v == 0 {
			*v = d
		}
	}
	if c.Measurement == "" {
		c.Measurement = DefaultMeasurement
	}
	if c.MetricBatchSize == 0 {
		c.MetricBatchSize = DefaultMetricBatchSize
	}
	if c.MetricBufferLimit == 0 {
		c.MetricBufferLimit = DefaultMetricBufferLimit
	}
	def(&c.FlushInterval, DefaultFlushInterval)
	def(&c.Timeout, DefaultInfluxTimeout)
	def(&c.RetryInterval, DefaultRetryInterval)
	def(&c.MaxRetryInterval, DefaultMaxRetryInterval)
	if c.MaxRetryInterval < c.RetryInterval {
		c.MaxRetryInterval = c.RetryInterval
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

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
	// deadline expired.
	Dropped uint64
	// Rejected counts records in batches InfluxDB refused for good (a
	// 4xx status other than 429: bad data, unknown bucket, bad token);
	// they are not retried. With InfluxDB 1.x a "partial write" refuses
	// the batch's bad points only, but all its records count here.
	Rejected uint64
	// Invalid counts records with nothing to write (no finite value).
	Invalid uint64
	// Buffered is the number of records waiting, the batch being written
	// included.
	Buffered int
}

// Influx writes forecasts and outcomes to InfluxDB (1.8+ or 2.x) through
// influxdb-client-go's blocking write API, from a bounded buffer of its
// own, in batches, by one goroutine.
//
// Each forecast is a point at its target time:
//
//	forecast,model=aosvr,series=cpu yhat=0.42,yhat_lower=0.4,yhat_upper=0.44 1714564810000000000
//
// with tags series and model and the record's source tags (sorted; one
// named series or model, or with an empty key or value, is left out);
// yhat_lower and yhat_upper are left out while the forecast has no
// interval, and any non-finite value is left out. The outcome of that
// forecast is written to the same point (same measurement, tags and
// timestamp, the forecast's target time, even if the actual point came at
// another time), adding its fields:
//
//	forecast,model=aosvr,series=cpu error=0.01,y=0.43 1714564810000000000
//
// where error = y − yhat; so a query of the point returns yhat, its
// bounds, y and error together.
//
// Write only buffers. A write that fails for want of a server (network
// error, 5xx, 429) is retried with exponential back-off for ever, the
// same batch, in order, while new records wait in the bounded buffer
// (MetricBufferLimit), whose oldest are dropped when it overflows, each
// counted. A write refused for good (another 4xx) is counted and its
// batch discarded. Every write error is counted in InfluxStats.
//
// The choice of the blocking API over the client's non-blocking one: the
// latter keeps its own retry queue, whose overflow drops whole batches and
// is not reported per record; with our own buffer the drop count is exact.
type Influx struct {
	cfg    InfluxConfig
	client influxdb2.Client
	api    api.WriteAPIBlocking
	log    *slog.Logger

	mu       sync.Mutex
	buf      ring
	inflight int
	closed   bool
	stats    InfluxStats // Buffered unused; guarded by mu

	kick     chan struct{} // a full batch waits
	stop     chan struct{} // closed by Close: flush, then exit
	runCtx   context.Context
	abort    context.CancelFunc // Close's deadline expired: give up
	done     chan struct{}
	lastDrop uint64 // drops last logged; flusher only
}

// NewInflux validates cfg, and returns a sink writing to the InfluxDB it
// names, with its flushing goroutine started; it does not contact the
// server. Close it.
func NewInflux(cfg InfluxConfig) (*Influx, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("sinks: influxdb: %w", err)
	}
	cfg = cfg.withDefaults()
	opts := influxdb2.DefaultOptions().
		SetPrecision(time.Nanosecond).
		SetHTTPRequestTimeout(uint(max(1, (cfg.Timeout+time.Second-1)/time.Second)))
	client := influxdb2.NewClientWithOptions(cfg.URL, cfg.Token, opts)
	s := &Influx{
		cfg:    cfg,
		client: client,
		api:    client.WriteAPIBlocking(cfg.Organization, cfg.Bucket),
		log:    cfg.Logger.With("component", "sinks.influxdb"),
		buf:    newRing(cfg.MetricBufferLimit),
		kick:   make(chan struct{}, 1),
		stop:   make(chan struct{}),
		done:   make(chan struct{}),
	}
	s.runCtx, s.abort = context.WithCancel(context.Background())
	go s.run()
	return s, nil
}

// Write buffers r for writing; it never blocks on the network. If the
// buffer is full the oldest record is dropped (and counted). It returns
// ErrClosed after Close, and an error for a record of no valid Kind.
func (s *Influx) Write(r Record) error {
	if r.Kind != KindForecast && r.Kind != KindOutcome {
		return fmt.Errorf("sinks: influxdb: record of kind %d", r.Kind)
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ErrClosed
	}
	if s.buf.push(r) {
		s.stats.Dropped++
	}
	ready := s.buf.len() >= s.cfg.MetricBatchSize
	s.mu.Unlock()
	if ready {
		select {
		case s.kick <- struct{}{}:
		default:
		}
	}
	return nil
}

// Stats returns the sink's counters.
func (s *Influx) Stats() InfluxStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.stats
	st.Buffered = s.buf.len() + s.inflight
	return st
}

// Close stops the sink (Write then returns ErrClosed) and writes what is
// buffered, retrying as usual, until the buffer is empty or ctx is done;
// then records not written are counted as dropped. It returns after the
// sink's goroutine has exited: nil if everything buffered was written, or
// an error counting what was lost (wrapping ctx's error).
func (s *Influx) Close(ctx context.Context) error {
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
	s.client.Close()
	s.mu.Lock()
	lost := s.stats.Dropped - before
	s.mu.Unlock()
	if lost > 0 || err != nil {
		return fmt.Errorf("sinks: influxdb: close: %d records not written: %w", lost, err)
	}
	return nil
}

// run is the flushing goroutine: it writes full batches as soon as they
// are, everything buffered every FlushInterval, and everything it can at
// Close.
func (s *Influx) run() {
	defer close(s.done)
	tick := time.NewTicker(s.cfg.FlushInterval)
	defer tick.Stop()
	batch := make([]Record, 0, s.cfg.MetricBatchSize)
	points := make([]*write.Point, 0, s.cfg.MetricBatchSize)
	for {
		all, closing := false, false
		select {
		case <-s.stop:
			all, closing = true, true
		case <-tick.C:
			all = true
		case <-s.kick:
		}
		for s.runCtx.Err() == nil {
			s.mu.Lock()
			n := s.buf.len()
			if n == 0 || (!all && n < s.cfg.MetricBatchSize) {
				s.mu.Unlock()
				break
			}
			batch = s.buf.pop(batch[:0], s.cfg.MetricBatchSize)
			s.inflight = len(batch)
			s.mu.Unlock()
			points = s.writeBatch(batch, points[:0])
			clear(batch)
			clear(points)
		}
		s.logDrops()
		if closing || s.runCtx.Err() != nil {
			s.mu.Lock()
			s.stats.Dropped += uint64(s.buf.len() + s.inflight)
			s.buf.pop(nil, s.buf.len())
			s.inflight = 0
			s.mu.Unlock()
			s.logDrops()
			return
		}
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

// writeBatch writes batch, retrying while the failure is transient, until
// it is written, refused for good, or the sink is aborted (the batch then
// stays in flight, for run to count as dropped). It returns points, the
// scratch slice of the batch's points, for reuse.
func (s *Influx) writeBatch(batch []Record, points []*write.Point) []*write.Point {
	invalid := 0
	for i := range batch {
		if p := s.point(&batch[i]); p != nil {
			points = append(points, p)
		} else {
			invalid++
		}
	}
	s.mu.Lock()
	s.stats.Invalid += uint64(invalid)
	s.inflight -= invalid
	s.mu.Unlock()
	if len(points) == 0 {
		return points
	}

	wait := s.cfg.RetryInterval
	for attempt := 0; ; attempt++ {
		ctx, cancel := context.WithTimeout(s.runCtx, s.cfg.Timeout)
		err := s.api.WritePoint(ctx, points...)
		cancel()
		if err == nil {
			s.mu.Lock()
			s.stats.Written += uint64(len(points))
			s.inflight = 0
			s.mu.Unlock()
			if attempt > 0 {
				s.log.Info("write recovered", "attempts", attempt+1)
			}
			return points
		}
		if s.runCtx.Err() != nil {
			return points // aborted by Close; not a write error
		}
		retry, after := classify(err)
		s.mu.Lock()
		s.stats.WriteErrors++
		if !retry {
			s.stats.Rejected += uint64(len(points))
			s.inflight = 0
		}
		s.mu.Unlock()
		if !retry {
			s.log.Warn("write refused; batch discarded", "records", len(points), "err", err)
			return points
		}
		if attempt == 0 {
			s.log.Warn("write failed; retrying", "records", len(points), "err", err)
		}
		s.logDrops()
		d := wait
		if after > d {
			d = after
		}
		d = min(d, s.cfg.MaxRetryInterval)
		d = time.Duration(float64(d) * (0.8 + 0.4*rand.Float64()))
		wait = min(2*wait, s.cfg.MaxRetryInterval)
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-s.runCtx.Done():
			t.Stop()
			return points
		}
	}
}

// classify tells whether a write error is transient (no response, 429,
// 5xx) and the server's Retry-After. An error from the client before any
// request (encoding) is not.
func classify(err error) (retry bool, after time.Duration) {
	var he *ihttp.Error
	if !errors.As(err, &he) {
		return false, 0
	}
	after = time.Duration(he.RetryAfter) * time.Second
	switch c := he.StatusCode; {
	case c == 0, c == http.StatusTooManyRequests, c >= 500:
		return true, after
	}
	return false, 0
}

// point returns the InfluxDB point of r, or nil if r has no finite value.
func (s *Influx) point(r *Record) *write.Point {
	p := write.NewPointWithMeasurement(s.cfg.Measurement)
	nf := 0
	field := func(k string, v float64) {
		if !math.IsNaN(v) && !math.IsInf(v, 0) {
			p.AddField(k, v)
			nf++
		}
	}
	var t time.Time
	switch r.Kind {
	case KindForecast:
		f := &r.Forecast
		t = f.Time
		field("yhat", f.Value)
		if f.HasInterval() {
			field("yhat_lower", f.Lower)
			field("yhat_upper", f.Upper)
		}
	case KindOutcome:
		o := &r.Outcome
		t = o.Forecast.Time
		field("y", o.Actual)
		field("error", o.Actual-o.Forecast.Value)
	}
	if nf == 0 {
		return nil
	}
	p.AddTag("series", r.Series)
	p.AddTag("model", r.Model)
	for _, tg := range r.Tags {
		if tg.Key != "series" && tg.Key != "model" {
			p.AddTag(tg.Key, tg.Value)
		}
	}
	p.SortTags()
	p.SortFields()
	p.SetTime(t)
	return p
}
