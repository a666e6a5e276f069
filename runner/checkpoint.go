package runner

import (
	"context"
	"fmt"

	"github.com/forecastd/forecastd/pipeline"
)

// DefaultCheckpointBatch is RunnerConfig.CheckpointBatch's default.
const DefaultCheckpointBatch = 64

// Checkpointer keeps series' states across restarts for a Runner. The
// runner declares it; the daemon's implementation encodes the states and
// writes them to files (internal/statestore) on a goroutine of its own.
// Its methods are called from the shard goroutines, concurrently for
// different keys, never concurrently for the same key.
type Checkpointer interface {
	// Saved returns the state saved for key, and where it came from (a
	// file name, for logs), when key's series is created; ok is false
	// if there is none. It is called once per series creation and may
	// forget what it returns.
	Saved(key string) (st pipeline.SeriesState, from string, ok bool)
	// Save takes the state of a series, exported on its shard goroutine,
	// with Seq set to the highest Input.Seq it applied. st shares
	// nothing with the series. Save must not block on I/O: encode and
	// queue.
	Save(st pipeline.SeriesState)
	// Forget is told that key's series was evicted: its checkpoint is to
	// be deleted (after any state of it Save was given).
	Forget(key string)
}

// EvictionSaver is what a Checkpointer may also implement to bound the
// states of series evicted at MaxSeries: SaveEvicted is Save, except that
// it may refuse (false) when its queue is full, so that a flood of new
// series that evicts faster than states can be written does not move the
// memory eviction freed into the queue. A refused state is lost (the
// series starts afresh if it comes back), counted in
// RunnerStats.EvictedUnsaved. A Checkpointer without it is given Save.
//
// KeepEvicted tells it that the series key was evicted at MaxSeries
// unchanged since its last state was handed over (Save): that state is
// now an evicted series' and counts against the same bound.
type EvictionSaver interface {
	SaveEvicted(st pipeline.SeriesState) bool
	KeepEvicted(key string)
}

// ready is always ready to receive from: a step of a checkpoint in
// progress.
var ready = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// Checkpoint hands the state of every series changed since its last
// checkpoint to RunnerConfig.Checkpoints, each exported on its shard's
// goroutine in steps of CheckpointBatch series interleaved with the
// shard's points. It returns once every shard has done so, or with ctx's
// error, or ErrClosed after Close (which checkpoints by itself). Without
// Checkpoints it does nothing. Calls must not overlap.
func (r *Runner) Checkpoint(ctx context.Context) error {
	if r.cfg.Checkpoints == nil {
		return nil
	}
	dones := make([]chan struct{}, 0, len(r.shards))
	r.mu.RLock()
	if r.closed {
		r.mu.RUnlock()
		return ErrClosed
	}
	for _, sh := range r.shards {
		c := make(chan struct{})
		select {
		case sh.ckpt <- c:
			dones = append(dones, c)
		case <-ctx.Done():
			r.mu.RUnlock()
			return fmt.Errorf("pipeline: checkpoint: %w", ctx.Err())
		}
	}
	r.mu.RUnlock()
	for _, c := range dones {
		select {
		case <-c:
		case <-ctx.Done():
			return fmt.Errorf("pipeline: checkpoint: %w", ctx.Err())
		}
	}
	return nil
}

// startCheckpoint begins a checkpoint of the shard's changed series;
// req is closed when it is finished.
func (sh *shard) startCheckpoint(req chan struct{}) {
	sh.todo = sh.todo[:0]
	for k, e := range sh.series {
		if e.dirty {
			sh.todo = append(sh.todo, k)
		}
	}
	sh.todoDone = req
	if len(sh.todo) == 0 {
		sh.finishCheckpoint()
	}
}

// checkpointStep exports up to CheckpointBatch series of the checkpoint in
// progress.
func (sh *shard) checkpointStep() {
	n := min(len(sh.todo), sh.r.cfg.CheckpointBatch)
	for _, k := range sh.todo[len(sh.todo)-n:] {
		if e := sh.series[k]; e != nil && e.dirty { // else evicted, or done
			sh.export(e)
		}
	}
	sh.todo = sh.todo[:len(sh.todo)-n]
	if len(sh.todo) == 0 {
		sh.finishCheckpoint()
	}
}

func (sh *shard) finishCheckpoint() {
	close(sh.todoDone)
	sh.todoDone = nil
	clear(sh.todo)
	sh.todo = sh.todo[:0]
}

// export hands e's state to the Checkpointer.
func (sh *shard) export(e *entry) { sh.exportTo(e, false) }

// exportTo hands e's state to the Checkpointer, through SaveEvicted when
// evicted is set and the Checkpointer is an EvictionSaver.
func (sh *shard) exportTo(e *entry, evicted bool) {
	r := sh.r
	st, err := e.s.Export()
	if err != nil {
		r.stats.checkpointErrors.Add(1)
		r.warn("series not checkpointed", "series", Truncate(e.s.Key()), "err", err)
		return
	}
	st.Seq = e.seq
	if es, ok := r.cfg.Checkpoints.(EvictionSaver); ok && evicted {
		if !es.SaveEvicted(st) {
			r.stats.evictedUnsaved.Add(1)
			r.warn("evicted series not checkpointed: the checkpoint queue is full; it starts afresh if it comes back", "series", Truncate(e.s.Key()))
			return
		}
	} else {
		r.cfg.Checkpoints.Save(st)
	}
	e.dirty = false
	r.stats.checkpointed.Add(1)
}

// finalCheckpoint, as the shard exits, checkpoints every series changed,
// and releases the checkpoint requests in progress or pending: Close's
// checkpoint covers them.
func (sh *shard) finalCheckpoint() {
	if sh.r.cfg.Checkpoints != nil {
		for _, e := range sh.series {
			if e.dirty {
				sh.export(e)
			}
		}
	}
	if sh.todoDone != nil {
		sh.finishCheckpoint()
	}
	for {
		select {
		case c := <-sh.ckpt:
			close(c)
		default:
			return
		}
	}
}
