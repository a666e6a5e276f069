// Package sinks delivers forecastd's forecasts and outcomes to the outside:
// NATS (a JSON message per forecast, [NATS]) and InfluxDB (a point per
// forecast, completed by its outcome, [Influx]).
//
// # Wiring
//
// The daemon hands every sink one [Record] per forecast and per outcome.
// The simplest wiring gives each series a [SeriesSink], which implements
// pipeline.Sink, over a [Tee] of the sinks:
//
//	nc, _ := nats.Connect(url, sinks.NATSOptions(0)...)
//	ns := sinks.NewNATS(nc, sinks.NATSConfig{SubjectPrefix: cfg.SubjectPrefix})
//	is, _ := sinks.NewInflux(sinks.InfluxConfig{URL: …, Token: …, Bucket: …})
//	out := sinks.Tee{ns, is}
//	// per series, owned by its shard (no allocation per point):
//	ss := &sinks.SeriesSink{Model: kind, Subject: subject, Tags: tags, Out: out}
//	series.Process(p, ss)
//	// at shutdown, after the shards have drained, under one deadline:
//	ns.Close(ctx); is.Close(ctx)
//
// Write never blocks on a slow or absent server: [NATS.Write] returns once
// the NATS client has buffered the message, [Influx.Write] once the record
// is in its bounded buffer. What cannot be buffered is dropped and counted
// in the sinks' Stats.
//
// # Configuration keys
//
// The daemon's config maps one to one onto the sinks' configs:
//
//	[output.nats]      subject_prefix      NATSConfig.SubjectPrefix
//	[output.influxdb]  url                 InfluxConfig.URL
//	                   token               InfluxConfig.Token ("user:password" for 1.8)
//	                   organization        InfluxConfig.Organization
//	                   bucket              InfluxConfig.Bucket ("db/rp" for 1.8)
//	                   measurement         InfluxConfig.Measurement
//	                   metric_batch_size   InfluxConfig.MetricBatchSize
//	                   metric_buffer_limit InfluxConfig.MetricBufferLimit
//	                   flush_interval      InfluxConfig.FlushInterval
//	                   timeout             InfluxConfig.Timeout
//
// [InfluxConfig.Validate] names the keys in its errors.
//
// # Metrics
//
// [NATS.Stats] and [Influx.Stats] are cheap (atomics, or one short lock)
// and meant to be read by a Prometheus collector at scrape time:
// NATSStats.Errors and InfluxStats.WriteErrors feed write_errors_total,
// InfluxStats.Dropped and NATSStats.BufferFull the dropped counters, and
// InfluxStats.Buffered buffer_size.
//
// The package depends on pipeline for its types only.
package sinks

import (
	"errors"

	"github.com/forecastd/forecastd/pipeline"
)

// ErrClosed is returned by Write after Close.
var ErrClosed = errors.New("sinks: closed")

// Kind tells what a [Record] carries.
type Kind uint8

const (
	// KindForecast: Record.Forecast is a new forecast of the next point.
	KindForecast Kind = iota + 1
	// KindOutcome: Record.Outcome is a point that closed a forecast.
	KindOutcome
)

// String returns "forecast", "outcome" or "invalid".
func (k Kind) String() string {
	switch k {
	case KindForecast:
		return "forecast"
	case KindOutcome:
		return "outcome"
	}
	return "invalid"
}

// Tag is one key/value pair of an input's tags (from InfluxDB line protocol).
type Tag struct {
	Key, Value string
}

// Record is what the daemon hands a sink for each forecast and each
// outcome. Sinks may keep a Record (and its Tags slice) until it is written:
// the Tags slice must not be modified once passed; a series' tags are
// normally built once, when the series is created, and shared by all its
// records.
type Record struct {
	// Kind tells which of Forecast and Outcome is set.
	Kind Kind
	// Series is the series key.
	Series string
	// Model is the model kind ("aosvr", "norma", …).
	Model string
	// Subject is the NATS subject the series' points arrive on.
	Subject string
	// Tags are the source tags (influx input only; nil otherwise), sorted
	// by key. A tag named "series" or "model" is not written to InfluxDB:
	// the sink's own tags of those names take precedence.
	Tags []Tag
	// Forecast is set when Kind is KindForecast.
	Forecast pipeline.Forecast
	// Outcome is set when Kind is KindOutcome.
	Outcome pipeline.Outcome
}

// Writer is what [SeriesSink] and [Tee] write records to; *NATS and
// *Influx implement it.
type Writer interface {
	// Write hands r to the sink; it does not block on the network.
	Write(r Record) error
}

var (
	_ Writer = (*NATS)(nil)
	_ Writer = (*Influx)(nil)
	_ Writer = Tee(nil)

	_ pipeline.Sink = (*SeriesSink)(nil)
)

// Tee writes each record to every Writer in order, and returns their
// errors joined (a failing Writer does not stop the others).
type Tee []Writer

// Write writes r to every Writer of t.
func (t Tee) Write(r Record) error {
	var errs []error
	for _, w := range t {
		if err := w.Write(r); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// SeriesSink is the pipeline.Sink of one series: it labels what the
// series' pipeline emits with the series' model kind, subject and tags and
// writes it to Out. It is owned, like the series, by one goroutine, and
// does not allocate.
type SeriesSink struct {
	// Model is the series' model kind.
	Model string
	// Subject is the subject the series' points arrive on.
	Subject string
	// Tags are the series' source tags (see Record.Tags).
	Tags []Tag
	// Out receives the records.
	Out Writer
}

// Forecast writes a KindForecast record.
func (s *SeriesSink) Forecast(series string, f pipeline.Forecast) error {
	return s.Out.Write(Record{Kind: KindForecast, Series: series, Model: s.Model,
		Subject: s.Subject, Tags: s.Tags, Forecast: f})
}

// Outcome writes a KindOutcome record.
func (s *SeriesSink) Outcome(series string, o pipeline.Outcome) error {
	return s.Out.Write(Record{Kind: KindOutcome, Series: series, Model: s.Model,
		Subject: s.Subject, Tags: s.Tags, Outcome: o})
}
