// Package kvstate keeps forecastd's checkpoints in a JetStream key-value
// bucket instead of a directory ([state] store = "jetstream"), one
// partition's series apart from another's, so that whichever instance
// holds a partition's lease (internal/lease) can restore its series and
// resume its stream where the last holder's checkpoints end.
//
// # Keys
//
// In the bucket (History 1, file storage, R1 or R3):
//
//	p<N>.applied     the partition's Applied, JSON: the stream sequence
//	                 its checkpoints cover, and the epoch that claimed it
//	p<N>.s.<name>    one series' state; <name> is statestore.FileName of
//	                 the series key without its extension, so a valid KV
//	                 token for any key, and the key itself is inside
//
// A series value is "FKVS", the writer's epoch (8 bytes, big-endian), then
// the statestore file format (statestore.Encode), whose checksum and key
// are checked on load.
//
// # Fencing
//
// An epoch is the revision of the partition's lease when it was acquired
// (internal/lease), so a later holder's is greater. Claim records it in
// p<N>.applied with a revision-checked update; every later Commit of that
// Store is an update at the revision it last wrote, which fails, with
// ErrFenced, once another holder has claimed the partition. Series values
// are written likewise at the revision last seen: a write that finds the
// key changed reads its epoch and gives up with ErrFenced if it is newer
// than the Store's own (a holder that lost the partition can overwrite
// none of the new holder's states), or overwrites it if older (what a
// stale holder wrote after the claim). A fenced Store refuses every later
// write.
package kvstate

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/forecastd/forecastd/internal/natsconn"
	"github.com/forecastd/forecastd/internal/statestore"
	"github.com/forecastd/forecastd/pipeline"
)

// DefaultBucket is Config.Bucket's default.
const DefaultBucket = "forecastd-state"

// DefaultTimeout is Config.Timeout's default.
const DefaultTimeout = 10 * time.Second

// ErrFenced is returned once a Store's partition was claimed by a newer
// epoch: its holder lost the lease and must stop learning its series.
var ErrFenced = errors.New("kvstate: partition claimed by a newer lease")

// Config says which bucket to keep the states in.
type Config struct {
	// Bucket is the key-value bucket's name; DefaultBucket if empty. It is
	// created if it does not exist.
	Bucket string
	// Replicas is the bucket's replication factor, 1 if zero; 3 on a
	// 3-node cluster survives the loss of one server.
	Replicas int
	// Timeout bounds each operation on the bucket; DefaultTimeout if zero.
	Timeout time.Duration
	// OnRetry, if not nil, hears each failed attempt to open the bucket
	// (natsconn.OpenKV), so that a slow start says what it waits for.
	OnRetry func(error)
}

// Bucket is the states' key-value bucket.
type Bucket struct {
	kv      jetstream.KeyValue
	name    string
	timeout time.Duration
}

