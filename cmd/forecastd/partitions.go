package main

import (
	"context"
	"slices"
	"strconv"
	"strings"

	"github.com/nats-io/nats.go"

	"github.com/forecastd/forecastd/internal/natsconn"
	"github.com/forecastd/forecastd/internal/partition"
	"github.com/forecastd/forecastd/sources"
)

var _ input = (*partition.Set)(nil)

// openPartitioned is the input and checkpointer of [state] store =
// "jetstream" (internal/partition), connected to its buckets; Start takes
// the leases.
func (d *daemon) openPartitioned(servers []string, auth []nats.Option) (*partition.Set, error) {
	cfg := d.cfg
	st, js := cfg.State, cfg.Input.JetStream
	return partition.Open(partition.Config{
		Servers: servers, Options: auth, Owner: st.Instance,
		Bucket: st.Bucket, LeaseBucket: st.LeaseBucket, Replicas: st.Replicas, LeaseTTL: st.LeaseTTL.D,
		Partitions: js.Partitions, MaxHeld: js.MaxPartitions,
		Stream: js.Stream, PartitionSubject: js.PartitionSubject,
		Keys:   partition.KeysBound(cfg.Pipeline.MaxSeries, cfg.Pipeline.Shards, cfg.Pipeline.QueueSize),
		Limits: cfg.CheckpointLimits(),
		NewInput: func(filter string, n int, seq uint64, deliver func(context.Context, *sources.Message)) (*sources.Source, error) {
			return d.partitionInput(servers, auth, filter, n, seq, deliver)
		},
		Deliver: d.deliver,
		Export:  func(ctx context.Context) error { return d.runner.Checkpoint(ctx) },
		Explain: d.explainNATS,
		Logger:  d.log,
	})
}

// partitionInput is the consumer of one partition: durable + "-p" + n,
// filtered on the partition's subject, resuming after seq, handing its
// messages to deliver.
func (d *daemon) partitionInput(servers []string, auth []nats.Option, filter string, n int, seq uint64, deliver func(context.Context, *sources.Message)) (*sources.Source, error) {
	cfg := d.cfg
	dc, err := cfg.Decoder()
	if err != nil {
		return nil, err
	}
	js := cfg.Input.JetStream
	jc := js.Source(js.Durable + "-p" + strconv.Itoa(n))
	jc.Checkpointed = &seq
	return sources.New(sources.Config{
		Servers:   servers,
		Subjects:  []string{filter},
		Decoder:   dc,
		Logger:    d.log.With("partition", n),
		Options:   slices.Concat(auth, d.inputConnOptions(natsconn.Redact(strings.Join(servers, ",")))),
		JetStream: jc,
		Deliver:   deliver,
	})
}
