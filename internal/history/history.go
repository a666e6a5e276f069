// Package history reads a series' past from InfluxDB, for the warm start
// of new series (runner.History) and for `forecastd backtest
// --influx_url`.
//
// # Query API
//
// It queries InfluxQL on the v1 `/query` endpoint with net/http. That
// endpoint is the one every InfluxDB serves: 1.x natively, 2.x through its
// v1 compatibility API (a DBRP mapping of the bucket), 3.x (Core and
// Enterprise) natively; Flux is not served by 3.x and SQL not by 1.x or
// 2.x. influxdb-client-go/v2, which the InfluxDB sink writes with, queries
// Flux only (/api/v2/query), so it is not used here. InfluxQL's GROUP BY
// time(step) aggregates on the server, in the same epoch-aligned buckets
// as pipeline.Buckets, so only one point per bucket crosses the network.
//
// Everything the server returns is bounded before it is kept: the
// response's bytes (Config.MaxBytes), read as a stream and never held
// whole; the points kept (Config.MaxPoints, the newest); and what decoding
// holds beside them, a string, a number and one series' tags at a time
// (DecodeMemory), whatever the shape of the JSON.
package history

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/time/rate"

	"github.com/forecastd/forecastd/internal/retry"
	"github.com/forecastd/forecastd/pipeline"
	"github.com/forecastd/forecastd/runner"
)

// Defaults of Config's zero fields.
const (
	DefaultLookback    = 14 * 24 * time.Hour
	DefaultMaxPoints   = 200_000 // 23 days at 10 s
	DefaultMeasurement = "forecast"
	DefaultField       = "y"
	DefaultSeriesTag   = "series_key" // the InfluxDB sink's tag (sinks.TagSeries)
	// bytesPerPoint bounds a response's size from MaxPoints: a row
	// "[1400000000000000000,-1.2345678901234567e+300]," is 48 bytes.
	bytesPerPoint = 64
	// logEvery is the least time between two log lines of one failure
	// class.
	logEvery = time.Minute
)

// Failure classes, the keys of Stats.Failures.
const (
	FailUnreachable = "unreachable" // no connection, or it broke
	FailTimeout     = "timeout"     // the query's deadline passed
	FailStatus      = "status"      // an HTTP status not 2xx (auth, missing database…)
	FailQuery       = "query"       // InfluxQL error in the response
	FailDecode      = "decode"      // the response is not InfluxDB's JSON
	FailTooLarge    = "too_large"   // the response exceeds MaxBytes
)

// FailureClasses are the keys of Stats.Failures, in order.
var FailureClasses = []string{FailUnreachable, FailTimeout, FailStatus, FailQuery, FailDecode, FailTooLarge}

// Config configures an Influx. Zero fields take the defaults named.
type Config struct {
	// URL of the InfluxDB server, e.g. "http://127.0.0.1:8086". Required.
	URL string
	// Token: "user:password" for 1.x (HTTP basic authentication), else a
	// 2.x or 3.x token (Authorization: Token); empty: none.
	Token string
	// Database and RetentionPolicy ("" the default one) queried.
	// Required: Database.
	Database, RetentionPolicy string
	// Lookback is how far before the first live point the past is read
	// (default DefaultLookback, 14 days).
	Lookback time.Duration
	// MaxPoints bounds the points of one series kept, the newest (default
	// DefaultMaxPoints); MaxBytes a response's body (default
	// MaxPoints·64 bytes plus 64 KiB).
	MaxPoints int
	MaxBytes  int64
	// Measurement, Field and SeriesTag locate the past of a series that
	// did not come as line protocol (json and value input): the values
	// of Field in Measurement whose tag SeriesTag is the series key
	// (default forecastd's own output: "forecast", "y", "series_key";
	// "series" with [output.influxdb] legacy_tag_names). A
	// line-protocol series is read from its own measurement, field and
	// tags, as Telegraf wrote them.
	Measurement, Field, SeriesTag string
	// Client makes the requests (default one with no timeout of its own:
	// the context bounds each query).
	Client *http.Client
	// Logger receives one line per failure class at most once a minute;
	// nil discards.
	Logger *slog.Logger
}

// Stats counts the queries, totals since New.
type Stats struct {
	// Queries counts the queries sent; Points the points returned.
	Queries, Points uint64
	// Failures counts failed queries by class (FailureClasses).
	Failures map[string]uint64
}

// Influx reads series' past from InfluxDB. Safe for concurrent use.
type Influx struct {
	cfg     Config
	log     *slog.Logger
	queries atomic.Uint64
	points  atomic.Uint64
	fails   [6]atomic.Uint64 // by FailureClasses
	logs    [6]*rate.Limiter // one per failure class, once per logEvery
}

var _ runner.History = (*Influx)(nil)

