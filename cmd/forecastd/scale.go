package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/forecastd/forecastd/internal/kvstate"
	"github.com/forecastd/forecastd/internal/lease"
	"github.com/forecastd/forecastd/internal/natsconn"
	"github.com/forecastd/forecastd/internal/statestore"
	"github.com/forecastd/forecastd/internal/telemetry"
	"github.com/forecastd/forecastd/pipeline"
	"github.com/forecastd/forecastd/sources"
)

// Scale-out: with [input.jetstream] partitions = N and [state] store =
// "jetstream", the stream's subjects are split into N partitions by the
// NATS server (subject mapping {{partition(N, …)}}), each instance holds
// the leases of some (internal/lease), reads each held partition through
// its own durable consumer (durable + "-p" + N, filtered on
// partition_subject) and keeps its series' states in a key-value bucket
// (internal/kvstate), fenced by the lease's epoch. A partition whose
// holder died is taken by another instance once its lease expires: it
// restores the series from the bucket and resumes the consumer after the
// partition's checkpointed sequence. An instance that loses a lease it
// held (it was cut off longer than the lease) stops: its series of that
// partition are the new holder's.

const (
	storeDir       = "dir"
	storeJetStream = "jetstream"
	// partitionToken stands for the partition number in partition_subject.
	partitionToken = "{partition}"
	// maxPartitions bounds [input.jetstream] partitions (a consumer and a
	// lease key each).
	maxPartitions = 1024
)

// scaleErrors are the problems of [state] store and [input.jetstream]
// partitions, each naming its key.
func scaleErrors(c *Config) []error {
	var errs []error
	bad := func(key string, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", key, fmt.Sprintf(format, args...)))
	}
	st := c.State
	switch st.Store {
	case "", storeDir, storeJetStream:
	default:
		bad("state.store", "want %q or %q, got %q", storeDir, storeJetStream, st.Store)
	}
	kv := st.Store == storeJetStream
	js := c.Input.JetStream
	parts := 0
	if js != nil {
		parts = js.Partitions
	}
	if kv && parts == 0 {
		bad("state.store", `"jetstream" needs [input.jetstream] with partitions ≥ 1 and partition_subject`)
	}
	for _, b := range []struct{ key, name string }{{"state.bucket", st.Bucket}, {"state.lease_bucket", st.LeaseBucket}} {
		if b.name != "" && !validBucket(b.name) {
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
	if strings.IndexFunc(st.Instance, isSpaceOrControl) >= 0 {
		bad("state.instance", "invalid name %q: a space or control character", st.Instance)
	}
	if js == nil {
		return errs
	}
	switch {
	case js.Partitions < 0 || js.Partitions > maxPartitions:
		bad("input.jetstream.partitions", "must be between 0 and %d, got %d", maxPartitions, js.Partitions)
	case js.Partitions > 0 && !kv:
		bad("input.jetstream.partitions", `needs [state] store = "jetstream" (the leases and states of the partitions)`)
	case js.Partitions > 0 && strings.Count(js.PartitionSubject, partitionToken) != 1:
		bad("input.jetstream.partition_subject", "must contain %q once (a partition's filter subject, as the server's mapping names it), got %q", partitionToken, js.PartitionSubject)
	case js.Partitions > 0:
		if err := checkSubject(partitionSubject(js.PartitionSubject, 0), true); err != nil {
			bad("input.jetstream.partition_subject", "invalid subject %q: %v", js.PartitionSubject, err)
		}
	}
	if js.MaxPartitions < 0 || js.Partitions > 0 && js.MaxPartitions > js.Partitions {
		bad("input.jetstream.max_partitions", "must be between 0 (all) and partitions (%d), got %d", js.Partitions, js.MaxPartitions)
	}
	return errs
}

func validBucket(s string) bool {
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return false
		}
	}
	return s != ""
}

func partitionSubject(tmpl string, p int) string {
	return strings.Replace(tmpl, partitionToken, strconv.Itoa(p), 1)
}

