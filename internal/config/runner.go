package config

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/forecastd/forecastd/internal/cmdline"
	"github.com/forecastd/forecastd/internal/natsconn"
	"github.com/forecastd/forecastd/internal/readapi"
	"github.com/forecastd/forecastd/runner"
	"github.com/forecastd/forecastd/sinks"
	"github.com/forecastd/forecastd/sources"
)

// Runner is the runner's configuration from [pipeline] and
// [input.jetstream]; the caller adds the models, outputs, checkpoints and
// history.
func (c *Config) Runner() runner.RunnerConfig {
	rc := c.Pipeline.RunnerKeys.Runner()
	if js := c.Input.JetStream; js != nil {
		// A series whose forecast a sink refused holds its newer points
		// while the server redelivers the refused one; core NATS does
		// not redeliver.
		rc.RedeliveryHold = js.RedeliveryHold()
	}
	return rc
}

// Source is the source's configuration of the consumer named durable
// under [input.jetstream]; the caller adds the checkpoints' position.
func (js *JetStreamConfig) Source(durable string) *sources.JetStreamConfig {
	return js.ConsumerConfig.JetStream(durable)
}

// Embedded is the embedded NATS server of [nats] embedded = true, to
// listen on server (the first of [nats] servers): with [input.jetstream]
// it runs JetStream, stored under [state] dir, and creates the stream,
// capturing [input] subjects, over a connection with the options connect.
func (c *Config) Embedded(server string, connect []nats.Option, log *slog.Logger) (natsconn.Embedded, error) {
	hp, err := natsconn.ServerAddr(server)
	if err != nil {
		return natsconn.Embedded{}, fmt.Errorf("embedded nats: %w", err)
	}
	e := natsconn.Embedded{
		Addr: hp,
		// Above forecastd's own limit, so that an oversized message
		// reaches the decoder and is counted ("too_large") rather than
		// refused unseen by the server.
		MaxPayload: EmbeddedPayload(c.Input.MaxPayload),
		Auth:       c.NATS,
		Connect:    connect,
		Log:        log,
	}
	if js := c.Input.JetStream; js != nil {
		e.StoreDir = filepath.Join(c.State.Dir, "jetstream")
		e.Stream, e.Subjects = js.Stream, c.Input.Subjects
	}
	return e, nil
}

// wiringWarnings are settings that load but do not do what they seem
// to: [output.api] without [http] listen serves no HTTP endpoint.
func (c *Config) wiringWarnings() []string {
	var ws []string
	if api, ok := c.Output["api"].(*readapi.Config); ok && api != nil && c.HTTP.Listen == "" {
		then := "the read API is served nowhere: set [http] listen, or nats_service = true to answer on NATS"
		if api.NATSService {
			then = "the read API answers on NATS only (nats_service), not on HTTP: set [http] listen for /api/v1/series"
		}
		ws = append(ws, "output.api: [http] listen is empty: "+then)
	}
	return ws
}

// pingTimeout bounds check-config's wait for a server to answer.
const pingTimeout = 5 * time.Second

// reachWarnings are the InfluxDBs of [output.influxdb] and [history], and
// the servers of the other sinks (sinks.Reacher: Alertmanager), that do
// not answer now (within pingTimeout, all at once): forecastd starts
// without them, the forecasts buffered and new series cold, so a wrong
// url would show only at the first write.
func (c *Config) reachWarnings() []string {
	type target struct{ key, url, then string }
	var ts []target
	if ic := c.Output.Influx(); ic != nil && ic.URL != "" {
		ts = append(ts, target{"output.influxdb.url", ic.URL, "forecasts are buffered until it answers, the oldest dropped beyond metric_buffer_limit"})
	}
	if c.History != nil && !c.History.Prometheus() { // /ping is InfluxDB's
		if u := c.HistorySource().URL; u != "" && (len(ts) == 0 || u != ts[0].url) {
			ts = append(ts, target{"history.url", u, "new series start cold until it answers"})
		}
	}
	var rs []string // the other sinks' servers (sinks.Reacher)
	for _, k := range sinks.Kinds() {
		if _, ok := c.Output[k.Name()].(sinks.Reacher); ok {
			rs = append(rs, k.Name())
		}
	}
	warns := make([]string, len(ts)+len(rs))
	var wg sync.WaitGroup
	for i, t := range ts {
		wg.Go(func() {
			if err := sinks.Ping(context.Background(), t.url, pingTimeout); err != nil {
				warns[i] = fmt.Sprintf("%s: InfluxDB at %s does not answer (%v): %s", t.key, t.url, err, t.then)
			}
		})
	}
	for i, name := range rs {
		wg.Go(func() {
			key, then, err := c.Output[name].(sinks.Reacher).Reach(context.Background(), pingTimeout)
			if err != nil {
				warns[len(ts)+i] = fmt.Sprintf("output.%s.%s: does not answer (%v): %s", name, key, err, then)
			}
		})
	}
	wg.Wait()
	return slices.DeleteFunc(warns, func(w string) bool { return w == "" })
}

// EmbeddedPayload is the embedded server's max_payload for forecastd's
// limit: twice it, at least 8 MiB.
func EmbeddedPayload(limit int) int32 {
	if limit <= 0 {
		limit = sources.DefaultMaxPayload
	}
	return int32(max(2*limit, 8<<20))
}

// CheckCommand is `forecastd check-config FILE`: it loads FILE as `run`
// would (DaemonChecks) and prints every problem, each naming its key.
func CheckCommand(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("check-config", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: forecastd check-config FILE\n\n"+
			"Reads a configuration file as `forecastd run` would and reports every\n"+
			"problem at once, a line each (FILE:LINE: key: problem), a [state] dir\n"+
			"it could not write in included; prints \"FILE: OK\" and exits 0 if there\n"+
			"is none. It warns, without failing, of an InfluxDB or an Alertmanager\n"+
			"that does not answer within 5s, and of [output.api] without [http]\n"+
			"listen.")
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return cmdline.UsageError{Err: err}
	}
	if fs.NArg() != 1 {
		return cmdline.UsageError{Err: errors.New("usage: forecastd check-config FILE")}
	}
	path := fs.Arg(0)
	cfg, err := Load(path, DaemonChecks)
	if err != nil {
		return err
	}
	if def, rules, err := cfg.PipelineRules(); err == nil {
		m := cfg.MemoryNeed(def, rules)
		fmt.Fprintf(stdout, "%s: %s\n", path, m)
		for _, w := range m.Warnings(cfg.Pipeline.MemoryBudget.N, cfg.Pipeline.MemoryBudget.Text) {
			fmt.Fprintf(stdout, "%s: warning: %s\n", path, w)
		}
	}
	for _, w := range append(cfg.wiringWarnings(), cfg.reachWarnings()...) {
		fmt.Fprintf(stdout, "%s: warning: %s\n", path, w)
	}
	fmt.Fprintf(stdout, "%s: OK\n", path)
	return nil
}
