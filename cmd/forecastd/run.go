package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/forecastd/forecastd/internal/cmdline"
	"github.com/forecastd/forecastd/internal/config"
	"github.com/forecastd/forecastd/internal/history"
	"github.com/forecastd/forecastd/internal/memory"
	"github.com/forecastd/forecastd/internal/natsconn"
	"github.com/forecastd/forecastd/internal/partition"
	"github.com/forecastd/forecastd/internal/statestore"
	"github.com/forecastd/forecastd/internal/telemetry"
	"github.com/forecastd/forecastd/pipeline"
	"github.com/forecastd/forecastd/runner"
	"github.com/forecastd/forecastd/sinks"
	"github.com/forecastd/forecastd/sources"
	"github.com/forecastd/forecastd/sources/promql"
)

// defaultConfigPath is where `forecastd run` looks without -config.
const defaultConfigPath = "/etc/forecastd/forecastd.toml"

// runOptions are `forecastd run`'s command line.
type runOptions struct {
	config   string
	logLevel slog.Level
}

func parseRunFlags(args []string, stderr io.Writer) (*runOptions, error) {
	o := &runOptions{}
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: forecastd run [--config FILE] [--log_level LEVEL]\n\n"+
			"Runs the daemon: points from NATS, a model per series, forecasts to NATS and\n"+
			"InfluxDB. SIGTERM or SIGINT stop it gracefully; SIGHUP reloads [model] and\n"+
			"[[rules]] for series created from then on.\n\nflags:")
		cmdline.PrintFlags(fs)
	}
	fs.StringVar(&o.config, "config", defaultConfigPath, "configuration `FILE`")
	fs.TextVar(&o.logLevel, "log_level", slog.LevelInfo, "log `LEVEL`: debug, info, warn or error")
	cmdline.DashAliases(fs, "log_level")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, err
		}
		return nil, cmdline.UsageError{Err: err}
	}
	if fs.NArg() != 0 {
		return nil, cmdline.UsageError{Err: fmt.Errorf("unexpected arguments %q", fs.Args())}
	}
	return o, nil
}

// input is what the daemon reads points from: sources.Source (NATS, core
// or JetStream) or partition.Set (a JetStream consumer per partition) for
// `run`, which hand each message to the runner themselves (deliver, on
// their reading goroutines); sources.Replay (files) for `forecastd
// replay`, whose messages the dispatcher reads (dispatchInput). Each
// message is settled through its points' Done.
type input interface {
	// StopIntake stops reading, and returns once what was read is
	// delivered; Close then releases the rest (NATS: the last acks are
	// flushed).
	StopIntake(ctx context.Context) error
	Close(ctx context.Context) error
	Stats() sources.Stats
	Connected() bool
}

// dispatchInput is an input whose messages the dispatcher reads.
type dispatchInput interface {
	input
	// Messages is closed once intake has stopped and everything read
	// before was delivered.
	Messages() <-chan *sources.Message
}

