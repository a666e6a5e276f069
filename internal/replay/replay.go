// Package replay is `forecastd replay`'s command line: its flags, the
// configuration a replay runs, and the recordings it reads.
package replay

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/forecastd/forecastd/internal/cmdline"
	"github.com/forecastd/forecastd/internal/config"
	"github.com/forecastd/forecastd/internal/natsconn"
	"github.com/forecastd/forecastd/internal/telemetry"
	"github.com/forecastd/forecastd/sources"
)

// Options are `forecastd replay`'s command line.
type Options struct {
	Config     string
	Files      []string // "-": standard input
	Format     string   // auto, csv, or a registered data format (json, influx, value, …)
	Column     string
	TimeColumn string
	Series     string
	Subject    string
	LogLevel   slog.Level
}

const usage = `usage: forecastd replay [flags] FILE...

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
  -, other       one payload a line, in [input] data_format (or the
                 data format --format names)
A line that cannot be read, or a point without a time, is refused, counted
and logged; the rest goes on. SIGINT or SIGTERM stops early, flushing what
was forecast.

flags:`

// ParseFlags parses `forecastd replay`'s arguments; defaultConfig is
// -config's default.
func ParseFlags(args []string, stderr io.Writer, defaultConfig string) (*Options, error) {
	o := &Options{}
	fs := flag.NewFlagSet("replay", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, usage)
		cmdline.PrintFlags(fs)
	}
	fs.StringVar(&o.Config, "config", defaultConfig, "configuration `FILE`")
	fs.StringVar(&o.Format, "format", "auto", "input `FORMAT`: auto (by the file's name), "+orList(formatNames()[1:]))
	fs.StringVar(&o.Column, "column", "value", "CSV value column `NAME`")
	fs.StringVar(&o.TimeColumn, "time_column", "", "CSV time column `NAME` (default: \"time\", else \"timestamp\", else \"t\")")
	fs.StringVar(&o.Series, "series", "", "series `KEY` of a CSV file (default: the file's name as given); with one CSV file only")
	fs.StringVar(&o.Subject, "subject", "replay", "`SUBJECT` the points are taken to arrive on: forecasts go to <subject_prefix>.SUBJECT[.measurement.field]")
	fs.TextVar(&o.LogLevel, "log_level", slog.LevelInfo, "log `LEVEL`: debug, info, warn or error")
	cmdline.DashAliases(fs, "time_column", "log_level")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, err
		}
		return nil, cmdline.UsageError{Err: err}
	}
	o.Files = fs.Args()
	var errs []error
	if len(o.Files) == 0 {
		errs = append(errs, errors.New("no FILE to replay (- for standard input)"))
	}
	if names := formatNames(); !slices.Contains(names, o.Format) {
		errs = append(errs, fmt.Errorf("--format %q: want %s", o.Format, orList(names)))
	}
	if err := natsconn.CheckSubject(o.Subject, false); err != nil {
		errs = append(errs, fmt.Errorf("--subject %q: %v", o.Subject, err))
	}
	if o.Series != "" {
		n := 0
		for _, f := range o.Files {
			if o.FileFormat(f) == "csv" {
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

// formatNames are --format's values: auto, csv, and the data formats
// registered in sources, sorted (a data format named auto or csv is
// not one of them: those name the file's kind).
func formatNames() []string {
	var fs []string
	for _, f := range sources.Formats() {
		if n := f.String(); n != "auto" && n != "csv" {
			fs = append(fs, n)
		}
	}
	slices.Sort(fs)
	return append([]string{"auto", "csv"}, fs...)
}

// orList writes names as "a, b or c".
func orList(names []string) string {
	if len(names) <= 1 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// FileFormat is how file is read: csv, influx (a file of line protocol,
// whatever [input] data_format), or "" for [input] data_format, which
// --format's data format other than influx replaces (Config).
func (o *Options) FileFormat(file string) string {
	switch o.Format {
	case "csv", "influx":
		return o.Format
	case "auto":
	default:
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

// Config is cfg as a replay runs it: no state, no HTTP, no
// JetStream, an embedded server on a free port, and short shard queues,
// so that the points in flight stay well below the InfluxDB buffer (the daemon
// holds its dispatcher while a sink's buffer is half full).
func Config(cfg *config.Config, format string) (*config.Config, error) {
	c := *cfg
	c.State = config.StateConfig{}
	c.HTTP = telemetry.HTTPConfig{}
	c.Input.JetStream = nil
	if c.NATS.Embedded {
		c.NATS.Servers = []string{"nats://127.0.0.1:0"}
	}
	c.Pipeline.QueueSize = Queue
	switch format {
	case "auto", "csv", "influx":
	default: // a data format: every payload file's and standard input's
		if err := c.Input.DataFormat.UnmarshalText([]byte(format)); err != nil {
			return nil, err
		}
	}
	return &c, nil
}

// Queue is the shard queue length of a replay.
const Queue = 64

// Recordings opens the files (each CSV file read whole, as backtest
// reads it).
func (o *Options) Recordings() ([]sources.Recording, func(), error) {
	var recs []sources.Recording
	var files []*os.File
	closeAll := func() {
		for _, f := range files {
			f.Close()
		}
	}
	for _, name := range o.Files {
		switch {
		case name == "-":
			recs = append(recs, sources.Recording{Name: "stdin", Subject: o.Subject, Reader: os.Stdin})
		case o.FileFormat(name) == "csv":
			data, err := sources.ReadCSV(name, o.Column, o.TimeColumn, false)
			if err != nil {
				closeAll()
				return nil, nil, err
			}
			if !data.HasTime {
				closeAll()
				return nil, nil, fmt.Errorf("%s: no time column (time, timestamp or t; or --time_column): a replay writes the forecasts at the recorded times", name)
			}
			key := name
			if o.Series != "" {
				key = o.Series
			}
			pts := make([]sources.KeyedPoint, len(data.Values))
			for i, v := range data.Values {
				pts[i] = sources.KeyedPoint{Key: key, Time: data.Times[i], Value: v}
			}
			recs = append(recs, sources.Recording{Name: name, Subject: o.Subject, Points: pts})
		default:
			f, err := os.Open(name)
			if err != nil {
				closeAll()
				return nil, nil, err
			}
			files = append(files, f)
			rec := sources.Recording{Name: name, Subject: o.Subject, Reader: f}
			if o.FileFormat(name) == "influx" {
				rec.Format = sources.FormatInflux
			}
			recs = append(recs, rec)
		}
	}
	return recs, closeAll, nil
}