// OpenBucket opens cfg's bucket, creating it if it does not exist.
func OpenBucket(ctx context.Context, js jetstream.JetStream, cfg Config) (*Bucket, error) {
	if cfg.Bucket == "" {
		cfg.Bucket = DefaultBucket
	}
	if cfg.Replicas == 0 {
		cfg.Replicas = 1
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	kv, _, err := natsconn.OpenKV(ctx, js, jetstream.KeyValueConfig{
		Bucket:      cfg.Bucket,
		Description: "forecastd model state, one key per series, by partition",
		History:     1,
		Replicas:    cfg.Replicas,
		Storage:     jetstream.FileStorage,
	}, cfg.OnRetry)
	if err != nil {
		return nil, fmt.Errorf("kvstate: bucket %q: %w", cfg.Bucket, err)
	}
	return &Bucket{kv: kv, name: cfg.Bucket, timeout: cfg.Timeout}, nil
}

// Where names the Store's keys, for logs: "kv:" bucket "/p<N>.s.*".
func (s *Store) Where() string { return "kv:" + s.b.name + "/" + seriesPrefix(s.partition) + "*" }

// Applied is the input position a partition's checkpoints cover: every
// message of Stream through Filter up to sequence Seq had been applied to
// its series before a round of checkpoints written whole. Epoch and Owner
// are the holder that last claimed the partition.
type Applied struct {
	Stream string `json:"stream,omitempty"`
	Filter string `json:"filter,omitempty"`
	Seq    uint64 `json:"seq"`
	Epoch  uint64 `json:"epoch"`
	Owner  string `json:"owner,omitempty"`
}

func appliedKey(partition int) string { return "p" + strconv.Itoa(partition) + ".applied" }

func seriesPrefix(partition int) string { return "p" + strconv.Itoa(partition) + ".s." }

// Key returns the bucket key of series key's state in partition.
func Key(partition int, key string) string {
	return seriesPrefix(partition) + strings.TrimSuffix(statestore.FileName(key), statestore.Ext)
}

// Claim makes epoch the holder of partition's states and returns its Store
// and the partition's Applied as the last holder left it (the zero
// Applied, but for Epoch and Owner, if the partition was never claimed).
// A claim recorded with an epoch newer than epoch is refused with
// ErrFenced. Claim costs two round trips to the bucket (a read and a
// revision-checked write), more if other holders race.
func (b *Bucket) Claim(ctx context.Context, partition int, epoch uint64, owner string) (*Store, Applied, error) {
	if partition < 0 {
		panic("kvstate: negative partition")
	}
	key := appliedKey(partition)
	for range 10 {
		var prev Applied
		var rev uint64
		e, err := b.kv.Get(ctx, key)
		switch {
		case errors.Is(err, jetstream.ErrKeyNotFound):
		case err != nil:
			return nil, Applied{}, fmt.Errorf("kvstate: claim partition %d: %w", partition, err)
		default:
			rev = e.Revision()
			if err := json.Unmarshal(e.Value(), &prev); err != nil {
				return nil, Applied{}, fmt.Errorf("kvstate: claim partition %d: %s/%s: %w", partition, b.name, key, err)
			}
		}
		if prev.Epoch > epoch {
			return nil, Applied{}, fmt.Errorf("%w: partition %d is held by %q at epoch %d, after epoch %d", ErrFenced, partition, prev.Owner, prev.Epoch, epoch)
		}
		next := prev
		next.Epoch, next.Owner = epoch, owner
		val, _ := json.Marshal(next)
		var nrev uint64
		if rev == 0 {
			nrev, err = b.kv.Create(ctx, key, val)
		} else {
			nrev, err = b.kv.Update(ctx, key, val, rev)
		}
		if errors.Is(err, jetstream.ErrKeyExists) || errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
			continue // another holder wrote in between: read again
		}
		if err != nil {
			return nil, Applied{}, fmt.Errorf("kvstate: claim partition %d: %w", partition, err)
		}
		s := &Store{b: b, partition: partition, epoch: epoch, owner: owner, appliedRev: nrev, applied: next, revs: map[string]uint64{}}
		return s, prev, nil
	}
	return nil, Applied{}, fmt.Errorf("kvstate: claim partition %d: %s/%s changed under 10 claims in a row", partition, b.name, key)
}

// Store is one claimed partition's states. It serves statestore.Backend,
// so statestore.Checkpoints writes to it as to a directory; its methods
// may be called from several goroutines at once, for different keys.
type Store struct {
	b         *Bucket
	partition int
	epoch     uint64
	owner     string

	mu         sync.Mutex
	appliedRev uint64
	applied    Applied
	revs       map[string]uint64 // bucket key → revision last read or written
	fenced     error
}

var _ statestore.Backend = (*Store)(nil)

// Partition returns the Store's partition.
func (s *Store) Partition() int { return s.partition }

// Epoch returns the epoch the Store claimed its partition with.
func (s *Store) Epoch() uint64 { return s.epoch }

// Fenced returns the ErrFenced error once the Store is fenced, else nil.
func (s *Store) Fenced() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.fenced
}

func (s *Store) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), s.b.timeout)
}

// Path implements statestore.Backend: "kv:" bucket "/" key.
func (s *Store) Path(key string) string { return "kv:" + s.b.name + "/" + Key(s.partition, key) }

// Save writes st as key's state (st.Key must be key, or empty).
func (s *Store) Save(key string, st pipeline.SeriesState) error {
	if st.Key == "" {
		st.Key = key
	}
	if st.Key != key {
		return fmt.Errorf("kvstate: save series %q: the state is series %q's", key, st.Key)
	}
	return s.SaveEncoded(key, statestore.Encode(st))
}

const magic = "FKVS"

func frame(epoch uint64, data []byte) []byte {
	v := make([]byte, 0, len(magic)+8+len(data))
	v = append(v, magic...)
	v = binary.BigEndian.AppendUint64(v, epoch)
	return append(v, data...)
}

