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
	DropLate       = "late"         // RunnerStats.Late
	// DropImplausible: RunnerStats.Implausible.
	DropImplausible = "implausible"
)

// Reasons of forecastd_series_evicted_total, each from a RunnerStats field.
const (
	EvictIdle      = "idle"       // RunnerStats.SeriesEvicted
	EvictMaxSeries = "max_series" // RunnerStats.EvictedLRU
)

// Reasons of forecastd_model_errors_total, from pipeline.ModelStats.
const (
	ModelErrorLearn   = "learn"   // ModelStats.LearnErrors
	ModelErrorPredict = "predict" // ModelStats.PredictErrors
)

// Events of forecastd_model_events_total, from ModelStats.Events
// (svr.AOSVRStats).
const (
	EventRefusal  = "refusal"  // Refused
	EventRepair   = "repair"   // Repairs
	EventRefresh  = "refresh"  // Refreshes
	EventRollback = "rollback" // Rollbacks
	EventRebuild  = "rebuild"  // Rebuilds
	EventFailure  = "failure"  // Failures
)

// statsCollector reads the components' Stats at each scrape and turns
// them into constant metrics: the components count, once, with their own
// atomics; nothing is counted twice and nothing here runs per point.
type statsCollector struct {
	cfg Config

	received, parseErrors, refused, filtered, msgDropped, skipped, resets, connected *prometheus.Desc

	active, created, evicted, processed, forecasts, pointsDropped *prometheus.Desc

	evictedUnsaved, seriesLimit *prometheus.Desc

	modelErrors, modelEvents, modelDrift *prometheus.Desc

	ckptWritten, ckptDeleted, ckptErrors, ckptUnwritten, ckptDiscarded *prometheus.Desc
	ckptQueued                                                         *prometheus.Desc
	partsHeld, partsAcquired                                           *prometheus.Desc

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
		filtered:    d("messages_filtered_total", "NATS messages every field of which [input] fieldpass / fielddrop left out (not delivered; acknowledged under JetStream)."),
		skipped:     d("messages_skipped_total", "JetStream messages acknowledged without delivery because the checkpoints already cover them (a replay after a restart)."),
		resets:      d("consumer_resets_total", "JetStream consumers deleted and created again at the checkpoints' position because they had acknowledged more than the checkpoints cover."),
		msgDropped:  d("messages_dropped_total", "NATS messages lost before delivery: dropped by the client for a slow consumer, or abandoned at a shutdown deadline."),
		connected:   d("input_connected", "Whether the input's NATS connection is up (1) or not (0)."),

		active:        d("series_active", "Series held now."),
		created:       d("series_created_total", "Series created."),
		evicted:       d("series_evicted_total", "Series evicted, by reason: idle (no point for idle_ttl), max_series (the least recently used, to make room for a new series).", "reason"),
		processed:     d("points_processed_total", "Points taken by a series (learned, or dropped by it)."),
		forecasts:     d("forecasts_total", "Forecasts accepted by the sinks."),
		pointsDropped: d("points_dropped_total", "Points dropped, by reason: queue_full, max_series, shutdown, closed (submitted after close), out_of_order (duplicates included), late (for a bucket already closed, with a step).", "reason"),

		modelErrors: d("model_errors_total", "Model failures, by model kind and reason: learn (an update the model refused; it is left unchanged), predict (a prediction that failed or was not finite; no forecast is made).", "model", "reason"),
		modelEvents: d("model_events_total", "Events of AOSVR's numerical safeguards, summed over the series, by model kind and event. Routine, no point lost: refusal (a sample numerically dependent on the support vectors kept out of them; the sample is still learnt), repair, refresh. Rare: rollback and rebuild (the model relearnt from its window). failure: the rebuild failed too, the point was not learnt (logged).", "model", "event"),
		modelDrift:  d("model_max_drift", "Largest KKT drift a refresh found in any series' AOSVR, in units of y.", "model"),

		ckptWritten:   d("checkpoint_writes_total", "Checkpoint files written ([state] dir)."),
		ckptDeleted:   d("checkpoint_deletes_total", "Checkpoint files deleted (series evicted)."),
		ckptErrors:    d("checkpoint_write_errors_total", "Checkpoint writes and deletes that failed, each retry included."),
		ckptDiscarded: d("checkpoints_discarded_total", "States of series that are not live deleted at a bound: evicted at max_series beyond [state] keep_evicted, or beyond max_series + keep_evicted at start."),
		ckptUnwritten: d("checkpoints_unwritten", "Series whose last checkpoint write or delete failed and waits for the next checkpoint to be tried again."),
	}
	c.ckptQueued = d("checkpoint_queue_bytes", "Bytes of series states waiting to be written: memory in transit, which memory_budget does not charge to the series.")
	c.seriesLimit = d("series_limit", "The bound on the series held that [pipeline] memory_budget set below max_series; 0: none.")
	c.partsHeld = d("partitions_held", "Input partitions whose lease this instance holds ([state] store = \"jetstream\").")
	c.partsAcquired = d("partition_leases_acquired_total", "Partition leases this instance acquired: at start, or taken over from an instance that stopped renewing.")
	c.evictedUnsaved = d("series_evicted_unsaved_total", "Series evicted at max_series whose state was not checkpointed because the checkpoint queue was full (lost: the series starts afresh if it comes back).")
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
		ch <- c.filtered
		ch <- c.msgDropped
		ch <- c.skipped
		ch <- c.resets
		ch <- c.connected
	}
	if c.cfg.Runner != nil {
		ch <- c.active
		ch <- c.seriesLimit
		ch <- c.created
		ch <- c.evicted
		ch <- c.evictedUnsaved
		ch <- c.processed
		ch <- c.forecasts
		ch <- c.pointsDropped
		ch <- c.modelErrors
		ch <- c.modelEvents
		ch <- c.modelDrift
	}
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
	if c.cfg.Source != nil {
		st := c.cfg.Source()
		counter(c.received, st.Received)
		// Every reason, zero included, in the order of sources.Reasons.
		for i, r := range sources.Reasons() {
			counter(c.parseErrors, st.ParseErrors[r], c.reasons[i])
		}
		counter(c.refused, st.Refused)
		counter(c.filtered, st.Filtered)
		counter(c.msgDropped, st.Dropped)
		counter(c.skipped, st.Skipped)
		counter(c.resets, st.Resets)
		gauge(c.connected, bool01(st.Connected))
	}
	if c.cfg.Runner != nil {
		st := c.cfg.Runner()
		gauge(c.active, float64(st.SeriesActive))
		gauge(c.seriesLimit, float64(st.SeriesLimit))
		counter(c.created, st.SeriesCreated)
		counter(c.evicted, st.SeriesEvicted, EvictIdle)
		counter(c.evicted, st.EvictedLRU, EvictMaxSeries)
		counter(c.evictedUnsaved, st.EvictedUnsaved)
		counter(c.processed, st.Processed)
		counter(c.forecasts, st.Forecasts)
		counter(c.pointsDropped, st.DroppedQueueFull, DropQueueFull)
		counter(c.pointsDropped, st.DroppedMaxSeries, DropMaxSeries)
		counter(c.pointsDropped, st.DroppedShutdown, DropShutdown)
		counter(c.pointsDropped, st.DroppedClosed, DropClosed)
		counter(c.pointsDropped, st.OutOfOrder, DropOutOfOrder)
		counter(c.pointsDropped, st.Late, DropLate)
		counter(c.pointsDropped, st.Implausible, DropImplausible)
		for _, m := range st.Models {
			kind := m.Kind.String()
			counter(c.modelErrors, m.LearnErrors, kind, ModelErrorLearn)
			counter(c.modelErrors, m.PredictErrors, kind, ModelErrorPredict)
			if !m.Reports {
				continue
			}
			ev := &m.Events
			counter(c.modelEvents, ev.Refused, kind, EventRefusal)
			counter(c.modelEvents, ev.Repairs, kind, EventRepair)
			counter(c.modelEvents, ev.Refreshes, kind, EventRefresh)
			counter(c.modelEvents, ev.Rollbacks, kind, EventRollback)
			counter(c.modelEvents, ev.Rebuilds, kind, EventRebuild)
			counter(c.modelEvents, ev.Failures, kind, EventFailure)
			gauge(c.modelDrift, ev.MaxDrift, kind)
		}
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

func bool01(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

var _ prometheus.Collector = (*statsCollector)(nil)
