package history

import (
	"cmp"
	"errors"
	"math"
	"net/url"
	"strings"

	"github.com/forecastd/forecastd/internal/config/schema"
	"github.com/forecastd/forecastd/runner"
)

// WarmStart is [history]: a new series without a checkpoint learns its
// past from InfluxDB before its first live point. Its presence turns warm
// start on; url, token and bucket default to those of the InfluxDB the
// forecasts are written to (Source's Defaults).
type WarmStart struct {
	// Kind is the kind of server read (key source): "influxdb" (the default) or
	// "prometheus" (Prometheus' HTTP API, which VictoriaMetrics serves).
	Kind string `toml:"source" doc:"\"influxdb\" or \"prometheus\" (Prometheus or VictoriaMetrics, by their query API)"`
	// Query is, for a Prometheus source, the template of a series'
	// selector (PromConfig.Query).
	Query        string          `toml:"query" doc:"prometheus: a Go template of the PromQL selector of a series' past, given .Key, .Metric, .Matchers, .Labels, .Measurement, .Field and quote (default: a line-protocol series as Telegraf names it, <measurement>_<field>{tags}; else forecastd_actual{series_key=…})"`
	URL          string          `toml:"url" doc:"InfluxDB to read (default: [output.influxdb] url); for prometheus, the server's base URL, http://HOST:9090 or http://HOST:8428 (required)"`
	Token        string          `toml:"token" doc:"\"user:password\" for 1.x, a token for 2.x/3.x (default: [output.influxdb] token)"`
	Organization string          `toml:"organization" doc:"accepted for symmetry with [output.influxdb]; /query does not use it"`
	Bucket       string          `toml:"bucket" doc:"\"database/retention-policy\" or \"database\" (default: [output.influxdb] bucket)"`
	Lookback     schema.Duration `toml:"lookback" doc:"how far back the past is read"`
	Concurrency  int             `toml:"concurrency" doc:"queries at once (0: the default)"`
	Rate         float64         `toml:"rate" doc:"series whose past is read per second, at most, from 0.001 to 1000000: a burst of new series is spread so that the queries and the learning leave the live points their CPU (0: the default)"`
	Timeout      schema.Duration `toml:"timeout" doc:"of one query"`
	MaxPoints    int             `toml:"max_points" doc:"points of one series read at most, the newest (0: the default)"`
	MaxBuffered  int             `toml:"max_buffered" doc:"live points an input series holds while its past loads; beyond, it starts cold (0: the default)"`
	MaxQueued    int             `toml:"max_queued" doc:"series waiting for a query at most; beyond, they start cold (0: the default)"`
	// Where the past of a json or value series is; a line protocol
	// series is read from its own measurement, field and tags.
	Measurement string `toml:"measurement" doc:"json and value series: the measurement their past is in (default: [output.influxdb] measurement, forecastd's own actuals)"`
	Field       string `toml:"field" doc:"json and value series: the field of their past"`
	SeriesTag   string `toml:"series_tag" doc:"json and value series: the tag whose value is the series key (default: \"series_key\", or \"series\" with [output.influxdb] legacy_tag_names)"`
}

// Ceilings of [history]'s sizes.
const (
	maxConcurrency = 256
	maxPoints      = 10_000_000
	maxBuffered    = 1 << 20
	maxQueued      = 10_000_000
)

// WithDefaults returns w with its defaults filled in (but those taken
// from the InfluxDB output: see Source).
func (w WarmStart) WithDefaults() WarmStart {
	if !w.Lookback.IsSet() {
		w.Lookback = schema.Dur(DefaultLookback)
	}
	if w.Concurrency == 0 {
		w.Concurrency = runner.DefaultHistoryConcurrency
	}
	if w.Rate == 0 {
		w.Rate = runner.DefaultHistoryRate
	}
	if !w.Timeout.IsSet() {
		w.Timeout = schema.Dur(runner.DefaultHistoryTimeout)
	}
	if w.MaxPoints == 0 {
		w.MaxPoints = DefaultMaxPoints
	}
	if w.MaxBuffered == 0 {
		w.MaxBuffered = runner.DefaultHistoryBuffer
	}
	if w.MaxQueued == 0 {
		w.MaxQueued = runner.DefaultHistoryQueue
	}
	if w.Field == "" {
		w.Field = DefaultField
	}
	return w
}

// Output is what [history] takes from the InfluxDB the forecasts are
// written to, where it leaves a key unset.
type Output struct {
	URL, Token, Bucket, Measurement string
	// LegacyTagNames: the output tags the series "series".
	LegacyTagNames bool
}