// daemon is a running forecastd: it owns everything it starts, and stops it
// in order in shutdown.
type daemon struct {
	path string
	// cfg is the configuration the daemon started with: the goroutines it
	// starts read it, so it is never written after start. reloaded is the
	// one a SIGHUP last applied ([model] and [[rules]] from the file, the
	// rest as running); only serve's goroutine touches it.
	cfg      *config.Config
	reloaded *config.Config
	log      *slog.Logger

	embedded *server.Server
	src      input
	pulls    []*promql.Source // [[input.promql]] (pull.go)
	output   *natsconn.Reopen // the NATS output connection
	liveState
	// sinks are the registered kinds of sink the configuration opened,
	// in registration order; the series write to out (their Tee),
	// through gate.
	sinks    []openSink
	gate     *sinks.Gate
	history  history.Reader // nil without [history]
	out      sinks.Writer
	runner   *runner.Runner
	httpAddr net.Addr

	metrics  *telemetry.Metrics
	telem    *telemetry.Server // nil without [http] listen
	stopping atomic.Bool       // set first thing in shutdown
	restored atomic.Bool       // the checkpoints are loaded (or there are none)

	// ckpt keeps the series' states in [state] dir (nil without it).
	// Under JetStream, applied is the consumer position the written
	// checkpoints cover; the source resumes after the one read at start.
	ckpt       *statestore.Checkpoints
	applied    statestore.Applied
	ckptStop   chan struct{}
	ckptExited chan struct{}
	// parts, under [state] store = "jetstream", is the input and the
	// checkpointer instead (internal/partition); ckpt is then nil.
	parts *partition.Set

	// The NATS inputs hand their points to the runner themselves
	// (deliver, on their reading goroutines); a replay through the
	// dispatcher, which reads its Messages.
	dispatchCtx    context.Context // cancelled when the shutdown deadline passes
	cancelDispatch context.CancelFunc
	dispatched     chan struct{} // made with the dispatcher, closed when it has exited; nil without one
	wg             sync.WaitGroup
	bg             chan struct{} // closed to stop the watchdog
	dropLogEvery   time.Duration // period of the drop log lines (loops.go); 0: telemetry.DefaultDropLogEvery

	// newInput, when set (forecastd replay), makes the input instead of
	// NATS [input], and the dispatcher reads it; pace, when set, is
	// waited for before each message is dispatched (a replay waits for
	// the InfluxDB sink).
	newInput func() (dispatchInput, error)
	pace     func(context.Context) error
	// backlog, for an input that loses what is not read in time (core
	// NATS), is the share of its buffer in use (sources.Source.Backlog):
	// above shedBacklog points are offered (runner.Runner.Offer),
	// dropping a new series' point when its shard is busy rather than
	// hold up the series already held. Set once the source exists, read
	// by its reading goroutines.
	backlog atomic.Pointer[func() float64]

	// wrapOut, when set (by tests), wraps the sinks the series write to.
	wrapOut func(sinks.Writer) sinks.Writer
	// readConfig, when set (by tests), reads the file on SIGHUP instead
	// of config.Load; reloadTimeout, when set, bounds the reading instead
	// of defaultReloadTimeout.
	readConfig    func(path string) (*config.Config, error)
	reloadTimeout time.Duration
	// ready, when set (by tests), is called once the daemon runs.
	ready func(*daemon)
}

// runDaemon is `forecastd run`: it runs until a SIGTERM or SIGINT arrives
// on sigs, then stops gracefully within [pipeline] shutdown_timeout.
func runDaemon(args []string, stderr io.Writer, sigs <-chan os.Signal, d *daemon) error {
	o, err := parseRunFlags(args, stderr)
	if err != nil {
		return err
	}
	cfg, err := config.Load(o.config, config.DaemonChecks)
	if err != nil {
		return err
	}
	if d == nil {
		d = &daemon{}
	}
	d.path, d.cfg = o.config, cfg
	d.log = cmdline.NewLogger(stderr, cfg.LogFormat, o.logLevel)
	if err := d.start(); err != nil {
		ctx, cancel := context.WithTimeout(context.Background(), d.shutdownTimeout())
		defer cancel()
		return errors.Join(err, d.shutdown(ctx))
	}
	return d.serve(sigs)
}

func (d *daemon) shutdownTimeout() time.Duration {
	return d.cfg.Pipeline.ShutdownTimeout.Or(config.DefaultShutdownTimeout)
}

// start starts everything, in the order data flows backwards: NATS, the
// sinks, the metrics, the state, the runner, then the input (and the
// dispatcher of an input that does not deliver its points itself) and
// the HTTP server.
func (d *daemon) start() error {
	cfg := d.cfg
	// Before the series' states are restored: they are most of the heap.
	pct, from := memory.SetGCPercent(cfg.Pipeline.GCPercent, os.Getenv("GOGC"))
	d.log.Info("garbage collector", "component", "daemon", "gc_percent", pct, "set_by", from)
	servers, auth, err := d.startNATS()
	if err != nil {
		return err
	}
	if err := d.openOutputs(servers, auth); err != nil {
		return err
	}
	if err := d.newMetrics(); err != nil {
		return err
	}
	switch {
	case cfg.State.JetStream():
		if d.parts, err = d.openPartitioned(servers, auth); err != nil {
			return err
		}
	case cfg.State.Dir != "":
		if err := d.openState(); err != nil {
			return err
		}
	}
	d.restored.Store(true)
	if err := d.startRunner(); err != nil {
		return err
	}
	if err := d.startInput(servers, auth); err != nil {
		return err
	}
	if err := d.startHTTP(); err != nil {
		return err
	}
	d.log.Info("forecastd running", "component", "daemon", "config", d.path, "servers", natsconn.Redact(strings.Join(servers, ",")),
		"nats_auth", cfg.NATS.Method(), "nats_tls", cfg.NATS.TLS(),
		"subjects", cfg.Input.Subjects, "promql", len(cfg.Input.PromQL), "data_format", cfg.Input.WithDefaults().DataFormat.String(), "jetstream", cfg.Input.JetStream != nil,
		"outputs", d.sinkNames(), "rules", len(d.runnerRules()))
	return nil
}

