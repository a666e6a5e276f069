// Package sinks delivers forecastd's forecasts and outcomes to the outside:
// NATS (a JSON message per forecast, [NATS]) and InfluxDB (a point per
// forecast, completed by its outcome, [Influx]).
//
// # Wiring
//
// The daemon hands every sink one [Record] per forecast and per outcome.
// Each series has a [SeriesSink], which implements pipeline.Sink, over a
// [Tee] of the sinks, through the daemon's [Gate], where the records'
// numbers are checked once for every sink:
//
//	nc, _ := nats.Connect(url, sinks.NATSOptions(0)...)
//	ns := sinks.NewNATS(nc, sinks.NATSConfig{SubjectPrefix: cfg.SubjectPrefix})
//	is, _ := sinks.NewInflux(sinks.InfluxConfig{URL: …, Token: …, Bucket: …})
//	gate := sinks.NewGate()
//	// per series, owned by its shard (no allocation per point):
//	ss := &sinks.SeriesSink{Model: kind, Subject: subject, Tags: tags, Gate: gate, Out: sinks.Tee{ns, is}}
//	series.Process(p, ss)
//	// at shutdown, after the shards have drained, under one deadline:
//	ns.Close(ctx); is.Close(ctx)
//
// The daemon does not name the sinks: it opens every registered
// [SinkKind] ([Register]; nats and influxdb are built in) that its
// configuration asks for, and handles each as a [Sink]. A sink's
// optional capability, [Backlogger], is found by type assertion.
//
// Write never blocks on a slow or absent server: [NATS.Write] returns once
// the NATS client has buffered the message, [Influx.Write] once the record
// is in its bounded buffer. What cannot be buffered is dropped and counted
// in the sinks' Stats.
//
// # Configuration
//
// A kind with settings ([Configurable]) declares its table
// [output.<name>] as its configuration struct: [NATSConfig] is
// [output.nats], [InfluxConfig] [output.influxdb], their `toml` tags the
// keys; its Validate names the keys in its errors.
//
// # Metrics
//
// Every sink is a prometheus.Collector reading its Stats at scrape time
// ([NATS.Stats] and [Influx.Stats] are cheap: atomics, or one short lock),
// under the names all sinks share ([NewDesc]: records_written_total,
// write_errors_total, records_dropped_total, buffer_size, buffer_bytes,
// labelled sink="<kind>") and its own (nats_republished_total, …). The
// [Gate] is one too.
//
// The package depends on pipeline for its types only, and on
// client_golang for its collectors.
package sinks

import (
	"errors"
	"math"

	"github.com/forecastd/forecastd/anomaly"
	"github.com/forecastd/forecastd/pipeline"
)

// ErrClosed is returned by Write after Close.
var ErrClosed = errors.New("sinks: closed")

// RecordKind tells what a [Record] carries.
type RecordKind uint8

const (
	// KindForecast: Record.Forecast is a new forecast of the next point.
	KindForecast RecordKind = iota + 1
	// KindOutcome: Record.Outcome is a point that closed a forecast.
	KindOutcome
)

// String returns "forecast", "outcome" or "invalid".
func (k RecordKind) String() string {
	switch k {
	case KindForecast:
		return "forecast"
	case KindOutcome:
		return "outcome"
	}
	return "invalid"
}

// Tag is one key/value pair of an input's tags (from InfluxDB line
// protocol): the pipeline's, shared by the series and its records.
type Tag = pipeline.Tag

// Record is what the daemon hands a sink for each forecast and each
// outcome. Sinks may keep a Record (and its Tags slice) until it is written:
// the Tags slice must not be modified once passed; a series' tags are
// normally built once, when the series is created, and shared by all its
// records.
type Record struct {
	// Kind tells which of Forecast and Outcome is set.
	Kind RecordKind
	// Series is the series key.
	Series string
	// Model is the model kind ("aosvr", "norma", …).
	Model string
	// Subject is the NATS subject the series' points arrive on.
	Subject string
	// Tags are the source tags (influx input only; nil otherwise), sorted
	// by key. In InfluxDB a tag whose key is reserved (time, the sink's
	// tags under either naming, series_key, src_measurement, src_field,
	// series, model, measurement, field, horizon, step, the field names
	// yhat, yhat_lower, yhat_upper, y, error, anomaly_score, anomaly,
	// anomaly_reason, or a key beginning with "_") is written as
	// "tag_<key>" (prefixed again while that names another tag).
	Tags []Tag
	// Measurement and Field are the line-protocol measurement and field
	// key of the series (influx input only; empty otherwise). InfluxDB
	// gets them as the tags src_measurement and src_field (measurement
	// and field with InfluxConfig.LegacyTagNames); NATS publishes on
	// <prefix>.<Subject>.<Measurement>.<Field> (see [NATS]).
	Measurement, Field string
	// Step is the series' resolution, the width of its buckets as a
	// duration ("5m", "1h"; pipeline.Config.Step), "" at the raw spacing.
	// InfluxDB gets it as the tag step; NATS as the body's "step".
	Step string
	// Forecast is set when Kind is KindForecast.
	Forecast pipeline.Forecast
	// Outcome is set when Kind is KindOutcome.
	Outcome pipeline.Outcome

	// horizon is, in a record Influx made of one step of a path, the
	// step h ≥ 1 (its tag "horizon"); 0 for a record without a path.
	horizon int
	// thr is, in a record Influx made of a forecast's threshold
	// observation, what its point needs of it (see lineEncoder.thresholdLine); its
	// direction is 0 in every other record.
	thr thresholdFields
}

