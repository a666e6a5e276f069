package statestore

import (
	"cmp"
	"container/list"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/forecastd/forecastd/pipeline"
	"github.com/forecastd/forecastd/runner"
)

// WriterStats are a Checkpoints' counters, totals since it was opened.
type WriterStats struct {
	// Written and Deleted count checkpoint files written and deleted;
	// Errors the writes and deletes that failed (each retry included).
	Written, Deleted, Errors uint64
	// Unwritten is the number of series whose latest state failed to be
	// written and waits for the next flush.
	Unwritten int64
	// Discarded counts the states deleted at a bound of Limits: those
	// of evicted series beyond MaxEvicted, and those beyond MaxLoaded at
	// start.
	Discarded uint64
	// Queued is the bytes of encoded states waiting for the writer (or
	// being written): memory in transit, not the live series'.
	Queued int64
}

// Limits bound the states a Checkpoints keeps for series that are not
// live, so that a publisher inventing series cannot fill the disk with
// the states of series evicted at max_series, nor make the next start
// load them all. Zero: no bound.
type Limits struct {
	// MaxEvicted is how many states of series evicted at max_series
	// (SaveEvicted) are kept for their series' return; beyond it, the
	// state evicted longest ago is deleted.
	MaxEvicted int
	// MaxLoaded is how many states are loaded at start: if more are
	// stored, those of the series whose last point is the oldest are
	// deleted.
	MaxLoaded int
	// MaxQueuedEvicted bounds the bytes of states queued beyond which an
	// evicted series' state is not saved (SaveEvicted); zero is
	// MaxQueuedEvicted, the package's constant, which also caps it.
	MaxQueuedEvicted int
}

// Checkpoints is the daemon's runner.Checkpointer: the states loaded at
// start, kept by key until their series' first point, and a writer
// goroutine that writes the states the shards encoded (the latest of each
// series, so that a slow disk holds at most one state per series) and
// deletes the checkpoints of evicted series. A write or delete that fails
// is kept and tried again at each flush (each checkpoint, and at
// shutdown), until it succeeds or a newer state of its series replaces
// it: the shards mark a series clean once they have handed its state
// over, so the retry is the writer's.
type Checkpoints struct {
	store Backend
	log   *slog.Logger
	lim   Limits

	mu      sync.Mutex
	saved   map[string]pipeline.SeriesState // loaded, not yet restored
	pending map[string][]byte               // to write; nil: to delete
	retry   map[string][]byte               // failed, to try again at the next flush
	round   Flushed                         // done since the last flush
	// writing is the key being written (or deleted), writingData its
	// data: neither in pending nor yet in its file (Saved reads it).
	writing     string
	writingData []byte
	// queued is the bytes of the states in pending, retry and being
	// written, which bounds the states of evicted series (SaveEvicted).
	queued int
	// kept lists the keys of series evicted at max_series whose
	// state is kept (SaveEvicted), the longest evicted first; evictedAt
	// finds a key's element. A key leaves when its series is made again
	// (Saved) or forgotten.
	kept      *list.List
	evictedAt map[string]*list.Element
	// live counts the series made (Saved) and not evicted since (Forget,
	// SaveEvicted): the room the kept states leave to live ones.
	live int

	wake    chan struct{}
	flushes chan chan Flushed
	stop    chan struct{}
	exited  chan struct{}

	// written and deleted count files written and deleted; writeErrors
	// the writes and deletes that failed (each retry included).
	written, deleted, writeErrors, discarded atomic.Uint64
	unwritten                                atomic.Int64 // len(retry)
}

// Flushed counts what the writer did between two flushes.
type Flushed struct {
	Written, Deleted, Failed int
}

var _ runner.Checkpointer = (*Checkpoints)(nil)

// Backend is where Checkpoints keeps the states: the directory Store, or
// a JetStream key-value bucket (internal/kvstate). Calls for the same key
// do not overlap.
type Backend interface {
	// SaveEncoded replaces key's state by data (Encode's), whole or not
	// at all.
	SaveEncoded(key string, data []byte) error
	// Delete removes key's state; one that does not exist is not an error.
	Delete(key string) error
	// Load reads key's state; the error wraps fs.ErrNotExist if there is
	// none.
	Load(key string) (pipeline.SeriesState, error)
	// LoadAll reads every state, and one error per state it cannot read.
	LoadAll() ([]pipeline.SeriesState, []error)
	// Path names where key's state is kept, for logs.
	Path(key string) string
}

var _ Backend = (*Store)(nil)

