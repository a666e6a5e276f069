package telemetry

import (
	"runtime"
	"runtime/debug"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// Namespace prefixes every forecastd metric name.
const Namespace = "forecastd"

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

// Config says where Metrics reads its values. Every getter is called at
// each scrape, from the scraping request's goroutine, concurrently with
// the component it reads; it must be safe for that and must not block.
// A nil getter leaves that component's metrics out of /metrics (a daemon
// without [output.influxdb] passes no Influx getter).
type Config struct {
	// Checkpoints feeds checkpoint_writes_total,
	// checkpoint_deletes_total, checkpoint_write_errors_total and
	// checkpoints_unwritten (a daemon without [state] dir passes none).
	Checkpoints func() CheckpointStats
	// Partitions feeds partitions_held and partition_leases_acquired_total
	// (only a daemon with [state] store = "jetstream" passes it).
	Partitions func() PartitionStats
	// Ready tells /-/ready whether the daemon is ready and, if not, why
	// (the reason is the 503 response's body). It must be safe for
	// concurrent use and must not block. Nil: ready whenever serving.
	Ready func() (ready bool, reason string)
	// Collectors are the components' own metrics, served beside these:
	// the input's (sources.NewCollector), the runner's
	// (runner.NewRunnerCollector, NewHistoryCollector), each sink's and
	// the sinks' gate.
	Collectors []prometheus.Collector
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

// Metrics is forecastd's self-metrics: a Prometheus registry holding a
// collector that reads the components' Stats at scrape time, the
// components' own collectors (Config.Collectors), the model update
// histogram, build_info, and the Go runtime and process collectors. Its
// methods are safe for concurrent use.
type Metrics struct {
	reg    *prometheus.Registry
	ready  func() (bool, string)
	update prometheus.Histogram
}

// New returns the metrics of cfg in a fresh registry. It panics if two
// collectors of cfg.Collectors describe the same metric inconsistently,
// a programmer error.
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
	}
	version, revision := buildVersion(cfg.Version, cfg.Revision)
	m.reg.MustRegister(
		m.update,
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
	m.reg.MustRegister(cfg.Collectors...)
	return m
}

// Registry returns the registry /metrics gathers, for a caller that
// registers more collectors.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// ObserveUpdate records the duration of one model update in
// forecastd_model_update_duration_seconds; it implements
// pipeline.UpdateObserver. It does not allocate and costs a few tens of
// nanoseconds (BenchmarkObserveUpdate): a binary search of the buckets
// and two atomic additions.
func (m *Metrics) ObserveUpdate(d time.Duration) { m.update.Observe(d.Seconds()) }

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
