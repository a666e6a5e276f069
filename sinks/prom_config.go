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

// Defaults of PromConfig's zero fields.
const (
	DefaultPromBatchSize      = 2000
	DefaultPromBufferLimit    = 20000
	DefaultPromFlushInterval  = 10 * time.Second
	DefaultPromTimeout        = 10 * time.Second
	DefaultPromMaxLabels      = 30
	DefaultPromMaxLabelLength = 1024
)

// PromConfig.Timestamp's values.
const (
	PromTimestampTarget = "target"
	PromTimestampOrigin = "origin"
)

// Ceilings of PromConfig's bounds: Prometheus' own defaults accept them.
const (
	maxPromLabels      = 256
	maxPromLabelLength = 64 << 10
)

// PromConfig configures a [Prom] sink, [output.prometheus]: remote write
// 1.0 to Prometheus, VictoriaMetrics, Mimir or any receiver of the
// protocol. Zero fields take the defaults named.
type PromConfig struct {
	// URL is the receiver's remote write endpoint: Prometheus'
	// http://HOST:9090/api/v1/write (run with
	// --web.enable-remote-write-receiver), VictoriaMetrics'
	// http://HOST:8428/api/v1/write. Required.
	URL string `toml:"url" doc:"remote write endpoint: http://HOST:9090/api/v1/write (Prometheus), http://HOST:8428/api/v1/write (VictoriaMetrics)"`
	// Username and Password: HTTP basic authentication, if Username is
	// set; BearerToken: Authorization: Bearer, if set. Not both.
	Username    string `toml:"username" doc:"basic authentication"`
	Password    string `toml:"password" doc:"basic authentication"`
	BearerToken string `toml:"bearer_token" doc:"sent as Authorization: Bearer"`
	// Timestamp dates a forecast's samples: "target" (the default), at
	// the time forecast; "origin", at the time it was made from, each
	// step of a path told by its label horizon. Prometheus' remote write
	// receiver refuses samples more than 10 minutes ahead of its clock:
	// forecasts further ahead need "origin" there (VictoriaMetrics takes
	// them up to 2 days ahead).
	Timestamp string `toml:"timestamp" doc:"forecasts' samples at their \"target\" time, or at their \"origin\" (the last point's): Prometheus refuses samples more than 10 min ahead of its clock (default: target)"`
	// MetricBatchSize is the most records one request carries (default
	// 2000); a request starts as soon as this many wait.
	MetricBatchSize int `toml:"metric_batch_size" doc:"records per request (0: the default)"`
	// MetricBufferLimit is the most records waiting (default 20000), the
	// batch being written aside; when full the oldest are dropped and
	// counted.
	MetricBufferLimit int `toml:"metric_buffer_limit" doc:"records held while the receiver cannot be written (0: the default)"`
	// FlushInterval: records waiting are written at least this often
	// (default 10s).
	FlushInterval schema.Duration `toml:"flush_interval" doc:"a partial batch is written after this long"`
	// Timeout of one request (default 10s).
	Timeout schema.Duration `toml:"timeout" doc:"of one request"`
	// MaxLabels bounds the labels of a series (default 30, as a
	// receiver's label_limit would): the input tags beyond, in key order,
	// are left out. MaxLabelLength bounds a label's value in bytes
	// (default 1024): a longer one is cut at a UTF-8 boundary.
	MaxLabels      int `toml:"max_labels" doc:"labels of a series at most, forecastd's own included; input tags beyond are left out (0: the default)"`
	MaxLabelLength int `toml:"max_label_length" doc:"bytes of a label value at most; longer ones are cut (0: the default)"`
	// RetryInterval and MaxRetryInterval bound the back-off of a failed
	// request (defaults DefaultRetryInterval, DefaultMaxRetryInterval), as
	// the InfluxDB sink's.
	RetryInterval, MaxRetryInterval time.Duration `toml:"-"`
	// Logger receives failures, recoveries and drops, never a line per
	// record; nil discards.
	Logger *slog.Logger `toml:"-"`

	// transport, when set (by tests), makes the requests.
	transport http.RoundTripper
}