// OpenCheckpoints opens the store in dir and loads every checkpoint, before
// anything is saved; a file it cannot read is logged once, naming it and
// its series, and left alone (a later checkpoint of its series replaces
// it). It starts the writer goroutine: close it.
func OpenCheckpoints(dir string, log *slog.Logger, lim Limits) (*Checkpoints, error) {
	store, err := Open(dir)
	if err != nil {
		return nil, err
	}
	return NewCheckpoints(store, dir, log, lim), nil
}

// NewCheckpoints is OpenCheckpoints over any Backend; where names it in
// logs. It loads every state before anything is saved, and starts the
// writer goroutine: close it.
func NewCheckpoints(store Backend, where string, log *slog.Logger, lim Limits) *Checkpoints {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	states, errs := store.LoadAll()
	for _, err := range errs {
		log.Error("checkpoint not loaded; its series will start afresh", "err", err)
	}
	c := &Checkpoints{
		store:     store,
		log:       log,
		lim:       lim,
		saved:     make(map[string]pipeline.SeriesState, len(states)),
		pending:   map[string][]byte{},
		retry:     map[string][]byte{},
		kept:      list.New(),
		evictedAt: map[string]*list.Element{},
		wake:      make(chan struct{}, 1),
		flushes:   make(chan chan Flushed),
		stop:      make(chan struct{}),
		exited:    make(chan struct{}),
	}
	if lim.MaxLoaded > 0 && len(states) > lim.MaxLoaded {
		// The newest first (by their series' last point; the key breaks
		// ties, so that the choice does not depend on the listing).
		slices.SortFunc(states, func(a, b pipeline.SeriesState) int {
			if c := b.LastTime.Compare(a.LastTime); c != 0 {
				return c
			}
			return cmp.Compare(a.Key, b.Key)
		})
		for _, st := range states[lim.MaxLoaded:] {
			c.pending[st.Key] = nil // deleted by the writer
		}
		c.discarded.Add(uint64(len(states) - lim.MaxLoaded))
		log.Warn("more checkpoints than the series held and kept (max_series + keep_evicted): those of the series whose last point is the oldest are deleted",
			"dir", where, "stored", len(states), "kept", lim.MaxLoaded)
		states = states[:lim.MaxLoaded]
	}
	for _, st := range states {
		c.saved[st.Key] = st
	}
	if lim.MaxEvicted > 0 {
		// A loaded state is kept as an evicted series' is, until its
		// series comes back: the oldest first, so that the states of
		// series that do not come back leave room for new ones.
		byAge := slices.Clone(states)
		slices.SortStableFunc(byAge, func(a, b pipeline.SeriesState) int { return a.LastTime.Compare(b.LastTime) })
		for _, st := range byAge {
			c.evictedAt[st.Key] = c.kept.PushBack(st.Key)
		}
	}
	log.Info("checkpoints loaded", "dir", where, "series", len(states), "unreadable", len(errs))
	go c.run()
	if len(c.pending) > 0 {
		c.signal()
	}
	return c
}

// Saved implements runner.Checkpointer: it hands over key's loaded state
// once; for a key not loaded at start, the state of a series evicted at
// max_series since (see evicted).
func (c *Checkpoints) Saved(key string) (pipeline.SeriesState, string, bool) {
	c.mu.Lock()
	c.unlistEvicted(key) // its series is made again: live
	c.live++
	c.trimKept()
	st, ok := c.saved[key]
	delete(c.saved, key)
	data, queued := c.pending[key]
	if !queued && c.writing == key {
		data, queued = c.writingData, true
	}
	if !queued {
		data, queued = c.retry[key]
	}
	c.mu.Unlock()
	if !ok {
		return c.evicted(key, data, queued)
	}
	return st, c.store.Path(key), true
}

// evicted returns the state of a series evicted at max_series since start
// (its state was handed to SaveEvicted): the encoded state still queued or
// being written, else its file. A new key costs one failed open, on the
// caller's (the shard's) goroutine.
func (c *Checkpoints) evicted(key string, data []byte, queued bool) (pipeline.SeriesState, string, bool) {
	var st pipeline.SeriesState
	var err error
	switch {
	case queued && data == nil: // to be deleted
		return st, "", false
	case queued:
		st, err = Decode(data)
	default:
		if st, err = c.store.Load(key); errors.Is(err, fs.ErrNotExist) {
			return st, "", false
		}
	}
	if err != nil {
		c.log.Warn("checkpoint of an evicted series not restored; it starts afresh", "series", runner.Truncate(key), "err", err)
		return st, "", false
	}
	return st, c.store.Path(key), true
}

