package sinks

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"
)

func init() { Register(promKind{}) }

// promKind opens the [Prom] sink of [output.prometheus] (Env.Config a
// *PromConfig; absent, nil: no sink).
type promKind struct{}

func (promKind) Name() string { return "prometheus" }

func (promKind) Doc() string {
	return "If present, forecasts, bounds, actuals, anomaly scores and threshold ETAs are also written by Prometheus remote write 1.0 (Prometheus, VictoriaMetrics, Mimir)."
}

func (promKind) NewConfig() any { return new(PromConfig) }

func (promKind) Open(_ context.Context, env Env) (Sink, error) {
	c, _ := env.Config.(*PromConfig)
	if c == nil {
		return nil, nil
	}
	cfg := *c
	if cfg.Logger == nil {
		cfg.Logger = env.Logger
	}
	return NewProm(cfg)
}

var promMetrics = struct {
	written, errors, dropped, bufSize *prometheus.Desc
}{
	written: NewDesc(MetricWritten, "prometheus"),
	errors:  NewDesc(MetricWriteErrors, "prometheus"),
	dropped: NewDesc(MetricDropped, "prometheus"),
	bufSize: NewDesc(MetricBufferSize, "prometheus"),
}

// Describe implements prometheus.Collector.
func (s *Prom) Describe(ch chan<- *prometheus.Desc) {
	ch <- promMetrics.written
	ch <- promMetrics.errors
	ch <- promMetrics.dropped
	ch <- promMetrics.bufSize
}

// Collect implements prometheus.Collector: the sink's Stats at scrape
// time; records_dropped_total's reasons are buffer (PromStats.Dropped)
// and rejected (PromStats.Rejected), as the InfluxDB sink's.
func (s *Prom) Collect(ch chan<- prometheus.Metric) {
	st := s.Stats()
	ch <- prometheus.MustNewConstMetric(promMetrics.written, prometheus.CounterValue, float64(st.Written))
	ch <- prometheus.MustNewConstMetric(promMetrics.errors, prometheus.CounterValue, float64(st.WriteErrors))
	ch <- prometheus.MustNewConstMetric(promMetrics.dropped, prometheus.CounterValue, float64(st.Dropped), DropBuffer)
	ch <- prometheus.MustNewConstMetric(promMetrics.dropped, prometheus.CounterValue, float64(st.Rejected), DropRejected)
	ch <- prometheus.MustNewConstMetric(promMetrics.bufSize, prometheus.GaugeValue, float64(st.Buffered))
}