// New validates cfg and returns an Influx.
func New(cfg Config) (*Influx, error) {
	var errs []error
	if u, err := url.Parse(cfg.URL); cfg.URL == "" || err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		errs = append(errs, fmt.Errorf("url: want http(s)://HOST:PORT, got %q", cfg.URL))
	}
	if cfg.Database == "" {
		errs = append(errs, errors.New("database: required"))
	}
	if cfg.Lookback < 0 || cfg.MaxPoints < 0 || cfg.MaxBytes < 0 {
		errs = append(errs, errors.New("lookback, max_points and max_bytes must not be negative"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if cfg.Lookback == 0 {
		cfg.Lookback = DefaultLookback
	}
	if cfg.MaxPoints == 0 {
		cfg.MaxPoints = DefaultMaxPoints
	}
	if cfg.MaxBytes == 0 {
		cfg.MaxBytes = int64(cfg.MaxPoints)*bytesPerPoint + 64<<10
	}
	if cfg.Measurement == "" {
		cfg.Measurement = DefaultMeasurement
	}
	if cfg.Field == "" {
		cfg.Field = DefaultField
	}
	if cfg.SeriesTag == "" {
		cfg.SeriesTag = DefaultSeriesTag
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{}
	}
	cfg.URL = strings.TrimRight(cfg.URL, "/")
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	h := &Influx{cfg: cfg, log: log.With("component", "history")}
	for i := range h.logs {
		h.logs[i] = retry.Every(logEvery)
	}
	return h, nil
}

// Stats returns the counters.
func (h *Influx) Stats() Stats {
	st := Stats{Queries: h.queries.Load(), Points: h.points.Load(), Failures: make(map[string]uint64, len(FailureClasses))}
	for i, c := range FailureClasses {
		st.Failures[c] = h.fails[i].Load()
	}
	return st
}

// Load implements runner.History: the past of req's series over
// Lookback before req.Until.
func (h *Influx) Load(ctx context.Context, req runner.HistoryRequest) ([]pipeline.Point, error) {
	return h.Read(ctx, Request{Origin: req.Origin, Key: req.Base, Step: req.Config.Step,
		Aggregate: req.Config.Aggregate, Start: req.Until.Add(-h.cfg.Lookback), End: req.Until})
}

// Request is one series' past: [Start, End) at Step (0: raw points).
type Request struct {
	// Origin locates a line-protocol series (Measurement non-empty);
	// else Key is the series' key, read from Config.Measurement's
	// Config.Field tagged Config.SeriesTag = Key.
	Origin runner.Origin
	Key    string
	// Step > 0 aggregates on the server by Aggregate into buckets of
	// Step; 0 reads the raw points.
	Step       time.Duration
	Aggregate  pipeline.Aggregate
	Start, End time.Time
}

// Read returns the points of r in time order, at most MaxPoints (the
// newest), the values of a bucket dated by its start.
func (h *Influx) Read(ctx context.Context, r Request) ([]pipeline.Point, error) {
	q, want := h.Query(r)
	h.queries.Add(1)
	pts, class, err := h.run(ctx, q, want)
	if err != nil {
		h.fail(class, err)
		return nil, fmt.Errorf("history: %w", err)
	}
	h.points.Add(uint64(len(pts)))
	return pts, nil
}

// Query returns the InfluxQL statement of r, and the tags a result series
// must have exactly (a line-protocol series: its tags, others "" or
// absent), nil for a series read by its key.
func (h *Influx) Query(r Request) (string, map[string]string) {
	measurement, field := h.cfg.Measurement, h.cfg.Field
	var where []string
	var want map[string]string
	if r.Origin.Measurement != "" {
		measurement, field = r.Origin.Measurement, r.Origin.Field
		want = make(map[string]string, len(r.Origin.Tags))
		for _, t := range r.Origin.Tags {
			where = append(where, ident(t.Key)+" = "+literal(t.Value))
			want[t.Key] = t.Value
		}
	} else {
		// forecastd's own records: the series' actuals, not those of a
		// resolution's (tag step) or of a later step of a path (tag
		// horizon above 1). A measurement without these tags matches
		// them all: an absent tag is ''.
		where = append(where, ident(h.cfg.SeriesTag)+" = "+literal(r.Key),
			`"step" = ''`, `("horizon" = '' OR "horizon" = '001' OR "horizon" = '1')`)
	}
	where = append(where, fmt.Sprintf("time >= %d AND time < %d", r.Start.UnixNano(), r.End.UnixNano()))
	from := ident(h.cfg.Database) + "." + ident(h.cfg.RetentionPolicy) + "." + ident(measurement)
	if h.cfg.RetentionPolicy == "" {
		from = ident(h.cfg.Database) + ".." + ident(measurement)
	}
	sel := ident(field)
	group := ""
	if r.Step > 0 {
		sel = aggregate(r.Aggregate, sel)
		group = fmt.Sprintf("time(%dns)", r.Step.Nanoseconds())
	}
	if want != nil {
		group = strings.TrimPrefix(group+", *", ", ")
	}
	q := "SELECT " + sel + " FROM " + from + " WHERE " + strings.Join(where, " AND ")
	if group != "" {
		q += " GROUP BY " + group
	}
	if r.Step > 0 {
		q += " fill(none)"
	}
	q += " ORDER BY time DESC LIMIT " + strconv.Itoa(h.cfg.MaxPoints)
	return q, want
}

// aggregate is InfluxQL's function of a pipeline.Aggregate over sel. A
// rate is the non-negative per-second derivative of the buckets' last
// values: the increase from the previous bucket's last point, as
// pipeline.Buckets counts it but for a counter reset, which it drops.
func aggregate(a pipeline.Aggregate, sel string) string {
	switch a {
	case pipeline.AggMin:
		return "min(" + sel + ")"
	case pipeline.AggMax:
		return "max(" + sel + ")"
	case pipeline.AggLast:
		return "last(" + sel + ")"
	case pipeline.AggSum:
		return "sum(" + sel + ")"
	case pipeline.AggCount:
		return "count(" + sel + ")"
	case pipeline.AggRate:
		return "non_negative_derivative(last(" + sel + "), 1s)"
	}
	return "mean(" + sel + ")"
}

// ident quotes an InfluxQL identifier.
func ident(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

// literal quotes an InfluxQL string literal.
func literal(s string) string {
	return `'` + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + `'`
}

// run sends q and decodes the points of the result series whose tags are
// want (any, if nil), as the body streams in (decodeStream).
func (h *Influx) run(ctx context.Context, q string, want map[string]string) ([]pipeline.Point, string, error) {
	v := url.Values{"db": {h.cfg.Database}, "q": {q}, "epoch": {"ns"}}
	if h.cfg.RetentionPolicy != "" {
		v.Set("rp", h.cfg.RetentionPolicy)
	}
	// GET: a SELECT is idempotent, so net/http retries it on a kept-alive
	// connection the server had closed (a POST fails there).
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, h.cfg.URL+"/query?"+v.Encode(), nil)
	if err != nil {
		return nil, FailUnreachable, err
	}
	if tok := h.cfg.Token; tok != "" {
		if u, p, ok := strings.Cut(tok, ":"); ok {
			req.SetBasicAuth(u, p)
		} else {
			req.Header.Set("Authorization", "Token "+tok)
		}
	}
	resp, err := h.cfg.Client.Do(req)
	if err != nil {
		return nil, netClass(ctx, err), err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		body, err := io.ReadAll(io.LimitReader(resp.Body, statusBody))
		if err != nil {
			return nil, netClass(ctx, err), err
		}
		return nil, FailStatus, fmt.Errorf("%s: %s", resp.Status, strings.TrimSpace(string(body)))
	}
	pts, class, err := decodeStream(resp.Body, h.cfg.MaxBytes, want, h.cfg.MaxPoints)
	if err != nil && class == FailDecode && (ctx.Err() != nil || brokenBody(err)) {
		class = netClass(ctx, err) // the body was cut, not malformed
	}
	return pts, class, err
}

// statusBody bounds what is read, and said, of an answer with an error
// status.
const statusBody = 200

// brokenBody reports whether err came from reading the connection (it
// broke, or ended before the body's length) rather than from what it
// carried.
func brokenBody(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET)
}

// sameTags reports whether a result series' tags (GROUP BY *: every tag
// key of the measurement, "" where the series has none) are exactly want.
func sameTags(got, want map[string]string) bool {
	if want == nil {
		return true
	}
	for k, v := range got {
		if want[k] != v {
			return false
		}
	}
	for k, v := range want {
		if got[k] != v {
			return false
		}
	}
	return true
}

// netClass classifies a transport error.
func netClass(ctx context.Context, err error) string {
	var ne net.Error
	if ctx.Err() != nil || errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout() {
		return FailTimeout
	}
	return FailUnreachable
}

// fail counts a failure and logs its class at most once a minute.
func (h *Influx) fail(class string, err error) {
	i := slices.Index(FailureClasses, class)
	if i < 0 {
		i = 0
	}
	h.fails[i].Add(1)
	if h.logs[i].Allow() {
		h.log.Warn("history not read; the series starts cold", "class", class, "failures", h.fails[i].Load(), "err", err, "fix", failFix[FailureClasses[i]])
	}
}

// failFix is what to do about a failure of each class.
var failFix = map[string]string{
	FailUnreachable: "check [history] url (or [output.influxdb] url), and that InfluxDB runs there",
	FailTimeout:     "raise [history] timeout, or lower max_points or lookback",
	FailStatus:      "check [history] token and bucket against the server's answer",
	FailQuery:       "check [history] bucket, measurement and field",
	FailDecode:      "check that [history] url is InfluxDB's: its /query answered something else",
	FailTooLarge:    "lower [history] max_points, or look at what the server answers: it passed a bound",
}
