package sinks

import (
	"context"
	"fmt"
	"log/slog"
	"regexp"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/forecastd/forecastd/internal/natsconn"
)

// Sink is an output of the daemon: it takes the records of every series
// and delivers them, reporting its own metrics. *NATS and *Influx
// implement it; another kind implements it in a file of its own and
// registers with [Register].
type Sink interface {
	// Write hands r to the sink. It is called concurrently, from every
	// shard, and must not block on the network. r and its slices must not
	// be modified; the sink may keep r until it is delivered.
	Write(r Record) error
	// Flush returns once what was written before has been delivered, or
	// ctx's error.
	Flush(ctx context.Context) error
	// Close stops the sink (Write then returns ErrClosed), delivers what
	// it holds within ctx, and returns once its goroutines have exited.
	Close(ctx context.Context) error
	// The sink's metrics, served on /metrics; see [NewDesc] for the
	// names every sink shares.
	prometheus.Collector
}

var (
	_ Sink = (*NATS)(nil)
	_ Sink = (*Influx)(nil)
)

// SinkKind is the registration of one kind of sink: what the daemon
// needs to open it. Adding a kind is implementing this and [Sink] in one
// file and calling [Register]; nothing else switches on a sink's kind.
type SinkKind interface {
	// Name names the kind: its configuration table ([output.<name>]),
	// its label sink="<name>" in /metrics and its errors. Lower case,
	// unique.
	Name() string
	// Open returns the kind's sink for the daemon described by env, or
	// nil and no error if the daemon's configuration asks for none.
	Open(ctx context.Context, env Env) (Sink, error)
}

// Configurable is a SinkKind with settings of its own: its table
// [output.<name>] of the configuration file, whose presence opens it (for
// a kind that opens only when asked).
type Configurable interface {
	SinkKind
	// Doc says what the sink does, for the configuration reference.
	Doc() string
	// NewConfig returns a new, zero configuration: a pointer to a
	// struct whose fields are the table's keys (`toml` and `doc` tags),
	// their zero values the defaults. With a method Validate() error it
	// is checked with the file, each error naming its key; with
	// WithDefaults, the reference shows the defaults it fills in; with
	// BufferBytes() int64, check-config counts what the sink buffers.
	// Open receives the decoded value as Env.Config, or nil when the
	// table is absent.
	NewConfig() any
}

// Env is what the daemon hands every kind's Open.
type Env struct {
	// Logger is the daemon's; a sink adds its component
	// ("sinks.<name>"). Never nil.
	Logger *slog.Logger
	// NATS is the daemon's output connection (connected with
	// [NATSOptions]), which the daemon owns; it connects again when the
	// server closes it, and a sink that publishes on it registers to be
	// handed the new one (natsconn.Reopen.OnReplace).
	NATS *natsconn.Reopen
	// Redelivers tells that the input redelivers the points of a record
	// a sink refuses (JetStream): refusing loses nothing then.
	Redelivers bool
	// Config is the kind's table of the daemon's configuration, the
	// value its NewConfig made (*NATSConfig, *InfluxConfig), or nil if
	// the table is absent or the kind has none (Configurable).
	Config any
}

// Backlogger is a sink with a bounded buffer that drops its oldest
// records when full: Backlog is the share of it in use (1: full; the
// batch being written may take it beyond), for a reader that can wait
// (forecastd replay) to wait for it to drain.
type Backlogger interface {
	Backlog() float64
}

var registry = struct {
	sync.RWMutex
	list []SinkKind
}{list: []SinkKind{natsKind{}, influxKind{}}}

var kindName = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)

// Register adds a kind of sink; the daemon opens the registered kinds in
// order (the built-in ones first: nats, influxdb). Call it from an init
// function (or a test) before a daemon starts. It panics on a bad or
// taken name, a programmer error.
func Register(k SinkKind) {
	registry.Lock()
	defer registry.Unlock()
	name := k.Name()
	if !kindName.MatchString(name) {
		panic(fmt.Sprintf("sinks: Register: bad name %q", name))
	}
	for _, o := range registry.list {
		if o.Name() == name {
			panic(fmt.Sprintf("sinks: Register: kind %q registered twice", name))
		}
	}
	registry.list = append(registry.list, k)
}

// Kinds returns the registered kinds, in order.
func Kinds() []SinkKind {
	registry.RLock()
	defer registry.RUnlock()
	return append([]SinkKind(nil), registry.list...)
}

// MetricPrefix prefixes the names of the sinks' metrics, as every
// forecastd metric.
const MetricPrefix = "forecastd_"

// The metrics every sink may report, labelled sink="<kind>": NewDesc
// gives each the same name and help whatever the sink, as one registry
// requires of collectors that share a name.
const (
	// MetricWritten counts records delivered (a counter).
	MetricWritten = "records_written_total"
	// MetricWriteErrors counts failed deliveries (a counter).
	MetricWriteErrors = "write_errors_total"
	// MetricDropped counts records lost, by label reason (a counter).
	MetricDropped = "records_dropped_total"
	// MetricBufferSize is the records waiting in the sink (a gauge).
	MetricBufferSize = "buffer_size"
	// MetricBufferBytes is the bytes waiting in the sink (a gauge).
	MetricBufferBytes = "buffer_bytes"
)

var sharedHelp = map[string]struct {
	help   string
	labels []string
}{
	MetricWritten:     {"Records (forecasts and outcomes) accepted: by the NATS client, or acknowledged by InfluxDB.", nil},
	MetricWriteErrors: {"Write errors: records the NATS client refused; failed InfluxDB write requests, each retry included.", nil},
	MetricDropped:     {"Records lost, by sink and reason: buffer (overflow, or left at the shutdown deadline) and rejected (refused for good) for influxdb; buffer_full (reconnect buffer) for nats.", []string{"reason"}},
	MetricBufferSize:  {"Records waiting in the sink's buffer: for influxdb the batch being written included; for nats, messages queued for the sink's publishing goroutine.", nil},
	MetricBufferBytes: {"Bytes the NATS client holds unsent.", nil},
}

// NewDesc returns the descriptor of one of the shared metrics (Metric…)
// for the sink named sink: the label sink is constant, and
// MetricDropped's reason variable. It panics on another name.
func NewDesc(metric, sink string) *prometheus.Desc {
	h, ok := sharedHelp[metric]
	if !ok {
		panic(fmt.Sprintf("sinks: NewDesc: no shared metric %q", metric))
	}
	return prometheus.NewDesc(MetricPrefix+metric, h.help, h.labels, prometheus.Labels{"sink": sink})
}
