package telemetry

import (
	"math"
	"runtime"
	"runtime/debug"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/forecastd/forecastd/anomaly"
	"github.com/forecastd/forecastd/anomaly/threshold"
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
// the model's units: with scale fixed or warmup the range maps onto
// [−1, 1] and an error of 0.01 is half a percent of it; with scale none
// (the default) they are the series' own units, and a series of large
// values lands in +Inf.
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
	// Checkpoints feeds checkpoint_writes_total,
	// checkpoint_deletes_total, checkpoint_write_errors_total and
	// checkpoints_unwritten (a daemon without [state] dir passes none).
	Checkpoints func() CheckpointStats
	// Partitions feeds partitions_held and partition_leases_acquired_total
	// (only a daemon with [state] store = "jetstream" passes it).
	Partitions func() PartitionStats
	// History feeds forecastd_history_* (only a daemon with [history]
	// passes it).
	History func() HistoryStats
	// Ready tells /-/ready whether the daemon is ready and, if not, why
	// (the reason is the 503 response's body). It must be safe for
	// concurrent use and must not block. Nil: ready whenever serving.
	Ready func() (ready bool, reason string)
	// Version and Revision label forecastd_build_info. Empty: the main
	// module's version and the VCS revision recorded in the binary
	// (debug.ReadBuildInfo), or "unknown".
	Version, Revision string
}

// CheckpointStats counts the daemon's checkpoint files, totals since
// start.
type CheckpointStats struct {
	// Written and Deleted count files written and deleted.
	Written, Deleted uint64
	// Errors counts writes and deletes that failed, each retry included.
	Errors uint64
	// Unwritten is the number of series whose last write or delete
	// failed and waits to be tried again.
	Unwritten int64
	// Discarded counts the states deleted at a bound: of series evicted
	// at max_series beyond [state] keep_evicted, and at start beyond
	// max_series + keep_evicted.
	Discarded uint64
	// Queued is the bytes of states waiting to be written.
	Queued int64
}

// PartitionStats says which input partitions the instance holds
// ([state] store = "jetstream").
type PartitionStats struct {
	// Held is the number of partitions whose lease it holds now.
	Held int
	// Acquired counts the leases it acquired since start: each partition
	// taken, at start or over from an instance that stopped renewing.
	Acquired uint64
}

// AbsErrorCap bounds what forecastd_forecast_abs_error records of one
// error: a finite error above it is recorded as AbsErrorCap (in the +Inf
// bucket, as it would be), so that the histogram's sum stays finite
// whatever the data (2^53 errors at the cap sum to 9e21).
const AbsErrorCap = 1e6

// What forecastd_non_finite_total counts, by label "record".
const (
	NonFiniteForecast = "forecast" // a forecast not passed on: its value was not finite
	NonFiniteInterval = "interval" // a forecast passed on without its interval: a bound was not finite
	NonFiniteOutcome  = "outcome"  // an outcome not passed on: its forecast was not
)

