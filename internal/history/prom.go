package history

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"text/template"
	"time"

	"golang.org/x/time/rate"

	"github.com/forecastd/forecastd/internal/retry"
	"github.com/forecastd/forecastd/pipeline"
	"github.com/forecastd/forecastd/runner"
)

// DefaultPromQuery is PromConfig.Query's default: a line-protocol series
// under the name Telegraf's Prometheus outputs give it
// (<measurement>_<field>, its tags as labels); another series, the
// actuals forecastd's Prometheus sink writes (forecastd_actual).
const DefaultPromQuery = `{{if .Metric}}{{.Metric}}{{.Matchers}}{{else}}forecastd_actual{series_key={{quote .Key}},step=""}{{end}}`

// maxPromSteps bounds the steps of one query_range: Prometheus refuses
// more than 11 000 points per series; a longer past is read in several.
const maxPromSteps = 10_000

// PromConfig configures a Prom reader.
type PromConfig struct {
	// URL is the server's base: http://HOST:9090 (Prometheus),
	// http://HOST:8428 (VictoriaMetrics). Required.
	URL string
	// Token: "user:password" (basic authentication), else a bearer
	// token; empty: none.
	Token string
	// Query is a text/template of the PromQL selector of a series' past
	// (default DefaultPromQuery), given a PromSeries; it must select one
	// series.
	Query string
	// Lookback, MaxPoints, MaxBytes, Client and Logger as Config's.
	Lookback  time.Duration
	MaxPoints int
	MaxBytes  int64
	Client    *http.Client
	Logger    *slog.Logger
}

// PromSeries is what PromConfig.Query's template is given of a series.
type PromSeries struct {
	// Key is the series' key; Subject, Measurement and Field where it
	// came from (the last two for line protocol only).
	Key, Subject, Measurement, Field string
	// Metric is <measurement>_<field> in Prometheus' name syntax (Telegraf's
	// name), "" for a series not from line protocol.
	Metric string
	// Labels are its tags as label names and values; Matchers them as a
	// selector's braces ({host="a",region="eu"}; "" without tags).
	Labels   map[string]string
	Matchers string
}

// Prom reads series' past from Prometheus' HTTP API (or
// VictoriaMetrics'): the raw samples of the selector over Lookback (a
// range selector at /api/v1/query), or, at a step, one point per bucket
// from /api/v1/query_range, the selector aggregated over each bucket:
// avg_over_time for mean, min_, max_, last_, sum_ and count_over_time,
// and for rate the non-negative per-second change of the buckets' last
// values (an approximation of pipeline's rate, which divides by the
// time between the points; it differs from the InfluxDB reader's
// non_negative_derivative too, so warm start of a rate is the one
// reading not equal across the two). Each evaluation is at the bucket's end less 1 ms, so that its
// window (t−step, t] is the bucket [start, start+step) at Prometheus'
// millisecond resolution, dated by its start: the buckets of
// pipeline.Buckets and of the InfluxDB reader. Safe for concurrent use.
type Prom struct {
	cfg     PromConfig
	tmpl    *template.Template
	log     *slog.Logger
	queries atomic.Uint64
	points  atomic.Uint64
	fails   [6]atomic.Uint64
	logs    [6]*rate.Limiter
}

var _ Reader = (*Prom)(nil)

// Reader is a source of series' past: an [Influx] or a [Prom].
type Reader interface {
	runner.History
	Stats() Stats
}

var _ Reader = (*Influx)(nil)

// ParsePromQuery parses a PromConfig.Query template.
func ParsePromQuery(q string) (*template.Template, error) {
	return template.New("query").Option("missingkey=zero").Funcs(template.FuncMap{"quote": promQuote}).Parse(q)
}

// NewProm validates cfg and returns a Prom.
func NewProm(cfg PromConfig) (*Prom, error) {
	var errs []error
	if u, err := url.Parse(cfg.URL); cfg.URL == "" || err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		errs = append(errs, fmt.Errorf("url: want http(s)://HOST:PORT, got %q", cfg.URL))
	}
	if cfg.Query == "" {
		cfg.Query = DefaultPromQuery
	}
	tmpl, err := ParsePromQuery(cfg.Query)
	if err != nil {
		errs = append(errs, fmt.Errorf("query: %w", err))
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
	if cfg.Client == nil {
		cfg.Client = &http.Client{}
	}
	cfg.URL = strings.TrimRight(cfg.URL, "/")
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	p := &Prom{cfg: cfg, tmpl: tmpl, log: log.With("component", "history")}
	for i := range p.logs {
		p.logs[i] = retry.Every(logEvery)
	}
	return p, nil
}

