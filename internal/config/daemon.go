package config

import (
	"cmp"
	"errors"

	"github.com/forecastd/forecastd/internal/config/schema"
	"github.com/forecastd/forecastd/internal/history"
	"github.com/forecastd/forecastd/internal/memory"
	"github.com/forecastd/forecastd/internal/statestore"
	"github.com/forecastd/forecastd/pipeline"
	"github.com/forecastd/forecastd/runner"
	"github.com/forecastd/forecastd/sinks"
	"github.com/forecastd/forecastd/sources"
)

// DaemonChecks is the daemon's Check: besides what the schema checks, what
// the daemon can hold: the partitions and state store (ScaleErrors), a
// state dir it can write and its memory (MemoryNeed).
func DaemonChecks(c *Config) []error {
	errs := c.ScaleErrors()
	var e schema.Errors
	e.Prefixed("state", errors.Join(c.State.DirErrors()...))
	errs = append(errs, e...)
	if def, rules, err := c.PipelineRules(); err == nil && len(c.LimitErrors()) == 0 {
		// The products of keys within their ceilings.
		errs = append(errs, c.MemoryErrors(c.MemoryNeed(def, rules))...)
	}
	return errs
}

// ScaleErrors are the problems of [state] store and [input.jetstream]
// partitions, each naming its key.
func (c *Config) ScaleErrors() []error {
	var e schema.Errors
	st := c.State.StoreConfig
	e.Prefixed("state", st.Validate())
	js := c.Input.JetStream
	if st.JetStream() && (js == nil || js.Partitions == 0) {
		e.Add("state.store", `"jetstream" needs [input.jetstream] with partitions ≥ 1 and partition_subject`)
	}
	e.Prefixed("state", st.ValidateBuckets())
	if js != nil {
		e.Prefixed("input.jetstream", js.PartitionKeys.Validate(st.JetStream()))
	}
	return e
}

// MemoryNeed estimates what c can need; the model tables must have
// resolved (PipelineRules).
func (c *Config) MemoryNeed(def pipeline.Config, rules []runner.Rule) memory.Need {
	p := c.Pipeline
	l := memory.Layout{
		Shards: p.Shards, QueueSize: p.QueueSize, MaxSeries: p.MaxSeries,
		Readers:     len(c.Input.Subjects),
		Checkpoints: c.State.Dir != "" || c.State.Store != "",
		Budget:      p.MemoryBudget.N,
		Model:       def, Rules: rules,
		Cache: p.KernelCache,
	}
	if js := c.Input.JetStream; js != nil {
		l.Readers = js.Partitions
	}
	path := max(1, def.Horizon) // the longest path a series keeps
	for _, r := range rules {
		path = max(path, r.Config.Horizon)
	}
	for _, k := range sinks.Kinds() {
		switch b := c.Output[k.Name()].(type) {
		case interface{ BufferBytes() int64 }: // a queue or buffer
			l.SinkBuffers += b.BufferBytes()
		case interface {
			StoreBytes(path, resolutions int) int64
		}: // a store of every series' latest
			l.SinkBuffers += b.StoreBytes(path, 1+len(c.Resolutions))
		}
	}
	if h := c.History; h != nil {
		l.History, l.HistoryConcurrency, l.HistoryMaxPoints, l.HistoryQueued = true, h.Concurrency, h.MaxPoints, h.MaxQueued
	}
	return memory.Estimate(l)
}

// MemoryErrors are the problems of c's memory as a whole (Need.Errors).
func (c *Config) MemoryErrors(m memory.Need) []error {
	return m.Errors(c.Pipeline.MemoryBudget.N, c.Pipeline.MemoryBudget.Text)
}

// CheckpointLimits bounds the states kept for series that are not live
// (statestore.Config.Limits), max_series 0 being
// runner.DefaultMaxSeries.
func (c *Config) CheckpointLimits() statestore.Limits {
	return c.State.Limits(cmp.Or(c.Pipeline.MaxSeries, runner.DefaultMaxSeries), c.Pipeline.MemoryBudget.N)
}

// Decoder is the decoders' configuration of [input], refusing at intake
// a point whose forecasts the NATS output could not publish: their
// subject would be longer than sinks.MaxSubjectLen, and nats-server
// closes the connection of a client that sends one (subject_too_long).
func (c *Config) Decoder() (sources.DecoderConfig, error) {
	dc, err := c.Input.Decoder()
	if err != nil {
		return dc, err
	}
	prefix := c.Output.natsPrefix()
	dc.OutputSubjectLen = func(subject, measurement, field string) int {
		return sinks.SubjectLen(prefix, subject, measurement, field)
	}
	dc.MaxOutputSubjectLen = sinks.MaxSubjectLen
	return dc, nil
}

// NATS returns [output.nats], its defaults if absent.
func (o Outputs) NATS() sinks.NATSConfig {
	if n, ok := o["nats"].(*sinks.NATSConfig); ok && n != nil {
		return *n
	}
	return sinks.NATSConfig{}
}

func (o Outputs) natsPrefix() string { return o.NATS().SubjectPrefix }

// Influx returns [output.influxdb], nil if absent.
func (o Outputs) Influx() *sinks.InfluxConfig {
	ic, _ := o["influxdb"].(*sinks.InfluxConfig)
	return ic
}

// HistorySource returns [history] as internal/history's config, its
// connection defaulting to [output.influxdb]'s.
func (c *Config) HistorySource() history.Config {
	var out *history.Output
	if o := c.Output.Influx(); o != nil {
		out = &history.Output{URL: o.URL, Token: o.Token, Bucket: o.Bucket, Measurement: o.Measurement, LegacyTagNames: o.LegacyTagNames}
	}
	return c.History.Source(out)
}