// Metrics is forecastd's self-metrics: a Prometheus registry holding a
// collector that reads the components' Stats at scrape time, the two
// histograms fed by the observers, build_info, and the Go runtime and
// process collectors. Its methods are safe for concurrent use.
type Metrics struct {
	reg    *prometheus.Registry
	ready  func() (bool, string)
	update prometheus.Histogram
	absErr prometheus.Histogram

	nonFinite                         *prometheus.CounterVec
	nfForecast, nfInterval, nfOutcome prometheus.Counter

	anomalies            *prometheus.CounterVec
	anomAbove, anomBelow prometheus.Counter

	thresholds *prometheus.CounterVec
	thrEvents  [2][3]prometheus.Counter // [below][opened, updated, closed]
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
			Help:      "Absolute error |y - yhat| of each scored forecast, in the model's units, over every series together: the series' own units with [model] scale = \"none\" (the default), [-1, 1] for its range with fixed or warmup. Compare series by the InfluxDB field error, not by this.",
			Buckets:   AbsErrorBuckets,
		}),
		nonFinite: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace,
			Name:      "non_finite_total",
			Help:      "Records held back or changed by the sinks' guard because a number was not finite: forecast (not published), interval (published without its interval), outcome (not written: its forecast was not).",
		}, []string{"record"}),
	}
	m.nfForecast = m.nonFinite.WithLabelValues(NonFiniteForecast)
	m.nfInterval = m.nonFinite.WithLabelValues(NonFiniteInterval)
	m.nfOutcome = m.nonFinite.WithLabelValues(NonFiniteOutcome)
	m.anomalies = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace,
		Name:      "anomalies_total",
		Help:      "Anomaly events opened, by the side of the forecast the opening point fell on (above, below).",
	}, []string{"direction"})
	m.anomAbove = m.anomalies.WithLabelValues("above")
	m.anomBelow = m.anomalies.WithLabelValues("below")
	m.thresholds = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace,
		Name:      "threshold_events_total",
		Help:      "Threshold events, by the threshold's direction (above, below) and state (opened: a forecast crosses the threshold within the horizon at its probability; updated: the crossing time moved; closed).",
	}, []string{"direction", "state"})
	for i, d := range []string{"above", "below"} {
		for j, st := range []string{"opened", "updated", "closed"} {
			m.thrEvents[i][j] = m.thresholds.WithLabelValues(d, st)
		}
	}
	version, revision := buildVersion(cfg.Version, cfg.Revision)
	m.reg.MustRegister(
		m.update,
		m.absErr,
		m.nonFinite,
		m.anomalies,
		m.thresholds,
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
	if cfg.History != nil {
		m.reg.MustRegister(newHistoryCollector(cfg.History))
	}
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

// ObserveAbsError records |e| in forecastd_forecast_abs_error, at most
// AbsErrorCap; a NaN or infinite e is ignored, as it would poison the
// histogram's sum. Same cost as ObserveUpdate.
func (m *Metrics) ObserveAbsError(e float64) {
	if math.IsNaN(e) || math.IsInf(e, 0) {
		return
	}
	m.absErr.Observe(min(math.Abs(e), AbsErrorCap))
}

// ScoreSink returns a pipeline.Sink that records each outcome's error
// |ActualScaled − Forecast.Scaled| with ObserveAbsError and passes every
// call on to next, returning its result. The error is recorded whether or
// not next accepts the outcome: it measures the model, not the delivery.
//
// It is also the sinks' guard against numbers that are not finite, so
// that none is published: a forecast whose value is NaN or infinite is
// not passed on (nor its outcome) and Forecast returns nil, as a
// redelivery would not change it; a forecast with a bound that is not
// finite is passed on without its interval (Lower and Upper NaN). Each is
// counted in forecastd_non_finite_total.
//
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
	if !finite(f.Value) {
		s.m.nfForecast.Inc()
		return nil
	}
	if f.HasInterval() && !(finite(f.Lower) && finite(f.Upper)) {
		s.m.nfInterval.Inc()
		f.Lower, f.Upper = math.NaN(), math.NaN()
	}
	s.m.observeThresholds(f.Thresholds)
	return s.next.Forecast(series, f)
}

func (s *scoreSink) Outcome(series string, o pipeline.Outcome) error {
	if !finite(o.Forecast.Value) {
		s.m.nfOutcome.Inc()
		return nil
	}
	s.m.ObserveAbsError(o.ActualScaled - o.Forecast.Scaled)
	s.m.observeAnomaly(o.Anomaly)
	return s.next.Outcome(series, o)
}

// observeAnomaly counts an opened event in forecastd_anomalies_total.
func (m *Metrics) observeAnomaly(a anomaly.Observation) {
	if a.Event != anomaly.Opened {
		return
	}
	if a.Side == anomaly.Below {
		m.anomBelow.Inc()
	} else {
		m.anomAbove.Inc()
	}
}

// observeThresholds counts the threshold events of a forecast in
// forecastd_threshold_events_total.
func (m *Metrics) observeThresholds(os []threshold.Observation) {
	for i := range os {
		o := &os[i]
		if o.Event == threshold.None || o.Event > threshold.Closed {
			continue
		}
		d := 0
		if o.Direction == threshold.Below {
			d = 1
		}
		m.thrEvents[d][o.Event-threshold.Opened].Inc()
	}
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

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
