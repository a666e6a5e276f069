package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/forecastd/forecastd/internal/statestore"
	"github.com/forecastd/forecastd/pipeline"
)

// defaultCheckpointInterval is [state] checkpoint_interval's default.
const defaultCheckpointInterval = 30 * time.Second

// checkpoints is the daemon's pipeline.Checkpointer: the states loaded at
// start, kept by key until their series' first point, and a writer
// goroutine that writes the states the shards encoded (the latest of each
// series, so that a slow disk holds at most one state per series) and
// deletes the checkpoints of evicted series.
type checkpoints struct {
	store *statestore.Store
	log   *slog.Logger

	mu      sync.Mutex
	saved   map[string]pipeline.SeriesState // loaded, not yet restored
	pending map[string][]byte               // to write; nil: to delete
	failed  int                             // writes failed since the last flush

	wake    chan struct{}
	flushes chan chan int
	stop    chan struct{}
	exited  chan struct{}

	written, deleted, writeErrors atomic.Uint64
}

var _ pipeline.Checkpointer = (*checkpoints)(nil)

// openCheckpoints opens the store in dir and loads every checkpoint, before
// anything is saved; a file it cannot read is logged once, naming it and
// its series, and left alone (a later checkpoint of its series replaces
// it). It starts the writer goroutine: close it.
func openCheckpoints(dir string, log *slog.Logger) (*checkpoints, error) {
	store, err := statestore.Open(dir)
	if err != nil {
		return nil, fmt.Errorf("state.dir: %w", err)
	}
	states, errs := store.LoadAll()
	for _, err := range errs {
		log.Error("checkpoint not loaded; its series will start afresh", "err", err)
	}
	c := &checkpoints{
		store:   store,
		log:     log,
		saved:   make(map[string]pipeline.SeriesState, len(states)),
		pending: map[string][]byte{},
		wake:    make(chan struct{}, 1),
		flushes: make(chan chan int),
		stop:    make(chan struct{}),
		exited:  make(chan struct{}),
	}
	for _, st := range states {
		c.saved[st.Key] = st
	}
	log.Info("checkpoints loaded", "dir", dir, "series", len(states), "unreadable", len(errs))
	go c.run()
	return c, nil
}

// Saved implements pipeline.Checkpointer: it hands over key's loaded state
// once.
func (c *checkpoints) Saved(key string) (pipeline.SeriesState, string, bool) {
	c.mu.Lock()
	st, ok := c.saved[key]
	delete(c.saved, key)
	c.mu.Unlock()
	if !ok {
		return st, "", false
	}
	return st, c.store.Path(key), true
}

// Save implements pipeline.Checkpointer: it encodes st on the caller's
// (the shard's) goroutine and queues it for the writer.
func (c *checkpoints) Save(st pipeline.SeriesState) {
	data := statestore.Encode(st)
	c.mu.Lock()
	c.pending[st.Key] = data
	c.mu.Unlock()
	c.signal()
}

// Forget implements pipeline.Checkpointer: key's checkpoint is deleted.
func (c *checkpoints) Forget(key string) {
	c.mu.Lock()
	c.pending[key] = nil
	delete(c.saved, key)
	c.mu.Unlock()
	c.signal()
}

func (c *checkpoints) signal() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

func (c *checkpoints) run() {
	defer close(c.exited)
	for {
		select {
		case <-c.wake:
			c.writePending()
		case done := <-c.flushes:
			c.writePending()
			c.mu.Lock()
			failed := c.failed
			c.failed = 0
			c.mu.Unlock()
			done <- failed
		case <-c.stop:
			return
		}
	}
}

