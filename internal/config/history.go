package config

import (
	"fmt"
	"math"
	"net/url"
	"strings"

	"github.com/forecastd/forecastd/internal/history"
	"github.com/forecastd/forecastd/pipeline"
)

// HistoryConfig is [history]: a new series without a checkpoint learns
// its past from InfluxDB before its first live point (internal/history).
// Its presence turns warm start on; url, token and bucket default to
// [output.influxdb]'s.
type HistoryConfig struct {
	URL          string   `toml:"url" doc:"InfluxDB to read (default: [output.influxdb] url)"`
	Token        string   `toml:"token" doc:"\"user:password\" for 1.x, a token for 2.x/3.x (default: [output.influxdb] token)"`
	Organization string   `toml:"organization" doc:"accepted for symmetry with [output.influxdb]; /query does not use it"`
	Bucket       string   `toml:"bucket" doc:"\"database/retention-policy\" or \"database\" (default: [output.influxdb] bucket)"`
	Lookback     Duration `toml:"lookback" doc:"how far back the past is read" default:"\"14d\""`
	Concurrency  int      `toml:"concurrency" doc:"queries at once (0: the default)" default:"4"`
	Rate         float64  `toml:"rate" doc:"series whose past is read per second, at most, from 0.001 to 1000000: a burst of new series is spread so that the queries and the learning leave the live points their CPU (0: the default)" default:"200"`
	Timeout      Duration `toml:"timeout" doc:"of one query" default:"\"30s\""`
	MaxPoints    int      `toml:"max_points" doc:"points of one series read at most, the newest (0: the default)" default:"200000"`
	MaxBuffered  int      `toml:"max_buffered" doc:"live points an input series holds while its past loads; beyond, it starts cold (0: the default)" default:"1024"`
	MaxQueued    int      `toml:"max_queued" doc:"series waiting for a query at most; beyond, they start cold (0: the default)" default:"16384"`
	// Where the past of a json or value series is; a line protocol
	// series is read from its own measurement, field and tags.
	Measurement string `toml:"measurement" doc:"json and value series: the measurement their past is in (default: [output.influxdb] measurement, forecastd's own actuals)"`
	Field       string `toml:"field" doc:"json and value series: the field of their past" default:"\"y\""`
	SeriesTag   string `toml:"series_tag" doc:"json and value series: the tag whose value is the series key (default: \"series_key\", or \"series\" with [output.influxdb] legacy_tag_names)"`
}

// Ceilings of [history]'s sizes.
const (
	maxHistoryConcurrency = 256
	maxHistoryPoints      = 10_000_000
	maxHistoryBuffered    = 1 << 20
	maxHistoryQueued      = 10_000_000
)

// historyErrors returns every problem of [history], each naming its key.
func historyErrors(c *Config) []error {
	h := c.History
	if h == nil {
		return nil
	}
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, fmt.Errorf("history.%s: %s", key, fmt.Sprintf(format, args...)))
	}
	hc := c.HistorySource()
	if hc.URL == "" {
		bad("url", "required (or [output.influxdb] url)")
	} else if u, err := url.Parse(hc.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		bad("url", "want http(s)://HOST:PORT, got %q", hc.URL)
	}
	if hc.Database == "" {
		bad("bucket", `required (or [output.influxdb] bucket): "database" or "database/retention-policy"`)
	}
	for _, d := range []struct {
		key string
		v   Duration
	}{{"lookback", h.Lookback}, {"timeout", h.Timeout}} {
		if d.v.IsSet() && d.v.D <= 0 {
			bad(d.key, "must be positive, got %q", d.v.Text)
		}
	}
	if r := h.Rate; math.IsNaN(r) || r != 0 && (r < pipeline.MinHistoryRate || r > pipeline.MaxHistoryRate) {
		bad("rate", "want a number of series per second from %v to %d (0: the default, %d), got %v",
			pipeline.MinHistoryRate, pipeline.MaxHistoryRate, pipeline.DefaultHistoryRate, r)
	}
	for _, n := range []struct {
		key      string
		v, limit int
	}{
		{"concurrency", h.Concurrency, maxHistoryConcurrency}, {"max_points", h.MaxPoints, maxHistoryPoints},
		{"max_buffered", h.MaxBuffered, maxHistoryBuffered}, {"max_queued", h.MaxQueued, maxHistoryQueued},
	} {
		switch {
		case n.v < 0:
			bad(n.key, "must not be negative, got %d", n.v)
		case n.v > n.limit:
			bad(n.key, "%d exceeds the ceiling of %d", n.v, n.limit)
		}
	}
	return errs
}

// HistorySource returns [history] as internal/history's config, its
// connection defaulting to [output.influxdb]'s.
func (c *Config) HistorySource() history.Config {
	h := c.History
	hc := history.Config{URL: h.URL, Token: h.Token, Lookback: h.Lookback.D, MaxPoints: h.MaxPoints,
		Measurement: h.Measurement, Field: h.Field, SeriesTag: h.SeriesTag}
	bucket := h.Bucket
	if o := c.Output.InfluxDB; o != nil {
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

// RunnerHistory returns the runner's [history] settings around src.
func (c *Config) RunnerHistory(src pipeline.History) pipeline.HistoryConfig {
	h := c.History
	return pipeline.HistoryConfig{Source: src, Concurrency: h.Concurrency, Rate: h.Rate, Queue: h.MaxQueued,
		Buffer: h.MaxBuffered, Timeout: h.Timeout.Or(pipeline.DefaultHistoryTimeout), LoadBytes: history.LoadBytes(h.MaxPoints)}
}
