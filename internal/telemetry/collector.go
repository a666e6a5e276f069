package telemetry

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/forecastd/forecastd/sources"
)

// Reasons of forecastd_points_dropped_total, each from a RunnerStats field.
const (
	DropQueueFull  = "queue_full"   // RunnerStats.DroppedQueueFull
	DropMaxSeries  = "max_series"   // RunnerStats.DroppedMaxSeries
	DropShutdown   = "shutdown"     // RunnerStats.DroppedShutdown
	DropClosed     = "closed"       // RunnerStats.DroppedClosed
	DropOutOfOrder = "out_of_order" // RunnerStats.OutOfOrder
)

// Reasons of forecastd_records_dropped_total.
const (
	RecordsBuffer     = "buffer"      // InfluxStats.Dropped: buffer overflow, or left at Close's deadline
	RecordsRejected   = "rejected"    // InfluxStats.Rejected: refused for good by InfluxDB (4xx)
	RecordsBufferFull = "buffer_full" // NATSStats.BufferFull: reconnect buffer full while disconnected
)

// statsCollector reads the components' Stats at each scrape and turns
// them into constant metrics: the components count, once, with their own
// atomics; nothing is counted twice and nothing here runs per point.
type statsCollector struct {
	cfg Config

	received, parseErrors, refused, msgDropped, connected *prometheus.Desc

	active, created, evicted, processed, forecasts, pointsDropped *prometheus.Desc

	written, writeErrors, recordsDropped, bufferSize, bufferBytes *prometheus.Desc

	reasons []string // sources.Reasons() as labels, in order
}

func newStatsCollector(cfg Config) *statsCollector {
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(prometheus.BuildFQName(Namespace, "", name), help, labels, nil)
	}
	c := &statsCollector{
		cfg: cfg,

		received:    d("messages_received_total", "NATS messages received (JetStream redeliveries included)."),
		parseErrors: d("parse_errors_total", "Parts of payloads (whole payloads, array elements, lines, fields) refused, by reason.", "reason"),
		refused:     d("messages_refused_total", "NATS messages of which no point could be decoded (not delivered; terminated under JetStream)."),
		msgDropped:  d("messages_dropped_total", "NATS messages lost before delivery: dropped by the client for a slow consumer, or abandoned at a shutdown deadline."),
		connected:   d("input_connected", "Whether the input's NATS connection is up (1) or not (0)."),

		active:        d("series_active", "Series held now."),
		created:       d("series_created_total", "Series created."),
		evicted:       d("series_evicted_total", "Series evicted for idleness."),
		processed:     d("points_processed_total", "Points taken by a series (learned, or dropped by it)."),
		forecasts:     d("forecasts_total", "Forecasts accepted by the sinks."),
		pointsDropped: d("points_dropped_total", "Points dropped, by reason: queue_full, max_series, shutdown, closed (submitted after close), out_of_order (duplicates included).", "reason"),

		written:        d("records_written_total", "Records (forecasts and outcomes) accepted: by the NATS client, or acknowledged by InfluxDB.", "sink"),
		writeErrors:    d("write_errors_total", "Write errors: records the NATS client refused; failed InfluxDB write requests, each retry included.", "sink"),
		recordsDropped: d("records_dropped_total", "Records lost, by sink and reason: buffer (overflow, or left at the shutdown deadline) and rejected (refused for good) for influxdb; buffer_full (reconnect buffer) for nats.", "sink", "reason"),
		bufferSize:     d("buffer_size", "Records waiting in the sink's buffer, the batch being written included.", "sink"),
		bufferBytes:    d("buffer_bytes", "Bytes the NATS client holds unsent.", "sink"),
	}
	for _, r := range sources.Reasons() {
		c.reasons = append(c.reasons, r.String())
	}
	return c
}

// Describe implements prometheus.Collector: the descriptors of the
// components whose getter is set.
func (c *statsCollector) Describe(ch chan<- *prometheus.Desc) {
	if c.cfg.Source != nil {
		ch <- c.received
		ch <- c.parseErrors
		ch <- c.refused
		ch <- c.msgDropped
		ch <- c.connected
	}
	if c.cfg.Runner != nil {
		ch <- c.active
		ch <- c.created
		ch <- c.evicted
		ch <- c.processed
		ch <- c.forecasts
		ch <- c.pointsDropped
	}
	if c.cfg.NATS != nil || c.cfg.Influx != nil {
		ch <- c.written
		ch <- c.writeErrors
		ch <- c.recordsDropped
	}
	if c.cfg.Influx != nil {
		ch <- c.bufferSize
	}
	if c.cfg.NATS != nil {
		ch <- c.bufferBytes
	}
}

// Collect implements prometheus.Collector: one call of each getter.
func (c *statsCollector) Collect(ch chan<- prometheus.Metric) {
	counter := func(d *prometheus.Desc, v uint64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	if c.cfg.Source != nil {
		st := c.cfg.Source()
		counter(c.received, st.Received)
		// Every reason, zero included, in the order of sources.Reasons.
		for i, r := range sources.Reasons() {
			counter(c.parseErrors, st.ParseErrors[r], c.reasons[i])
		}
		counter(c.refused, st.Refused)
		counter(c.msgDropped, st.Dropped)
		gauge(c.connected, bool01(st.Connected))
	}
	if c.cfg.Runner != nil {
		st := c.cfg.Runner()
		gauge(c.active, float64(st.SeriesActive))
		counter(c.created, st.SeriesCreated)
		counter(c.evicted, st.SeriesEvicted)
		counter(c.processed, st.Processed)
		counter(c.forecasts, st.Forecasts)
		counter(c.pointsDropped, st.DroppedQueueFull, DropQueueFull)
		counter(c.pointsDropped, st.DroppedMaxSeries, DropMaxSeries)
		counter(c.pointsDropped, st.DroppedShutdown, DropShutdown)
		counter(c.pointsDropped, st.DroppedClosed, DropClosed)
		counter(c.pointsDropped, st.OutOfOrder, DropOutOfOrder)
	}
	if c.cfg.NATS != nil {
		st := c.cfg.NATS()
		counter(c.written, st.Published, SinkNATS)
		counter(c.writeErrors, st.Errors, SinkNATS)
		counter(c.recordsDropped, st.BufferFull, SinkNATS, RecordsBufferFull)
		if st.Buffered >= 0 { // −1: the connection is closed
			gauge(c.bufferBytes, float64(st.Buffered), SinkNATS)
		}
	}
	if c.cfg.Influx != nil {
		st := c.cfg.Influx()
		counter(c.written, st.Written, SinkInfluxDB)
		counter(c.writeErrors, st.WriteErrors, SinkInfluxDB)
		counter(c.recordsDropped, st.Dropped, SinkInfluxDB, RecordsBuffer)
		counter(c.recordsDropped, st.Rejected, SinkInfluxDB, RecordsRejected)
		gauge(c.bufferSize, float64(st.Buffered), SinkInfluxDB)
	}
}

func bool01(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

var _ prometheus.Collector = (*statsCollector)(nil)