// Validate returns every problem of c at once, each naming its key.
func (c *PromConfig) Validate() error {
	var errs []error
	if c.URL == "" {
		errs = append(errs, errors.New("url: required"))
	} else if u, err := url.Parse(c.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		errs = append(errs, fmt.Errorf("url: want http(s)://HOST:PORT/api/v1/write, got %q", c.URL))
	}
	if c.Username != "" && c.BearerToken != "" {
		errs = append(errs, errors.New("bearer_token: not with username"))
	}
	switch c.Timestamp {
	case "", PromTimestampTarget, PromTimestampOrigin:
	default:
		errs = append(errs, fmt.Errorf("timestamp: want %q or %q, got %q", PromTimestampTarget, PromTimestampOrigin, c.Timestamp))
	}
	if c.Password != "" && c.Username == "" {
		errs = append(errs, errors.New("password: needs username"))
	}
	for _, d := range []struct {
		key string
		v   schema.Duration
	}{{"flush_interval", c.FlushInterval}, {"timeout", c.Timeout}} {
		if msg := d.v.Positive(false); msg != "" {
			errs = append(errs, fmt.Errorf("%s: %s", d.key, msg))
		}
	}
	for _, v := range []struct {
		key      string
		n, limit int64
	}{
		{"metric_batch_size", int64(c.MetricBatchSize), 1 << 20},
		{"metric_buffer_limit", int64(c.MetricBufferLimit), 1 << 30},
		{"max_labels", int64(c.MaxLabels), maxPromLabels},
		{"max_label_length", int64(c.MaxLabelLength), maxPromLabelLength},
		{"retry_interval", int64(c.RetryInterval), 1 << 62},
		{"max_retry_interval", int64(c.MaxRetryInterval), 1 << 62},
	} {
		switch {
		case v.n < 0:
			errs = append(errs, fmt.Errorf("%s: negative", v.key))
		case v.n > v.limit:
			errs = append(errs, fmt.Errorf("%s: %d exceeds the ceiling of %d", v.key, v.n, v.limit))
		}
	}
	if c.MaxLabels != 0 && c.MaxLabels < promOwnLabels {
		errs = append(errs, fmt.Errorf("max_labels: at least %d (forecastd's own labels), got %d", promOwnLabels, c.MaxLabels))
	}
	return errors.Join(errs...)
}

// WithDefaults returns c with its defaults filled in.
func (c PromConfig) WithDefaults() PromConfig {
	c.Timestamp = cmp.Or(c.Timestamp, PromTimestampTarget)
	c.MetricBatchSize = cmp.Or(c.MetricBatchSize, DefaultPromBatchSize)
	c.MetricBufferLimit = cmp.Or(c.MetricBufferLimit, DefaultPromBufferLimit)
	c.MaxLabels = cmp.Or(c.MaxLabels, DefaultPromMaxLabels)
	c.MaxLabelLength = cmp.Or(c.MaxLabelLength, DefaultPromMaxLabelLength)
	if c.FlushInterval.D == 0 {
		c.FlushInterval = schema.Dur(DefaultPromFlushInterval)
	}
	if c.Timeout.D == 0 {
		c.Timeout = schema.Dur(DefaultPromTimeout)
	}
	c.RetryInterval = cmp.Or(c.RetryInterval, DefaultRetryInterval)
	c.MaxRetryInterval = max(cmp.Or(c.MaxRetryInterval, DefaultMaxRetryInterval), c.RetryInterval)
	return c
}

// BufferBytes is the most bytes the sink's buffer holds: MetricBufferLimit
// records, held by value (memory.Layout).
func (c PromConfig) BufferBytes() int64 {
	return int64(cmp.Or(c.MetricBufferLimit, DefaultPromBufferLimit)) * int64(unsafe.Sizeof(Record{}))
}
