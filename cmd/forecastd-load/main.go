// Command forecastd-load puts a forecastd daemon under load and measures it
// from the outside: it publishes points for N series to a NATS server, at
// a set rate or as fast as an in-flight window allows, subscribes to the
// forecasts, and reports throughput, loss and the latency from a point's
// publication to its forecast's arrival.
//
// Each point's data time is its publication time (Unix ns, strictly
// increasing over the run), so the forecast's "origin" names its point
// exactly; for data_format "value", which carries no time, forecasts are
// matched to points in each series' order instead. The tool talks to
// loopback addresses only.
//
//	forecastd-load -series 100 -rate 5000 -duration 10s -warmup 20
//
// The daemon must read <subject_prefix>.> in the same data_format and
// publish on its default subject_prefix (or -forecast_prefix). Flags are
// snake_case, as forecastd's; -subject-prefix and -forecast-prefix are
// kept as deprecated spellings that -h does not list. Its scale
// decides when a series' forecasts start (scale = "warmup:100": after 100
// points); -warmup must cover that, or use scale = "fixed:0,100", which
// fits the tool's values (a noisy sine between about 30 and 70).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	switch {
	case errors.Is(err, flag.ErrHelp):
		os.Exit(0)
	case err != nil:
		fmt.Fprintln(os.Stderr, "forecastd-load:", err)
		os.Exit(1)
	}
}

// deprecatedUsage begins the usage of a deprecated spelling of a flag.
const deprecatedUsage = "deprecated spelling of -"

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var (
		cfg     Config
		servers string
		asJSON  bool
	)
	fs := flag.NewFlagSet("forecastd-load", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: forecastd-load [flags]\n\n"+
			"Publishes points for -series series to NATS and measures the forecasts a\n"+
			"forecastd daemon returns: throughput, loss, and the p50/p99 latency from a\n"+
			"point's publication to its forecast's arrival. -warmup points per series go\n"+
			"first, unmeasured; then -duration (or -count points) is measured.\n\nflags:")
		shown := flag.NewFlagSet(fs.Name(), flag.ContinueOnError)
		shown.SetOutput(stderr)
		fs.VisitAll(func(f *flag.Flag) {
			if !strings.HasPrefix(f.Usage, deprecatedUsage) {
				shown.Var(f.Value, f.Name, f.Usage)
				shown.Lookup(f.Name).DefValue = f.DefValue
			}
		})
		shown.PrintDefaults()
	}
	fs.StringVar(&servers, "servers", "nats://127.0.0.1:4222", "NATS `URLs`, comma-separated; loopback only")
	fs.IntVar(&cfg.Series, "series", 100, "number of series `N`")
	fs.Float64Var(&cfg.Rate, "rate", 0, "measured `points/s` over all series; 0 = as fast as -inflight allows")
	fs.DurationVar(&cfg.Duration, "duration", 10*time.Second, "length of the measured phase")
	fs.IntVar(&cfg.Count, "count", 0, "measured points at most; 0 = -duration alone")
	fs.StringVar(&cfg.SubjectPrefix, "subject_prefix", "load", "input subjects are `PREFIX`.s00000, .s00001, …")
	fs.StringVar(&cfg.ForecastPrefix, "forecast_prefix", "forecast", "the daemon's [output.nats] subject_prefix")
	fs.StringVar(&cfg.Format, "format", formatJSON, "payload `format`: json, value or influx (the daemon's data_format)")
	fs.IntVar(&cfg.Warmup, "warmup", 110, "`points` per series published before measuring, unmeasured")
	fs.IntVar(&cfg.Inflight, "inflight", 2000, "points published without a forecast yet, at most")
	fs.DurationVar(&cfg.Timeout, "timeout", 5*time.Second, "a wait this long without a forecast is a stall; also the wait for the last forecasts")
	fs.Uint64Var(&cfg.Seed, "seed", 1, "seed of the values' noise")
	fs.BoolVar(&asJSON, "json", false, "print the result as JSON")
	fs.IntVar(&cfg.PID, "pid", 0, "the daemon's process id `PID`: report its resident memory (VmRSS) before, after the warm-up and at the end, and per series, and its CPU time per measured point")
	for _, name := range []string{"subject_prefix", "forecast_prefix"} {
		fs.Var(fs.Lookup(name).Value, strings.ReplaceAll(name, "_", "-"), deprecatedUsage+name)
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		fs.Usage()
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	for _, s := range strings.Split(servers, ",") {
		if s = strings.TrimSpace(s); s != "" {
			cfg.Servers = append(cfg.Servers, s)
		}
	}
	res, err := Run(ctx, cfg)
	if err != nil {
		return err
	}
	if asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(res); err != nil {
			return err
		}
	} else {
		printResult(stdout, res)
	}
	if res.Err != "" {
		return errors.New(res.Err)
	}
	return nil
}

func printResult(w io.Writer, r *Result) {
	rate := "maximal"
	if r.Rate > 0 {
		rate = fmt.Sprintf("%.0f points/s", r.Rate)
	}
	fmt.Fprintf(w, "forecastd-load: %d series, %s, rate %s\n", r.Series, r.Format, rate)
	fmt.Fprintf(w, "  warm-up    %d points in %.2fs\n", r.WarmupPoints, r.WarmupSeconds)
	fmt.Fprintf(w, "  published  %d points in %.2fs (%.0f points/s)\n", r.Published, r.PublishSeconds, r.OfferedRate)
	fmt.Fprintf(w, "  forecasts  %d (%.0f forecasts/s; %.0f points/s accepted)\n", r.Forecasts, r.ForecastRate, r.AcceptedRate)
	fmt.Fprintf(w, "  lost       %d (%.3f%%)", r.Lost, 100*r.LossRatio)
	if r.Silent > 0 {
		fmt.Fprintf(w, "; %d series had no forecast at all (is -warmup shorter than the daemon's scale warm-up?)", r.Silent)
	}
	fmt.Fprintln(w)
	if r.Unmatched > 0 {
		fmt.Fprintf(w, "  unmatched  %d forecasts named no outstanding point\n", r.Unmatched)
	}
	if r.WarmupUnmatched > 0 {
		fmt.Fprintf(w, "  warm-up    %d forecasts named no outstanding point (matched by order)\n", r.WarmupUnmatched)
	}
	match := "exact, by origin"
	if !r.Exact {
		match = "in series order: value payloads carry no time"
	}
	fmt.Fprintf(w, "  latency    p50 %.3f ms  p90 %.3f ms  p99 %.3f ms  max %.3f ms (%s)\n", r.P50, r.P90, r.P99, r.Max, match)
	if r.RSSEnd > 0 {
		fmt.Fprintf(w, "  memory     daemon VmRSS %.1f MB before, %.1f MB after the warm-up, %.1f MB at the end: %.0f B per series\n",
			float64(r.RSSStart)/1e6, float64(r.RSSWarm)/1e6, float64(r.RSSEnd)/1e6, r.RSSPerSeries)
		fmt.Fprintf(w, "  cpu        daemon %.2f s in the measured phase: %.1f µs per point (this tool %.1f µs per point)\n",
			r.CPUSeconds, r.CPUPerPoint, r.LoadCPUPerPoint)
	}
	if r.Err != "" {
		fmt.Fprintf(w, "  stopped    %s\n", r.Err)
	}
}
