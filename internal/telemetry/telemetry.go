package telemetry

import (
	"math"
	"runtime"
	"runtime/debug"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/forecastd/forecastd/pipeline"
	"github.com/forecastd/forecastd/sinks"
	"github.com/forecastd/forecastd/sources"
)

// Namespace prefixes every forecastd metric name.
const Namespace = "forecastd"

// Sink label values.
const (
	SinkNATS     = "nats"
	SinkInfluxDB = "influxdb"
)

// UpdateBuckets are the upper bounds, in seconds, of
// forecastd_model_update_duration_seconds: 1 µs to 100 ms in 1-2.5-5
// steps, from a small NORMA update (about a microsecond) to a large AOSVR
// window's.
var UpdateBuckets = []float64{
	1e-6, 2.5e-6, 5e-6,
	1e-5, 2.5e-5, 5e-5,
	1e-4, 2.5e-4, 5e-4,
	1e-3, 2.5e-3, 5e-3,
	1e-2, 2.5e-2, 5e-2,
	1e-1,
}

// AbsErrorBuckets are the upper bounds of forecastd_forecast_abs_error, in
// the model's scaled units, where the scale's range maps onto [−1, 1]: an
// error of 0.01 is half a percent of the range.
var AbsErrorBuckets = []float64{
	0.001, 0.0025, 0.005,
	0.01, 0.025, 0.05,
	0.1, 0.25, 0.5,
	1, 2,
}

// Config says where Metrics reads its values. Every getter is called at
// each scrape, from the scraping request's goroutine, concurrently with
// the component it reads; it must be safe for that and must not block.
// A nil getter leaves that component's metrics out of /metrics (a daemon
// without [output.influxdb] passes no Influx getter).
type Config struct {
	// Source feeds messages_received_total, parse_errors_total{reason}
	// and the other forecastd_messages_* and forecastd_input_* metrics.
	Source func() sources.Stats
	// Runner feeds series_active, series_evicted_total,
	// points_dropped_total{reason} and the other counters of the shards.
	Runner func() pipeline.RunnerStats
	// NATS and Influx feed write_errors_total{sink},
	// records_written_total{sink}, records_dropped_total{sink,reason},
	// buffer_size{sink="influxdb"} and buffer_bytes{sink="nats"}.
	NATS   func() sinks.NATSStats
	Influx func() sinks.InfluxStats
	// Ready tells /-/ready whether the daemon is ready and, if not, why
	// (the reason is the 503 response's body). It must be safe for
	// concurrent use and must not block. Nil: ready whenever serving.
	Ready func() (ready bool, reason string)
	// Version and Revision label forecastd_build_info. Empty: the main
	// module's version and the VCS revision recorded in the binary
	// (debug.ReadBuildInfo), or "unknown".
	Version, Revision string
}

// Metrics is forecastd's self-metrics: a Prometheus registry holding a
// collector that reads the components' Stats at scrape time, the two
// histograms fed by the observers, build_info, and the Go runtime and
// process collectors. Its methods are safe for concurrent use.
type Metrics struct {
	reg    *prometheus.Registry
	ready  func() (bool, string)
	update prometheus.Histogram
	absErr prometheus.Histogram
}

// Observer is what the pipeline calls per model update and per outcome.
// *Metrics implements it; a consumer (pipeline) declares its own
// interface with the methods it calls.
type Observer interface {
	// ObserveUpdate records the duration of one model update.
	ObserveUpdate(d time.Duration)
	// ObserveAbsError records one forecast's error in scaled units.
	ObserveAbsError(e float64)
}

var _ Observer = (*Metrics)(nil)

// New returns the metrics of cfg in a fresh registry.
func New(cfg Config) *Metrics {
	m := &Metrics{
		reg:   prometheus.NewRegistry(),
		ready: cfg.Ready,
		update: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: Namespace,
			Name:      "model_update_duration_seconds",
			Help:      "Duration of one model update (learning a sample, forgetting included).",
			Buckets:   UpdateBuckets,
		}),
		absErr: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: Namespace,
			Name:      "forecast_abs_error",
			Help:      "Absolute error |y - yhat| of each scored forecast, in the model's scaled units (the scale's range is [-1, 1]).",
			Buckets:   AbsErrorBuckets,
		}),
	}
	version, revision := buildVersion(cfg.Version, cfg.Revision)
	m.reg.MustRegister(
		m.update,
		m.absErr,
		newStatsCollector(cfg),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Namespace:   Namespace,
			Name:        "build_info",
			Help:        "A metric with a constant '1' value labelled by the version, Go version and VCS revision forecastd was built from.",
			ConstLabels: prometheus.Labels{"version": version, "goversion": runtime.Version(), "revision": revision},
		}, func() float64 { return 1 }),
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	return m
}

// Registry returns the registry /metrics gathers, for a caller that
// registers more collectors.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// ObserveUpdate records the duration of one model update in
// forecastd_model_update_duration_seconds. It does not allocate and costs
// a few tens of nanoseconds (BenchmarkObserveUpdate): a binary search of
// the buckets and two atomic additions.
func (m *Metrics) ObserveUpdate(d time.Duration) { m.update.Observe(d.Seconds()) }

// ObserveAbsError records |e| in forecastd_forecast_abs_error; a NaN or
// infinite e is ignored, as it would poison the histogram's sum. Same
// cost as ObserveUpdate.
func (m *Metrics) ObserveAbsError(e float64) {
	if math.IsNaN(e) || math.IsInf(e, 0) {
		return
	}
	m.absErr.Observe(math.Abs(e))
}

// ScoreSink returns a pipeline.Sink that records each outcome's error
// |ActualScaled − Forecast.Scaled| with ObserveAbsError and passes every
// call on to next, returning its result. The error is recorded whether or
// not next accepts the outcome: it measures the model, not the delivery.
// It adds an interface call and ObserveAbsError per outcome, without
// allocating; the wrapper itself is one allocation, per series.
func (m *Metrics) ScoreSink(next pipeline.Sink) pipeline.Sink {
	return &scoreSink{next: next, m: m}
}

type scoreSink struct {
	next pipeline.Sink
	m    *Metrics
}

func (s *scoreSink) Forecast(series string, f pipeline.Forecast) error {
	return s.next.Forecast(series, f)
}

func (s *scoreSink) Outcome(series string, o pipeline.Outcome) error {
	s.m.ObserveAbsError(o.ActualScaled - o.Forecast.Scaled)
	return s.next.Outcome(series, o)
}

// buildVersion fills in the version and revision from the binary's build
// information.
func buildVersion(version, revision string) (string, string) {
	if bi, ok := debug.ReadBuildInfo(); ok {
		if version == "" && bi.Main.Version != "" {
			version = bi.Main.Version
		}
		if revision == "" {
			var modified bool
			for _, s := range bi.Settings {
				switch s.Key {
				case "vcs.revision":
					revision = s.Value
				case "vcs.modified":
					modified = s.Value == "true"
				}
			}
			if revision != "" && modified {
				revision += "-dirty"
			}
		}
	}
	if version == "" {
		version = "unknown"
	}
	if revision == "" {
		revision = "unknown"
	}
	return version, revision
}
