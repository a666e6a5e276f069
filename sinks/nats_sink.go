package sinks

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"
)

// natsKind opens the [NATS] sink on the daemon's output connection
// ([output.nats], Env.Config a *NATSConfig): forecasts are always
// published, confirmed every DefaultConfirmEvery, and published again
// on the connection that replaces one the server closed. Under an input
// that redelivers (Env.Redelivers), the sink refuses while the connection
// is closed (NATSConfig.RefuseWhileClosed) and publishes on the writer's
// goroutine, so that a refusal reaches the point's acknowledgement;
// otherwise through a queue (NATSConfig.Queue, DefaultQueue).
type natsKind struct{}

func (natsKind) Name() string { return "nats" }

func (natsKind) Doc() string { return "Forecasts are always published to NATS." }

func (natsKind) NewConfig() any { return new(NATSConfig) }

func (natsKind) Open(_ context.Context, env Env) (Sink, error) {
	if env.NATS == nil || env.NATS.Conn() == nil {
		return nil, nil
	}
	var cfg NATSConfig
	if c, ok := env.Config.(*NATSConfig); ok && c != nil {
		cfg = *c
	}
	cfg.RefuseWhileClosed = env.Redelivers
	if !env.Redelivers {
		cfg.Queue = DefaultQueue
	}
	cfg.ConfirmEvery = DefaultConfirmEvery
	s := NewNATS(env.NATS.Conn(), cfg)
	env.NATS.OnReplace(s.Replace)
	return s, nil
}

// The NATS sink's metrics beyond the shared ones.
var (
	natsRepublishedDesc = prometheus.NewDesc(MetricPrefix+"nats_republished_total", "Forecast messages published again on a new output connection because the server had not confirmed them when the old one closed (subscribers may see them twice; a JetStream stream drops the copies by Nats-Msg-Id).", nil, nil)
	natsUnkeptDesc      = prometheus.NewDesc(MetricPrefix+"nats_unkept_total", "Forecast messages published while the messages kept for republishing were at their bound: lost if the connection closes before the server has them.", nil, nil)
	natsUnconfirmedDesc = prometheus.NewDesc(MetricPrefix+"nats_unconfirmed_bytes", "Bytes of forecast messages kept until the server confirms it has them, to publish again if the output connection closes.", nil, nil)
)

// Reasons of records_dropped_total{sink="nats"}.
const (
	// DropBufferFull: NATSStats.BufferFull, the client's reconnect
	// buffer full while disconnected.
	DropBufferFull = "buffer_full"
)

type natsDescs struct {
	written, errors, dropped, bufSize, bufBytes *prometheus.Desc
}

var natsMetrics = natsDescs{
	written:  NewDesc(MetricWritten, "nats"),
	errors:   NewDesc(MetricWriteErrors, "nats"),
	dropped:  NewDesc(MetricDropped, "nats"),
	bufSize:  NewDesc(MetricBufferSize, "nats"),
	bufBytes: NewDesc(MetricBufferBytes, "nats"),
}

// Describe implements prometheus.Collector.
func (s *NATS) Describe(ch chan<- *prometheus.Desc) {
	ch <- natsMetrics.written
	ch <- natsMetrics.errors
	ch <- natsMetrics.dropped
	ch <- natsMetrics.bufSize
	ch <- natsMetrics.bufBytes
	ch <- natsRepublishedDesc
	ch <- natsUnkeptDesc
	ch <- natsUnconfirmedDesc
}

// Collect implements prometheus.Collector: the sink's Stats at scrape
// time, buffer_bytes left out once the connection is closed.
func (s *NATS) Collect(ch chan<- prometheus.Metric) {
	st := s.Stats()
	ch <- prometheus.MustNewConstMetric(natsMetrics.written, prometheus.CounterValue, float64(st.Published))
	ch <- prometheus.MustNewConstMetric(natsMetrics.errors, prometheus.CounterValue, float64(st.Errors))
	ch <- prometheus.MustNewConstMetric(natsMetrics.dropped, prometheus.CounterValue, float64(st.BufferFull), DropBufferFull)
	if st.Buffered >= 0 {
		ch <- prometheus.MustNewConstMetric(natsMetrics.bufBytes, prometheus.GaugeValue, float64(st.Buffered))
	}
	ch <- prometheus.MustNewConstMetric(natsRepublishedDesc, prometheus.CounterValue, float64(st.Republished))
	ch <- prometheus.MustNewConstMetric(natsUnkeptDesc, prometheus.CounterValue, float64(st.Unkept))
	ch <- prometheus.MustNewConstMetric(natsUnconfirmedDesc, prometheus.GaugeValue, float64(st.Unconfirmed))
	ch <- prometheus.MustNewConstMetric(natsMetrics.bufSize, prometheus.GaugeValue, float64(st.Queued))
}