func unframe(v []byte) (epoch uint64, data []byte, err error) {
	if len(v) < len(magic)+8 || string(v[:len(magic)]) != magic {
		return 0, nil, fmt.Errorf("not a forecastd state value (%d bytes, no %q header)", len(v), magic)
	}
	return binary.BigEndian.Uint64(v[len(magic):]), v[len(magic)+8:], nil
}

func (s *Store) fence(err error) error {
	s.mu.Lock()
	if s.fenced == nil {
		s.fenced = err
	}
	s.mu.Unlock()
	return err
}

// SaveEncoded implements statestore.Backend: data (statestore.Encode's)
// replaces key's state, at the revision the Store last saw (see Fencing).
// One round trip, two or three when another holder wrote the key.
func (s *Store) SaveEncoded(key string, data []byte) error {
	if err := s.Fenced(); err != nil {
		return err
	}
	ctx, cancel := s.ctx()
	defer cancel()
	bk := Key(s.partition, key)
	val := frame(s.epoch, data)
	s.mu.Lock()
	rev, known := s.revs[bk]
	s.mu.Unlock()
	for range 10 {
		var nrev uint64
		var err error
		if known {
			nrev, err = s.b.kv.Update(ctx, bk, val, rev)
		} else {
			nrev, err = s.b.kv.Create(ctx, bk, val)
		}
		if err == nil {
			s.mu.Lock()
			s.revs[bk] = nrev
			s.mu.Unlock()
			return nil
		}
		if !errors.Is(err, jetstream.ErrKeyExists) && !errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
			return fmt.Errorf("kvstate: save series %q to %s: %w", key, s.Path(key), err)
		}
		// Someone else wrote it: a stale holder (older epoch) is
		// overwritten, a newer one fences us.
		if rev, known, err = s.current(ctx, key, bk); err != nil {
			return err
		}
	}
	return fmt.Errorf("kvstate: save series %q to %s: changed under 10 writes in a row", key, s.Path(key))
}

// current reads bk's revision, checking its writer's epoch is not newer
// than the Store's; known is false when the key has no value.
func (s *Store) current(ctx context.Context, key, bk string) (rev uint64, known bool, err error) {
	e, err := s.b.kv.Get(ctx, bk)
	if errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("kvstate: series %q at %s: %w", key, s.Path(key), err)
	}
	epoch, _, ferr := unframe(e.Value())
	if ferr == nil && epoch > s.epoch {
		return 0, false, s.fence(fmt.Errorf("%w: series %q at %s was written at epoch %d, after this holder's %d", ErrFenced, key, s.Path(key), epoch, s.epoch))
	}
	return e.Revision(), true, nil
}

// Load reads key's state. If there is none, the error wraps
// fs.ErrNotExist; its errors name the bucket key and the series.
func (s *Store) Load(key string) (pipeline.SeriesState, error) {
	ctx, cancel := s.ctx()
	defer cancel()
	bk := Key(s.partition, key)
	e, err := s.b.kv.Get(ctx, bk)
	if errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted) {
		return pipeline.SeriesState{}, fmt.Errorf("kvstate: series %q: %s: %w", key, s.Path(key), fs.ErrNotExist)
	}
	if err != nil {
		return pipeline.SeriesState{}, fmt.Errorf("kvstate: series %q: %s: %w", key, s.Path(key), err)
	}
	st, err := s.decode(e)
	if err != nil {
		return pipeline.SeriesState{}, fmt.Errorf("kvstate: series %q: %w", key, err)
	}
	if st.Key != key {
		return pipeline.SeriesState{}, fmt.Errorf("kvstate: series %q: %s holds series %q", key, s.Path(key), st.Key)
	}
	return st, nil
}

// decode decodes e and records its revision.
func (s *Store) decode(e jetstream.KeyValueEntry) (pipeline.SeriesState, error) {
	where := "kv:" + s.b.name + "/" + e.Key()
	_, data, err := unframe(e.Value())
	if err != nil {
		return pipeline.SeriesState{}, fmt.Errorf("%s: %w", where, err)
	}
	st, err := statestore.Decode(data)
	if err != nil {
		return pipeline.SeriesState{}, fmt.Errorf("%s: %w", where, err)
	}
	s.mu.Lock()
	s.revs[e.Key()] = e.Revision()
	s.mu.Unlock()
	return st, nil
}

