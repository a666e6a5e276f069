package telemetry

import (
	"github.com/prometheus/client_golang/prometheus"
)

// statsCollector reads the components' Stats at each scrape and turns
// them into constant metrics: the components count, once, with their own
// atomics; nothing is counted twice and nothing here runs per point.
type statsCollector struct {
	cfg Config

	ckptWritten, ckptDeleted, ckptErrors, ckptUnwritten, ckptDiscarded *prometheus.Desc
	ckptQueued                                                         *prometheus.Desc
	partsHeld, partsAcquired                                           *prometheus.Desc
}

func newStatsCollector(cfg Config) *statsCollector {
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(prometheus.BuildFQName(Namespace, "", name), help, labels, nil)
	}
	c := &statsCollector{
		cfg: cfg,

		ckptWritten:   d("checkpoint_writes_total", "Checkpoint files written ([state] dir)."),
		ckptDeleted:   d("checkpoint_deletes_total", "Checkpoint files deleted (series evicted)."),
		ckptErrors:    d("checkpoint_write_errors_total", "Checkpoint writes and deletes that failed, each retry included."),
		ckptDiscarded: d("checkpoints_discarded_total", "States of series that are not live deleted at a bound: evicted at max_series beyond [state] keep_evicted, or beyond max_series + keep_evicted at start."),
		ckptUnwritten: d("checkpoints_unwritten", "Series whose last checkpoint write or delete failed and waits for the next checkpoint to be tried again."),
	}
	c.ckptQueued = d("checkpoint_queue_bytes", "Bytes of series states waiting to be written: memory in transit, which memory_budget does not charge to the series.")
	c.partsHeld = d("partitions_held", "Input partitions whose lease this instance holds ([state] store = \"jetstream\").")
	c.partsAcquired = d("partition_leases_acquired_total", "Partition leases this instance acquired: at start, or taken over from an instance that stopped renewing.")
	return c
}

// Describe implements prometheus.Collector: the descriptors of the
// components whose getter is set.
func (c *statsCollector) Describe(ch chan<- *prometheus.Desc) {
	if c.cfg.Checkpoints != nil {
		ch <- c.ckptWritten
		ch <- c.ckptDeleted
		ch <- c.ckptErrors
		ch <- c.ckptUnwritten
		ch <- c.ckptDiscarded
		ch <- c.ckptQueued
	}
	if c.cfg.Partitions != nil {
		ch <- c.partsHeld
		ch <- c.partsAcquired
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
	if c.cfg.Checkpoints != nil {
		st := c.cfg.Checkpoints()
		counter(c.ckptWritten, st.Written)
		counter(c.ckptDeleted, st.Deleted)
		counter(c.ckptErrors, st.Errors)
		gauge(c.ckptUnwritten, float64(st.Unwritten))
		counter(c.ckptDiscarded, st.Discarded)
		gauge(c.ckptQueued, float64(st.Queued))
	}
	if c.cfg.Partitions != nil {
		st := c.cfg.Partitions()
		gauge(c.partsHeld, float64(st.Held))
		counter(c.partsAcquired, st.Acquired)
	}
}

var _ prometheus.Collector = (*statsCollector)(nil)