// Save implements runner.Checkpointer: it encodes st on the caller's
// (the shard's) goroutine and queues it for the writer.
func (c *Checkpoints) Save(st pipeline.SeriesState) {
	data := Encode(st)
	c.mu.Lock()
	c.queued += len(data) - len(c.pending[st.Key])
	c.pending[st.Key] = data
	c.mu.Unlock()
	c.signal()
}

// MaxQueuedEvicted bounds the bytes of states queued for the writer
// beyond which the state of a series evicted at max_series is not saved:
// a flood of new series evicts faster than files can be written (two
// fsyncs each), and the queue must not hold what eviction freed.
const MaxQueuedEvicted = 64 << 20

var _ runner.EvictionSaver = (*Checkpoints)(nil)

// maxQueued is the bound of SaveEvicted's queue: Limits.MaxQueuedEvicted,
// at most MaxQueuedEvicted.
func (c *Checkpoints) maxQueued() int {
	if n := c.lim.MaxQueuedEvicted; n > 0 && n < MaxQueuedEvicted {
		return n
	}
	return MaxQueuedEvicted
}

// SaveEvicted implements runner.EvictionSaver: Save, unless the queue
// holds MaxQueuedEvicted bytes already (then the state is not saved and
// false is returned; the runner counts it).
func (c *Checkpoints) SaveEvicted(st pipeline.SeriesState) bool {
	data := Encode(st)
	c.mu.Lock()
	c.live--
	if c.queued+len(data) > c.maxQueued() {
		// Not saved: the series starts afresh if it comes back, so the
		// state written of it before goes too, and nothing of it is
		// left beyond the bound.
		c.queued -= len(c.pending[st.Key])
		c.pending[st.Key] = nil
		c.unlistEvicted(st.Key)
		c.mu.Unlock()
		c.signal()
		return false
	}
	c.queued += len(data) - len(c.pending[st.Key])
	c.pending[st.Key] = data
	if c.lim.MaxEvicted > 0 {
		c.unlistEvicted(st.Key)
		c.evictedAt[st.Key] = c.kept.PushBack(st.Key)
		c.trimKept()
	}
	c.mu.Unlock()
	c.signal()
	return true
}

// KeepEvicted implements runner.EvictionSaver: key's series was
// evicted at max_series unchanged since its state was saved, and that
// state (queued or written) is kept as an evicted series', within
// MaxEvicted, as SaveEvicted's would be.
func (c *Checkpoints) KeepEvicted(key string) {
	c.mu.Lock()
	c.live--
	if c.lim.MaxEvicted > 0 {
		c.unlistEvicted(key)
		c.evictedAt[key] = c.kept.PushBack(key)
		c.trimKept()
	}
	c.mu.Unlock()
	c.signal()
}

// trimKept deletes the states kept for series that are not live, the
// oldest first, beyond MaxEvicted and the room live series leave under
// MaxLoaded − MaxEvicted (max_series): so that the store holds at most
// MaxLoaded states. c.mu is held.
func (c *Checkpoints) trimKept() {
	if c.lim.MaxEvicted <= 0 {
		return
	}
	room := c.lim.MaxEvicted
	if c.lim.MaxLoaded > c.lim.MaxEvicted {
		room += max(0, c.lim.MaxLoaded-c.lim.MaxEvicted-c.live)
	}
	for c.kept.Len() > room {
		oldest := c.kept.Remove(c.kept.Front()).(string)
		delete(c.evictedAt, oldest)
		delete(c.saved, oldest)
		c.queued -= len(c.pending[oldest])
		c.pending[oldest] = nil
		c.discarded.Add(1)
	}
}

// unlistEvicted takes key off the list of evicted series' states kept.
// c.mu is held.
func (c *Checkpoints) unlistEvicted(key string) {
	if e, ok := c.evictedAt[key]; ok {
		c.kept.Remove(e)
		delete(c.evictedAt, key)
	}
}

// Forget implements runner.Checkpointer: key's checkpoint is deleted.
func (c *Checkpoints) Forget(key string) {
	c.mu.Lock()
	c.live--
	c.queued -= len(c.pending[key])
	c.pending[key] = nil
	delete(c.saved, key)
	c.unlistEvicted(key)
	c.mu.Unlock()
	c.signal()
}

func (c *Checkpoints) signal() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

func (c *Checkpoints) run() {
	defer close(c.exited)
	for {
		select {
		case <-c.wake:
			c.writePending()
		case done := <-c.flushes:
			c.requeue()
			c.writePending()
			c.mu.Lock()
			round := c.round
			c.round = Flushed{}
			c.mu.Unlock()
			done <- round
		case <-c.stop:
			return
		}
	}
}