// startNATS returns the servers every connection is made to and the
// options that authenticate it, starting the embedded server first if
// [nats] embedded is set.
func (d *daemon) startNATS() ([]string, []nats.Option, error) {
	cfg := d.cfg
	servers := cfg.NATS.WithDefaults().Servers
	// Every connection authenticates and secures itself as [nats] says.
	auth, err := d.natsOptions()
	if err != nil { // validated by config.Load
		return nil, nil, err
	}
	d.warnExposedSecrets()
	if !cfg.NATS.Embedded {
		return servers, auth, nil
	}
	e, err := cfg.Embedded(servers[0], auth, d.log) // validated by config.Load
	if err != nil {
		return nil, nil, err
	}
	ns, url, err := natsconn.StartEmbedded(e)
	if ns != nil {
		d.embedded = ns
	}
	if err != nil {
		return nil, nil, err
	}
	return []string{url}, auth, nil
}

// openOutputs connects the NATS output connection and opens the sinks on
// it (openSinks); the series write to their Tee.
func (d *daemon) openOutputs(servers []string, auth []nats.Option) error {
	outFails := &natsconn.FailureLog{Log: d.log.With("component", "sinks"), Msg: "nats output: cannot connect", URL: natsconn.Redact(strings.Join(servers, ","))}
	opts := append(append(sinks.NATSOptions(0), auth...),
		nats.Name("forecastd-output"),
		nats.RetryOnFailedConnect(true),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			if err != nil { // nil: closed by us
				d.log.Warn("nats output disconnected", "component", "sinks", "err", err)
			}
		}),
		nats.ReconnectErrHandler(func(_ *nats.Conn, err error) { outFails.Failed(d.explainNATS(err)) }),
		nats.ConnectHandler(func(nc *nats.Conn) {
			d.log.Info("nats output connected", "component", "sinks", "url", nc.ConnectedUrlRedacted())
		}),
		nats.ReconnectHandler(func(*nats.Conn) { d.log.Info("nats output reconnected", "component", "sinks") }),
	)
	// Connected again when the server closes it for good; the sinks that
	// publish on it take the new one (natsconn.Reopen.OnReplace).
	d.output = &natsconn.Reopen{Name: "nats output", URL: strings.Join(servers, ","), Options: opts, Log: d.log.With("component", "sinks")}
	if err := d.output.Connect(func(*nats.Conn) error { return d.openSinks() }); err != nil {
		return err
	}
	tee := make(sinks.Tee, len(d.sinks))
	for i, s := range d.sinks {
		tee[i] = s.Sink
	}
	d.out = tee
	if d.wrapOut != nil {
		d.out = d.wrapOut(d.out)
	}
	return nil
}

// newMetrics makes the daemon's metrics: the components' own collectors
// (read at each scrape: d.src, d.runner and d.parts or d.ckpt are set
// before the HTTP server starts) and telemetry's.
func (d *daemon) newMetrics() error {
	cfg := d.cfg
	collectors := []prometheus.Collector{d.gate}
	for _, s := range d.sinks {
		collectors = append(collectors, s.Sink)
	}
	var ckptStats func() telemetry.CheckpointStats
	var partStats func() telemetry.PartitionStats
	switch {
	case cfg.State.JetStream():
		partStats = func() telemetry.PartitionStats { return d.parts.PartitionStats() }
		ckptStats = func() telemetry.CheckpointStats { return checkpointStats(d.parts.CheckpointStats()) }
	case cfg.State.Dir != "":
		ckptStats = func() telemetry.CheckpointStats { return checkpointStats(d.ckpt.Stats()) }
	}
	collectors = append(collectors,
		sources.NewCollector(func() sources.Stats { return d.src.Stats() }),
		runner.NewRunnerCollector(func() runner.RunnerStats { return d.runner.Stats() }))
	if len(cfg.Input.PromQL) > 0 {
		collectors = append(collectors, d.pullCollector())
	}
	if cfg.History != nil {
		hc := cfg.HistorySource()
		hc.Logger = d.log
		var err error
		if d.history, err = cfg.History.Open(hc); err != nil { // validated by config.Load
			return fmt.Errorf("history: %w", err)
		}
		collectors = append(collectors, runner.NewHistoryCollector(
			func() runner.HistoryStats { return d.runner.HistoryStats() },
			func() (uint64, map[string]uint64) { st := d.history.Stats(); return st.Queries, st.Failures }))
	}
	d.metrics = telemetry.New(telemetry.Config{
		Collectors:  collectors,
		Checkpoints: ckptStats,
		Partitions:  partStats,
		Ready:       d.readiness,
		Version:     version,
		Revision:    revision,
	})
	return nil
}

