// Package lease gives forecastd instances exclusive, expiring ownership of
// input partitions through a JetStream key-value bucket: no home-made
// cluster, the NATS servers' own replicated state decides.
//
// A partition's lease is key p<N> of a bucket whose TTL (the stream's
// MaxAge) is the lease's: acquired with kv.Create (which fails while
// anyone holds it), renewed with kv.Update at the revision last written
// (which fails once the key expired or was taken), released with a
// revision-checked delete. The server expires a key TTL after its last
// write, by its own clock; the holder counts its lease valid only until
// Margin of the TTL has passed since it *sent* the write that succeeded,
// by its own monotonic clock, so it stops before the server could hand
// the partition to another. An Epoch is the revision the lease was
// acquired at: later holders' are greater (stream sequences only grow),
// which internal/kvstate fences writes with.
package lease

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/forecastd/forecastd/internal/natsconn"
)

// Defaults of Config.
const (
	DefaultBucket = "forecastd-leases"
	DefaultTTL    = 4 * time.Second
)

var (
	// ErrHeld: the partition's lease is held by another owner.
	ErrHeld = errors.New("lease: held by another owner")
	// ErrLost: the lease expired or was taken; its holder must stop.
	ErrLost = errors.New("lease: lost")
)

// Config says which bucket holds the leases and how long they last.
type Config struct {
	// Bucket is the leases' bucket, DefaultBucket if empty; created if it
	// does not exist, with TTL as its MaxAge (an existing bucket's TTL is
	// updated to it).
	Bucket string
	// Replicas of the bucket, 1 if zero.
	Replicas int
	// TTL is how long a lease lasts after its last renewal, DefaultTTL if
	// zero; at least 1 s. A dead holder's partitions are taken over
	// between TTL and TTL + the keeper's period after its last renewal.
	TTL time.Duration
	// Owner names this instance in the leases (for logs and errors);
	// required.
	Owner string
	// OnRetry, if not nil, hears each failed attempt to open the bucket
	// (natsconn.OpenKV), so that a slow start says what it waits for.
	OnRetry func(error)
}

// Leases is a lease bucket.
type Leases struct {
	kv    jetstream.KeyValue
	ttl   time.Duration
	owner string
	name  string
}

// Open opens cfg's lease bucket, creating it if needed.
func Open(ctx context.Context, js jetstream.JetStream, cfg Config) (*Leases, error) {
	if cfg.Owner == "" {
		return nil, errors.New("lease: no owner name")
	}
	if cfg.Bucket == "" {
		cfg.Bucket = DefaultBucket
	}
	if cfg.Replicas == 0 {
		cfg.Replicas = 1
	}
	if cfg.TTL == 0 {
		cfg.TTL = DefaultTTL
	}
	if cfg.TTL < time.Second {
		return nil, fmt.Errorf("lease: ttl %v is under 1s", cfg.TTL)
	}
	kv, st, err := natsconn.OpenKV(ctx, js, jetstream.KeyValueConfig{
		Bucket:      cfg.Bucket,
		Description: "forecastd partition leases",
		History:     1,
		TTL:         cfg.TTL,
		Replicas:    cfg.Replicas,
		Storage:     jetstream.FileStorage,
	}, cfg.OnRetry)
	if err != nil {
		return nil, fmt.Errorf("lease: bucket %q: %w", cfg.Bucket, err)
	}
	if st.TTL() != cfg.TTL {
		return nil, fmt.Errorf("lease: bucket %q has a TTL of %v, not %v: every instance must use the same lease TTL", cfg.Bucket, st.TTL(), cfg.TTL)
	}
	return &Leases{kv: kv, ttl: cfg.TTL, owner: cfg.Owner, name: cfg.Bucket}, nil
}

// TTL returns the leases' time to live.
func (l *Leases) TTL() time.Duration { return l.ttl }

type record struct {
	Owner string `json:"owner"`
	Epoch uint64 `json:"epoch"`
}

func key(p int) string { return "p" + strconv.Itoa(p) }

// Lease is one held partition. Its methods are safe for concurrent use.
type Lease struct {
	l         *Leases
	partition int

	mu       sync.Mutex
	rev      uint64
	epoch    uint64
	deadline time.Time // monotonic; zero once lost or released
}

// validFor is the part of the TTL a holder counts on: it stops a quarter
// of the TTL before the server may expire its key.
func (l *Leases) validFor() time.Duration { return l.ttl - l.ttl/4 }

