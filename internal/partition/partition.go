// Package partition is forecastd's scale-out: with [input.jetstream]
// partitions = N and [state] store = "jetstream", the stream's subjects
// are split into N partitions by the NATS server (subject mapping
// {{partition(N, …)}}), each instance holds the leases of some
// (internal/lease), reads each held partition through its own durable
// consumer (durable + "-p" + N, filtered on partition_subject) and keeps
// its series' states in a key-value bucket (internal/kvstate), fenced by
// the lease's epoch. A partition whose holder died is taken by another
// instance once its lease expires: it restores the series from the bucket
// and resumes the consumer after the partition's checkpointed sequence.
// An instance that loses a lease it held (it was cut off longer than the
// lease) stops: its series of that partition are the new holder's.
//
// A Set is the daemon's input (the merged messages of its partitions'
// consumers) and its checkpointer (runner.Checkpointer).
package partition

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
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
	"github.com/forecastd/forecastd/internal/retry"
	"github.com/forecastd/forecastd/internal/statestore"
	"github.com/forecastd/forecastd/internal/telemetry"
	"github.com/forecastd/forecastd/pipeline"
	"github.com/forecastd/forecastd/runner"
	"github.com/forecastd/forecastd/sources"
)

const (
	// Token stands for the partition number in partition_subject.
	Token = "{partition}"
	// MaxPartitions bounds [input.jetstream] partitions (a consumer and a
	// lease key each).
	MaxPartitions = 1024
)

// ValidBucket reports whether s is a key-value bucket's name: letters,
// digits, '-' and '_'.
func ValidBucket(s string) bool {
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return false
		}
	}
	return s != ""
}

// Subject is partition p's filter subject: tmpl with Token replaced by p.
func Subject(tmpl string, p int) string {
	return strings.Replace(tmpl, Token, strconv.Itoa(p), 1)
}

// Config is what a Set needs: the daemon's [state] and [input.jetstream]
// settings, and how it makes a partition's consumer.
type Config struct {
	Servers []string
	// Options are every NATS connection's (authentication, TLS).
	Options []nats.Option
	// Owner names this instance in the leases; "" is host-pid.
	Owner string
	// Bucket and LeaseBucket are the states' and the leases' buckets
	// ("": kvstate's and lease's defaults); Replicas their replicas.
	Bucket, LeaseBucket string
	Replicas            int
	// LeaseTTL is a lease's life without renewal (0: lease's default).
	LeaseTTL time.Duration
	// Partitions of the stream; at most MaxHeld of them held (0: all).
	Partitions, MaxHeld int
	// Stream and PartitionSubject (holding Token) name what the
	// consumers read.
	Stream, PartitionSubject string
	// Keys bounds the series keys noted per generation (keyParts): more
	// than the series a runner holds plus the points it queues.
	Keys int
	// Limits bound each partition's checkpoint writer.
	Limits statestore.Limits
	// NewInput makes partition n's consumer, filtered on filter, resuming
	// after the stream sequence seq, handing each message to deliver on
	// its reading goroutine (sources.Config.Deliver). Required.
	NewInput func(filter string, n int, seq uint64, deliver func(context.Context, *sources.Message)) (*sources.Source, error)
	// Deliver takes every message of the partitions held, as
	// sources.Config.Deliver does, on their consumers' goroutines.
	// Required.
	Deliver func(context.Context, *sources.Message)
	// Export has the shards export their states to the Set
	// (runner.Runner.Checkpoint), at each checkpoint but the final.
	// Required.
	Export func(context.Context) error
	// Explain rewords a NATS connection error for the user (nil: as is).
	Explain func(error) error
	// Logger; nil discards.
	Logger *slog.Logger
}