// writePending writes what is queued, one file at a time.
func (c *checkpoints) writePending() {
	for {
		c.mu.Lock()
		var key string
		var data []byte
		found := false
		for k, d := range c.pending {
			key, data, found = k, d, true
			delete(c.pending, k)
			break
		}
		c.mu.Unlock()
		if !found {
			return
		}
		var err error
		if data == nil {
			err = c.store.Delete(key)
			c.deleted.Add(1)
		} else {
			err = c.store.SaveEncoded(key, data)
			c.written.Add(1)
		}
		if err != nil {
			c.writeErrors.Add(1)
			c.mu.Lock()
			c.failed++
			first := c.failed == 1
			c.mu.Unlock()
			if first { // once per flush: a full disk fails every file
				c.log.Error("checkpoint not written", "series", key, "err", err)
			}
		}
	}
}

// flush waits until everything queued before it has been written, and
// returns how many writes failed since the previous flush.
func (c *checkpoints) flush(ctx context.Context) (int, error) {
	done := make(chan int, 1)
	select {
	case c.flushes <- done:
	case <-c.exited:
		return 0, errors.New("checkpoints: closed")
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	select {
	case n := <-done:
		return n, nil
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

// close flushes, then stops the writer; it returns once it has exited.
func (c *checkpoints) close(ctx context.Context) error {
	failed, err := c.flush(ctx)
	close(c.stop)
	<-c.exited
	if err != nil {
		return fmt.Errorf("checkpoints: %w", err)
	}
	if failed > 0 {
		return fmt.Errorf("checkpoints: %d not written", failed)
	}
	return nil
}

// applied is the JetStream consumer's position covered by the checkpoints:
// every message of Stream up to Seq had been acknowledged, hence applied
// to its series, before a checkpoint that was written whole. It is kept in
// [state] dir as appliedFile.
type applied struct {
	Stream  string `json:"stream"`
	Durable string `json:"durable"`
	Seq     uint64 `json:"seq"`
}

const appliedFile = "jetstream-applied.json"

func readApplied(dir string) (applied, error) {
	var a applied
	b, err := os.ReadFile(filepath.Join(dir, appliedFile))
	if errors.Is(err, fs.ErrNotExist) {
		return a, nil
	}
	if err != nil {
		return a, err
	}
	if err := json.Unmarshal(b, &a); err != nil {
		return a, fmt.Errorf("%s: %w", filepath.Join(dir, appliedFile), err)
	}
	return a, nil
}

// writeApplied replaces the file atomically: a temporary file, synced,
// renamed, and the directory synced.
func writeApplied(dir string, a applied) error {
	b, _ := json.Marshal(a)
	f, err := os.CreateTemp(dir, "."+appliedFile+".tmp-*")
	if err != nil {
		return err
	}
	_, err = f.Write(append(b, '\n'))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), filepath.Join(dir, appliedFile))
	}
	if err != nil {
		os.Remove(f.Name())
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// ackFloor returns the consumer's ack floor: every message of the stream
// up to it has been acknowledged (or terminated). found is false if the
// consumer does not exist.
func ackFloor(ctx context.Context, nc *nats.Conn, stream, durable string) (floor uint64, found bool, err error) {
	js, err := jetstream.New(nc)
	if err != nil {
		return 0, false, err
	}
	cons, err := js.Consumer(ctx, stream, durable)
	if errors.Is(err, jetstream.ErrConsumerNotFound) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	info, err := cons.Info(ctx)
	if err != nil {
		return 0, false, err
	}
	return info.AckFloor.Stream, true, nil
}

func checkpointInterval(s string) time.Duration {
	if d := mustDuration(s); d > 0 {
		return d
	}
	return defaultCheckpointInterval
}

// openState loads the checkpoints of [state] dir, before anything is saved.
// Under JetStream it also makes sure that no point is lost: if the
// consumer acknowledged messages beyond those the checkpoints cover (the
// daemon was killed), it deletes the consumer, so that the stream is
// replayed from its start; the dispatcher skips the messages the
// checkpoints cover, and each restored series the points it had applied.
func (d *daemon) openState(nc *nats.Conn) error {
	dir := d.cfg.State.Dir
	log := d.log.With("component", "state")
	c, err := openCheckpoints(dir, log)
	if err != nil {
		return err
	}
	d.ckpt = c
	js := d.cfg.Input.JetStream
	if js == nil {
		return nil
	}
	a, err := readApplied(dir)
	if err != nil {
		log.Error("applied position unreadable; the stream is replayed from its start", "err", err)
	}
	if a.Stream != js.Stream || a.Durable != js.Durable {
		a = applied{Stream: js.Stream, Durable: js.Durable}
	}
	d.applied, d.replayFloor = a, a.Seq
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for !nc.IsConnected() {
		select {
		case <-ctx.Done():
			return fmt.Errorf("state: the consumer's position cannot be checked against the checkpoints: nats not connected within 30s")
		case <-time.After(20 * time.Millisecond):
		}
	}
	floor, found, err := ackFloor(ctx, nc, js.Stream, js.Durable)
	if err != nil {
		return fmt.Errorf("state: consumer %q of stream %q: %w", js.Durable, js.Stream, err)
	}
	if !found || floor <= a.Seq {
		return nil
	}
	jsc, err := jetstream.New(nc)
	if err == nil {
		err = jsc.DeleteConsumer(ctx, js.Stream, js.Durable)
	}
	if err != nil {
		return fmt.Errorf("state: reset consumer %q of stream %q: %w", js.Durable, js.Stream, err)
	}
	log.Warn("the consumer acknowledged messages the checkpoints do not cover (forecastd was killed): replaying the stream; the points already applied are skipped",
		"stream", js.Stream, "durable", js.Durable, "acked", floor, "checkpointed", a.Seq)
	return nil
}

// checkpointLoop checkpoints every interval until shutdown.
func (d *daemon) checkpointLoop(every time.Duration) {
	defer close(d.ckptExited)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-d.ckptStop:
			cancel()
		case <-ctx.Done():
		}
	}()
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-d.ckptStop:
			return
		case <-t.C:
			start := time.Now()
			if err := d.checkpoint(ctx, false); err != nil {
				if ctx.Err() == nil {
					d.log.Error("checkpoint", "component", "state", "err", err)
				}
				continue
			}
			d.log.Debug("checkpoint written", "component", "state", "took", time.Since(start))
		}
	}
}

