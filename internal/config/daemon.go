package config

import (
	"cmp"
	"fmt"
	"strings"
	"time"

	"github.com/forecastd/forecastd/internal/memory"
	"github.com/forecastd/forecastd/internal/partition"
	"github.com/forecastd/forecastd/internal/statestore"
	"github.com/forecastd/forecastd/pipeline"
	"github.com/forecastd/forecastd/sinks"
	"github.com/forecastd/forecastd/sources"
)

// DefaultCheckpointInterval is [state] checkpoint_interval's default.
const DefaultCheckpointInterval = 30 * time.Second

// DaemonChecks is the daemon's Check: besides what the schema checks, what
// the daemon can hold: the partitions and state store (ScaleErrors), a
// state dir it can write (StateDirErrors) and its memory (MemoryNeed).
func DaemonChecks(c *Config) []error {
	errs := append(c.ScaleErrors(), c.StateDirErrors()...)
	if def, rules, err := c.PipelineRules(); err == nil && len(c.LimitErrors()) == 0 {
		// The products of keys within their ceilings.
		errs = append(errs, c.MemoryErrors(c.MemoryNeed(def, rules))...)
	}
	return errs
}

// [state] store's values.
const (
	StoreDir       = "dir"
	StoreJetStream = "jetstream"
)

// ScaleErrors are the problems of [state] store and [input.jetstream]
// partitions, each naming its key.
func (c *Config) ScaleErrors() []error {
	var errs []error
	bad := func(key string, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", key, fmt.Sprintf(format, args...)))
	}
	st := c.State
	switch st.Store {
	case "", StoreDir, StoreJetStream:
	default:
		bad("state.store", "want %q or %q, got %q", StoreDir, StoreJetStream, st.Store)
	}
	kv := st.Store == StoreJetStream
	js := c.Input.JetStream
	parts := 0
	if js != nil {
		parts = js.Partitions
	}
	if kv && parts == 0 {
		bad("state.store", `"jetstream" needs [input.jetstream] with partitions ≥ 1 and partition_subject`)
	}
	for _, b := range []struct{ key, name string }{{"state.bucket", st.Bucket}, {"state.lease_bucket", st.LeaseBucket}} {
		if b.name != "" && !partition.ValidBucket(b.name) {
			bad(b.key, "invalid bucket name %q: letters, digits, '-' and '_' only", b.name)
		}
	}
	if st.Bucket != "" && st.Bucket == st.LeaseBucket {
		bad("state.lease_bucket", "must differ from state.bucket (%q): the leases expire, the states must not", st.Bucket)
	}
	if st.LeaseTTL.IsSet() && st.LeaseTTL.D < time.Second {
		bad("state.lease_ttl", "must be at least 1s, got %q", st.LeaseTTL.Text)
	}
	if st.Replicas < 0 || st.Replicas > 5 {
		bad("state.replicas", "must be between 1 and 5, got %d", st.Replicas)
	}
	if strings.IndexFunc(st.Instance, IsSpaceOrControl) >= 0 {
		bad("state.instance", "invalid name %q: a space or control character", st.Instance)
	}
	if js == nil {
		return errs
	}
	switch {
	case js.Partitions < 0 || js.Partitions > partition.MaxPartitions:
		bad("input.jetstream.partitions", "must be between 0 and %d, got %d", partition.MaxPartitions, js.Partitions)
	case js.Partitions > 0 && !kv:
		bad("input.jetstream.partitions", `needs [state] store = "jetstream" (the leases and states of the partitions)`)
	case js.Partitions > 0 && strings.Count(js.PartitionSubject, partition.Token) != 1:
		bad("input.jetstream.partition_subject", "must contain %q once (a partition's filter subject, as the server's mapping names it), got %q", partition.Token, js.PartitionSubject)
	case js.Partitions > 0:
		if err := CheckSubject(partition.Subject(js.PartitionSubject, 0), true); err != nil {
			bad("input.jetstream.partition_subject", "invalid subject %q: %v", js.PartitionSubject, err)
		}
	}
	if js.MaxPartitions < 0 || js.Partitions > 0 && js.MaxPartitions > js.Partitions {
		bad("input.jetstream.max_partitions", "must be between 0 (all) and partitions (%d), got %d", js.Partitions, js.MaxPartitions)
	}
	return errs
}

