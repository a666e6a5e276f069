package runner

import "github.com/prometheus/client_golang/prometheus"

// Reasons of forecastd_points_dropped_total, each from a RunnerStats field
// but DropMaxSeries.
const (
	DropQueueFull   = "queue_full"   // RunnerStats.DroppedQueueFull
	DropShutdown    = "shutdown"     // RunnerStats.DroppedShutdown
	DropClosed      = "closed"       // RunnerStats.DroppedClosed
	DropOutOfOrder  = "out_of_order" // RunnerStats.OutOfOrder
	DropLate        = "late"         // RunnerStats.Late
	DropImplausible = "implausible"  // RunnerStats.Implausible
	DropOverflow    = "overflow"     // RunnerStats.Overflow

	// DropMaxSeries is always 0: at max_series a series is evicted
	// (EvictMaxSeries), no point is dropped. It is still exported so that
	// the queries and alerts written for it keep finding it.
	DropMaxSeries = "max_series"
)

// Reasons of forecastd_series_evicted_total, each from a RunnerStats field.
const (
	EvictIdle      = "idle"       // RunnerStats.SeriesEvicted
	EvictMaxSeries = "max_series" // RunnerStats.EvictedLRU
)

// NewRunnerCollector returns the collector of a Runner's metrics (series_*,
// points_*, forecasts_total, model_*), reading stats at each scrape
// (Runner.Stats, safe for that). model_events_total and model_max_drift
// are there only for the kinds whose models report events
// (ModelStats.Reports).
func NewRunnerCollector(stats func() RunnerStats) prometheus.Collector {
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc("forecastd_"+name, help, labels, nil)
	}
	return &runnerCollector{
		stats:          stats,
		active:         d("series_active", "Series held now."),
		limit:          d("series_limit", "The bound on the series held that [pipeline] memory_budget set below max_series; 0: none."),
		created:        d("series_created_total", "Series created."),
		evicted:        d("series_evicted_total", "Series evicted, by reason: idle (no point for idle_ttl), max_series (the least recently used, to make room for a new series).", "reason"),
		evictedUnsaved: d("series_evicted_unsaved_total", "Series evicted at max_series whose state was not checkpointed because the checkpoint queue was full (lost: the series starts afresh if it comes back)."),
		processed:      d("points_processed_total", "Points taken by a series (learned, or dropped by it)."),
		forecasts:      d("forecasts_total", "Forecasts accepted by the sinks."),
		dropped:        d("points_dropped_total", "Points dropped, by reason: queue_full, max_series (always 0: the least recently used series is evicted instead, see series_evicted_total), shutdown, closed (submitted after close), out_of_order (duplicates included), late (for a bucket already closed, with a step), implausible (a value implausibly far from its series' last), overflow (a bucket whose sum or rate is beyond float64, with a step).", "reason"),
		modelErrors:    d("model_errors_total", "Model failures, by model kind and reason: learn (an update the model refused; it is left unchanged), predict (a prediction that failed or was not finite; no forecast is made).", "model", "reason"),
		modelEvents:    d("model_events_total", "Events of AOSVR's numerical safeguards, summed over the series, by model kind and event. Routine, no point lost: refusal (a sample numerically dependent on the support vectors kept out of them; the sample is still learnt), repair, refresh. Rare: rollback and rebuild (the model relearnt from its window). failure: the rebuild failed too, the point was not learnt (logged).", "model", "event"),
		modelDrift:     d("model_max_drift", "Largest KKT drift a refresh found in any series' AOSVR, in units of y.", "model"),
		cacheBytes:     d("kernel_cache_bytes", "Bytes of kernel columns the AOSVR models keep between points ([pipeline] kernel_cache)."),
		cacheLimit:     d("kernel_cache_limit_bytes", "The kernel cache's limit in force: kernel_cache, or under \"auto\" what the memory leaves beside the series."),
		cacheHits:      d("kernel_cache_hits_total", "AOSVR updates that needed their support vectors' kernel columns and had kept them."),
		cacheMisses:    d("kernel_cache_misses_total", "AOSVR updates at their window that needed their support vectors' kernel columns and computed them again (the same values, more CPU)."),
	}
}

type runnerCollector struct {
	stats func() RunnerStats

	active, limit, created, evicted, evictedUnsaved, processed, forecasts, dropped *prometheus.Desc
	modelErrors, modelEvents, modelDrift                                           *prometheus.Desc
	cacheBytes, cacheLimit, cacheHits, cacheMisses                                 *prometheus.Desc
}

