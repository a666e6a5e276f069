package promql

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/forecastd/forecastd/internal/history"
)

// NewCollector returns the /metrics collector of the sources stats
// returns (every [[input.promql]] entry's), summed.
func NewCollector(stats func() []Stats) prometheus.Collector {
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc("forecastd_promql_"+name, help, labels, nil)
	}
	return &collector{stats: stats,
		queries:  d("queries_total", "query_range requests of [[input.promql]]."),
		failures: d("query_failures_total", "query_range requests of [[input.promql]] that failed, by class.", "class"),
		points:   d("points_total", "Samples [[input.promql]] handed to the series."),
		refused:  d("series_refused_total", "Series of [[input.promql]] answers left out: a key beyond [input] max_key_len."),
		dups:     d("duplicates_total", "Samples of [[input.promql]] answers left out as not after their series' last delivered."),
	}
}

type collector struct {
	stats                                    func() []Stats
	queries, failures, points, refused, dups *prometheus.Desc
}

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.queries, c.failures, c.points, c.refused, c.dups} {
		ch <- d
	}
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	var sum Stats
	fails := map[string]uint64{}
	for _, st := range c.stats() {
		sum.Queries += st.Queries
		sum.Points += st.Points
		sum.Refused += st.Refused
		sum.Duplicates += st.Duplicates
		for k, v := range st.Failures {
			fails[k] += v
		}
	}
	counter := func(d *prometheus.Desc, v uint64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	counter(c.queries, sum.Queries)
	for _, class := range history.FailureClasses {
		counter(c.failures, fails[class], class)
	}
	counter(c.points, sum.Points)
	counter(c.refused, sum.Refused)
	counter(c.dups, sum.Duplicates)
}
