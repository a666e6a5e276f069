// Package lab holds forecastd's research commands: backtest (a recorded
// series replayed through the pipeline against baselines, per series or
// held out), tune (AOSVR's C, ε and γ by exact leave-one-out), nab (the
// anomaly detector on the Numenta Anomaly Benchmark) and thresholds
// (threshold events against predict_linear). Each is a function of its
// arguments and output streams that reads the input, parses the flags and
// prints; the computing is lab/backtest's, lab/tune's,
// lab/nab's and lab/thresholdbench's. cmd/forecastd wires them
// as its subcommands.
//
// The commands take the daemon configuration's [model] keys as flags and
// read a daemon configuration file (--config), whose schema is the
// daemon's: the binary hands it over as a Models. That is why they stay
// subcommands of forecastd rather than a second binary: a second binary
// would need the schema, which lives with the daemon's command. Drawing a
// plot (backtest --plot) is the one part the daemon must not carry:
// gonum/plot links its fonts, megabytes, into any binary that imports it.
// The binary hands a Plotter over only when built with it (the "plot"
// build tag); without one, --plot is a usage error saying how to get it.
package lab

import (
	"flag"
	"fmt"

	"github.com/forecastd/forecastd/internal/cmdline"
	"github.com/forecastd/forecastd/lab/backtest"
	"github.com/forecastd/forecastd/pipeline"
	"github.com/forecastd/forecastd/runner"
)

// Env is what the commands take from the binary that runs them.
type Env struct {
	// Models is the configuration's [model] schema. Required.
	Models Models
	// Plot draws --plot; nil in a build without plots, where --plot is a
	// usage error naming the build that has them.
	Plot Plotter
	// PlotHint, with a nil Plot, tells the user how to get a build
	// that plots.
	PlotHint string
}

// Models declares the [model] keys as flags.
type Models interface {
	// AddFlags declares on fs a flag for every [model] key but those in
	// skip, each named as its key (kind's is --model), and returns what
	// they set once fs is parsed.
	AddFlags(fs *flag.FlagSet, skip ...string) ModelFlags
}

// ModelFlags are the [model] keys set on a command line.
type ModelFlags interface {
	// Config returns the [model] of the daemon configuration file (none if
	// file is ""), the flags set over it, validated.
	Config(file string) (pipeline.Config, error)
	// Rules returns the file's [[rules]] (none if file is ""), each with
	// [model], the rule and the flags merged in that order, validated.
	Rules(file string) ([]runner.Rule, error)
	// Influx returns where the file's [history] (else [output.influxdb])
	// reads and writes a series in InfluxDB, for backtest --influx_url.
	Influx(file string) (InfluxDefaults, error)
}

// InfluxDefaults are the InfluxDB settings of a daemon configuration that
// backtest --influx_url takes unless its flags say otherwise.
type InfluxDefaults struct {
	Measurement, Field, SeriesTag string
	Token                         string
	Bucket                        string // DATABASE[/RP]
}

// Plotter draws actual values, forecasts and the interval band of the
// rows to path, an SVG or PNG file by extension; dates draws the x axis
// as times (Row.Secs), else as indices.
type Plotter func(path, title string, rows []backtest.Row, dates bool) error

func usageError(err error) error { return cmdline.UsageError{Err: err} }

// parseDir parses the args of a command that takes one directory after
// its flags, and returns the directory. -h returns flag.ErrHelp (fs has
// printed its usage); any other problem, a UsageError after fs's usage.
func parseDir(fs *flag.FlagSet, args []string) (string, error) {
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return "", err
		}
		return "", usageError(err)
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return "", usageError(fmt.Errorf("want one directory, got %d arguments", fs.NArg()))
	}
	return fs.Arg(0), nil
}
