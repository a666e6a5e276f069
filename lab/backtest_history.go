package lab

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/influxdata/line-protocol/v2/lineprotocol"

	"github.com/forecastd/forecastd/internal/cmdline"
	"github.com/forecastd/forecastd/internal/config/schema"
	"github.com/forecastd/forecastd/internal/history"
	"github.com/forecastd/forecastd/pipeline"
	"github.com/forecastd/forecastd/runner"
)

// influxOptions are backtest's flags that read a series' history from
// InfluxDB instead of a file: the query the daemon's [history] makes.
type influxOptions struct {
	url, token, bucket string
	series             string
	seriesFormat       string // influx: a line-protocol key; json: forecastd's own actuals of the key
	lookback           time.Duration
	end                string // RFC 3339; "" now
	timeout            time.Duration
	maxPoints          int
}

func addInfluxFlags(fs *flag.FlagSet, o *influxOptions) {
	fs.StringVar(&o.url, "influx_url", "", "read the series from the InfluxDB at `URL` (its v1 /query InfluxQL endpoint) instead of a FILE, as the daemon's [history] reads it; with --series")
	fs.StringVar(&o.token, "influx_token", "", "InfluxDB credentials: `USER:PASSWORD` for 1.x, a token for 2.x/3.x (default: --config's [history] or [output.influxdb] token)")
	fs.StringVar(&o.bucket, "influx_bucket", "", "InfluxDB `DATABASE[/RP]` (default: --config's [history] or [output.influxdb] bucket)")
	fs.StringVar(&o.series, "series", "", "with --influx_url, the series `KEY`: \"measurement,tag=v,… field\" as the daemon names a line-protocol series, or with --series_format json the key of a json/value series")
	fs.StringVar(&o.seriesFormat, "series_format", "influx", "with --influx_url, how --series is read: influx (the measurement, tags and field Telegraf writes) or json (forecastd's own actuals, field y of measurement forecast tagged series_key=KEY, or --config's [history] measurement, field, series_tag)")
	o.lookback = 14 * 24 * time.Hour
	fs.Func("lookback", "with --influx_url, read this `DURATION` before --end, such as 14d or 36h (default 14d)", func(s string) error {
		d, err := schema.ParseDuration(s)
		if err != nil {
			return err
		}
		o.lookback = d
		return nil
	})
	fs.StringVar(&o.end, "end", "", "with --influx_url, read up to this `TIME` (RFC 3339, exclusive; default now)")
	fs.DurationVar(&o.timeout, "influx_timeout", time.Minute, "with --influx_url, the query's `DURATION` at most")
	fs.IntVar(&o.maxPoints, "influx_max_points", 0, "with --influx_url, read at most `N` points, the newest (default 200000)")
	cmdline.DashAliases(fs, "influx_url", "influx_token", "influx_bucket", "series_format", "influx_timeout", "influx_max_points")
}

// check returns the problem of the flags, given the FILE operands.
func (o *influxOptions) check(inputs []string) error {
	if o.url == "" {
		if o.series != "" {
			return errors.New("--series needs --influx_url")
		}
		return nil
	}
	switch {
	case len(inputs) > 0:
		return errors.New("--influx_url reads the series from InfluxDB: no FILE or DIR")
	case o.series == "":
		return errors.New("--influx_url needs --series KEY")
	case o.seriesFormat != "influx" && o.seriesFormat != "json":
		return fmt.Errorf("--series_format %q: want influx or json", o.seriesFormat)
	case o.lookback <= 0:
		return fmt.Errorf("--lookback %v: want a positive duration", o.lookback)
	}
	if o.end != "" {
		if _, err := time.Parse(time.RFC3339Nano, o.end); err != nil {
			return fmt.Errorf("--end %q: want an RFC 3339 time", o.end)
		}
	}
	return nil
}