func (c *runnerCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.active, c.limit, c.created, c.evicted, c.evictedUnsaved, c.processed,
		c.forecasts, c.dropped, c.modelErrors, c.modelEvents, c.modelDrift,
		c.cacheBytes, c.cacheLimit, c.cacheHits, c.cacheMisses} {
		ch <- d
	}
}

func (c *runnerCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.stats()
	counter := func(d *prometheus.Desc, v uint64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	gauge(c.active, float64(st.SeriesActive))
	gauge(c.limit, float64(st.SeriesLimit))
	counter(c.created, st.SeriesCreated)
	counter(c.evicted, st.SeriesEvicted, EvictIdle)
	counter(c.evicted, st.EvictedLRU, EvictMaxSeries)
	counter(c.evictedUnsaved, st.EvictedUnsaved)
	counter(c.processed, st.Processed)
	counter(c.forecasts, st.Forecasts)
	counter(c.dropped, st.DroppedQueueFull, DropQueueFull)
	counter(c.dropped, 0, DropMaxSeries)
	counter(c.dropped, st.DroppedShutdown, DropShutdown)
	counter(c.dropped, st.DroppedClosed, DropClosed)
	counter(c.dropped, st.OutOfOrder, DropOutOfOrder)
	counter(c.dropped, st.Late, DropLate)
	counter(c.dropped, st.Implausible, DropImplausible)
	counter(c.dropped, st.Overflow, DropOverflow)
	kc := st.KernelCache
	gauge(c.cacheBytes, float64(kc.Bytes))
	gauge(c.cacheLimit, float64(kc.Limit))
	counter(c.cacheHits, kc.Hits)
	counter(c.cacheMisses, kc.Misses)
	for _, m := range st.Models {
		kind := m.Kind.String()
		counter(c.modelErrors, m.LearnErrors, kind, "learn")
		counter(c.modelErrors, m.PredictErrors, kind, "predict")
		if !m.Reports {
			continue
		}
		ev := &m.Events
		counter(c.modelEvents, ev.Refused, kind, "refusal")
		counter(c.modelEvents, ev.Repairs, kind, "repair")
		counter(c.modelEvents, ev.Refreshes, kind, "refresh")
		counter(c.modelEvents, ev.Rollbacks, kind, "rollback")
		counter(c.modelEvents, ev.Rebuilds, kind, "rebuild")
		counter(c.modelEvents, ev.Failures, kind, "failure")
		gauge(c.modelDrift, ev.MaxDrift, kind)
	}
}

// NewHistoryCollector returns the collector of warm start's metrics
// (forecastd_history_*): the runner's counts (Runner.HistoryStats) and the
// queries' (queries sent, failures by class), read at each scrape.
func NewHistoryCollector(runner func() HistoryStats, queries func() (sent uint64, failures map[string]uint64)) prometheus.Collector {
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc("forecastd_history_"+name, help, labels, nil)
	}
	return &historyCollector{
		runner:   runner,
		queries:  queries,
		warmed:   d("series_warmed_total", "New series that learned their past from InfluxDB before their first live point ([history])."),
		points:   d("points_learned_total", "Points of the past learned by new series."),
		cold:     d("series_cold_total", "New series without a checkpoint that started cold, by reason: failed (the query failed), empty (no past), queue_full, buffer_full (more live points came than max_buffered while waiting), shutdown, evicted.", "reason"),
		sent:     d("queries_total", "Queries of a series' past sent to InfluxDB."),
		failures: d("query_failures_total", "Queries of a series' past that failed, by class: unreachable, timeout, status, query, decode, too_large.", "class"),
		waiting:  d("series_waiting", "Input series holding their live points while their past is read."),
		dropped:  d("points_dropped_total", "Points of the past read but not learned, by reason: not_before_live (at or after the series' first live point).", "reason"),
	}
}

type historyCollector struct {
	runner                                                 func() HistoryStats
	queries                                                func() (uint64, map[string]uint64)
	warmed, points, cold, sent, failures, waiting, dropped *prometheus.Desc
}

func (c *historyCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.warmed, c.points, c.cold, c.sent, c.failures, c.waiting, c.dropped} {
		ch <- d
	}
}

func (c *historyCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.runner()
	sent, failures := c.queries()
	counter := func(d *prometheus.Desc, v uint64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	counter(c.warmed, st.Warmed)
	counter(c.points, st.Points)
	for _, r := range ColdReasons {
		counter(c.cold, st.Cold[r], r)
	}
	counter(c.sent, sent)
	for k, v := range failures {
		counter(c.failures, v, k)
	}
	for _, r := range HistoryDropReasons {
		counter(c.dropped, st.Dropped[r], r)
	}
	ch <- prometheus.MustNewConstMetric(c.waiting, prometheus.GaugeValue, float64(st.Waiting))
}
