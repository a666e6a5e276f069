package sinks

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"time"
	"unsafe"

	"github.com/forecastd/forecastd/internal/config/schema"
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
	URL string `toml:"url" doc:"InfluxDB's URL, http(s)://HOST:PORT"`
	// Token: an InfluxDB 2.x API token; for InfluxDB 1.8+,
	// "user:password", or empty without authentication.
	Token string `toml:"token" doc:"a token for 2.x/3.x, \"user:password\" for 1.x"`
	// Organization: the 2.x organization; ignored by 1.8.
	Organization string `toml:"organization" doc:"organization (2.x)"`
	// Bucket: the 2.x bucket; for 1.8, "database/retention-policy" or
	// "database" (its default retention policy). Required.
	Bucket string `toml:"bucket" doc:"bucket, or \"database/retention-policy\" for 1.x"`
	// Measurement of the points (default DefaultMeasurement, "forecast").
	Measurement string `toml:"measurement" doc:"measurement of the forecasts"`
	// MetricBatchSize is the most records one write carries (default
	// 1000). A write starts as soon as this many records wait.
	MetricBatchSize int `toml:"metric_batch_size" doc:"points written per request (0: the default)"`
	// MetricBufferLimit is the most records that wait to be written
	// (default 10000), not counting the batch being written; when the
	// buffer is full the oldest record is dropped and counted. (Between
	// two reads of Stats, writers may hold up to a sixteenth more before
	// the overflow is dropped.)
	MetricBufferLimit int `toml:"metric_buffer_limit" doc:"points held while InfluxDB cannot be written (0: the default)"`
	// FlushInterval: records waiting are written at least this often
	// (default 10s).
	FlushInterval schema.Duration `toml:"flush_interval" doc:"a partial batch is written after this long"`
	// Timeout of one write request (default 5s).
	Timeout schema.Duration `toml:"timeout" doc:"of one write"`
	// RetryInterval is the first wait before retrying a failed write
	// (default 1s); each further failure doubles it, up to
	// MaxRetryInterval (default 1m), each wait within ±20 % of it
	// (internal/retry). A longer Retry-After from the server is honoured
	// within the same bound.
	RetryInterval, MaxRetryInterval time.Duration `toml:"-"`
	// CreateDatabase lets [Influx.Prepare] create the database of an
	// InfluxDB 1.x that lacks it (CREATE DATABASE, which needs an admin
	// user with authentication), and the sink do the same when a write
	// finds it gone. False: Prepare returns an error naming the command
	// that creates it.
	CreateDatabase bool `toml:"create_database" doc:"1.x: create a missing database at start; false: refuse to start, naming the command"`
	// LegacyTagNames writes the tags as forecastd first named them,
	// series, measurement and field (InfluxQL keywords, to be
	// double-quoted in every query), and horizon unpadded ("1" … "12",
	// which sorts 1, 10, 11, 12, 2), so that dashboards and queries
	// written for them keep working. False (the default): [TagSeries],
	// [TagMeasurement], [TagField] and a padded horizon.
	LegacyTagNames bool `toml:"legacy_tag_names" doc:"tags series, measurement, field and an unpadded horizon, as before series_key, src_measurement, src_field"`
	// Logger receives write failures and recoveries (Warn/Info) and drops
	// (Warn), never a line per record; nil discards.
	Logger *slog.Logger `toml:"-"`

	// transport, when set (by tests), makes the writes' requests.
	transport http.RoundTripper
}

// Validate returns every problem of c at once, each naming its key.
func (c *InfluxConfig) Validate() error {
	var errs []error
	if c.URL == "" {
		errs = append(errs, errors.New("url: required"))
	} else if u, err := url.Parse(c.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		errs = append(errs, fmt.Errorf("url: want http(s)://HOST:PORT, got %q", c.URL))
	}
	for _, d := range []struct {
		key string
		v   schema.Duration
	}{{"flush_interval", c.FlushInterval}, {"timeout", c.Timeout}} {
		if msg := d.v.Positive(false); msg != "" {
			errs = append(errs, fmt.Errorf("%s: %s", d.key, msg))
		}
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
		{"retry_interval", int64(c.RetryInterval)},
		{"max_retry_interval", int64(c.MaxRetryInterval)},
	} {
		if v.n < 0 {
			errs = append(errs, fmt.Errorf("%s: negative", v.key))
		}
	}
	return errors.Join(errs...)
}

// WithDefaults returns c with its defaults filled in.
func (c InfluxConfig) WithDefaults() InfluxConfig {
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
	if c.FlushInterval.D == 0 {
		c.FlushInterval = schema.Dur(DefaultFlushInterval)
	}
	if c.Timeout.D == 0 {
		c.Timeout = schema.Dur(DefaultInfluxTimeout)
	}
	def(&c.RetryInterval, DefaultRetryInterval)
	def(&c.MaxRetryInterval, DefaultMaxRetryInterval)
	if c.MaxRetryInterval < c.RetryInterval {
		c.MaxRetryInterval = c.RetryInterval
	}
	return c
}

// BufferBytes is the most bytes the sink's buffer holds: MetricBufferLimit
// records, held by value (memory.Layout).
func (c InfluxConfig) BufferBytes() int64 {
	return int64(cmp.Or(c.MetricBufferLimit, DefaultMetricBufferLimit)) * int64(unsafe.Sizeof(Record{}))
}
