package telemetry

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/forecastd/forecastd/pipeline"
)

// HistoryStats is what warm start from history did ([history]): the
// runner's counts and the queries' failures by class.
type HistoryStats struct {
	Runner pipeline.HistoryStats
	// Queries counts the queries sent, Failures the failed ones by class
	// (internal/history's FailureClasses).
	Queries  uint64
	Failures map[string]uint64
}

// historyCollector exports HistoryStats.
type historyCollector struct {
	get                                              func() HistoryStats
	warmed, points, cold, queries, failures, waiting *prometheus.Desc
}

func newHistoryCollector(get func() HistoryStats) *historyCollector {
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(prometheus.BuildFQName(Namespace, "history", name), help, labels, nil)
	}
	return &historyCollector{
		get:      get,
		warmed:   d("series_warmed_total", "New series that learned their past from InfluxDB before their first live point ([history])."),
		points:   d("points_learned_total", "Points of the past learned by new series."),
		cold:     d("series_cold_total", "New series without a checkpoint that started cold, by reason: failed (the query failed), empty (no past), queue_full, buffer_full (more live points came than max_buffered while waiting), shutdown, evicted.", "reason"),
		queries:  d("queries_total", "Queries of a series' past sent to InfluxDB."),
		failures: d("query_failures_total", "Queries of a series' past that failed, by class: unreachable, timeout, status, query, decode, too_large.", "class"),
		waiting:  d("series_waiting", "Input series holding their live points while their past is read."),
	}
}

func (c *historyCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.warmed, c.points, c.cold, c.queries, c.failures, c.waiting} {
		ch <- d
	}
}

func (c *historyCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.get()
	counter := func(d *prometheus.Desc, v uint64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	counter(c.warmed, st.Runner.Warmed)
	counter(c.points, st.Runner.Points)
	for _, r := range pipeline.ColdReasons {
		counter(c.cold, st.Runner.Cold[r], r)
	}
	counter(c.queries, st.Queries)
	for k, v := range st.Failures {
		counter(c.failures, v, k)
	}
	ch <- prometheus.MustNewConstMetric(c.waiting, prometheus.GaugeValue, float64(st.Runner.Waiting))
}