// partitioned is the daemon's input and checkpointer under partitions: it
// merges the messages of the consumers of the partitions it holds, routes
// each series' state to its partition's bucket keys, and checkpoints each
// partition with its own applied sequence.
type partitioned struct {
	d       *daemon
	servers []string
	auth    []nats.Option
	js      *JetStreamConfig

	nc     *nats.Conn // the buckets' connection
	states *kvstate.Bucket
	leases *lease.Leases
	keeper *lease.Keeper
	owner  string

	out   chan *sources.Message
	fatal chan error // one: a lease lost, a commit fenced

	acquiredN atomic.Uint64 // leases acquired and their partitions started

	mu      sync.Mutex
	parts   map[int]*part
	retired []*part // lost: kept until shutdown for their sources
	stopped bool
	fwd     sync.WaitGroup
	keys    keyParts // series key → *part, bounded
}

// part is one held partition.
type part struct {
	n      int
	lease  *lease.Lease
	store  *kvstate.Store
	ckpt   *statestore.Checkpoints
	src    *sources.Source
	filter string
	seq    uint64 // applied sequence last committed
	// retired is set once the lease is lost: the partition's series
	// states are then no longer written (they are the new holder's).
	retired atomic.Bool
}

var (
	_ input                 = (*partitioned)(nil)
	_ pipeline.Checkpointer = (*partitioned)(nil)
)

// openPartitioned connects to the buckets; start takes leases.
func (d *daemon) openPartitioned(servers []string, auth []nats.Option) (*partitioned, error) {
	cfg := d.cfg
	st := cfg.State
	owner := st.Instance
	if owner == "" {
		host, _ := os.Hostname()
		owner = fmt.Sprintf("%s-%d", host, os.Getpid())
	}
	log := d.log.With("component", "state")
	nc, err := nats.Connect(joinServers(servers), append(slices.Clone(auth),
		nats.Name("forecastd-state"), nats.MaxReconnects(-1),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			if err != nil {
				log.Warn("nats state connection disconnected", "err", err)
			}
		}))...)
	if err != nil {
		return nil, fmt.Errorf("state: nats %s: %w", natsconn.Redact(joinServers(servers)), d.explainNATS(err))
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// A fresh cluster may take a while to elect the buckets' leaders:
	// say what the start waits for, at most every 5 s per bucket.
	waiting := func(bucket string) func(error) {
		var last time.Time
		return func(err error) {
			if time.Since(last) >= 5*time.Second {
				last = time.Now()
				log.Warn("state: bucket not ready yet, trying again", "bucket", bucket, "err", err)
			}
		}
	}
	states, err := kvstate.OpenBucket(ctx, js, kvstate.Config{Bucket: st.Bucket, Replicas: st.Replicas, OnRetry: waiting(cmp.Or(st.Bucket, kvstate.DefaultBucket))})
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("state.bucket: %w", err)
	}
	leases, err := lease.Open(ctx, js, lease.Config{Bucket: st.LeaseBucket, Replicas: st.Replicas, TTL: st.LeaseTTL.D, Owner: owner,
		OnRetry: waiting(cmp.Or(st.LeaseBucket, lease.DefaultBucket))})
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("state.lease_bucket: %w", err)
	}
	return &partitioned{
		d: d, servers: servers, auth: auth, js: cfg.Input.JetStream,
		nc: nc, states: states, leases: leases, owner: owner,
		out: make(chan *sources.Message), fatal: make(chan error, 1),
		parts: map[int]*part{},
		keys:  keyParts{max: keyPartsBound(cfg)},
	}, nil
}

// start takes the leases: from now on, partitions are acquired (and
// their consumers started) on the keeper's goroutine.
func (p *partitioned) start() error {
	k, err := p.leases.Keep(lease.KeeperConfig{
		Partitions: p.js.Partitions,
		Max:        p.js.MaxPartitions,
		Acquired:   p.acquired,
		Lost:       p.lost,
		Logger:     p.d.log.With("component", "state", "instance", p.owner),
	})
	if err != nil {
		return err
	}
	p.keeper = k
	return nil
}