// checkpointStats is the checkpoint writer's counts as telemetry reports
// them.
func checkpointStats(st statestore.WriterStats) telemetry.CheckpointStats {
	return telemetry.CheckpointStats{Written: st.Written, Deleted: st.Deleted, Errors: st.Errors, Unwritten: st.Unwritten, Discarded: st.Discarded, Queued: st.Queued}
}

// startRunner makes the runner of [model], [[rules]] and [pipeline], its
// series' states in the checkpoints, their past in [history].
func (d *daemon) startRunner() error {
	cfg := d.cfg
	def, rules, err := d.rules(cfg)
	if err != nil { // validated by config.Load
		return err
	}
	rcfg := cfg.Runner()
	rcfg.Default, rcfg.Rules, rcfg.Outputs, rcfg.Logger = def, rules, d, d.log
	if d.history != nil {
		rcfg.History = cfg.RunnerHistory(d.history)
	}
	if d.ckpt != nil {
		rcfg.Checkpoints = d.ckpt
	}
	if d.parts != nil {
		rcfg.Checkpoints = d.parts
	}
	d.runner, err = runner.NewRunner(rcfg)
	return err
}

// runnerRules are the rules the runner started with.
func (d *daemon) runnerRules() []runner.Rule {
	_, rules, _ := d.cfg.PipelineRules()
	return rules
}

// startInput starts the input: NATS [input], the partitions of [state]
// store = "jetstream", or newInput's, which the dispatcher reads; then
// the checkpoints, which read the input's position.
func (d *daemon) startInput(servers []string, auth []nats.Option) error {
	d.dispatchCtx, d.cancelDispatch = context.WithCancel(context.Background())
	var err error
	var disp dispatchInput
	switch {
	case d.newInput != nil:
		disp, err = d.newInput()
		if disp != nil {
			d.src = disp
		}
	case d.parts != nil:
		d.src, err = d.parts, d.parts.Start()
	case len(d.cfg.Input.Subjects) == 0 && d.cfg.Input.JetStream == nil: // [[input.promql]] only
		d.src = noNATSInput{}
	default:
		var s *sources.Source
		if s, err = d.natsInput(servers, auth); err == nil { // not a nil *Source in a non-nil input
			d.src = s
			if d.cfg.Input.JetStream == nil {
				backlog := s.Backlog
				d.backlog.Store(&backlog)
			}
		}
	}
	if err != nil {
		return fmt.Errorf("input: %w", err)
	}
	if err := d.startPull(); err != nil {
		return err
	}
	if d.ckpt != nil || d.parts != nil { // reads d.src (its position): started after it
		d.ckptStop, d.ckptExited = make(chan struct{}), make(chan struct{})
		go d.checkpointLoop(d.cfg.State.CheckpointInterval.Or(statestore.DefaultCheckpointInterval))
	}
	if disp != nil {
		// Made here, with the goroutine that closes it: an input that
		// failed to start above leaves none for shutdown to wait on.
		d.dispatched = make(chan struct{})
		go d.dispatch(disp)
	}
	return nil
}

// startHTTP serves /metrics, /-/healthy and /-/ready on [http] listen, and
// the endpoints of the sinks that serve some ([output.api]).
func (d *daemon) startHTTP() error {
	listen := d.cfg.HTTP.Listen
	if listen == "" {
		return nil
	}
	d.telem = telemetry.NewServer(d.httpHandler(), d.log)
	if err := d.telem.Start(listen); err != nil {
		return fmt.Errorf("http.listen: %w", err)
	}
	d.httpAddr = d.telem.Addr()
	d.log.Info("http listening", "component", "http", "addr", d.httpAddr.String())
	if host, _, err := net.SplitHostPort(listen); err == nil && !natsconn.IsLoopback(host) {
		d.log.Warn("http listens beyond this host: whoever reaches it can read /metrics (series counts, refusals, model errors, the version); bind 127.0.0.1 or firewall the port",
			"component", "http", "addr", d.httpAddr.String())
	}
	return nil
}

