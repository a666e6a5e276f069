package promql

import (
	"errors"
	"net/url"
	"time"

	"github.com/forecastd/forecastd/internal/config/schema"
)

// Config is one [[input.promql]] entry: series pulled from a Prometheus
// or VictoriaMetrics server by PromQL queries, evaluated every step.
type Config struct {
	URL     string          `toml:"url" doc:"the server's base URL: http://HOST:9090 (Prometheus) or http://HOST:8428 (VictoriaMetrics) (required)"`
	Token   string          `toml:"token" doc:"\"user:password\" (basic authentication), else a bearer token; empty: none"`
	Queries []string        `toml:"queries" doc:"PromQL expressions, each evaluated by /api/v1/query_range every step; each series of an answer is a series of forecastd, keyed by its labels: name{label=\"value\",…} (required)"`
	Subject string          `toml:"subject" doc:"what the series' records name as their subject: the NATS output publishes them on <prefix>.<subject>.<metric name>._ (default \"promql\")"`
	Step    schema.Duration `toml:"step" doc:"interval between evaluations, and between the points of a series"`
	Lag     schema.Duration `toml:"lag" doc:"how far behind the clock the newest evaluation is, for late samples to arrive"`
	// Lookback: read at the first evaluation after start, so that a new
	// series has a past and a restart's gap is filled.
	Lookback       schema.Duration `toml:"lookback" doc:"how far back the first evaluation after start reads (\"0s\": the newest step only); what a series restored from [state] already learned is refused as out of order, not learned twice"`
	Timeout        schema.Duration `toml:"timeout" doc:"of one query, its retries excluded"`
	MaxSeries      int             `toml:"max_series" doc:"series of one query's answer at most; a larger answer is refused and counted (0: the default)"`
	MaxBytes       int             `toml:"max_bytes" doc:"bytes of one answer at most; a larger one is refused and counted (0: the default)"`
	MaxLabels      int             `toml:"max_labels" doc:"labels of a series at most, __name__ included; an answer with more is refused (0: the default)"`
	MaxLabelLength int             `toml:"max_label_length" doc:"bytes of a label's name or value at most; an answer with a longer one is refused (0: the default)"`
}

// Defaults.
const (
	DefaultSubject        = "promql"
	DefaultStep           = time.Minute
	DefaultLag            = 30 * time.Second
	DefaultLookback       = time.Hour
	DefaultTimeout        = 30 * time.Second
	DefaultMaxSeries      = 1000
	DefaultMaxBytes       = 64 << 20
	DefaultMaxLabels      = 32
	DefaultMaxLabelLength = 256
)

// Ceilings.
const (
	maxMaxSeries = 1_000_000
	maxMaxBytes  = 1 << 30
	maxLabels    = 1024
	maxLabelLen  = 16 << 10
	// maxSteps bounds the evaluations of one query_range: Prometheus
	// refuses more than 11 000 points per series.
	maxSteps = 10_000
)

// WithDefaults returns c with its defaults filled in.
func (c Config) WithDefaults() Config {
	if c.Subject == "" {
		c.Subject = DefaultSubject
	}
	for _, d := range []struct {
		v   *schema.Duration
		def time.Duration
	}{{&c.Step, DefaultStep}, {&c.Lag, DefaultLag}, {&c.Lookback, DefaultLookback}, {&c.Timeout, DefaultTimeout}} {
		if !d.v.IsSet() {
			*d.v = schema.Dur(d.def)
		}
	}
	if c.MaxSeries == 0 {
		c.MaxSeries = DefaultMaxSeries
	}
	if c.MaxBytes == 0 {
		c.MaxBytes = DefaultMaxBytes
	}
	if c.MaxLabels == 0 {
		c.MaxLabels = DefaultMaxLabels
	}
	if c.MaxLabelLength == 0 {
		c.MaxLabelLength = DefaultMaxLabelLength
	}
	return c
}

// Validate returns every problem of c at once, each naming its key.
func (c Config) Validate() error {
	var e schema.Errors
	if u, err := url.Parse(c.URL); c.URL == "" || err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		e.Add("url", "want the server's base URL, http(s)://HOST:PORT, got %q", c.URL)
	}
	if len(c.Queries) == 0 {
		e.Add("queries", "at least one PromQL expression is required")
	}
	for i, q := range c.Queries {
		if q == "" {
			e.Add("queries", "expression %d is empty", i)
		}
	}
	if c.Subject != "" && !validSubject(c.Subject) {
		e.Add("subject", "want one NATS subject token (no '.', '*', '>' or white space), got %q", c.Subject)
	}
	for _, d := range []struct {
		key       string
		v         schema.Duration
		allowZero bool
	}{{"step", c.Step, false}, {"lag", c.Lag, true}, {"lookback", c.Lookback, true}, {"timeout", c.Timeout, false}} {
		if msg := d.v.Positive(d.allowZero); d.v.IsSet() && msg != "" {
			e.Add(d.key, "%s", msg)
		}
	}
	if c.Step.IsSet() && c.Step.D > 0 && c.Step.D%time.Millisecond != 0 {
		e.Add("step", "want whole milliseconds, got %q", c.Step.Text)
	}
	for _, n := range []struct {
		key      string
		v, limit int64
	}{
		{"max_series", int64(c.MaxSeries), maxMaxSeries}, {"max_bytes", int64(c.MaxBytes), maxMaxBytes},
		{"max_labels", int64(c.MaxLabels), maxLabels}, {"max_label_length", int64(c.MaxLabelLength), maxLabelLen},
	} {
		switch {
		case n.v < 0:
			e.Add(n.key, "must not be negative, got %d", n.v)
		case n.v > n.limit:
			e.Add(n.key, "%d exceeds the ceiling of %d", n.v, n.limit)
		}
	}
	return errors.Join(e...)
}

// validSubject reports whether s is one NATS subject token.
func validSubject(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c <= ' ' || c == 0x7f || c == '.' || c == '*' || c == '>' {
			return false
		}
	}
	return true
}