// acquired claims the partition's states (loading them) and starts its
// consumer after the partition's checkpointed sequence.
func (p *partitioned) acquired(le *lease.Lease) {
	log := p.d.log.With("component", "state", "partition", le.Partition(), "epoch", le.Epoch())
	p.mu.Lock()
	stopped := p.stopped
	p.mu.Unlock()
	if stopped {
		le.Release(context.Background())
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	store, applied, err := p.states.Claim(ctx, le.Partition(), le.Epoch(), p.owner)
	if err != nil {
		p.fail(fmt.Errorf("partition %d: %w", le.Partition(), err))
		return
	}
	filter := partitionSubject(p.js.PartitionSubject, le.Partition())
	seq := applied.Seq
	if applied.Stream != p.js.Stream || applied.Filter != filter {
		seq = 0 // another stream's position: replay this one
	}
	ckpt := statestore.NewCheckpoints(store, store.Where(), p.d.log.With("component", "state", "partition", le.Partition()), p.d.cfg.checkpointLimits())
	pt := &part{n: le.Partition(), lease: le, store: store, ckpt: ckpt, filter: filter, seq: seq}
	src, err := p.d.partitionInput(p.servers, p.auth, filter, le.Partition(), seq)
	if err != nil {
		p.fail(fmt.Errorf("partition %d: input: %w", le.Partition(), err))
		return
	}
	pt.src = src
	p.mu.Lock()
	if p.stopped {
		p.mu.Unlock()
		src.StopIntake(ctx)
		src.Close(ctx)
		ckpt.Close(ctx)
		le.Release(ctx)
		return
	}
	p.parts[pt.n] = pt
	p.fwd.Add(1)
	p.mu.Unlock()
	p.acquiredN.Add(1)
	go p.forward(pt)
	log.Info("partition taken: its series are restored on their next point, its consumer resumes after the checkpoints",
		"filter", filter, "applied_seq", seq, "previous_owner", applied.Owner)
}

// forward hands pt's messages on, noting each series' partition first.
// Once the lease is no longer valid (not renewed in time: this instance
// was paused or cut off), nothing more is handed on: the messages are
// NAKed, for the partition's next holder, and the partition is given up.
func (p *partitioned) forward(pt *part) {
	defer p.fwd.Done()
	gaveUp := false
	for m := range pt.src.Messages() {
		if !pt.lease.Valid() {
			m.Nak(0)
			if !gaveUp {
				gaveUp = true
				go p.lost(pt.n, fmt.Errorf("%w: partition %d: not renewed before its deadline", lease.ErrLost, pt.n))
			}
			continue
		}
		for i := range m.Points {
			p.keys.note(m.Points[i].Key, pt)
		}
		p.out <- m
	}
}

// lost: another instance holds the partition now; this one must stop, as
// its series of the partition are no longer its own.
func (p *partitioned) lost(n int, err error) {
	p.mu.Lock()
	pt := p.parts[n]
	delete(p.parts, n)
	if pt != nil {
		pt.retired.Store(true)
		p.retired = append(p.retired, pt)
	}
	p.mu.Unlock()
	if pt != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		pt.src.StopIntake(ctx)
		cancel()
	}
	p.fail(fmt.Errorf("partition %d: %w", n, err))
}

func (p *partitioned) fail(err error) {
	select {
	case p.fatal <- err:
	default:
	}
}

// Messages implements input.
func (p *partitioned) Messages() <-chan *sources.Message { return p.out }

// StopIntake implements input: no more partitions are taken, every
// consumer stops, and Messages closes once their messages are handed on.
func (p *partitioned) StopIntake(ctx context.Context) error {
	p.mu.Lock()
	already := p.stopped
	p.stopped = true
	all := p.all()
	p.mu.Unlock()
	if already {
		return nil
	}
	var errs []error
	for _, pt := range all {
		errs = append(errs, pt.src.StopIntake(ctx))
	}
	go func() { p.fwd.Wait(); close(p.out) }()
	return errors.Join(errs...)
}

// all are the parts, held and retired; p.mu held.
func (p *partitioned) all() []*part {
	out := slices.Clone(p.retired)
	for _, pt := range p.parts {
		out = append(out, pt)
	}
	return out
}