// Acquire takes partition's lease if no one holds it. ErrHeld, naming the
// holder, if someone does. One round trip (two if the key was deleted).
func (l *Leases) Acquire(ctx context.Context, partition int) (*Lease, error) {
	if partition < 0 {
		panic("lease: negative partition")
	}
	sent := time.Now()
	// The epoch is the revision of this write, unknown before it: the
	// record carries the owner, the epoch is read from the revision.
	val, _ := json.Marshal(record{Owner: l.owner})
	rev, err := l.kv.Create(ctx, key(partition), val)
	if errors.Is(err, jetstream.ErrKeyExists) {
		holder := "?"
		if e, gerr := l.kv.Get(ctx, key(partition)); gerr == nil {
			var r record
			if json.Unmarshal(e.Value(), &r) == nil {
				holder = r.Owner
			}
		}
		return nil, fmt.Errorf("%w: partition %d is held by %q", ErrHeld, partition, holder)
	}
	if err != nil {
		return nil, fmt.Errorf("lease: acquire partition %d: %w", partition, err)
	}
	return &Lease{l: l, partition: partition, rev: rev, epoch: rev, deadline: sent.Add(l.validFor())}, nil
}

// Partition returns the lease's partition.
func (le *Lease) Partition() int { return le.partition }

// Epoch returns the revision the lease was acquired at: greater than any
// earlier holder's of any partition in the bucket.
func (le *Lease) Epoch() uint64 { return le.epoch }

// Valid reports whether the holder may still act on the partition: its
// last successful renewal (or acquisition) was sent less than ¾ TTL ago.
func (le *Lease) Valid() bool {
	le.mu.Lock()
	defer le.mu.Unlock()
	return !le.deadline.IsZero() && time.Now().Before(le.deadline)
}

// Deadline returns when the lease stops being Valid, zero once lost.
func (le *Lease) Deadline() time.Time {
	le.mu.Lock()
	defer le.mu.Unlock()
	return le.deadline
}

// Renew extends the lease by a revision-checked update: ErrLost if the
// key expired or another took it since the last renewal (the lease is then
// invalid for good). One round trip.
func (le *Lease) Renew(ctx context.Context) error {
	le.mu.Lock()
	rev, lost := le.rev, le.deadline.IsZero()
	le.mu.Unlock()
	if lost {
		return fmt.Errorf("%w: partition %d", ErrLost, le.partition)
	}
	sent := time.Now()
	val, _ := json.Marshal(record{Owner: le.l.owner, Epoch: le.epoch})
	nrev, err := le.l.kv.Update(ctx, key(le.partition), val, rev)
	le.mu.Lock()
	defer le.mu.Unlock()
	switch {
	case err == nil:
		le.rev = nrev
		le.deadline = sent.Add(le.l.validFor())
		return nil
	case errors.Is(err, jetstream.ErrKeyRevisionMismatch) || errors.Is(err, jetstream.ErrKeyNotFound):
		le.deadline = time.Time{}
		return fmt.Errorf("%w: partition %d: expired or taken since revision %d", ErrLost, le.partition, rev)
	}
	return fmt.Errorf("lease: renew partition %d: %w", le.partition, err) // still valid until its deadline
}

// Release gives the lease up (a revision-checked delete), so that another
// may acquire it at once; a lease already lost is not an error.
func (le *Lease) Release(ctx context.Context) error {
	le.mu.Lock()
	rev, lost := le.rev, le.deadline.IsZero()
	le.deadline = time.Time{}
	le.mu.Unlock()
	if lost {
		return nil
	}
	err := le.l.kv.Delete(ctx, key(le.partition), jetstream.LastRevision(rev))
	if err != nil && !errors.Is(err, jetstream.ErrKeyRevisionMismatch) && !isWrongLast(err) {
		return fmt.Errorf("lease: release partition %d: %w", le.partition, err)
	}
	return nil
}

func isWrongLast(err error) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && (apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence ||
		apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant)
}

// KeeperConfig says which partitions a Keeper holds.
type KeeperConfig struct {
	// Partitions are numbered 0 … Partitions−1; at least 1.
	Partitions int
	// Max is the most partitions this instance holds, all if zero. With
	// N partitions over k instances, Max = ⌈N/(k−1)⌉ lets the survivors
	// of one loss hold them all; an instance that finds every partition
	// held is a standby.
	Max int
	// Every is how often leases are renewed and free partitions sought,
	// TTL/4 if zero.
	Every time.Duration
	// Acquired is called, on the Keeper's goroutine, with each lease it
	// takes; Lost with each partition whose lease was lost (expired,
	// taken, or not renewed before its deadline): the holder must stop
	// consuming it at once. Either may be nil.
	Acquired func(*Lease)
	Lost     func(partition int, err error)
	Logger   *slog.Logger
}