// seriesOrigin reads a line-protocol series key, "measurement,tag=v,…
// field" escaped as line protocol, into its origin.
func seriesOrigin(key string) (runner.Origin, error) {
	dec := lineprotocol.NewDecoderWithBytes([]byte(key + "=0\n"))
	var o runner.Origin
	if !dec.Next() {
		return o, errors.New("empty key")
	}
	m, err := dec.Measurement()
	if err != nil {
		return o, err
	}
	o.Measurement = string(m)
	for {
		k, v, err := dec.NextTag()
		if err != nil {
			return o, err
		}
		if k == nil {
			break
		}
		o.Tags = append(o.Tags, pipeline.Tag{Key: string(k), Value: string(v)})
	}
	f, _, err := dec.NextField()
	if err != nil {
		return o, err
	}
	o.Field = string(f)
	if _, _, err := dec.NextField(); err != nil || dec.Next() {
		return o, errors.New("more than one field")
	}
	return o, nil
}

// loadInflux reads the series of --series from InfluxDB at cfg's step,
// aggregated by the server as the daemon's [history] reads it, and
// returns it with the configuration of points already at the step.
func (o *backtestOptions) loadInflux(cfg pipeline.Config) (*loaded, pipeline.Config, error) {
	ino := &o.influx
	hc := history.Config{URL: ino.url, Token: ino.token, Lookback: ino.lookback, MaxPoints: ino.maxPoints}
	bucket := ino.bucket
	if o.config != "" {
		from, err := o.model.Influx(o.config)
		if err != nil {
			return nil, cfg, err
		}
		hc.Measurement, hc.Field, hc.SeriesTag = from.Measurement, from.Field, from.SeriesTag
		if hc.Token == "" {
			hc.Token = from.Token
		}
		if bucket == "" {
			bucket = from.Bucket
		}
	}
	hc.Database, hc.RetentionPolicy, _ = strings.Cut(bucket, "/")
	h, err := history.New(hc)
	if err != nil {
		return nil, cfg, fmt.Errorf("--influx_url: %w", err)
	}
	end := time.Now()
	if ino.end != "" {
		end, _ = time.Parse(time.RFC3339Nano, ino.end) // checked by check
	}
	req := history.Request{Key: ino.series, Step: cfg.Step, Aggregate: cfg.Aggregate, Start: end.Add(-ino.lookback), End: end}
	if ino.seriesFormat == "influx" {
		if req.Origin, err = seriesOrigin(ino.series); err != nil {
			return nil, cfg, fmt.Errorf("--series %q: not a line-protocol series key (measurement,tag=v,… field): %w", ino.series, err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), ino.timeout)
	defer cancel()
	pts, err := h.Read(ctx, req)
	if err != nil {
		return nil, cfg, fmt.Errorf("%s: %w", ino.url, err)
	}
	if len(pts) == 0 {
		return nil, cfg, fmt.Errorf("%s: no points of %q in [%s, %s)", ino.url, ino.series, req.Start.UTC().Format(time.RFC3339), end.UTC().Format(time.RFC3339))
	}
	r := &recorded{hasTime: true}
	for _, p := range pts {
		r.times = append(r.times, p.Time)
		r.values = append(r.values, p.Value)
		r.labels = append(r.labels, p.Time.UTC().Format(time.RFC3339Nano))
		r.secs = append(r.secs, float64(p.Time.UnixNano())/1e9)
	}
	// Already in the step's buckets, as the daemon's warm start learns
	// them.
	return &loaded{file: ino.url, key: ino.series, data: r}, resampled(cfg), nil
}

// runInflux is the backtest of --series read from --influx_url.
func runInflux(o *backtestOptions, cfg pipeline.Config, start time.Time, stdout, stderr io.Writer) error {
	if o.holdout > 0 {
		return usageError(fmt.Errorf("--holdout takes FILEs, not --influx_url\n%s", helpHint))
	}
	rules, err := o.ruleConfigs()
	if err != nil {
		return err
	}
	if len(rules) > 0 {
		cfg = configFor(o.influx.series, cfg, rules)
		cfg.MeasureUpdates = true
	}
	in, cfg, err := o.loadInflux(cfg)
	if err != nil {
		return err
	}
	return runSingle(o, cfg, in, start, stdout, stderr)
}
