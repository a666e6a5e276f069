// Command forecastd forecasts streaming time series with online SVR models.
//
//	forecastd run [-config FILE]          the daemon: NATS in, NATS and InfluxDB out
//	forecastd check-config FILE           report every problem of a configuration file
//	forecastd backtest [flags] FILE.csv   replay a recorded series through the pipeline
//	forecastd version                     print the version
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
)

// version is set at link time: -ldflags "-X main.version=v1.2.3".
var version = ""

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

const usage = `usage:
  forecastd run [-config FILE]          run the daemon (default config /etc/forecastd/forecastd.toml)
  forecastd check-config FILE           report every problem of a configuration file
  forecastd backtest [flags] FILE.csv   replay a recorded series through the pipeline
  forecastd version                     print the version
Run "forecastd run -h" and "forecastd backtest -h" for their flags.
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
	case "check-config":
		err = runCheckConfig(args[1:], stdout)
	case "backtest":
		err = runBacktest(args[1:], stdout, stderr)
	case "version":
		fmt.Fprintln(stdout, versionString())
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, usage)
	default:
		fmt.Fprintf(stderr, "forecastd: unknown command %q\n%s", args[0], usage)
		return 2
	}
	var ue usageError
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "forecastd %s: %v\n", args[0], err)
		return 2
	default:
		fmt.Fprintf(stderr, "forecastd %s: %v\n", args[0], err)
		return 1
	}
}

// usageError is a mistake on the command line.
type usageError struct{ error }

func (e usageError) Unwrap() error { return e.error }

func versionString() string {
	v := version
	if v == "" {
		v = "(devel)"
		if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
			v = bi.Main.Version
		}
	}
	return fmt.Sprintf("forecastd %s %s %s/%s", v, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}