// Keeper holds up to Max partitions' leases, renewing them and taking
// free ones, until closed.
type Keeper struct {
	l   *Leases
	cfg KeeperConfig

	mu   sync.Mutex
	held map[int]*Lease

	stop   chan struct{}
	exited chan struct{}
}

// Keep starts a Keeper: close it (Close releases its leases, Abandon does
// not).
func (l *Leases) Keep(cfg KeeperConfig) (*Keeper, error) {
	if cfg.Partitions < 1 {
		return nil, fmt.Errorf("lease: partitions = %d, want at least 1", cfg.Partitions)
	}
	if cfg.Max <= 0 || cfg.Max > cfg.Partitions {
		cfg.Max = cfg.Partitions
	}
	if cfg.Every <= 0 {
		cfg.Every = l.ttl / 4
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	k := &Keeper{l: l, cfg: cfg, held: map[int]*Lease{}, stop: make(chan struct{}), exited: make(chan struct{})}
	go k.run()
	return k, nil
}

// Held returns the partitions held, ascending.
func (k *Keeper) Held() []int {
	k.mu.Lock()
	defer k.mu.Unlock()
	var out []int
	for p := range k.cfg.Partitions {
		if _, ok := k.held[p]; ok {
			out = append(out, p)
		}
	}
	return out
}

func (k *Keeper) run() {
	defer close(k.exited)
	t := time.NewTicker(k.cfg.Every)
	defer t.Stop()
	for {
		k.round()
		select {
		case <-k.stop:
			return
		case <-t.C:
		}
	}
}

// round renews every held lease, drops the lost ones, then tries the free
// partitions, starting after this owner's hash so that instances starting
// together spread.
func (k *Keeper) round() {
	ctx, cancel := context.WithTimeout(context.Background(), k.cfg.Every)
	defer cancel()
	k.mu.Lock()
	held := make([]*Lease, 0, len(k.held))
	for _, le := range k.held {
		held = append(held, le)
	}
	k.mu.Unlock()
	for _, le := range held {
		err := le.Renew(ctx)
		if err == nil {
			continue
		}
		if !errors.Is(err, ErrLost) && le.Valid() {
			k.cfg.Logger.Warn("lease not renewed; tried again", "partition", le.partition, "err", err)
			continue
		}
		if !errors.Is(err, ErrLost) {
			err = fmt.Errorf("%w: partition %d: not renewed before its deadline: %w", ErrLost, le.partition, err)
		}
		k.mu.Lock()
		delete(k.held, le.partition)
		k.mu.Unlock()
		k.cfg.Logger.Warn("lease lost", "partition", le.partition, "err", err)
		if k.cfg.Lost != nil {
			k.cfg.Lost(le.partition, err)
		}
	}
	n := k.cfg.Partitions
	start := int(fnv(k.l.owner) % uint32(n))
	for i := range n {
		p := (start + i) % n
		k.mu.Lock()
		_, have := k.held[p]
		full := len(k.held) >= k.cfg.Max
		k.mu.Unlock()
		if full {
			return
		}
		if have {
			continue
		}
		le, err := k.l.Acquire(ctx, p)
		if err != nil {
			if !errors.Is(err, ErrHeld) {
				k.cfg.Logger.Warn("lease not acquired", "partition", p, "err", err)
			}
			continue
		}
		k.mu.Lock()
		k.held[p] = le
		k.mu.Unlock()
		k.cfg.Logger.Info("lease acquired", "partition", p, "epoch", le.Epoch())
		if k.cfg.Acquired != nil {
			k.cfg.Acquired(le)
		}
	}
}

func fnv(s string) uint32 {
	h := uint32(2166136261)
	for i := 0; i < len(s); i++ {
		h ^= uint32(s[i])
		h *= 16777619
	}
	return h
}

// Close stops the Keeper and releases its leases, so that others take
// its partitions at once; it returns once its goroutine has exited.
func (k *Keeper) Close(ctx context.Context) error {
	k.Abandon()
	k.mu.Lock()
	defer k.mu.Unlock()
	var errs []error
	for p, le := range k.held {
		errs = append(errs, le.Release(ctx))
		delete(k.held, p)
	}
	return errors.Join(errs...)
}

// Abandon stops the Keeper without releasing its leases, as a crash
// would: they expire after the TTL. It returns once its goroutine has
// exited.
func (k *Keeper) Abandon() {
	select {
	case <-k.stop:
	default:
		close(k.stop)
	}
	<-k.exited
}
