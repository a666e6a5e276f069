package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/forecastd/forecastd/sinks"
)

// openSink is a sink the daemon opened, with its kind's name.
type openSink struct {
	name string
	sinks.Sink
}

// openSinks opens every registered kind of sink the configuration asks
// for, on the output connection, into d.sinks; on an error, those opened
// are in d.sinks for shutdown to close.
func (d *daemon) openSinks() error {
	d.gate = sinks.NewGate()
	for _, k := range sinks.Kinds() {
		s, err := k.Open(context.Background(), sinks.Env{
			Logger:     d.log,
			NATS:       d.output,
			Redelivers: d.cfg.Input.JetStream != nil,
			Config:     d.cfg.Output[k.Name()],
		})
		if err != nil {
			return fmt.Errorf("output.%s: %w", k.Name(), err)
		}
		if s != nil {
			d.sinks = append(d.sinks, openSink{k.Name(), s})
		}
	}
	return nil
}

// sinkNames are the kinds of the sinks opened, in order.
func (d *daemon) sinkNames() []string {
	names := make([]string, len(d.sinks))
	for i, s := range d.sinks {
		names[i] = s.name
	}
	return names
}

// closeSinks closes the sinks, all at once: a server that does not answer
// must not take another's time.
func (d *daemon) closeSinks(ctx context.Context) error {
	errs := make([]error, len(d.sinks))
	var wg sync.WaitGroup
	for i, s := range d.sinks {
		wg.Go(func() {
			if err := s.Close(ctx); err != nil {
				errs[i] = fmt.Errorf("%s output: %w", s.name, err)
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// sinkOf returns the daemon's sink of type T, or the zero T if it has
// none.
func sinkOf[T sinks.Sink](d *daemon) T {
	for _, s := range d.sinks {
		if t, ok := s.Sink.(T); ok {
			return t
		}
	}
	var zero T
	return zero
}

// liveState is what the watchdog reads beside the daemon's other fields:
// the intake's progress.
type liveState struct {
	// submitting and submitted count the entries into and returns from
	// runner.Runner.Submit (deliver): a Submit is under way while
	// submitting > submitted.
	submitting, submitted atomic.Uint64
}

// live reports whether the daemon makes progress, for the watchdog: the
// output is connected, and no Submit has returned since the previous call
// while one was under way then and still is (last: 2·submitted, plus 1
// if one was under way), which would mean that a shard has not taken a
// single point in between (a shard blocked for good stops every series
// it holds, then the intake).
func (d *daemon) live(last *uint64) (bool, string) {
	done := d.submitted.Load()
	n := 2 * done
	if d.submitting.Load() > done {
		n++
	}
	stuck := n%2 == 1 && n == *last
	*last = n
	switch {
	case stuck:
		return false, "a shard has taken no point since the last check"
	case !d.output.Connected():
		return false, "nats output not connected"
	}
	return true, ""
}