// natsInput is the source of [input]: NATS core subscriptions or, under
// [input.jetstream], a durable consumer resuming after the checkpoints'
// position.
func (d *daemon) natsInput(servers []string, auth []nats.Option) (*sources.Source, error) {
	cfg := d.cfg
	dc, err := cfg.Decoder()
	if err != nil {
		return nil, err
	}
	scfg := sources.Config{
		Servers:    servers,
		Subjects:   cfg.Input.Subjects,
		QueueGroup: cfg.Input.QueueGroup,
		Decoder:    dc,
		Logger:     d.log,
		Options:    slices.Concat(auth, d.inputConnOptions(natsconn.Redact(strings.Join(servers, ",")))),
		Deliver:    d.deliver,
	}
	if js := cfg.Input.JetStream; js != nil {
		jc := js.Source(js.Durable)
		if d.ckpt != nil {
			seq := d.applied.Seq
			jc.Checkpointed = &seq
		}
		scfg.JetStream = jc
	}
	return sources.New(scfg)
}

// rules are cfg's [model] and [[rules]], each configuration reporting its
// model updates to the metrics.
func (d *daemon) rules(cfg *config.Config) (pipeline.Config, []runner.Rule, error) {
	def, rules, err := cfg.PipelineRules()
	if err != nil {
		return def, nil, err
	}
	def.Observer = d.metrics
	for i := range rules {
		rules[i].Config.Observer = d.metrics
	}
	return def, rules, nil
}

// readiness is /-/ready's: ready once the model state is restored and both
// NATS connections are up, until shutdown begins, and not while the
// checkpoints cannot write a series' state.
func (d *daemon) readiness() (bool, string) {
	switch {
	case d.stopping.Load():
		return false, "shutting down"
	case !d.restored.Load():
		return false, "model state not restored"
	case !d.src.Connected():
		return false, "nats input not connected"
	case !d.output.Connected():
		return false, "nats output not connected"
	}
	if n := d.unwritten(); n > 0 {
		return false, fmt.Sprintf("the states of %d series could not be written to [state] (see the log); retried at each checkpoint", n)
	}
	return true, ""
}

// unwritten is the number of series whose latest state the checkpoints
// failed to write, and retry.
func (d *daemon) unwritten() int64 {
	switch {
	case d.ckpt != nil:
		return d.ckpt.Stats().Unwritten
	case d.parts != nil:
		return d.parts.CheckpointStats().Unwritten
	}
	return 0
}

// shedBacklog is the share of the core NATS client's buffer in use
// beyond which new series are shed (deliver): a burst below it is held
// whole; a flood beyond it never reaches the buffer's end,
// where the client would drop any series' messages.
const shedBacklog = 1.0 / 16

// dispatch hands every message of an input that has no way to deliver
// them itself (a replay) to the runner, until the input's channel closes
// (StopIntake), each paced if the daemon paces.
func (d *daemon) dispatch(in dispatchInput) {
	defer close(d.dispatched)
	for m := range in.Messages() {
		if d.pace != nil {
			if err := d.pace(d.dispatchCtx); err != nil {
				// The shutdown deadline passed: Submit below gives up
				// at once, and the runner counts the points.
				d.log.Debug("dispatch not paced", "component", "daemon", "err", err)
			}
		}
		d.deliver(d.dispatchCtx, m)
	}
}

// deliver hands every point of m to the runner's shards, on the
// goroutine that read m (a NATS subscription's or consumer's) or the
// dispatcher. Submit waits while a shard's queue is full: the
// back-pressure reaches the source, whose own bounded buffers count what
// NATS drops. While a lossy input's buffer fills (backlog), a point is
// offered instead, and a new series' point dropped if its shard is busy:
// a flood of new series then never holds up the reading long enough for
// the client to drop the points of the series already held. Past the
// shutdown deadline ctx ends: Submit gives up at once, and the runner
// counts the points and tells m.
func (d *daemon) deliver(ctx context.Context, m *sources.Message) {
	submit := d.runner.Submit
	if b := d.backlog.Load(); b != nil && (*b)() > shedBacklog {
		submit = d.runner.Offer
	}
	for i := range m.Points {
		p := &m.Points[i]
		d.submitting.Add(1) // the watchdog's (output.go)
		// An error was counted by the runner, which told m (Done).
		_ = submit(ctx, runner.Input{
			Key:   p.Key,
			Point: pipeline.Point{Time: p.Time, Value: p.Value},
			Msg:   m,
			Index: i,
			Seq:   m.Sequence,
		})
		d.submitted.Add(1)
	}
}

