package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/forecastd/forecastd/internal/cmdline"
	"github.com/forecastd/forecastd/sinks"
	"github.com/forecastd/forecastd/sources"
)

// replayOptions are `forecastd replay`'s command line.
type replayOptions struct {
	config     string
	files      []string // "-": standard input
	format     string   // auto, csv, influx, json, value
	column     string
	timeColumn string
	series     string
	subject    string
	logLevel   slog.Level
}

const replayUsage = `usage: forecastd replay [flags] FILE...

Feeds recorded points through the daemon's own path (the runner, [model]
and [[rules]], the sinks of [output.nats] and [output.influxdb]) and exits
once every point was forecast and every forecast written: a backfill of
InfluxDB with the forecasts of history. Points keep their recorded times;
the forecasts are those "forecastd backtest" computes on the same file.
[state] is not touched (no checkpoint is read or written), [http] not
served, [input] only gives data_format and fieldpass/fielddrop; with
[nats] embedded = true an embedded server on a free port takes the NATS
forecasts (InfluxDB is then the only lasting output).

A FILE is read, by its name (or --format):
  *.csv          one series, as backtest reads it: --column, and a "time",
                 "timestamp" or "t" column (or --time_column); its key is
                 --series, or the file's name
  *.lp, *.influx InfluxDB line protocol (Telegraf's outputs.file): every
                 numeric field of every line a point, keyed as the daemon
                 keys it
  -, other       one payload a line, in [input] data_format
A line that cannot be read, or a point without a time, is refused, counted
and logged; the rest goes on. SIGINT or SIGTERM stops early, flushing what
was forecast.

flags:`

func parseReplayFlags(args []string, stderr io.Writer) (*replayOptions, error) {
	o := &replayOptions{}
	fs := flag.NewFlagSet("replay", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, replayUsage)
		cmdline.PrintFlags(fs)
	}
	fs.StringVar(&o.config, "config", defaultConfigPath, "configuration `FILE`")
	fs.StringVar(&o.format, "format", "auto", "input `FORMAT`: auto (by the file's name), csv, influx, json or value")
	fs.StringVar(&o.column, "column", "value", "CSV value column `NAME`")
	fs.StringVar(&o.timeColumn, "time_column", "", "CSV time column `NAME` (default: \"time\", else \"timestamp\", else \"t\")")
	fs.StringVar(&o.series, "series", "", "series `KEY` of a CSV file (default: the file's name as given); with one CSV file only")
	fs.StringVar(&o.subject, "subject", "replay", "`SUBJECT` the points are taken to arrive on: forecasts go to <subject_prefix>.SUBJECT[.measurement.field]")
	fs.TextVar(&o.logLevel, "log_level", slog.LevelInfo, "log `LEVEL`: debug, info, warn or error")
	cmdline.DashAliases(fs, "time_column", "log_level")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, err
		}
		return nil, cmdline.UsageError{Err: err}
	}
	o.files = fs.Args()
	var errs []error
	if len(o.files) == 0 {
		errs = append(errs, errors.New("no FILE to replay (- for standard input)"))
	}
	switch o.format {
	case "auto", "csv", "influx", "json", "value":
	default:
		errs = append(errs, fmt.Errorf("--format %q: want auto, csv, influx, json or value", o.format))
	}
	if err := checkSubject(o.subject, false); err != nil {
		errs = append(errs, fmt.Errorf("--subject %q: %v", o.subject, err))
	}
	if o.series != "" {
		n := 0
		for _, f := range o.files {
			if o.fileFormat(f) == "csv" {
				n++
			}
		}
		if n != 1 {
			errs = append(errs, fmt.Errorf("--series: names the series of one CSV file, and %d are given", n))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, cmdline.UsageError{Err: err}
	}
	return o, nil
}

// fileFormat is how file is read: csv, influx, or "" for [input]
// data_format.
func (o *replayOptions) fileFormat(file string) string {
	switch o.format {
	case "csv", "influx":
		return o.format
	case "json", "value":
		return ""
	}
	switch strings.ToLower(filepath.Ext(file)) {
	case ".csv":
		return "csv"
	case ".lp", ".influx":
		return "influx"
	}
	return ""
}

// replayConfig is cfg as a replay runs it: no state, no HTTP, no
// JetStream, an embedded server on a free port, and short shard queues,
// so that the points in flight stay well below the InfluxDB buffer (see
// replayPace).
func replayConfig(cfg *Config, format string) (*Config, error) {
	c := *cfg
	c.State = StateConfig{}
	c.HTTP = HTTPConfig{}
	c.Input.JetStream = nil
	if c.NATS.Embedded {
		c.NATS.Servers = []string{"nats://127.0.0.1:0"}
	}
	c.Pipeline.QueueSize = replayQueue
	switch format {
	case "json", "value":
		if err := c.Input.DataFormat.UnmarshalText([]byte(format)); err != nil {
			return nil, err
		}
	}
	return &c, nil
}

// replayQueue is the shard queue length of a replay.
const replayQueue = 64

// runReplay is `forecastd replay`.
func runReplay(args []string, stdout, stderr io.Writer, sigs <-chan os.Signal) error {
	o, err := parseReplayFlags(args, stderr)
	if err != nil {
		return err
	}
	loaded, err := LoadConfig(o.config)
	if err != nil {
		return err
	}
	cfg, err := replayConfig(loaded, o.format)
	if err != nil {
		return err
	}
	log := newLogger(stderr, cfg.LogFormat, o.logLevel)
	recs, closeFiles, err := o.recordings()
	if err != nil {
		return err
	}
	defer closeFiles()
	dc, err := decoderConfig(cfg.Input)
	if err != nil {
		return err
	}
	outputSubjects(&dc, cfg)
	var rp *sources.Replay
	d := &daemon{path: o.config, cfg: cfg, log: log}
	d.newInput = func() (input, error) {
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

// recordings opens the files (each CSV file read whole, as backtest
// reads it).
func (o *replayOptions) recordings() ([]sources.Recording, func(), error) {
	var recs []sources.Recording
	var files []*os.File
	closeAll := func() {
		for _, f := range files {
			f.Close()
		}
	}
	for _, name := range o.files {
		switch {
		case name == "-":
			recs = append(recs, sources.Recording{Name: "stdin", Subject: o.subject, Reader: os.Stdin})
		case o.fileFormat(name) == "csv":
			data, err := sources.ReadCSV(name, o.column, o.timeColumn, false)
			if err != nil {
				closeAll()
				return nil, nil, err
			}
			if !data.HasTime {
				closeAll()
				return nil, nil, fmt.Errorf("%s: no time column (time, timestamp or t; or --time_column): a replay writes the forecasts at the recorded times", name)
			}
			key := name
			if o.series != "" {
				key = o.series
			}
			pts := make([]sources.KeyedPoint, len(data.Values))
			for i, v := range data.Values {
				pts[i] = sources.KeyedPoint{Key: key, Time: data.Times[i], Value: v}
			}
			recs = append(recs, sources.Recording{Name: name, Subject: o.subject, Points: pts})
		default:
			f, err := os.Open(name)
			if err != nil {
				closeAll()
				return nil, nil, err
			}
			files = append(files, f)
			rec := sources.Recording{Name: name, Subject: o.subject, Reader: f}
			if o.fileFormat(name) == "influx" {
				rec.Format = sources.FormatInflux
			}
			recs = append(recs, rec)
		}
	}
	return recs, closeAll, nil
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

// defaultMetricBufferLimit is sinks' default of metric_buffer_limit.
const defaultMetricBufferLimit = 10000

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
