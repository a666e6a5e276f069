package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/forecastd/forecastd/internal/cmdline"
	"github.com/forecastd/forecastd/internal/config"
	"github.com/forecastd/forecastd/internal/replay"
	"github.com/forecastd/forecastd/sinks"
	"github.com/forecastd/forecastd/sources"
)

// runReplay is `forecastd replay`.
func runReplay(args []string, stdout, stderr io.Writer, sigs <-chan os.Signal) error {
	o, err := replay.ParseFlags(args, stderr, defaultConfigPath)
	if err != nil {
		return err
	}
	loaded, err := config.Load(o.Config, config.DaemonChecks)
	if err != nil {
		return err
	}
	cfg, err := replay.Config(loaded, o.Format)
	if err != nil {
		return err
	}
	log := cmdline.NewLogger(stderr, cfg.LogFormat, o.LogLevel)
	recs, closeFiles, err := o.Recordings()
	if err != nil {
		return err
	}
	defer closeFiles()
	dc, err := cfg.Decoder()
	if err != nil {
		return err
	}
	var rp *sources.Replay
	d := &daemon{path: o.Config, cfg: cfg, log: log}
	d.newInput = func() (dispatchInput, error) {
		r, err := sources.NewReplay(sources.ReplayConfig{Recordings: recs, Decoder: dc, Logger: log})
		if err != nil {
			return nil, err
		}
		rp = r
		return r, nil
	}
	d.pace = d.replayPace
	start := time.Now()
	if err := d.start(); err != nil {
		ctx, cancel := context.WithTimeout(context.Background(), d.shutdownTimeout())
		defer cancel()
		return errors.Join(err, d.shutdown(ctx))
	}
	stopped := ""
wait:
	for {
		select {
		case <-d.dispatched:
			break wait
		case sig, ok := <-sigs:
			if !ok || sig == syscall.SIGHUP {
				continue
			}
			stopped = sig.String()
			log.Info("stopping the replay", "component", "replay", "signal", stopped)
			break wait
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), d.shutdownTimeout())
	defer cancel()
	serr := d.shutdown(ctx)
	return errors.Join(serr, d.replaySummary(stdout, rp, stopped, time.Since(start)))
}

// replayPace holds the dispatcher while a sink's buffer is half full
// (sinks.Backlogger: the InfluxDB sink): a replay reads far faster than
// InfluxDB writes, and the sink drops its oldest records when its buffer
// overflows.
func (d *daemon) replayPace(ctx context.Context) error {
	for {
		busy := false
		for _, s := range d.sinks {
			if b, ok := s.Sink.(sinks.Backlogger); ok && b.Backlog() >= 0.5 {
				busy = true
			}
		}
		if !busy {
			return nil
		}
		t := time.NewTimer(5 * time.Millisecond)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		}
	}
}

// replaySummary prints what the replay did, and returns an error if
// anything read was not forecast and written.
func (d *daemon) replaySummary(w io.Writer, rp *sources.Replay, stopped string, took time.Duration) error {
	if rp == nil {
		return nil
	}
	in := rp.Stats()
	st := d.runner.Stats()
	refused := uint64(0)
	for _, n := range in.ParseErrors {
		refused += n
	}
	fmt.Fprintf(w, "replayed %d points (%d lines or batches read, %d refused, %d parse errors) into %d series: %d forecasts, %d dropped out of order; %.3g s\n",
		in.Points, in.Received, in.Refused, refused, st.SeriesCreated, st.Forecasts, st.OutOfOrder, took.Seconds())
	var problems []string
	if nats := sinkOf[*sinks.NATS](d); nats != nil {
		ns := nats.Stats()
		nonFinite, _, _ := d.gate.NonFinite()
		fmt.Fprintf(w, "  nats: %d forecasts published, %d refused, %d not finite\n", ns.Published, ns.Errors, nonFinite)
		if ns.Errors > 0 {
			problems = append(problems, fmt.Sprintf("%d forecasts not published to nats", ns.Errors))
		}
	}
	if influx := sinkOf[*sinks.Influx](d); influx != nil {
		is := influx.Stats()
		fmt.Fprintf(w, "  influxdb: %d records written, %d dropped, %d rejected\n", is.Written, is.Dropped, is.Rejected)
		if is.Dropped+is.Rejected > 0 {
			problems = append(problems, fmt.Sprintf("%d records not written to influxdb", is.Dropped+is.Rejected))
		}
	}
	if n := st.SinkErrors + st.DroppedQueueFull + st.DroppedShutdown + st.DroppedClosed; n > 0 {
		problems = append(problems, fmt.Sprintf("%d points not forecast or written (sinks refused %d; dropped: %d at shutdown)",
			n, st.SinkErrors, st.DroppedShutdown+st.DroppedClosed))
	}
	if err := rp.Err(); err != nil {
		problems = append(problems, err.Error())
	}
	if stopped != "" {
		problems = append(problems, "stopped by "+stopped+" before the end of the input")
	}
	if len(problems) > 0 {
		return errors.New("replay incomplete: " + strings.Join(problems, "; "))
	}
	return nil
}