// Close implements input: the consumers' last acks go out.
func (p *partitioned) Close(ctx context.Context) error {
	p.mu.Lock()
	all := p.all()
	p.mu.Unlock()
	var errs []error
	for _, pt := range all {
		errs = append(errs, pt.src.Close(ctx))
	}
	return errors.Join(errs...)
}

// Stats implements input: the sum of the consumers'.
func (p *partitioned) Stats() sources.Stats {
	p.mu.Lock()
	all := p.all()
	p.mu.Unlock()
	var sum sources.Stats
	for _, pt := range all {
		addStats(&sum, pt.src.Stats())
	}
	sum.Connected = p.Connected()
	return sum
}

// addStats adds every counter of b to a (a's Connected is the caller's).
func addStats(a *sources.Stats, b sources.Stats) {
	av, bv := reflect.ValueOf(a).Elem(), reflect.ValueOf(b)
	for i := range av.NumField() {
		f := av.Field(i)
		switch f.Kind() {
		case reflect.Uint64, reflect.Uint32, reflect.Uint:
			f.SetUint(f.Uint() + bv.Field(i).Uint())
		case reflect.Int64, reflect.Int:
			f.SetInt(f.Int() + bv.Field(i).Int())
		case reflect.Map:
			if f.IsNil() {
				f.Set(reflect.MakeMap(f.Type()))
			}
			it := bv.Field(i).MapRange()
			for it.Next() {
				old := f.MapIndex(it.Key())
				sum := it.Value().Uint()
				if old.IsValid() {
					sum += old.Uint()
				}
				f.SetMapIndex(it.Key(), reflect.ValueOf(sum).Convert(f.Type().Elem()))
			}
		}
	}
}

// Connected implements input: the buckets' connection and every held
// consumer's are up.
func (p *partitioned) Connected() bool {
	if !p.nc.IsConnected() {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, pt := range p.parts {
		if !pt.src.Connected() {
			return false
		}
	}
	return true
}

// partitionStats feeds /metrics' partitions_held and
// partition_leases_acquired_total.
func (p *partitioned) partitionStats() telemetry.PartitionStats {
	p.mu.Lock()
	held := len(p.parts)
	p.mu.Unlock()
	return telemetry.PartitionStats{Held: held, Acquired: p.acquiredN.Load()}
}

// partOf is key's held partition, nil if none (or lost).
func (p *partitioned) partOf(key string) *part {
	pt := p.keys.get(key)
	if pt == nil || pt.retired.Load() {
		return nil
	}
	return pt
}

// Saved implements pipeline.Checkpointer: from the series' partition's
// states, loaded when the partition was taken.
func (p *partitioned) Saved(key string) (pipeline.SeriesState, string, bool) {
	if pt := p.partOf(key); pt != nil {
		return pt.ckpt.Saved(key)
	}
	return pipeline.SeriesState{}, "", false
}

// Save implements pipeline.Checkpointer.
func (p *partitioned) Save(st pipeline.SeriesState) {
	if pt := p.partOf(st.Key); pt != nil {
		pt.ckpt.Save(st)
	}
}

// Forget implements pipeline.Checkpointer.
func (p *partitioned) Forget(key string) {
	if pt := p.partOf(key); pt != nil {
		pt.ckpt.Forget(key)
	}
}

// checkpoint is daemon.checkpoint under partitions: each held
// partition's ack floor is read, the shards export, each partition's
// states are written, then its floor committed (revision-checked: fenced
// if another instance claimed it).
func (p *partitioned) checkpoint(ctx context.Context, final bool) (statestore.Flushed, error) {
	p.mu.Lock()
	held := make([]*part, 0, len(p.parts))
	for _, pt := range p.parts {
		held = append(held, pt)
	}
	p.mu.Unlock()
	floors := make([]uint64, len(held))
	for i, pt := range held {
		if f, found, err := pt.src.AckFloor(ctx); err == nil && found {
			floors[i] = f
		} else if err != nil {
			p.d.log.Warn("consumer position unknown; checkpointing without it", "component", "state", "partition", pt.n, "err", err)
		}
	}
	if !final {
		if err := p.d.runner.Checkpoint(ctx); err != nil {
			return statestore.Flushed{}, err
		}
	}
	var total statestore.Flushed
	var errs []error
	for i, pt := range held {
		round, err := pt.ckpt.Flush(ctx)
		if err == nil && final && round.Failed > 0 {
			again, aerr := pt.ckpt.Flush(ctx)
			round.Written += again.Written
			round.Deleted += again.Deleted
			round.Failed, err = again.Failed, aerr
		}
		total.Written += round.Written
		total.Deleted += round.Deleted
		total.Failed += round.Failed
		if err == nil && round.Failed > 0 {
			err = fmt.Errorf("%d checkpoints not written", round.Failed)
		}
		if err == nil && floors[i] > pt.seq {
			if err = pt.store.Commit(ctx, p.js.Stream, pt.filter, floors[i]); err == nil {
				pt.seq = floors[i]
			} else if errors.Is(err, kvstate.ErrFenced) {
				p.fail(err)
			}
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("partition %d: %w", pt.n, err))
		}
	}
	return total, errors.Join(errs...)
}

