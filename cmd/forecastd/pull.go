package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/forecastd/forecastd/sources"
	"github.com/forecastd/forecastd/sources/promql"
)

// startPull starts a source per [[input.promql]] entry; each hands its
// points to the runner as the NATS input does (deliver), on its own
// goroutine, until stopPull.
func (d *daemon) startPull() error {
	maxKey := d.cfg.Input.WithDefaults().MaxKeyLen
	for i, pc := range d.cfg.Input.PromQL {
		s, err := promql.New(pc, promql.Options{Deliver: d.deliver, Ctx: d.dispatchCtx, MaxKeyLen: maxKey, Logger: d.log})
		if err != nil { // validated by config.Load
			return fmt.Errorf("input.promql[%d]: %w", i, err)
		}
		s.Start()
		d.pulls = append(d.pulls, s)
	}
	return nil
}

// stopPull stops the pull sources, each once its delivery in flight is
// made.
func (d *daemon) stopPull(ctx context.Context) error {
	var errs []error
	for _, s := range d.pulls {
		errs = append(errs, s.StopIntake(ctx))
	}
	return errors.Join(errs...)
}

// pullCollector reports the pull sources' counters on /metrics.
func (d *daemon) pullCollector() prometheus.Collector {
	return promql.NewCollector(func() []promql.Stats {
		st := make([]promql.Stats, len(d.pulls))
		for i, s := range d.pulls {
			st[i] = s.Stats()
		}
		return st
	})
}

// noNATSInput is the input of a daemon that reads no NATS subject, only
// [[input.promql]]: nothing to stop, never disconnected.
type noNATSInput struct{}

func (noNATSInput) StopIntake(context.Context) error { return nil }
func (noNATSInput) Close(context.Context) error      { return nil }
func (noNATSInput) Stats() sources.Stats {
	return sources.Stats{Connected: true, ParseErrors: map[sources.Reason]uint64{}}
}
func (noNATSInput) Connected() bool { return true }