// Set is the daemon's input and checkpointer under partitions: it merges
// the messages of the consumers of the partitions it holds, routes each
// series' state to its partition's bucket keys, and checkpoints each
// partition with its own applied sequence.
type Set struct {
	cfg Config
	log *slog.Logger

	nc     *nats.Conn // the buckets' connection
	states *kvstate.Bucket
	leases *lease.Leases
	keeper *lease.Keeper
	owner  string

	fatal chan error // one: a lease lost, a commit fenced

	acquiredN atomic.Uint64 // leases acquired and their partitions started

	mu      sync.Mutex
	parts   map[int]*part
	retired []*part // lost: kept until shutdown for their sources
	stopped bool
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

var _ runner.Checkpointer = (*Set)(nil)

// Open connects to the buckets; Start takes leases.
func Open(cfg Config) (*Set, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Explain == nil {
		cfg.Explain = func(err error) error { return err }
	}
	owner := cfg.Owner
	if owner == "" {
		host, _ := os.Hostname()
		owner = fmt.Sprintf("%s-%d", host, os.Getpid())
	}
	log := cfg.Logger.With("component", "state")
	servers := strings.Join(cfg.Servers, ",")
	nc, err := nats.Connect(servers, append(slices.Clone(cfg.Options),
		nats.Name("forecastd-state"), nats.MaxReconnects(-1),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			if err != nil {
				log.Warn("nats state connection disconnected", "err", err)
			}
		}))...)
	if err != nil {
		return nil, fmt.Errorf("state: nats %s: %w", natsconn.Redact(servers), cfg.Explain(err))
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
		every := retry.Every(5 * time.Second)
		return func(err error) {
			if every.Allow() {
				log.Warn("state: bucket not ready yet, trying again", "bucket", bucket, "err", err)
			}
		}
	}
	states, err := kvstate.OpenBucket(ctx, js, kvstate.Config{Bucket: cfg.Bucket, Replicas: cfg.Replicas, OnRetry: waiting(cmp.Or(cfg.Bucket, kvstate.DefaultBucket))})
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("state.bucket: %w", err)
	}
	leases, err := lease.Open(ctx, js, lease.Config{Bucket: cfg.LeaseBucket, Replicas: cfg.Replicas, TTL: cfg.LeaseTTL, Owner: owner,
		OnRetry: waiting(cmp.Or(cfg.LeaseBucket, lease.DefaultBucket))})
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("state.lease_bucket: %w", err)
	}
	return &Set{
		cfg: cfg, log: cfg.Logger,
		nc: nc, states: states, leases: leases, owner: owner,
		fatal: make(chan error, 1),
		parts: map[int]*part{},
		keys:  keyParts{max: cfg.Keys},
	}, nil
}

// Start takes the leases: from now on, partitions are acquired (and
// their consumers started) on the keeper's goroutine.
func (p *Set) Start() error {
	k, err := p.leases.Keep(lease.KeeperConfig{
		Partitions: p.cfg.Partitions,
		Max:        p.cfg.MaxHeld,
		Acquired:   p.acquired,
		Lost:       p.lost,
		Logger:     p.log.With("component", "state", "instance", p.owner),
	})
	if err != nil {
		return err
	}
	p.keeper = k
	return nil
}

// acquired claims the partition's states (loading them) and starts its
// consumer after the partition's checkpointed sequence.
func (p *Set) acquired(le *lease.Lease) {
	log := p.log.With("component", "state", "partition", le.Partition(), "epoch", le.Epoch())
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
	filter := Subject(p.cfg.PartitionSubject, le.Partition())
	seq := applied.Seq
	if applied.Stream != p.cfg.Stream || applied.Filter != filter {
		seq = 0 // another stream's position: replay this one
	}
	ckpt := statestore.NewCheckpoints(store, store.Where(), p.log.With("component", "state", "partition", le.Partition()), p.cfg.Limits)
	pt := &part{n: le.Partition(), lease: le, store: store, ckpt: ckpt, filter: filter, seq: seq}
	src, err := p.cfg.NewInput(filter, le.Partition(), seq, p.deliverer(pt))
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
	p.mu.Unlock()
	p.acquiredN.Add(1)
	log.Info("partition taken: its series are restored on their next point, its consumer resumes after the checkpoints",
		"filter", filter, "applied_seq", seq, "previous_owner", applied.Owner)
}

// deliverer returns the function pt's consumer hands its messages to: it
// notes each series' partition, then passes the message to Deliver, on
// the consumer's goroutine, with no hop between. Once the lease is no
// longer valid (not renewed in time: this instance was paused or cut
// off), nothing more is passed on: the messages are NAKed, for the
// partition's next holder, and the partition is given up.
func (p *Set) deliverer(pt *part) func(context.Context, *sources.Message) {
	var gaveUp atomic.Bool
	return func(ctx context.Context, m *sources.Message) {
		if !pt.lease.Valid() {
			m.Nak(0)
			if !gaveUp.Swap(true) {
				go p.lost(pt.n, fmt.Errorf("%w: partition %d: not renewed before its deadline", lease.ErrLost, pt.n))
			}
			return
		}
		for i := range m.Points {
			p.keys.note(m.Points[i].Key, pt)
		}
		p.cfg.Deliver(ctx, m)
	}
}