// StateDirErrors is why forecastd could not write in [state] dir (its
// models' checkpoints, the embedded server's JetStream store), checked on
// the file system as the process checking runs: under the systemd unit,
// as the daemon's own user.
func (c *Config) StateDirErrors() []error {
	if c.State.Dir == "" {
		return nil
	}
	if err := statestore.CheckDir(c.State.Dir); err != nil {
		return []error{fmt.Errorf("state.dir: %w: forecastd keeps its models' state there and must be able to write in it (the systemd unit gives it /var/lib/forecastd)", err)}
	}
	return nil
}

// MemoryNeed estimates what c can need; the model tables must have
// resolved (PipelineRules).
func (c *Config) MemoryNeed(def pipeline.Config, rules []pipeline.Rule) memory.Need {
	l := memory.Layout{
		Shards: c.Pipeline.Shards, QueueSize: c.Pipeline.QueueSize, MaxSeries: c.Pipeline.MaxSeries,
		Readers:     len(c.Input.Subjects),
		Checkpoints: c.State.Dir != "" || c.State.Store != "",
		Budget:      c.Pipeline.MemoryBudget.N,
		Model:       def, Rules: rules,
	}
	if js := c.Input.JetStream; js != nil {
		l.Readers = js.Partitions
	}
	if ic := c.Output.InfluxDB; ic != nil {
		l.Influx, l.InfluxBuffer = true, ic.MetricBufferLimit
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
// (statestore.Limits): [state] keep_evicted states of series evicted at
// max_series (default max_series), and at start max_series + keep_evicted
// states (max_series 0 is pipeline.DefaultMaxSeries).
func (c *Config) CheckpointLimits() statestore.Limits {
	ms := cmp.Or(c.Pipeline.MaxSeries, pipeline.DefaultMaxSeries)
	keep := ms
	if c.State.KeepEvicted != nil {
		keep = *c.State.KeepEvicted
	}
	// The evicted states' queue takes at most an eighth of a memory
	// budget (seriesLimit leaves it out of the series' cost).
	return statestore.Limits{MaxEvicted: keep, MaxLoaded: ms + keep, MaxQueuedEvicted: int(c.Pipeline.MemoryBudget.N / 8)}
}

// Decoder is the decoder configuration of [input]: data_format,
// json_time_format, max_payload, fieldpass and fielddrop (whose globs are
// compiled here; their errors are Validate's too).
func (in InputConfig) Decoder() (sources.DecoderConfig, error) {
	dc := sources.DecoderConfig{Format: in.DataFormat.Format(), JSONTimeFormat: in.JSONTimeFormat.F, MaxPayload: in.MaxPayload}
	if len(in.FieldPass) > 0 || len(in.FieldDrop) > 0 {
		f, err := sources.NewFieldFilter(in.FieldPass, in.FieldDrop)
		if err != nil {
			return dc, fmt.Errorf("input: %w", err)
		}
		dc.Fields = f
	}
	in.Limits(&dc)
	return dc, nil
}

// Limits sets the decoder's bounds from [input] (validated):
// max_past "0s" is no bound; an absent key keeps the decoder's default.
func (in InputConfig) Limits(dc *sources.DecoderConfig) {
	if in.MaxPast.IsSet() {
		if dc.MaxPast = in.MaxPast.D; dc.MaxPast == 0 {
			dc.MaxPast = -1
		}
	}
	dc.MaxFuture = in.MaxFuture.D
	dc.MaxKeyLen, dc.MaxPoints = in.MaxKeyLen, in.MaxPoints
	dc.SeriesAcrossSubjects = in.SeriesAcrossSubjects
}

// OutputSubjects has the decoder refuse, at intake, a point whose
// forecasts the NATS output could not publish: their subject would be
// longer than sinks.MaxSubjectLen, and nats-server closes the connection
// of a client that sends one (subject_too_long).
func (cfg *Config) OutputSubjects(dc *sources.DecoderConfig) {
	prefix := cfg.Output.NATS.SubjectPrefix
	dc.OutputSubjectLen = func(subject, measurement, field string) int {
		return sinks.SubjectLen(prefix, subject, measurement, field)
	}
	dc.MaxOutputSubjectLen = sinks.MaxSubjectLen
}