// LoadAll implements statestore.Backend: every state of the partition,
// and one error per value it cannot read (naming its key and, when it can
// be read, its series); a bad value does not stop the others. A value
// under another series' key is an error too. It reads them all through one
// watcher of the partition's keys (the server streams the last value of
// each), not a request per series.
func (s *Store) LoadAll() ([]pipeline.SeriesState, []error) {
	ctx, cancel := context.WithTimeout(context.Background(), s.b.timeout)
	defer cancel()
	w, err := s.b.kv.WatchFiltered(ctx, []string{seriesPrefix(s.partition) + ">"}, jetstream.IgnoreDeletes())
	if err != nil {
		return nil, []error{fmt.Errorf("kvstate: partition %d: list: %w", s.partition, err)}
	}
	defer w.Stop()
	var (
		states []pipeline.SeriesState
		errs   []error
	)
	for {
		var e jetstream.KeyValueEntry
		select {
		case e = <-w.Updates():
		case <-ctx.Done():
			return states, append(errs, fmt.Errorf("kvstate: partition %d: listing incomplete: %w", s.partition, ctx.Err()))
		}
		if e == nil { // every value present at the start was sent
			return states, errs
		}
		st, err := s.decode(e)
		if err != nil {
			errs = append(errs, fmt.Errorf("kvstate: %w", err))
			continue
		}
		if want := Key(s.partition, st.Key); want != e.Key() {
			errs = append(errs, fmt.Errorf("kvstate: kv:%s/%s holds series %q, whose key is %s", s.b.name, e.Key(), st.Key, want))
			continue
		}
		states = append(states, st)
	}
}

// Delete implements statestore.Backend: key's state is deleted, unless a
// newer epoch wrote it (ErrFenced). A state that does not exist is not an
// error.
func (s *Store) Delete(key string) error {
	if err := s.Fenced(); err != nil {
		return err
	}
	ctx, cancel := s.ctx()
	defer cancel()
	bk := Key(s.partition, key)
	for range 10 {
		rev, known, err := s.current(ctx, key, bk)
		if err != nil {
			return err
		}
		if !known {
			return nil
		}
		err = s.b.kv.Delete(ctx, bk, jetstream.LastRevision(rev))
		if err == nil {
			s.mu.Lock()
			delete(s.revs, bk)
			s.mu.Unlock()
			return nil
		}
		if !errors.Is(err, jetstream.ErrKeyExists) && !errors.Is(err, jetstream.ErrKeyRevisionMismatch) && !isWrongLast(err) {
			return fmt.Errorf("kvstate: delete series %q at %s: %w", key, s.Path(key), err)
		}
	}
	return fmt.Errorf("kvstate: delete series %q at %s: changed under 10 deletes in a row", key, s.Path(key))
}

func isWrongLast(err error) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && (apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence ||
		apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant)
}

// Applied returns the partition's Applied as this Store last wrote it.
func (s *Store) Applied() Applied {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.applied
}

// Commit records that the partition's checkpoints, all written, cover
// stream through filter up to seq: a revision-checked update of
// p<N>.applied, which fails with ErrFenced (and fences the Store) if
// another holder claimed the partition since. A seq below the recorded
// one is an error naming both (positions only move forward). One round
// trip.
func (s *Store) Commit(ctx context.Context, stream, filter string, seq uint64) error {
	if err := s.Fenced(); err != nil {
		return err
	}
	s.mu.Lock()
	next := s.applied
	rev := s.appliedRev
	s.mu.Unlock()
	if seq < next.Seq && stream == next.Stream && filter == next.Filter {
		return fmt.Errorf("kvstate: partition %d: commit sequence %d, below the recorded %d", s.partition, seq, next.Seq)
	}
	next.Stream, next.Filter, next.Seq = stream, filter, seq
	val, _ := json.Marshal(next)
	nrev, err := s.b.kv.Update(ctx, appliedKey(s.partition), val, rev)
	if errors.Is(err, jetstream.ErrKeyRevisionMismatch) || isWrongLast(err) {
		return s.fence(fmt.Errorf("%w: partition %d: %s/%s changed since epoch %d claimed it", ErrFenced, s.partition, s.b.name, appliedKey(s.partition), s.epoch))
	}
	if err != nil {
		return fmt.Errorf("kvstate: partition %d: commit sequence %d: %w", s.partition, seq, err)
	}
	s.mu.Lock()
	s.applied, s.appliedRev = next, nrev
	s.mu.Unlock()
	return nil
}