// Open implements runner.Outputs: a series' records are labelled with its
// model, the subject of its first point and, for line protocol, its tags.
func (d *daemon) Open(key string, cfg pipeline.Config, in *runner.Input) pipeline.Sink {
	o := in.Origin()
	ss := &sinks.SeriesSink{Model: cfg.Kind.String(), Gate: d.gate, Out: d.out,
		Subject: o.Subject, Measurement: o.Measurement, Field: o.Field, Tags: o.Tags}
	if cfg.Step > 0 {
		ss.Step = sinks.StepText(cfg.Step)
	}
	if key != in.Key { // a resolution's series: under the key it forecasts
		ss.Name = in.Key
	}
	if ss.Subject == "" {
		ss.Subject = key
	}
	return ss
}

// shutdown stops everything started, in order, under ctx's deadline: stop
// intake, drain the shards (which hand their series' states to the
// checkpoints), flush the sinks, drain the input (the acks), write the
// model state, then close NATS.
func (d *daemon) shutdown(ctx context.Context) error {
	var errs []error
	d.stopping.Store(true) // /-/ready: 503 while draining
	if d.bg != nil {
		close(d.bg)
	}
	if d.ckptStop != nil {
		close(d.ckptStop)
		<-d.ckptExited
	}
	if d.src != nil {
		// Past the deadline, a delivery waiting in Submit gives up (the
		// NATS input ends its own deliveries' context then).
		stop := context.AfterFunc(ctx, d.cancelDispatch)
		if err := d.stopPull(ctx); err != nil {
			errs = append(errs, err)
		}
		if err := d.src.StopIntake(ctx); err != nil {
			errs = append(errs, err)
		}
		if d.dispatched != nil {
			<-d.dispatched
		}
		stop()
	}
	if d.runner != nil {
		if err := d.runner.Close(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	// The sinks flush until a tenth of the deadline (at most 2s) is left,
	// which is kept for draining the input connection: the acks.
	sinkCtx := ctx
	if dl, ok := ctx.Deadline(); ok {
		var cancel context.CancelFunc
		sinkCtx, cancel = context.WithDeadline(ctx, dl.Add(-min(time.Until(dl)/10, 2*time.Second)))
		defer cancel()
	}
	errs = append(errs, d.closeSinks(sinkCtx))
	if d.src != nil { // the last acks go out
		if err := d.src.Close(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	if d.ckpt != nil {
		if err := d.finalCheckpoint(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	if d.parts != nil {
		if err := d.parts.FinalCheckpoint(ctx, d.runner != nil); err != nil {
			errs = append(errs, err)
		}
	}
	if d.output != nil {
		d.output.Close()
	}
	if d.cancelDispatch != nil {
		d.cancelDispatch()
	}
	if d.telem != nil { // last: a final scrape sees the final counts
		if err := d.telem.Close(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	d.wg.Wait()
	if d.embedded != nil {
		d.embedded.Shutdown()
		d.embedded.WaitForShutdown()
	}
	return errors.Join(errs...)
}

// readyPoll is how often serve checks readiness until it tells systemd
// READY=1.
const readyPoll = 50 * time.Millisecond

// inputConnOptions are the input connection's nats.go options beyond the
// source's own: its failed attempts to connect are logged (natsconn.FailureLog),
// and a disconnection only when it has an error (nil: closed by us, at
// shutdown). Applied after the source's options, its handlers replace the
// source's.
func (d *daemon) inputConnOptions(url string) []nats.Option {
	log := d.log.With("component", "sources")
	fails := &natsconn.FailureLog{Log: log, Msg: "nats input: cannot connect", URL: url}
	return []nats.Option{
		nats.ReconnectErrHandler(func(_ *nats.Conn, err error) { fails.Failed(d.explainNATS(err)) }),
	}
}