// Stats returns the counters.
func (p *Prom) Stats() Stats {
	st := Stats{Queries: p.queries.Load(), Points: p.points.Load(), Failures: make(map[string]uint64, len(FailureClasses))}
	for i, c := range FailureClasses {
		st.Failures[c] = p.fails[i].Load()
	}
	return st
}

// Load implements runner.History: the past of req's series over
// Lookback before req.Until.
func (p *Prom) Load(ctx context.Context, req runner.HistoryRequest) ([]pipeline.Point, error) {
	return p.Read(ctx, Request{Origin: req.Origin, Key: req.Base, Step: req.Config.Step,
		Aggregate: req.Config.Aggregate, Start: req.Until.Add(-p.cfg.Lookback), End: req.Until})
}

// Read returns the points of r in time order, at most MaxPoints (the
// newest), a bucket's dated by its start.
func (p *Prom) Read(ctx context.Context, r Request) ([]pipeline.Point, error) {
	sel, err := p.Selector(r)
	if err != nil {
		p.fail(FailQuery, err)
		return nil, fmt.Errorf("history: %w", err)
	}
	var pts []pipeline.Point
	for _, q := range p.queries4(sel, r) {
		p.queries.Add(1)
		got, class, err := p.run(ctx, q)
		if err != nil {
			p.fail(class, err)
			return nil, fmt.Errorf("history: %w", err)
		}
		if r.Step > 0 {
			for i := range got { // evaluated at the bucket's end less 1 ms
				got[i].Time = got[i].Time.Add(time.Millisecond - r.Step)
			}
		}
		pts = append(pts, got...)
	}
	if len(pts) > p.cfg.MaxPoints {
		pts = slices.Clone(pts[len(pts)-p.cfg.MaxPoints:])
	}
	p.points.Add(uint64(len(pts)))
	return pts, nil
}

// Selector returns the PromQL selector of r's series: Query's template
// executed on its PromSeries.
func (p *Prom) Selector(r Request) (string, error) {
	s := PromSeries{Key: r.Key, Subject: r.Origin.Subject, Measurement: r.Origin.Measurement, Field: r.Origin.Field,
		Labels: map[string]string{}}
	if s.Measurement != "" {
		s.Metric = promMetricName(s.Measurement + "_" + s.Field)
		if s.Field == "" { // a series pulled from Prometheus: its metric's name
			s.Metric = promMetricName(s.Measurement)
		}
		var m []string
		for _, t := range r.Origin.Tags {
			k := promMetricName(t.Key)
			s.Labels[k] = t.Value
			m = append(m, k+"="+promQuote(t.Value))
		}
		if len(m) > 0 {
			s.Matchers = "{" + strings.Join(m, ",") + "}"
		}
	}
	var b bytes.Buffer
	if err := p.tmpl.Execute(&b, s); err != nil {
		return "", fmt.Errorf("query template: %w", err)
	}
	return b.String(), nil
}

// promQuery is one request: an instant query at time (range: false) or
// a range query from start to end at step.
type promQuery struct {
	expr             string
	start, end, step time.Time
	every            time.Duration
	isRange          bool
}

// queries4 returns the requests of r's past by selector sel, oldest
// first: one instant query of the raw samples; at a step, query_range
// in pieces of at most maxPromSteps buckets.
func (p *Prom) queries4(sel string, r Request) []promQuery {
	if r.Step <= 0 {
		d := r.End.Sub(r.Start).Milliseconds()
		return []promQuery{{expr: fmt.Sprintf("%s[%dms]", sel, d), end: r.End.Add(-time.Millisecond)}}
	}
	expr := promAggregate(r.Aggregate, sel, r.Step.Milliseconds())
	// The first whole bucket at or after Start, the last before End.
	s := r.Step.Nanoseconds()
	first := (r.Start.UnixNano() + s - 1) / s * s
	if r.Start.UnixNano() < 0 {
		first = r.Start.UnixNano() / s * s
	}
	end := r.End.UnixNano() / s * s // buckets before End's
	var qs []promQuery
	for b := first; b < end; b += maxPromSteps * s {
		last := min(end, b+maxPromSteps*s) - s // the last bucket of this piece
		qs = append(qs, promQuery{expr: expr, isRange: true, every: r.Step,
			start: time.Unix(0, b+s).Add(-time.Millisecond), end: time.Unix(0, last+s).Add(-time.Millisecond)})
	}
	return qs
}

