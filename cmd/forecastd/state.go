package main

import (
	"context"
	"fmt"
	"time"

	"github.com/forecastd/forecastd/internal/statestore"
)

// positioned is an input whose position the checkpoints record:
// sources.Source under JetStream.
type positioned interface {
	// AckFloor is the stream sequence up to which every message was
	// acknowledged; found is false when there is no consumer (yet).
	AckFloor(ctx context.Context) (floor uint64, found bool, err error)
}

// openState loads the checkpoints of [state] dir, before anything is
// saved, and under JetStream the consumer position they cover, which the
// source resumes after (sources.JetStreamConfig.Checkpointed): the
// source, which owns the consumer, replays what was acknowledged but not
// checkpointed, and each restored series skips the points it had applied.
func (d *daemon) openState() error {
	var stream, durable string
	if js := d.cfg.Input.JetStream; js != nil {
		stream, durable = js.Stream, js.Durable
	}
	c, a, err := statestore.OpenDir(d.cfg.State.Dir, d.log.With("component", "state"), d.cfg.CheckpointLimits(), stream, durable)
	if err != nil {
		return fmt.Errorf("state.dir: %w", err)
	}
	d.ckpt, d.applied = c, a
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
			if _, err := d.checkpoint(ctx, false); err != nil {
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
func (d *daemon) checkpoint(ctx context.Context, final bool) (statestore.Flushed, error) {
	if d.parts != nil {
		return d.parts.Checkpoint(ctx, final)
	}
	var floor uint64
	haveFloor := false
	if p, ok := d.src.(positioned); ok && d.cfg.Input.JetStream != nil {
		f, found, err := p.AckFloor(ctx)
		if err != nil {
			d.log.Warn("consumer position unknown; checkpointing without it", "component", "state", "err", err)
		}
		floor, haveFloor = f, err == nil && found
	}
	if !final {
		if err := d.runner.Checkpoint(ctx); err != nil {
			return statestore.Flushed{}, err
		}
	}
	round, err := d.ckpt.Round(ctx, final)
	if err != nil {
		return round, err
	}
	if haveFloor && floor > d.applied.Seq {
		a := d.applied
		a.Seq = floor
		if err := statestore.WriteApplied(d.cfg.State.Dir, a); err != nil {
			return round, fmt.Errorf("state: %w", err)
		}
		d.applied = a
	}
	return round, nil
}

// finalCheckpoint writes the states the shards handed over as they exited,
// and the consumer position, once the input has sent its last acks.
// The line it logs counts the files this final checkpoint wrote.
func (d *daemon) finalCheckpoint(ctx context.Context) error {
	if d.runner == nil { // start failed before the runner: nothing to write
		_, err := d.ckpt.Close(ctx)
		return err
	}
	round, err := d.checkpoint(ctx, true)
	if _, cerr := d.ckpt.Close(ctx); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("final checkpoint: %w", err)
	}
	st := d.runner.Stats()
	var skipped uint64
	if d.src != nil {
		skipped = d.src.Stats().Skipped
	}
	d.log.Info("checkpoints written", "component", "state", "files", round.Written, "deleted", round.Deleted,
		"series", st.SeriesActive, "restored", st.Restored, "replayed", st.Replayed, "messages_skipped", skipped)
	return nil
}