// lost: another instance holds the partition now; this one must stop, as
// its series of the partition are no longer its own.
func (p *Set) lost(n int, err error) {
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

func (p *Set) fail(err error) {
	select {
	case p.fatal <- err:
	default:
	}
}

// Fatal receives the error that ends this instance's part: a lease lost,
// a commit fenced (another instance holds the partition now).
func (p *Set) Fatal() <-chan error { return p.fatal }

// StopIntake: no more partitions are taken, and every consumer stops,
// returning once the messages it read are delivered.
func (p *Set) StopIntake(ctx context.Context) error {
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
	return errors.Join(errs...)
}

// all are the parts, held and retired; p.mu held.
func (p *Set) all() []*part {
	out := slices.Clone(p.retired)
	for _, pt := range p.parts {
		out = append(out, pt)
	}
	return out
}

// Close: the consumers' last acks go out.
func (p *Set) Close(ctx context.Context) error {
	p.mu.Lock()
	all := p.all()
	p.mu.Unlock()
	var errs []error
	for _, pt := range all {
		errs = append(errs, pt.src.Close(ctx))
	}
	return errors.Join(errs...)
}

// Stats is the sum of the consumers'.
func (p *Set) Stats() sources.Stats {
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

// Connected reports whether the buckets' connection and every held
// consumer's are up.
func (p *Set) Connected() bool {
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

// PartitionStats feeds /metrics' partitions_held and
// partition_leases_acquired_total.
func (p *Set) PartitionStats() telemetry.PartitionStats {
	p.mu.Lock()
	held := len(p.parts)
	p.mu.Unlock()
	return telemetry.PartitionStats{Held: held, Acquired: p.acquiredN.Load()}
}

// partOf is key's held partition, nil if none (or lost).
func (p *Set) partOf(key string) *part {
	pt := p.keys.get(key)
	if pt == nil || pt.retired.Load() {
		return nil
	}
	return pt
}

// Saved implements runner.Checkpointer: from the series' partition's
// states, loaded when the partition was taken.
func (p *Set) Saved(key string) (pipeline.SeriesState, string, bool) {
	if pt := p.partOf(key); pt != nil {
		return pt.ckpt.Saved(key)
	}
	return pipeline.SeriesState{}, "", false
}

// Save implements runner.Checkpointer.
func (p *Set) Save(st pipeline.SeriesState) {
	if pt := p.partOf(st.Key); pt != nil {
		pt.ckpt.Save(st)
	}
}

// Forget implements runner.Checkpointer.
func (p *Set) Forget(key string) {
	if pt := p.partOf(key); pt != nil {
		pt.ckpt.Forget(key)
	}
}

// Checkpoint writes the changed series' states: each held partition's
// ack floor is read, the shards export (unless final: the runner is
// closed, its shards have exported), each partition's states are
// written, then its floor committed (revision-checked: fenced if another
// instance claimed it).
func (p *Set) Checkpoint(ctx context.Context, final bool) (statestore.Flushed, error) {
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
			p.log.Warn("consumer position unknown; checkpointing without it", "component", "state", "partition", pt.n, "err", err)
		}
	}
	if !final {
		if err := p.cfg.Export(ctx); err != nil {
			return statestore.Flushed{}, err
		}
	}
	var total statestore.Flushed
	var errs []error
	for i, pt := range held {
		round, err := pt.ckpt.Round(ctx, final)
		total.Written += round.Written
		total.Deleted += round.Deleted
		total.Failed += round.Failed
		if err == nil && floors[i] > pt.seq {
			if err = pt.store.Commit(ctx, p.cfg.Stream, pt.filter, floors[i]); err == nil {
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

// FinalCheckpoint writes what the shards handed over as they exited and
// each partition's position (unless the daemon stopped before its runner
// started: exported false), then releases the leases, so that other
// instances take the partitions at once.
func (p *Set) FinalCheckpoint(ctx context.Context, exported bool) error {
	var err error
	if exported {
		var round statestore.Flushed
		round, err = p.Checkpoint(ctx, true)
		if err == nil {
			p.log.Info("checkpoints written", "component", "state", "series", round.Written, "deleted", round.Deleted)
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

// CheckpointStats sums the partitions' writers' counters.
func (p *Set) CheckpointStats() statestore.WriterStats {
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