// promAggregate is the PromQL of a bucket of ms milliseconds of sel
// aggregated by a, at the bucket's end.
func promAggregate(a pipeline.Aggregate, sel string, ms int64) string {
	w := "[" + strconv.FormatInt(ms, 10) + "ms]"
	switch a {
	case pipeline.AggMin:
		return "min_over_time(" + sel + w + ")"
	case pipeline.AggMax:
		return "max_over_time(" + sel + w + ")"
	case pipeline.AggLast:
		return "last_over_time(" + sel + w + ")"
	case pipeline.AggSum:
		return "sum_over_time(" + sel + w + ")"
	case pipeline.AggCount:
		return "count_over_time(" + sel + w + ")"
	case pipeline.AggRate:
		off := " offset " + strconv.FormatInt(ms, 10) + "ms"
		return "((last_over_time(" + sel + w + ") - last_over_time(" + sel + w + off + ")) / " +
			strconv.FormatFloat(float64(ms)/1000, 'f', -1, 64) + ") >= 0"
	}
	return "avg_over_time(" + sel + w + ")"
}

// promMetricName returns s in Prometheus' name syntax: every byte but
// [a-zA-Z0-9_:] replaced by '_', '_' before a leading digit (as
// Telegraf's Prometheus serializer, and forecastd's sink, name them).
func promMetricName(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !(c == '_' || c == ':' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			b[i] = '_'
		}
	}
	if len(b) > 0 && b[0] >= '0' && b[0] <= '9' {
		return "_" + string(b)
	}
	return string(b)
}

// promQuote quotes s as a PromQL string.
func promQuote(s string) string { return strconv.Quote(s) }

// run sends q and decodes its points as the body streams in.
func (p *Prom) run(ctx context.Context, q promQuery) ([]pipeline.Point, string, error) {
	body, class, err := p.request(ctx, q)
	if err != nil {
		return nil, class, err
	}
	defer body.Close()
	pts, class, err := promDecodeStream(body, p.cfg.MaxBytes, p.cfg.MaxPoints)
	if err != nil && class == FailDecode && (ctx.Err() != nil || brokenBody(err)) {
		class = netClass(ctx, err)
	}
	return pts, class, err
}

// request sends q and returns the body of an answer to decode: a 2xx's,
// or a 400's or 422's, which carry the API's JSON error (the query's
// fault). The caller closes it.
func (p *Prom) request(ctx context.Context, q promQuery) (io.ReadCloser, string, error) {
	v := url.Values{"query": {q.expr}}
	path := "/api/v1/query"
	if q.isRange {
		path = "/api/v1/query_range"
		v.Set("start", promTime(q.start))
		v.Set("end", promTime(q.end))
		v.Set("step", strconv.FormatFloat(q.every.Seconds(), 'f', -1, 64))
	} else {
		v.Set("time", promTime(q.end))
	}
	v.Set("nocache", "1") // VictoriaMetrics: no result cache across the ms shift
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.cfg.URL+path, strings.NewReader(v.Encode()))
	if err != nil {
		return nil, FailUnreachable, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if tok := p.cfg.Token; tok != "" {
		if u, pw, ok := strings.Cut(tok, ":"); ok {
			req.SetBasicAuth(u, pw)
		} else {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
	}
	resp, err := p.cfg.Client.Do(req)
	if err != nil {
		return nil, netClass(ctx, err), err
	}
	if resp.StatusCode/100 != 2 && resp.StatusCode != http.StatusBadRequest && resp.StatusCode != http.StatusUnprocessableEntity {
		defer resp.Body.Close()
		body, err := io.ReadAll(io.LimitReader(resp.Body, statusBody))
		if err != nil {
			return nil, netClass(ctx, err), err
		}
		return nil, FailStatus, fmt.Errorf("%s: %s", resp.Status, strings.TrimSpace(string(body)))
	}
	return resp.Body, "", nil
}

// promTime writes t as the API's seconds with milliseconds.
func promTime(t time.Time) string {
	ms := t.UnixMilli()
	return strconv.FormatFloat(float64(ms)/1000, 'f', 3, 64)
}

// fail counts a failure and logs its class at most once a minute.
func (p *Prom) fail(class string, err error) {
	i := max(0, slices.Index(FailureClasses, class))
	p.fails[i].Add(1)
	if p.logs[i].Allow() {
		p.log.Warn("history not read; the series starts cold", "class", class, "failures", p.fails[i].Load(), "err", err, "fix", promFix[FailureClasses[i]])
	}
}

var promFix = map[string]string{
	FailUnreachable: "check [history] url, and that Prometheus or VictoriaMetrics runs there",
	FailTimeout:     "raise [history] timeout, or lower max_points or lookback",
	FailStatus:      "check [history] url and token against the server's answer",
	FailQuery:       "check [history] query: it must select one series of each",
	FailDecode:      "check that [history] url is the server's base: its /api/v1/query answered something else",
	FailTooLarge:    "lower [history] max_points, or look at what the server answers: it passed a bound",
}