// Source returns the reader's configuration of w, its connection
// defaulting to out's (nil: none).
func (w WarmStart) Source(out *Output) Config {
	hc := Config{URL: w.URL, Token: w.Token, Lookback: w.Lookback.D, MaxPoints: w.MaxPoints,
		Measurement: w.Measurement, Field: w.Field, SeriesTag: w.SeriesTag}
	bucket := w.Bucket
	if w.Prometheus() {
		out = nil // InfluxDB's connection is not this server's
	}
	if o := out; o != nil {
		if hc.URL == "" {
			hc.URL = o.URL
		}
		if hc.Token == "" {
			hc.Token = o.Token
		}
		if bucket == "" {
			bucket = o.Bucket
		}
		if hc.Measurement == "" {
			hc.Measurement = o.Measurement
		}
		if hc.SeriesTag == "" && o.LegacyTagNames {
			hc.SeriesTag = "series"
		}
	}
	hc.Database, hc.RetentionPolicy, _ = strings.Cut(bucket, "/")
	return hc
}

// Validate returns every problem of w at once, each naming its key
// relative to [history]; src is w's Source.
func (w WarmStart) Validate(src Config) error {
	var e schema.Errors
	switch w.Kind {
	case "", SourceInflux, SourcePrometheus:
	default:
		e.Add("source", "want %q or %q, got %q", SourceInflux, SourcePrometheus, w.Kind)
	}
	if w.Prometheus() {
		if _, err := ParsePromQuery(cmp.Or(w.Query, DefaultPromQuery)); err != nil {
			e.Add("query", "%v", err)
		}
	} else if w.Query != "" {
		e.Add("query", "only with source = %q", SourcePrometheus)
	}
	switch {
	case src.URL == "" && w.Prometheus():
		e.Add("url", "required: the server's base URL, http://HOST:9090 or http://HOST:8428")
	case src.URL == "":
		e.Add("url", "required (or [output.influxdb] url)")
	default:
		if u, err := url.Parse(src.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			e.Add("url", "want http(s)://HOST:PORT, got %q", src.URL)
		}
	}
	if src.Database == "" && !w.Prometheus() {
		e.Add("bucket", `required (or [output.influxdb] bucket): "database" or "database/retention-policy"`)
	}
	for _, d := range []struct {
		key string
		v   schema.Duration
	}{{"lookback", w.Lookback}, {"timeout", w.Timeout}} {
		if d.v.IsSet() && d.v.D <= 0 {
			e.Add(d.key, "must be positive, got %q", d.v.Text)
		}
	}
	if r := w.Rate; math.IsNaN(r) || r != 0 && (r < runner.MinHistoryRate || r > runner.MaxHistoryRate) {
		e.Add("rate", "want a number of series per second from %v to %d (0: the default, %d), got %v",
			runner.MinHistoryRate, runner.MaxHistoryRate, runner.DefaultHistoryRate, r)
	}
	for _, n := range []struct {
		key      string
		v, limit int
	}{
		{"concurrency", w.Concurrency, maxConcurrency}, {"max_points", w.MaxPoints, maxPoints},
		{"max_buffered", w.MaxBuffered, maxBuffered}, {"max_queued", w.MaxQueued, maxQueued},
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

// The kinds of [history] source.
const (
	SourceInflux     = "influxdb"
	SourcePrometheus = "prometheus"
)

// Prometheus reports whether w reads a Prometheus API.
func (w WarmStart) Prometheus() bool { return w.Kind == SourcePrometheus }

// Open returns the reader of w, reading from src (w's Source, validated).
func (w WarmStart) Open(src Config) (Reader, error) {
	if w.Prometheus() {
		return NewProm(PromConfig{URL: src.URL, Token: src.Token, Query: w.Query, Lookback: src.Lookback,
			MaxPoints: src.MaxPoints, MaxBytes: src.MaxBytes, Client: src.Client, Logger: src.Logger})
	}
	return New(src)
}

// Runner returns the runner's warm start of w, its pasts read from src.
func (w WarmStart) Runner(src runner.History) runner.HistoryConfig {
	return runner.HistoryConfig{Source: src, Concurrency: w.Concurrency, Rate: w.Rate, Queue: w.MaxQueued,
		Buffer: w.MaxBuffered, Timeout: w.Timeout.Or(runner.DefaultHistoryTimeout), LoadBytes: LoadBytes(w.MaxPoints)}
}
