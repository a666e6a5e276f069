// Command forecastd forecasts streaming time series with online SVR models.
//
//	forecastd run [-config FILE]          the daemon: NATS in, NATS and InfluxDB out
//	forecastd replay [flags] FILE...      feed recorded points through the daemon's path into its sinks
//	forecastd check-config FILE           report every problem of a configuration file
//	forecastd backtest [flags] FILE|DIR...  replay recorded series through the pipeline, against baselines
//	forecastd tune [flags] FILE.csv...    choose AOSVR's c, epsilon, gamma by exact leave-one-out
//	forecastd nab [flags] DIR             score the anomaly detector on the Numenta Anomaly Benchmark
//	forecastd thresholds [flags] DIR      score threshold events against predict_linear on generated disks
//	forecastd version                     print the version (also --version)
//
// This file only wires subcommands to their implementations.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"syscall"

	"github.com/forecastd/forecastd/internal/cmdline"
	"github.com/forecastd/forecastd/internal/config"
	"github.com/forecastd/forecastd/lab"
)

// version and revision are set at link time (scripts/build does it):
// -ldflags "-X main.version=v1.2.3 -X main.revision=$(git rev-parse HEAD)".
// Without them, `forecastd version` falls back on what the Go toolchain
// recorded (the module version, and the git revision unless built with
// -buildvcs=false).
var (
	version  = ""
	revision = ""
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

const usage = `usage:
  forecastd run [-config FILE]          run the daemon (default config /etc/forecastd/forecastd.toml)
  forecastd replay [flags] FILE...      feed recorded points through the daemon's path into its sinks (backfill)
  forecastd check-config FILE           report every problem of a configuration file
  forecastd backtest [flags] FILE|DIR...  replay recorded series through the pipeline, against baselines
  forecastd tune [flags] FILE.csv...    choose AOSVR's c, epsilon, gamma by exact leave-one-out
  forecastd nab [flags] DIR             score the anomaly detector on the Numenta Anomaly Benchmark
  forecastd thresholds [flags] DIR      score threshold events against predict_linear on generated disks
  forecastd version                     print the version and revision (also --version)
Run "forecastd run -h", "forecastd replay -h", "forecastd backtest -h" and "forecastd tune -h" for their flags.
`

// run executes one subcommand and returns the process's exit status:
// 0 on success, 1 on failure, 2 on a usage error.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	var err error
	switch args[0] {
	case "run":
		sigs := make(chan os.Signal, 4)
		signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
		err = runDaemon(args[1:], stderr, sigs, nil)
		signal.Stop(sigs)
	case "replay":
		sigs := make(chan os.Signal, 4)
		signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
		err = runReplay(args[1:], stdout, stderr, sigs)
		signal.Stop(sigs)
	case "check-config":
		err = config.CheckCommand(args[1:], stdout, stderr)
	case "backtest":
		err = lab.Backtest(args[1:], stdout, stderr, labEnv())
	case "tune":
		err = lab.Tune(args[1:], stdout, stderr, labEnv())
	case "nab":
		err = lab.NAB(args[1:], stdout, stderr, labEnv())
	case "thresholds":
		err = lab.Thresholds(args[1:], stdout, stderr, labEnv())
	case "version", "--version", "-version":
		fmt.Fprintln(stdout, versionString())
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, usage)
	default:
		fmt.Fprintf(stderr, "forecastd: unknown command %q\n%s", args[0], usage)
		return 2
	}
	var ue cmdline.UsageError
	var ce *config.Error
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &ce):
		// A line per problem, FILE:LINE: as compilers write them.
		fmt.Fprintln(stderr, ce.Error())
		n := fmt.Sprintf("%d problems", len(ce.Problems))
		if len(ce.Problems) == 1 {
			n = "1 problem"
		}
		fmt.Fprintf(stderr, "forecastd %s: %s: %s\n", args[0], ce.Path, n)
		return 1
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "forecastd %s: %v\n", args[0], err)
		return 2
	default:
		fmt.Fprintf(stderr, "forecastd %s: %v\n", args[0], err)
		return 1
	}
}

// versionString is "forecastd VERSION (revision REV[, modified]) GO OS/ARCH":
// the version and revision stamped at link time, else those the toolchain
// recorded.
func versionString() string {
	v, rev, modified := version, revision, false
	if bi, ok := debug.ReadBuildInfo(); ok {
		if v == "" && bi.Main.Version != "" {
			v = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch {
			case s.Key == "vcs.revision" && rev == "":
				rev = s.Value
			case s.Key == "vcs.modified" && revision == "":
				modified = s.Value == "true"
			}
		}
	}
	if v == "" {
		v = "(devel)"
	}
	s := "forecastd " + v
	if rev != "" {
		s += " (revision " + rev
		if modified {
			s += ", modified"
		}
		s += ")"
	}
	return fmt.Sprintf("%s %s %s/%s", s, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}
