package main

import (
	"cmp"
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
	"syscall"
	"time"

	sddaemon "github.com/coreos/go-systemd/v22/daemon"
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
	"github.com/forecastd/forecastd/sinks"
	"github.com/forecastd/forecastd/sources"
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
// or JetStream) for `run`, sources.Replay (files) for `forecastd replay`.
// Both deliver *sources.Message, settled through the points' Done.
type input interface {
	// Messages is closed once intake has stopped and everything read
	// before was delivered.
	Messages() <-chan *sources.Message
	// StopIntake stops reading; Close then releases the rest (NATS: the
	// last acks are flushed).
	StopIntake(ctx context.Context) error
	Close(ctx context.Context) error
	Stats() sources.Stats
	Connected() bool
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
	output   *natsconn.Reopen // the NATS output connection
	liveState
	// sinks are the registered kinds of sink the configuration opened,
	// in registration order; the series write to out (their Tee),
	// through gate.
	sinks    []openSink
	gate     *sinks.Gate
	history  *history.Influx // nil without [history]
	out      sinks.Writer
	runner   *pipeline.Runner
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

	// The NATS input hands its points to the runner itself (deliver, on
	// its reading goroutines); other inputs (replay, partitions) through
	// the dispatcher, which reads their Messages.
	dispatchCtx    context.Context // cancelled when the shutdown deadline passes
	cancelDispatch context.CancelFunc
	dispatched     chan struct{} // made with the dispatcher, closed when it has exited; nil without one
	wg             sync.WaitGroup
	bg             chan struct{} // closed to stop the watchdog
	dropLogEvery   time.Duration // period of the drop log lines (loops.go); 0: telemetry.DefaultDropLogEvery

	// newInput, when set (forecastd replay), makes the input instead of
	// NATS [input]; pace, when set, is waited for before each message is
	// dispatched (a replay waits for the InfluxDB sink).
	newInput func() (input, error)
	pace     func(context.Context) error
	// backlog, for an input that loses what is not read in time (core
	// NATS), is the share of its buffer in use (sources.Source.Backlog):
	// above shedBacklog points are offered (pipeline.Runner.Offer),
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
// sinks, the runner, then the source (and the dispatcher of an input that
// does not deliver its points itself).
func (d *daemon) start() error {
	cfg := d.cfg
	log := d.log.With("component", "daemon")
	// Before the series' states are restored: they are most of the heap.
	pct, from := memory.SetGCPercent(cfg.Pipeline.GCPercent, os.Getenv("GOGC"))
	log.Info("garbage collector", "gc_percent", pct, "set_by", from)
	servers := cfg.NATS.Servers
	if len(servers) == 0 {
		servers = []string{natsconn.DefaultServer}
	}
	// Every connection authenticates and secures itself as [nats] says.
	auth, err := d.natsOptions()
	if err != nil { // validated by config.Load
		return err
	}
	d.warnExposedSecrets()
	if cfg.NATS.Embedded {
		e, err := cfg.Embedded(servers[0], auth, d.log) // validated by config.Load
		if err != nil {
			return err
		}
		ns, url, err := natsconn.StartEmbedded(e)
		if ns != nil {
			d.embedded = ns
		}
		if err != nil {
			return err
		}
		servers = []string{url}
	}

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
	// The sinks that publish on it (sinks.Replacer) publish on a new
	// connection once the server has closed it; meanwhile they refuse the
	// forecasts, so that under JetStream their points are redelivered
	// rather than acknowledged.
	d.output = &natsconn.Reopen{Name: "nats output", URL: strings.Join(servers, ","), Options: opts,
		Log: d.log.With("component", "sinks"), OnReplace: func(nc *nats.Conn) {
			for _, s := range d.sinks {
				if r, ok := s.Sink.(sinks.Replacer); ok {
					r.Replace(nc)
				}
			}
		}}
	if err := d.output.Connect(d.openSinks); err != nil {
		return err
	}
	tee := make(sinks.Tee, len(d.sinks))
	collectors := []prometheus.Collector{d.gate}
	for i, s := range d.sinks {
		tee[i] = s.Sink
		collectors = append(collectors, s.Sink)
	}
	d.out = tee
	if d.wrapOut != nil {
		d.out = d.wrapOut(d.out)
	}

	var ckptStats func() telemetry.CheckpointStats
	var partStats func() telemetry.PartitionStats
	if cfg.State.JetStream() {
		partStats = func() telemetry.PartitionStats { return d.parts.PartitionStats() }
		ckptStats = func() telemetry.CheckpointStats {
			st := d.parts.CheckpointStats()
			return telemetry.CheckpointStats{Written: st.Written, Deleted: st.Deleted, Errors: st.Errors, Unwritten: st.Unwritten, Discarded: st.Discarded, Queued: st.Queued}
		}
	} else if cfg.State.Dir != "" {
		// d.ckpt is set below (openState), before the server starts.
		ckptStats = func() telemetry.CheckpointStats {
			st := d.ckpt.Stats()
			return telemetry.CheckpointStats{Written: st.Written, Deleted: st.Deleted, Errors: st.Errors, Unwritten: st.Unwritten, Discarded: st.Discarded, Queued: st.Queued}
		}
	}
	// d.src and d.runner are set below, before the server starts.
	collectors = append(collectors,
		sources.NewCollector(func() sources.Stats { return d.src.Stats() }),
		pipeline.NewRunnerCollector(func() pipeline.RunnerStats { return d.runner.Stats() }))
	if cfg.History != nil {
		hc := cfg.HistorySource()
		hc.Logger = d.log
		if d.history, err = history.New(hc); err != nil { // validated by config.Load
			return fmt.Errorf("history: %w", err)
		}
		collectors = append(collectors, pipeline.NewHistoryCollector(
			func() pipeline.HistoryStats { return d.runner.HistoryStats() },
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

	if cfg.State.JetStream() {
		if d.parts, err = d.openPartitioned(servers, auth); err != nil {
			return err
		}
	} else if cfg.State.Dir != "" {
		if err := d.openState(); err != nil {
			return err
		}
	}
	d.restored.Store(true)

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
	if d.runner, err = pipeline.NewRunner(rcfg); err != nil {
		return err
	}

	d.dispatchCtx, d.cancelDispatch = context.WithCancel(context.Background())
	newInput := d.newInput
	if newInput == nil && d.parts != nil {
		newInput = func() (input, error) { return d.parts, d.parts.Start() }
	}
	direct := newInput == nil
	if direct {
		newInput = func() (input, error) {
			s, err := d.natsInput(servers, auth)
			if err != nil {
				return nil, err // not a nil *Source in a non-nil input
			}
			if cfg.Input.JetStream == nil {
				backlog := s.Backlog
				d.backlog.Store(&backlog)
			}
			return s, nil
		}
	}
	if d.src, err = newInput(); err != nil {
		return fmt.Errorf("input: %w", err)
	}
	if d.ckpt != nil || d.parts != nil { // reads d.src (its position): started after it
		d.ckptStop, d.ckptExited = make(chan struct{}), make(chan struct{})
		go d.checkpointLoop(cfg.State.CheckpointInterval.Or(statestore.DefaultCheckpointInterval))
	}
	if !direct {
		// Made here, with the goroutine that closes it: an input that
		// failed to start above leaves none for shutdown to wait on.
		d.dispatched = make(chan struct{})
		go d.dispatch()
	}

	if cfg.HTTP.Listen != "" {
		d.telem = telemetry.NewServer(d.metrics.Handler(), d.log)
		if err := d.telem.Start(cfg.HTTP.Listen); err != nil {
			return fmt.Errorf("http.listen: %w", err)
		}
		d.httpAddr = d.telem.Addr()
		d.log.Info("http listening", "component", "http", "addr", d.httpAddr.String())
		if host, _, err := net.SplitHostPort(cfg.HTTP.Listen); err == nil && !natsconn.IsLoopback(host) {
			d.log.Warn("http listens beyond this host: whoever reaches it can read /metrics (series counts, refusals, model errors, the version); bind 127.0.0.1 or firewall the port",
				"component", "http", "addr", d.httpAddr.String())
		}
	}
	log.Info("forecastd running", "config", d.path, "servers", natsconn.Redact(strings.Join(servers, ",")),
		"nats_auth", cfg.NATS.Method(), "nats_tls", cfg.NATS.TLS(),
		"subjects", cfg.Input.Subjects, "data_format", cfg.Input.DataFormat.String(), "jetstream", cfg.Input.JetStream != nil,
		"outputs", d.sinkNames(), "rules", len(rules))
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
func (d *daemon) rules(cfg *config.Config) (pipeline.Config, []pipeline.Rule, error) {
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
// whole, as before; a flood beyond it never reaches the buffer's end,
// where the client would drop any series' messages.
const shedBacklog = 1.0 / 16

// dispatch hands every message of an input that has no way to deliver
// them itself (replay, partitions) to the runner, until the input's
// channel closes (StopIntake), each paced if the daemon paces (replay).
func (d *daemon) dispatch() {
	defer close(d.dispatched)
	for m := range d.src.Messages() {
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
		_ = submit(ctx, pipeline.Input{
			Key:   p.Key,
			Point: pipeline.Point{Time: p.Time, Value: p.Value},
			Msg:   m,
			Index: i,
			Seq:   m.Sequence,
		})
		d.submitted.Add(1)
	}
}

// Open implements pipeline.Outputs: a series' records are labelled with its
// model, the subject of its first point and, for line protocol, its tags.
func (d *daemon) Open(key string, cfg pipeline.Config, in *pipeline.Input) pipeline.Sink {
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

// serve handles signals until SIGTERM or SIGINT, then shuts down.
func (d *daemon) serve(sigs <-chan os.Signal) error {
	d.bg = make(chan struct{})
	d.wg.Add(2)
	go d.dropLoop()
	go d.confirmLoop()
	if d.history != nil {
		d.wg.Add(1)
		go d.warmLoop()
	}
	if iv, err := sddaemon.SdWatchdogEnabled(false); err == nil && iv > 0 {
		d.wg.Add(1)
		go d.watchdog(iv / 2)
	}
	if b := d.cfg.Pipeline.MemoryBudget; b.N > 0 {
		memory.SetLimit(uint64(b.N), os.Getenv("GOMEMLIMIT"))
		d.wg.Add(1)
		go d.budgetLoop(uint64(b.N))
	}
	if d.ready != nil {
		d.ready(d)
	}
	// READY=1 once ready as /-/ready says (state restored, both NATS
	// connections up): until then systemd shows the unit activating,
	// with a STATUS saying what it waits for.
	poll := time.NewTicker(readyPoll)
	defer poll.Stop()
	pollC := poll.C
	waiting := ""
	checkReady := func() {
		ok, why := d.readiness()
		if ok {
			d.notify(sddaemon.SdNotifyReady)
			d.notify("STATUS=running")
			d.log.Info("forecastd ready", "component", "daemon")
			poll.Stop()
			pollC = nil
			return
		}
		if why != waiting {
			waiting = why
			d.notify("STATUS=waiting: " + why)
			d.log.Info("forecastd not ready yet", "component", "daemon", "reason", why)
		}
	}
	checkReady()
	var fatal <-chan error // a partition's lease lost (internal/partition)
	var fatalErr error
	if d.parts != nil {
		fatal = d.parts.Fatal()
	}
	// A SIGHUP's reading of the file runs off this loop, one at a time,
	// each SIGHUP a reading of its own; the loop applies what it read.
	// Past reloadTimeout a reading is given up (its result, if it ever
	// comes, is dropped) and the next one starts: nothing a signal asks
	// can keep the loop from the next signal.
	var (
		reading   chan reloadRead // the reading under way, nil if none
		readSince <-chan time.Time
		hups      int // SIGHUPs waiting for a reading
		timeout   = cmp.Or(d.reloadTimeout, defaultReloadTimeout)
	)
	nextRead := func() {
		if reading != nil || hups == 0 {
			return
		}
		hups--
		reading = make(chan reloadRead, 1) // its goroutine never waits
		read := d.readConfig
		if read == nil {
			read = func(path string) (*config.Config, error) { return config.Load(path, config.DaemonChecks) }
		}
		go func(out chan<- reloadRead) {
			cfg, err := read(d.path)
			out <- reloadRead{cfg, err}
		}(reading)
		readSince = time.After(timeout)
	}
loop:
	for {
		select {
		case fatalErr = <-fatal:
			d.log.Error("stopping: this instance no longer holds a partition it was learning", "component", "daemon", "err", fatalErr)
			break loop
		case <-pollC:
			checkReady()
		case r := <-reading:
			reading, readSince = nil, nil
			d.reload(r.cfg, r.err)
			nextRead()
		case <-readSince:
			d.log.Error("reload failed; the running configuration stays", "component", "daemon", "config", d.path,
				"err", fmt.Errorf("reading the file has not returned after %v (a hung file system?); given up", timeout))
			reading, readSince = nil, nil
			nextRead()
		case sig, ok := <-sigs:
			if !ok {
				break loop
			}
			if sig == syscall.SIGHUP {
				hups++
				nextRead()
				continue
			}
			d.log.Info("stopping", "component", "daemon", "signal", sig.String(), "deadline", d.shutdownTimeout())
			break loop
		}
	}
	d.notify(sddaemon.SdNotifyStopping)
	ctx, cancel := context.WithTimeout(context.Background(), d.shutdownTimeout())
	defer cancel()
	start := time.Now()
	if reading != nil { // not applied, but waited for, within the deadline
		select {
		case <-reading:
		case <-ctx.Done():
		}
	}
	err := errors.Join(fatalErr, d.shutdown(ctx))
	if err != nil {
		d.log.Error("stopped with errors", "component", "daemon", "err", err, "took", time.Since(start))
		return err
	}
	d.log.Info("stopped", "component", "daemon", "took", time.Since(start))
	return nil
}

func (d *daemon) notify(state string) {
	if _, err := sddaemon.SdNotify(false, state); err != nil {
		d.log.Warn("sd_notify", "component", "daemon", "state", state, "err", err)
	}
}

// watchdog tells systemd every interval that the daemon lives, as long as
// it does (live): otherwise systemd restarts it once WatchdogSec passes.
func (d *daemon) watchdog(every time.Duration) {
	defer d.wg.Done()
	t := time.NewTicker(every)
	defer t.Stop()
	var last uint64
	dead := ""
	for {
		select {
		case <-d.bg:
			return
		case <-t.C:
			ok, why := d.live(&last)
			if ok {
				d.notify(sddaemon.SdNotifyWatchdog)
			} else if why != dead {
				d.log.Error("not alive: the systemd watchdog is no longer told the daemon lives", "component", "daemon", "reason", why)
			}
			dead = why
		}
	}
}

// defaultReloadTimeout bounds a SIGHUP's reading of the configuration
// file.
const defaultReloadTimeout = 10 * time.Second

// reloadRead is what a SIGHUP's reading of the file found.
type reloadRead struct {
	cfg *config.Config
	err error
}

// reload applies cfg, the configuration file read again (or err, why it
// could not be), on serve's goroutine: [model] and [[rules]] to series
// created from now on; an invalid file changes nothing.
func (d *daemon) reload(cfg *config.Config, err error) {
	log := d.log.With("component", "daemon", "config", d.path)
	if err != nil {
		log.Error("reload failed; the running configuration stays", "err", err)
		return
	}
	def, rules, err := d.rules(cfg)
	if err == nil {
		err = d.runner.SetRules(def, rules)
	}
	if err != nil {
		log.Error("reload failed; the running configuration stays", "err", err)
		return
	}
	running := cmp.Or(d.reloaded, d.cfg)
	changed, restart := config.Changes(running, cfg)
	for _, t := range restart {
		log.Warn("reload: changes to this table take effect at the next start", "table", t)
	}
	// Only [model] and [[rules]] were applied: keep the rest as running.
	applied := *running
	applied.Model, applied.Rules = cfg.Model, cfg.Rules
	d.reloaded = &applied
	if len(changed) == 0 {
		log.Info("reloaded: [model] and [[rules]] unchanged")
		return
	}
	log.Info("reloaded: new series take the new [model] and [[rules]]", "changed", changed)
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