// finalCheckpoint writes what the shards handed over as they exited and
// each partition's position, then releases the leases, so that other
// instances take the partitions at once.
func (p *partitioned) finalCheckpoint(ctx context.Context) error {
	var err error
	if p.d.runner != nil {
		var round statestore.Flushed
		round, err = p.checkpoint(ctx, true)
		if err == nil {
			p.d.log.Info("checkpoints written", "component", "state", "series", round.Written, "deleted", round.Deleted)
		}
	}
	p.mu.Lock()
	all := p.all()
	p.mu.Unlock()
	for _, pt := range all {
		if _, cerr := pt.ckpt.Close(ctx); err == nil && !pt.retired.Load() {
			err = cerr
		}
	}
	if p.keeper != nil {
		if kerr := p.keeper.Close(ctx); err == nil {
			err = kerr
		}
	}
	p.nc.Close()
	if err != nil {
		return fmt.Errorf("final checkpoint: %w", err)
	}
	return nil
}

// ckptStats sums the partitions' writers' counters.
func (p *partitioned) ckptStats() statestore.WriterStats {
	p.mu.Lock()
	all := p.all()
	p.mu.Unlock()
	var s statestore.WriterStats
	for _, pt := range all {
		w := pt.ckpt.Stats()
		s.Written += w.Written
		s.Deleted += w.Deleted
		s.Errors += w.Errors
		s.Unwritten += w.Unwritten
		s.Discarded += w.Discarded
		s.Queued += w.Queued
	}
	return s
}

// partitionInput is the consumer of one partition: durable + "-p" + n,
// filtered on the partition's subject, resuming after seq.
func (d *daemon) partitionInput(servers []string, auth []nats.Option, filter string, n int, seq uint64) (*sources.Source, error) {
	cfg := d.cfg
	dc, err := decoderConfig(cfg.Input)
	if err != nil {
		return nil, err
	}
	outputSubjects(&dc, cfg)
	js := cfg.Input.JetStream
	jc := &sources.JetStreamConfig{
		Stream:        js.Stream,
		Durable:       js.Durable + "-p" + strconv.Itoa(n),
		AckWait:       js.AckWait.Or(sources.DefaultAckWait),
		NakDelay:      js.NakDelay.D,
		MaxAckPending: js.MaxAckPending,
		Checkpointed:  &seq,
	}
	if js.MaxDeliver != nil {
		jc.MaxDeliver = *js.MaxDeliver
	}
	jc.BackOff = []time.Duration{jc.AckWait} // as natsInput
	return sources.New(sources.Config{
		Servers:   servers,
		Subjects:  []string{filter},
		Decoder:   dc,
		Logger:    d.log.With("partition", n),
		Options:   slices.Concat(auth, d.inputConnOptions(natsconn.Redact(joinServers(servers)))),
		JetStream: jc,
	})
}