// requeue queues again the writes and deletes that failed, but for a key
// with a newer state queued.
func (c *Checkpoints) requeue() {
	c.mu.Lock()
	for k, data := range c.retry {
		if _, newer := c.pending[k]; !newer {
			c.pending[k] = data
		} else {
			c.queued -= len(data)
		}
		delete(c.retry, k)
	}
	c.unwritten.Store(0)
	c.mu.Unlock()
}

// writePending writes what is queued, one file at a time; what fails is
// kept for the next flush.
func (c *Checkpoints) writePending() {
	for {
		select {
		case <-c.stop: // Close past its deadline: the rest is counted there
			return
		default:
		}
		c.mu.Lock()
		var key string
		var data []byte
		found := false
		for k, d := range c.pending {
			key, data, found = k, d, true
			delete(c.pending, k)
			c.writing, c.writingData = k, d
			break
		}
		c.mu.Unlock()
		if !found {
			return
		}
		var err error
		if data == nil {
			err = c.store.Delete(key)
		} else {
			err = c.store.SaveEncoded(key, data)
		}
		c.mu.Lock()
		c.writing, c.writingData = "", nil
		switch {
		case err != nil:
			c.writeErrors.Add(1)
			c.round.Failed++
			if _, newer := c.pending[key]; !newer {
				c.queued -= len(c.retry[key])
				c.retry[key] = data
				c.unwritten.Store(int64(len(c.retry)))
			} else {
				c.queued -= len(data)
			}
		case data == nil:
			c.deleted.Add(1)
			c.round.Deleted++
		default:
			c.queued -= len(data)
			c.written.Add(1)
			c.round.Written++
		}
		first := err != nil && c.round.Failed == 1
		c.mu.Unlock()
		if first { // once per flush: a full disk fails every file
			c.log.Error("checkpoint not written; it is tried again at the next checkpoint", "series", key, "err", err)
		}
	}
}

// Stats returns the writer's counters.
func (c *Checkpoints) Stats() WriterStats {
	c.mu.Lock()
	queued := c.queued
	c.mu.Unlock()
	return WriterStats{
		Queued:    int64(queued),
		Written:   c.written.Load(),
		Deleted:   c.deleted.Load(),
		Errors:    c.writeErrors.Load(),
		Unwritten: c.unwritten.Load(),
		Discarded: c.discarded.Load(),
	}
}

// Flush tries again the writes that failed, waits until everything queued
// before it has been written, and returns what was done since the
// previous flush.
func (c *Checkpoints) Flush(ctx context.Context) (Flushed, error) {
	done := make(chan Flushed, 1)
	select {
	case c.flushes <- done:
	case <-c.exited:
		return Flushed{}, errors.New("statestore: checkpoints: closed")
	case <-ctx.Done():
		return Flushed{}, ctx.Err()
	}
	select {
	case n := <-done:
		return n, nil
	case <-ctx.Done():
		return Flushed{}, ctx.Err()
	}
}

// Close flushes, then stops the writer; it returns once it has exited,
// with what the flush did. If ctx ends first, the writer stops after the
// file it is writing: what is left is not written, counted in
// WriterStats.Unwritten, logged and said in the error; those series
// restart from their previous checkpoint.
func (c *Checkpoints) Close(ctx context.Context) (Flushed, error) {
	round, err := c.Flush(ctx)
	close(c.stop)
	<-c.exited
	if err != nil {
		c.mu.Lock()
		left := len(c.pending) + len(c.retry)
		c.mu.Unlock()
		c.unwritten.Store(int64(left))
		if left > 0 {
			c.log.Error("stopped before every checkpoint was written; those series restart from their previous checkpoint", "unwritten", left, "err", err)
			return round, fmt.Errorf("statestore: checkpoints: %d not written: %w", left, err)
		}
		return round, fmt.Errorf("statestore: checkpoints: %w", err)
	}
	if round.Failed > 0 {
		return round, fmt.Errorf("statestore: checkpoints: %d not written", round.Failed)
	}
	return round, nil
}

// Round flushes a round of checkpoints (Flush) and makes a write that
// failed an error. In the final round (final), which no later round will
// retry, the failed writes are tried once more first.
func (c *Checkpoints) Round(ctx context.Context, final bool) (Flushed, error) {
	round, err := c.Flush(ctx)
	if err == nil && final && round.Failed > 0 {
		again, aerr := c.Flush(ctx)
		round.Written += again.Written
		round.Deleted += again.Deleted
		round.Failed, err = again.Failed, aerr
	}
	if err == nil && round.Failed > 0 {
		err = fmt.Errorf("%d checkpoints not written", round.Failed)
	}
	return round, err
}
