package sinks

import (
	"context"
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// influxKind opens the [Influx] sink of [output.influxdb] (Env.Config an
// *InfluxConfig; absent, nil: no sink) and prepares its database or
// bucket ([Influx.Prepare]) before the daemon takes points.
type influxKind struct{}

func (influxKind) Name() string { return "influxdb" }

func (influxKind) Doc() string {
	return "If present, forecasts are also written to InfluxDB, with Telegraf's names (outputs.influxdb_v2)."
}

func (influxKind) NewConfig() any { return new(InfluxConfig) }

func (influxKind) Open(ctx context.Context, env Env) (Sink, error) {
	c, _ := env.Config.(*InfluxConfig)
	if c == nil {
		return nil, nil
	}
	cfg := *c
	if cfg.Logger == nil {
		cfg.Logger = env.Logger // the sink adds component=sinks.influxdb
	}
	s, err := NewInflux(cfg)
	if err != nil {
		return nil, err
	}
	if err := s.Prepare(ctx); err != nil {
		return nil, errors.Join(err, s.Close(ctx))
	}
	return s, nil
}

// Reasons of records_dropped_total{sink="influxdb"}.
const (
	// DropBuffer: InfluxStats.Dropped, the buffer's overflow, or what was
	// left at Close's deadline or with no server answering at Close.
	DropBuffer = "buffer"
	// DropRejected: InfluxStats.Rejected, refused for good by InfluxDB
	// (a 4xx but 404 and 429: bad data, a bad token).
	DropRejected = "rejected"
)

var influxMetrics = struct {
	written, errors, dropped, bufSize *prometheus.Desc
}{
	written: NewDesc(MetricWritten, "influxdb"),
	errors:  NewDesc(MetricWriteErrors, "influxdb"),
	dropped: NewDesc(MetricDropped, "influxdb"),
	bufSize: NewDesc(MetricBufferSize, "influxdb"),
}

// Describe implements prometheus.Collector.
func (s *Influx) Describe(ch chan<- *prometheus.Desc) {
	ch <- influxMetrics.written
	ch <- influxMetrics.errors
	ch <- influxMetrics.dropped
	ch <- influxMetrics.bufSize
}

// Collect implements prometheus.Collector: the sink's Stats at scrape
// time.
func (s *Influx) Collect(ch chan<- prometheus.Metric) {
	st := s.Stats()
	ch <- prometheus.MustNewConstMetric(influxMetrics.written, prometheus.CounterValue, float64(st.Written))
	ch <- prometheus.MustNewConstMetric(influxMetrics.errors, prometheus.CounterValue, float64(st.WriteErrors))
	ch <- prometheus.MustNewConstMetric(influxMetrics.dropped, prometheus.CounterValue, float64(st.Dropped), DropBuffer)
	ch <- prometheus.MustNewConstMetric(influxMetrics.dropped, prometheus.CounterValue, float64(st.Rejected), DropRejected)
	ch <- prometheus.MustNewConstMetric(influxMetrics.bufSize, prometheus.GaugeValue, float64(st.Buffered))
}