// checkpoint has every changed series' state written and, under JetStream,
// then records the consumer position they cover: the ack floor read
// before the shards exported (every message acked by then had been
// applied). final: the runner is closed, its shards have exported.
func (d *daemon) checkpoint(ctx context.Context, final bool) error {
	var floor uint64
	haveFloor := false
	js := d.cfg.Input.JetStream
	if js != nil {
		f, found, err := ackFloor(ctx, d.outConn, js.Stream, js.Durable)
		if err != nil {
			d.log.Warn("consumer position unknown; checkpointing without it", "component", "state", "err", err)
		}
		floor, haveFloor = f, err == nil && found
	}
	if !final {
		if err := d.runner.Checkpoint(ctx); err != nil {
			return err
		}
	}
	failed, err := d.ckpt.flush(ctx)
	if err != nil {
		return err
	}
	if failed > 0 {
		return fmt.Errorf("%d checkpoints not written", failed)
	}
	if haveFloor && floor > d.applied.Seq {
		a := d.applied
		a.Seq = floor
		if err := writeApplied(d.cfg.State.Dir, a); err != nil {
			return fmt.Errorf("state: %w", err)
		}
		d.applied = a
	}
	return nil
}

// finalCheckpoint writes the states the shards handed over as they exited,
// and the consumer position, once the input has sent its last acks.
func (d *daemon) finalCheckpoint(ctx context.Context) error {
	if d.runner == nil { // start failed before the runner: nothing to write
		return d.ckpt.close(ctx)
	}
	err := d.checkpoint(ctx, true)
	if cerr := d.ckpt.close(ctx); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("final checkpoint: %w", err)
	}
	st := d.runner.Stats()
	d.log.Info("checkpoints written", "component", "state", "series", st.Checkpointed, "restored", st.Restored,
		"replayed", st.Replayed+d.replayed.Load(), "files", d.ckpt.written.Load())
	return nil
}
