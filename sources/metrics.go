package sources

import "github.com/prometheus/client_golang/prometheus"

// NewCollector returns the collector of an input's metrics
// (forecastd_messages_*, parse_errors_total, consumer_resets_total,
// input_connected), reading stats at each scrape: it must be safe to call
// concurrently with the input, and must not block. parse_errors_total has
// every reason of Reasons, zero included, in order.
func NewCollector(stats func() Stats) prometheus.Collector {
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc("forecastd_"+name, help, labels, nil)
	}
	c := &collector{
		stats:       stats,
		received:    d("messages_received_total", "NATS messages received (JetStream redeliveries included)."),
		parseErrors: d("parse_errors_total", "Parts of payloads (whole payloads, array elements, lines, fields) refused, by reason.", "reason"),
		refused:     d("messages_refused_total", "NATS messages of which no point could be decoded (not delivered; terminated under JetStream)."),
		filtered:    d("messages_filtered_total", "NATS messages every field of which [input] fieldpass / fielddrop left out (not delivered; acknowledged under JetStream)."),
		skipped:     d("messages_skipped_total", "JetStream messages acknowledged without delivery because the checkpoints already cover them (a replay after a restart)."),
		resets:      d("consumer_resets_total", "JetStream consumers deleted and created again at the checkpoints' position because they had acknowledged more than the checkpoints cover."),
		dropped:     d("messages_dropped_total", "NATS messages lost before delivery: dropped by the client for a slow consumer, or abandoned at a shutdown deadline."),
		connected:   d("input_connected", "Whether the input's NATS connection is up (1) or not (0)."),
	}
	for _, r := range Reasons() {
		c.reasons = append(c.reasons, r.String())
	}
	return c
}

type collector struct {
	stats func() Stats

	received, parseErrors, refused, filtered, dropped, skipped, resets, connected *prometheus.Desc

	reasons []string // Reasons() as labels, in order
}

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.received, c.parseErrors, c.refused, c.filtered, c.dropped, c.skipped, c.resets, c.connected} {
		ch <- d
	}
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	st := c.stats()
	counter := func(d *prometheus.Desc, v uint64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	counter(c.received, st.Received)
	for i, r := range Reasons() {
		counter(c.parseErrors, st.ParseErrors[r], c.reasons[i])
	}
	counter(c.refused, st.Refused)
	counter(c.filtered, st.Filtered)
	counter(c.dropped, st.Dropped)
	counter(c.skipped, st.Skipped)
	counter(c.resets, st.Resets)
	connected := 0.0
	if st.Connected {
		connected = 1
	}
	ch <- prometheus.MustNewConstMetric(c.connected, prometheus.GaugeValue, connected)
}