// steps calls fn with the record of each step of r's path (Forecast.Path
// or Outcome.Path): the 1-step fields replaced by the step's, the path
// and the threshold observations left out, so that the record keeps
// nothing the series owns. A record without a path is passed as it is,
// but for its threshold observations. It does not allocate.
func (r Record) steps(fn func(Record)) {
	var path []pipeline.Step
	switch r.Kind {
	case KindForecast:
		path = r.Forecast.Path
	case KindOutcome:
		path = r.Outcome.Path
	}
	r.Forecast.Thresholds = nil // written apart (Influx.Write), and owned by the series
	if path == nil {
		fn(r)
		return
	}
	for _, st := range path {
		q := r
		switch r.Kind {
		case KindForecast:
			q.Forecast.Path = nil
			q.Forecast.Time, q.Forecast.Value, q.Forecast.Lower, q.Forecast.Upper = st.Time, st.Value, st.Lower, st.Upper
			q.Forecast.Scaled = math.NaN() // a step's scaled value is not kept
		case KindOutcome:
			q.Outcome.Path = nil
			f := &q.Outcome.Forecast
			f.Path = nil
			f.Time, f.Value, f.Lower, f.Upper, f.Scaled = st.Time, st.Value, st.Lower, st.Upper, math.NaN()
			if st.Horizon != 1 { // the anomaly score is step 1's
				q.Outcome.Anomaly = anomaly.Observation{Score: math.NaN()}
			}
		}
		q.horizon = st.Horizon
		fn(q)
	}
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
// series' pipeline emits with the series' model kind, subject, tags,
// measurement and field, has Gate check it, and writes it to Out. It is
// owned, like the series, by one goroutine, and does not allocate.
type SeriesSink struct {
	// Model is the series' model kind.
	Model string
	// Subject is the subject the series' points arrive on.
	Subject string
	// Tags are the series' source tags (see Record.Tags).
	Tags []Tag
	// Measurement and Field are the series' line-protocol measurement
	// and field key (see Record.Measurement).
	Measurement, Field string
	// Step is the series' resolution (see Record.Step), "" for raw.
	Step string
	// Name, if not empty, is the Series of the records instead of the
	// series key given: a resolution's series (pipeline.ResolutionKey)
	// writes under the key of the series it forecasts, its Step telling
	// the two apart.
	Name string
	// Gate checks and counts the records (see [Gate]); shared by the
	// series of a daemon. Nil: checked, not counted.
	Gate *Gate
	// Out receives the records.
	Out Writer
}

// Forecast writes a KindForecast record, unless Gate holds it back.
func (s *SeriesSink) Forecast(series string, f pipeline.Forecast) error {
	if !s.Gate.forecast(&f) {
		return nil
	}
	if s.Name != "" {
		series = s.Name
	}
	return s.Out.Write(Record{Kind: KindForecast, Series: series, Model: s.Model,
		Subject: s.Subject, Tags: s.Tags, Measurement: s.Measurement, Field: s.Field, Step: s.Step, Forecast: f})
}

// Outcome writes a KindOutcome record, unless Gate holds it back.
func (s *SeriesSink) Outcome(series string, o pipeline.Outcome) error {
	if !s.Gate.outcome(&o) {
		return nil
	}
	if s.Name != "" {
		series = s.Name
	}
	return s.Out.Write(Record{Kind: KindOutcome, Series: series, Model: s.Model,
		Subject: s.Subject, Tags: s.Tags, Measurement: s.Measurement, Field: s.Field, Step: s.Step, Outcome: o})
}
