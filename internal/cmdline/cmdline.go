// Package cmdline holds what forecastd's subcommands share on their command
// lines: the usage error (exit status 2), flags spelt as the
// configuration's keys with their old dashed spellings as hidden aliases,
// and operands mixed with flags.
//
// Flags are named as configuration keys are, in snake_case
// (--score_from, --anomaly_close_m), so that a flag and the key it sets
// are spelt alike. The dashed spellings some flags had (--score-from) are
// kept as deprecated aliases: they still work, and -h does not list them.
package cmdline

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"
)

// UsageError is a mistake on the command line (exit status 2).
type UsageError struct{ Err error }

func (e UsageError) Error() string { return e.Err.Error() }
func (e UsageError) Unwrap() error { return e.Err }

// DeprecatedUsage begins the usage of a deprecated alias.
const DeprecatedUsage = "deprecated spelling of --"

// DashAliases declares, for each flag of fs named with '_', its dashed
// spelling as a deprecated alias setting the same value.
func DashAliases(fs *flag.FlagSet, names ...string) {
	for _, name := range names {
		fs.Var(fs.Lookup(name).Value, strings.ReplaceAll(name, "_", "-"), DeprecatedUsage+name)
	}
}

// PrintFlags prints fs's flags as PrintDefaults does, without the
// deprecated aliases.
func PrintFlags(fs *flag.FlagSet) {
	shown := flag.NewFlagSet(fs.Name(), flag.ContinueOnError)
	shown.SetOutput(fs.Output())
	fs.VisitAll(func(f *flag.Flag) {
		if !strings.HasPrefix(f.Usage, DeprecatedUsage) {
			shown.Var(f.Value, f.Name, f.Usage)
			shown.Lookup(f.Name).DefValue = f.DefValue
		}
	})
	shown.PrintDefaults()
}

// ParseOperands parses args with fs, flags before or after the operands
// (files), and returns the operands. -h prints usage and fs's flags on
// stderr and returns flag.ErrHelp; any other error is a UsageError ending
// with a line pointing at -h for the subcommand cmd, not the whole usage.
func ParseOperands(fs *flag.FlagSet, args []string, cmd, usage string, stderr io.Writer) ([]string, error) {
	var operands []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				fmt.Fprint(stderr, usage)
				fs.SetOutput(stderr)
				PrintFlags(fs)
				return nil, err
			}
			return nil, UsageError{fmt.Errorf("%w\nrun \"forecastd %s -h\" for the flags", err, cmd)}
		}
		if fs.NArg() == 0 {
			return operands, nil
		}
		operands = append(operands, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

// Log formats of the top-level log_format key.
const (
	logFormatText = "text" // slog's text handler: key=value (the default)
	logFormatJSON = "json" // slog's JSON handler: one object per line
)

// NewLogger returns the daemon's logger: format "json" is slog's JSON
// handler, anything else (validated before) its text handler.
func NewLogger(w io.Writer, format string, level slog.Level) *slog.Logger {
	opts := &slog.HandlerOptions{Level: level}
	if format == logFormatJSON {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}
