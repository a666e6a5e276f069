package runner

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"log/slog"
	"math"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"golang.org/x/time/rate"

	"github.com/forecastd/forecastd/internal/retry"
	"github.com/forecastd/forecastd/pipeline"
	"github.com/forecastd/forecastd/svr"
)

// Errors a Runner hands to Acker.Done for points it did not process, and
// returns from Submit.
var (
	// ErrClosed: the runner was closed before the point was queued.
	ErrClosed = errors.New("pipeline: runner closed")
	// ErrQueueFull: TrySubmit found the series' shard queue full.
	ErrQueueFull = errors.New("pipeline: shard queue full")
	// ErrShutdown: the point was still queued when Close's deadline
	// passed.
	ErrShutdown = errors.New("pipeline: abandoned at shutdown")
	// ErrHeld: the series holds its newer points until the forecast a
	// sink refused has been sent (RunnerConfig.RedeliveryHold).
	ErrHeld = errors.New("pipeline: series held until its refused forecast is redelivered")
)

// Acker is told once per point what became of it. sources.Message
// implements it: its last Done acks the JetStream message, or naks it if a
// point failed.
type Acker interface {
	// Done is called once for each point submitted with this Acker, from
	// the point's shard goroutine: err == nil once the point's outcome
	// and forecast (if any) have been accepted by the series' Sink, or
	// the point was deliberately skipped (a duplicate or out-of-order
	// point, which a redelivery would not change); non-nil when the Sink
	// refused them or the point was dropped (ErrQueueFull, ErrShutdown,
	// ErrClosed).
	Done(err error)
}

// Input is one point handed to a Runner.
type Input struct {
	// Key is the series key; it selects the shard and the rules.
	Key string
	// Point is the observation.
	Point pipeline.Point
	// Msg, if not nil, is told what became of the point (see Acker), and
	// is passed to Outputs.Open with Index when the point starts a series.
	Msg Acker
	// Index is the point's index in Msg, for Outputs.Open and Origin.
	Index int
	// Seq is the point's position in a replayable input (the JetStream
	// stream sequence of its message), 0 if it has none. A series records
	// the highest applied in its checkpoint (SeriesState.Seq); a series
	// restored from a checkpoint skips, as already applied, the points
	// whose Seq is not above the checkpoint's (Stats.Replayed).
	Seq uint64
}

// Origin is where a point came from: the subject (or file) it arrived
// on and, for line protocol, its measurement, field and tags.
type Origin struct {
	Subject            string
	Measurement, Field string
	// Tags are sorted by key; shared, not to be modified.
	Tags []pipeline.Tag
}

// Originer is the optional capability of an Input's Msg that says where
// its points came from (sources.Message has it): a series' records are
// labelled, and its past looked up, by its first point's Origin.
type Originer interface {
	// Origin returns where the point at index came from.
	Origin(index int) Origin
}

// Origin returns where in's point came from, as its Msg says if it is an
// Originer; else the zero Origin. The Runner asks only when the point
// creates a series, so that the points do not carry it.
func (in *Input) Origin() Origin {
	if o, ok := in.Msg.(Originer); ok {
		return o.Origin(in.Index)
	}
	return Origin{}
}

// Outputs is what a Runner emits to: it gives each new series its Sink.
// The daemon's implementation labels the series' records (model, subject,
// source tags) and tees them to NATS and InfluxDB.
type Outputs interface {
	// Open returns the Sink of the series key, created by its first point
	// in, with configuration cfg: in.Key's own series, or one of its
	// resolutions' (key pipeline.ResolutionKey(in.Key, cfg.Step); see Rule). It is called on the series' shard
	// goroutine, and the Sink is used only there, until the series is
	// evicted. Sink calls must not block on the network: a Sink accepts
	// (buffers) or refuses, and the runner acknowledges the point
	// accordingly.
	Open(key string, cfg pipeline.Config, in *Input) pipeline.Sink
}

// Rule overrides the default configuration for the series whose key matches
// Match, a glob in Telegraf's dialect (internal/keyglob: '*' matches any
// run of characters, '/' included, '?' one character, '[…]' a class,
// '{a,b}' either alternative).
//
// A rule with Resolution set instead adds a series: every series whose key
// matches is also forecast at the rule's step (Config.Step > 0), by a
// series of its own, keyed pipeline.ResolutionKey(key, step), with its own model
// and state. Such rules do not take part in choosing a series' own
// configuration; their steps must differ.
type Rule struct {
	Match      string
	Config     pipeline.Config
	Resolution bool
}

// Defaults of RunnerConfig.
const (
	// DefaultQueueSize is a quarter of what it was when a shard ran per
	// CPU: with DefaultShards' four a CPU the points a host can queue
	// stay what they were (2 × 4096 per CPU and lane).
	DefaultQueueSize = 1024
	DefaultIdleTTL   = time.Hour
	// DefaultMaxSeries bounds the series held when RunnerConfig.MaxSeries
	// is zero, and with it the memory (what a series costs is measured in
	// BENCHMARKS.md, "Memory per series").
	DefaultMaxSeries = 100_000
)

// DefaultShards is the number of shards when RunnerConfig.Shards is 0:
// four for each CPU the Go scheduler runs goroutines on (GOMAXPROCS), at
// most MaxShards. A shard publishes each of its forecasts itself and
// waits while the output's lock or socket is taken; with one shard a
// CPU that wait left the CPU idle, and at 100 000 default series 2
// shards on 2 CPUs answered 37 000 points/s where 8 answer 44 000–45 000
// (BENCHMARKS.md, "Shards").
func DefaultShards() int { return min(4*runtime.GOMAXPROCS(0), MaxShards) }

// RunnerConfig configures a Runner. Zero fields take the defaults named.
type RunnerConfig struct {
	// Shards is the number of goroutines the series are spread over by a
	// hash of their key (default DefaultShards). Config key `shards`.
	Shards int
	// QueueSize bounds each of a shard's two queues of points (default
	// DefaultQueueSize): one of the points of the series it holds, served
	// first, and one of the points that create series. Config key
	// `queue_size`.
	QueueSize int
	// MaxSeries bounds the number of series held, over all shards
	// (default DefaultMaxSeries): each shard holds at most its share,
	// MaxSeries/Shards (the first MaxSeries%Shards shards one more), and
	// Shards is lowered to MaxSeries if above it. When a new series would
	// exceed its shard's share, the shard evicts its least recently used
	// series (Stats.EvictedLRU) in O(1), having handed its state to
	// Checkpoints first if there are any, so that it resumes where it
	// was if it comes back. Why evict rather than refuse: a flood of new
	// keys then costs the series unused for longest, never the live
	// ones, and a legitimate new series is not locked out for IdleTTL by
	// series that stopped. Why shares rather than one global LRU: each
	// shard owns its series outright (no lock), and the hash spreads keys
	// evenly. Config key `max_series`.
	MaxSeries int
	// IdleTTL: a series that has received no point for this long (by the
	// wall clock, Now) is evicted, its state forgotten (default
	// DefaultIdleTTL; negative never evicts). Config key `idle_ttl`.
	IdleTTL time.Duration
	// RedeliveryHold is for inputs that redeliver a point whose Done had
	// an error (JetStream): when a sink refuses a series' forecast, the
	// series refuses its newer points (ErrHeld, unlearned, so that they
	// are redelivered too) until the refused point comes again and its
	// forecast is accepted, or for at most RedeliveryHold; so that no
	// point is acknowledged before its forecast was accepted, and none is
	// lost. Zero: a series goes on learning (inputs that never
	// redeliver, core NATS).
	RedeliveryHold time.Duration
	// Default is the configuration of a series no rule matches.
	Default pipeline.Config
	// Rules are tried in order when a series is created; the first whose
	// Match matches the key gives its configuration.
	Rules []Rule
	// Outputs makes each series' Sink. Required.
	Outputs Outputs
	// Logger receives series creation and eviction (Debug), refusals and
	// sink errors (Warn, at most once a second); nil discards. Keys
	// component, series, err.
	Logger *slog.Logger
	// Now is the wall clock of idle eviction and of the buckets' grace;
	// nil is time.Now.
	Now func() time.Time
	// bucketTick is how often a shard closes the buckets past their
	// grace; 0 is bucketTickEvery (tests tick faster).
	bucketTick time.Duration
	// Checkpoints, if not nil, keeps the series' states across restarts
	// (see Checkpointer): a new series takes its saved state, Checkpoint
	// and Close hand the states of the series changed since their last
	// checkpoint to it, and an evicted series' checkpoint is forgotten.
	Checkpoints Checkpointer
	// CheckpointBatch bounds the series a shard exports in one step of a
	// checkpoint (default DefaultCheckpointBatch); steps are interleaved
	// with the shard's points, so that a checkpoint of many series
	// delays a point by at most one step.
	CheckpointBatch int
	// History, with a Source, warms a new series without a checkpoint
	// from its past before its first live point (see HistoryConfig):
	// its input series' live points wait, bounded, while the past is
	// loaded off the shard, and other series are not held.
	History HistoryConfig
}

// RunnerStats counts what a Runner has done, totals since NewRunner.
type RunnerStats struct {
	// Submitted counts points handed to Submit and TrySubmit.
	Submitted uint64
	// Processed counts points a series took (accepted or dropped by it).
	Processed uint64
	// OutOfOrder counts points a series dropped for a time not after its
	// previous point's (duplicates and redeliveries included).
	OutOfOrder uint64
	// Implausible counts points a series refused for a change beyond what
	// its scale makes plausible (pipeline.ErrImplausible): settled, not
	// redelivered, since a redelivery would be refused the same.
	Implausible uint64
	// Forecasts and Outcomes count what was emitted to the sinks.
	Forecasts, Outcomes uint64
	// SinkErrors counts points whose outcome or forecast a Sink refused.
	SinkErrors uint64
	// Reemitted counts forecasts sent again when the point that made
	// them, whose first emission a sink refused, was delivered again.
	Reemitted uint64
	// Held counts points refused because their series was held
	// (RedeliveryHold).
	Held uint64
	// Late counts raw points dropped, with a step, for a bucket already
	// closed; BucketsClosed the buckets closed by their grace period
	// (Config.StepGrace) rather than by a point of the next bucket.
	Late, BucketsClosed uint64
	// Overflow counts buckets closed without a point because their
	// value, a sum or a rate, was beyond float64 (Stats.Overflow).
	Overflow uint64
	// DroppedQueueFull and DroppedShutdown count points dropped
	// unprocessed, by reason; DroppedClosed those submitted after Close,
	// or whose Submit gave up when its context ended. No point is dropped
	// at MaxSeries: a series is evicted instead (EvictedLRU).
	DroppedQueueFull, DroppedShutdown, DroppedClosed uint64
	// SeriesCreated and SeriesEvicted count series made and evicted for
	// idleness; EvictedLRU counts series evicted, least recently used
	// first, to make room under MaxSeries; SeriesActive is the number
	// held now.
	SeriesCreated, SeriesEvicted, EvictedLRU uint64
	// EvictedUnsaved counts series evicted at MaxSeries whose state the
	// Checkpointer refused (EvictionSaver): lost.
	EvictedUnsaved uint64
	SeriesActive   int64
	// SeriesLimit is the bound SetSeriesLimit set (a memory budget's),
	// 0 if none: the series held are then at most MaxSeries.
	SeriesLimit int64
	// Restored counts series restored from a checkpoint; RestoreFailed
	// those whose checkpoint could not be restored (another
	// configuration, a bad state), which started afresh.
	Restored, RestoreFailed uint64
	// Replayed counts points skipped by a restored series because their
	// Seq was not above its checkpoint's: applied before the restart.
	Replayed uint64
	// Checkpointed counts states handed to Checkpointer.Save;
	// CheckpointErrors the series whose Export failed.
	Checkpointed, CheckpointErrors uint64
	// Models counts what the series' models did, by model kind: one
	// entry per kind registered when the Runner was made, in Kind order.
	Models []ModelStats
	// KernelCache is the AOSVR models' kernel cache, process-wide
	// (svr.ColumnCache).
	KernelCache svr.ColumnCacheStats
}

// ModelStats counts what the models of one kind did since NewRunner,
// summed over their series (evicted ones included; what a restored
// series counted before its checkpoint is not).
type ModelStats struct {
	// Kind is the model kind counted.
	Kind pipeline.Kind
	// LearnErrors and PredictErrors sum the series' Stats.LearnErrors
	// (updates the model refused, leaving it unchanged) and
	// Stats.PredictErrors (predictions that failed or were not finite:
	// no forecast was made).
	LearnErrors, PredictErrors uint64
	// Events sums the counters of the models that report them (AOSVR's
	// degenerate-case ladder, svr.AOSVRStats); Reports says whether the
	// kind's models do.
	Events  svr.AOSVRStats
	Reports bool
}

// ladderStats is the optional capability of a Model that reports its
// degenerate-case ladder (AOSVR's), found by type assertion.
type ladderStats interface{ Stats() svr.AOSVRStats }

// modelCounts are ModelStats' atomics, for one kind.
type modelCounts struct {
	learnErrors, predictErrors                                 atomic.Uint64
	refreshes, rebuilds, refused, repairs, rollbacks, failures atomic.Uint64
	maxDrift                                                   atomic.Uint64 // float64 bits
	reports                                                    atomic.Bool
}

// Runner runs many series' pipelines: series are sharded by a hash of their
// key over a fixed set of goroutines, each owning its series map outright
// (no lock around a model), fed by a bounded queue. A series is created on
// its first point from the rules in force then (SetRules changes them for
// new series only), and evicted when idle.
//
// Submit and TrySubmit are safe for concurrent use; points of one series
// are processed in the order they were submitted by one goroutine.
type Runner struct {
	cfg    RunnerConfig
	log    *slog.Logger
	now    func() time.Time
	seed   maphash.Seed
	shards []*shard
	rules  atomic.Pointer[ruleSet]

	mu        sync.RWMutex // closed vs. sends on the queues
	closed    bool
	abort     chan struct{} // closed when Close's deadline passes
	abortOnce sync.Once
	wg        sync.WaitGroup

	series atomic.Int64 // held, all shards
	// limit is SetSeriesLimit's bound on the series held, 0 for none
	// (MaxSeries alone).
	limit atomic.Int64
	stats struct {
		submitted, processed, outOfOrder, forecasts, outcomes, sinkErrors, reemitted, held, late, bucketsClosed atomic.Uint64
		dropQueue, dropShutdown, dropClosed, created, evicted, evictedLRU                                       atomic.Uint64
		restored, restoreFailed, replayed, checkpointed, checkpointErrors, evictedUnsaved                       atomic.Uint64
		implausible, overflow                                                                                   atomic.Uint64
	}
	models           []modelCounts // by Kind, the kinds registered at NewRunner
	errLog, modelLog *rate.Limiter // once a second

	// hist is RunnerConfig.History with its defaults; histq queues the
	// jobs of its workers (hwg), which stop when histCtx ends; primes
	// holds a token per worker making and priming a series.
	hist       HistoryConfig
	histq      chan histJob
	primes     chan struct{}
	histPace   *rate.Limiter // spaces the Loads' starts (HistoryConfig.Rate)
	histCtx    context.Context
	histCancel context.CancelFunc
	hwg        sync.WaitGroup
	histStats  struct {
		requested, warmed, points atomic.Uint64
		cold                      [nCold]atomic.Uint64
		dropped                   [nHistDrop]atomic.Uint64
		waiting, bytes            atomic.Int64
	}
	histLog     [nCold]*rate.Limiter // once a second
	histDropLog *rate.Limiter
}

// NewRunner validates cfg and starts the shards' goroutines. Close it.
func NewRunner(cfg RunnerConfig) (*Runner, error) {
	var errs []error
	if cfg.Outputs == nil {
		errs = append(errs, errors.New("pipeline: runner: Outputs is required"))
	}
	if cfg.Shards < 0 || cfg.QueueSize < 0 || cfg.MaxSeries < 0 {
		errs = append(errs, fmt.Errorf("%w: shards, queue_size and max_series must not be negative", pipeline.ErrBadConfig))
	}
	rs, err := newRuleSet(cfg.Default, cfg.Rules)
	if err != nil {
		errs = append(errs, err)
	}
	hc, err := cfg.History.withDefaults()
	if err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if cfg.Shards == 0 {
		cfg.Shards = DefaultShards()
	}
	if cfg.QueueSize == 0 {
		cfg.QueueSize = DefaultQueueSize
	}
	if cfg.MaxSeries == 0 {
		cfg.MaxSeries = DefaultMaxSeries
	}
	cfg.Shards = min(cfg.Shards, cfg.MaxSeries)
	if cfg.IdleTTL == 0 {
		cfg.IdleTTL = DefaultIdleTTL
	}
	if cfg.CheckpointBatch <= 0 {
		cfg.CheckpointBatch = DefaultCheckpointBatch
	}
	r := &Runner{cfg: cfg, log: cfg.Logger, now: cfg.Now, seed: maphash.MakeSeed(), abort: make(chan struct{}),
		models: make([]modelCounts, len(pipeline.ModelKinds())),
		errLog: retry.Every(time.Second), modelLog: retry.Every(time.Second), histDropLog: retry.Every(time.Second)}
	for i := range r.histLog {
		r.histLog[i] = retry.Every(time.Second)
	}
	if r.log == nil {
		r.log = slog.New(slog.DiscardHandler)
	}
	r.log = r.log.With("component", "pipeline")
	if r.now == nil {
		r.now = time.Now
	}
	r.rules.Store(rs)
	r.hist = hc
	if hc.Source != nil {
		r.startHistory()
	}
	r.shards = make([]*shard, cfg.Shards)
	for i := range r.shards {
		sh := &shard{r: r, fast: make(chan Input, cfg.QueueSize), slow: make(chan Input, cfg.QueueSize),
			ckpt: make(chan chan struct{}, 1), shrink: make(chan struct{}, 1), shed: make(chan int64, 1), series: make(map[string]*entry), keys: make(map[uint64]keyState)}
		if hc.Source != nil {
			sh.hist = make(chan histResult, hc.Concurrency)
		}
		sh.exited = make(chan struct{})
		sh.pools = svr.NewPools(cfg.Shards)
		sh.lru.prev, sh.lru.next = &sh.lru, &sh.lru
		sh.maxShare = cfg.MaxSeries / cfg.Shards
		if i < cfg.MaxSeries%cfg.Shards {
			sh.maxShare++
		}
		r.shards[i] = sh
		r.wg.Add(1)
		go sh.run()
	}
	return r, nil
}

func (r *Runner) hash(key string) uint64 { return maphash.String(r.seed, key) }

func (r *Runner) shardOf(key string) *shard {
	return r.shards[r.hash(key)%uint64(len(r.shards))]
}

// Offer queues in as Submit does if its series is held, waiting while
// its shard's queue of held series is full until ctx is done; a point of
// a series not held is queued only if there is room in the shard's queue
// of new series, and otherwise dropped at once (ErrQueueFull, counted in
// DroppedQueueFull, in.Msg.Done told). For an input that loses what it
// cannot read in time (core NATS): a flood of new series then never holds
// up the series already held, whose points have a queue of their own. A
// point of a series created but not yet held (its first point still
// queued) counts as new.
func (r *Runner) Offer(ctx context.Context, in Input) error { return r.queue(ctx, in, queueOffer) }

// Submit queues in on its series' shard, waiting while the queue is full
// until ctx is done. It returns nil once queued (the shard then calls
// in.Msg.Done), or ErrClosed or ctx's error, having called in.Msg.Done
// with that error.
func (r *Runner) Submit(ctx context.Context, in Input) error { return r.queue(ctx, in, queueWait) }

// TrySubmit queues in on its series' shard if there is room, and reports
// whether it did; a point it could not queue is dropped, counted, and
// in.Msg.Done is called with ErrQueueFull (or ErrClosed).
func (r *Runner) TrySubmit(in Input) bool {
	return r.queue(context.Background(), in, queueTry) == nil
}

// How queue waits for room: always, never, or only for a held series.
const (
	queueWait = iota
	queueTry
	queueOffer
)

// queue is Submit, TrySubmit and Offer: it counts in and queues it on its
// shard, in the lane its key takes (shard.lane).
func (r *Runner) queue(ctx context.Context, in Input, mode int) error {
	h := r.hash(in.Key)
	sh := r.shards[h%uint64(len(r.shards))]
	r.stats.submitted.Add(1)
	r.mu.RLock()
	defer r.mu.RUnlock()
	if r.closed {
		r.stats.dropClosed.Add(1)
		done(in, ErrClosed)
		return ErrClosed
	}
	q, slow := sh.lane(h)
	select {
	case q <- in:
		return nil
	default:
	}
	if mode == queueTry || mode == queueOffer && slow {
		if slow {
			sh.slowDone(h)
		}
		r.stats.dropQueue.Add(1)
		done(in, ErrQueueFull)
		return ErrQueueFull
	}
	select {
	case q <- in:
		return nil
	case <-ctx.Done():
		if slow {
			sh.slowDone(h)
		}
		r.stats.dropClosed.Add(1)
		err := fmt.Errorf("pipeline: submit: %w", ctx.Err())
		done(in, err)
		return err
	}
}

func done(in Input, err error) {
	if in.Msg != nil {
		in.Msg.Done(err)
	}
}

// Close stops taking points (Submit then returns ErrClosed) and lets the
// shards process what is queued; if ctx ends first, the points still queued
// are dropped (ErrShutdown, counted) and ctx's error is returned. Either way
// Close returns only after every shard goroutine has exited, so that the
// caller may then flush the sinks. Safe to call more than once.
func (r *Runner) Close(ctx context.Context) error {
	r.mu.Lock()
	if !r.closed {
		r.closed = true
		for _, sh := range r.shards {
			close(sh.fast)
			close(sh.slow)
		}
	}
	r.mu.Unlock()
	exited := make(chan struct{})
	go func() { r.wg.Wait(); r.stopHistory(); close(exited) }()
	select {
	case <-exited:
		return nil
	case <-ctx.Done():
	}
	r.abortOnce.Do(func() { close(r.abort) })
	<-exited
	return fmt.Errorf("pipeline: close: %w", ctx.Err())
}

// Stats returns the runner's counters.
func (r *Runner) Stats() RunnerStats {
	s := &r.stats
	st := RunnerStats{
		Submitted:        s.submitted.Load(),
		Processed:        s.processed.Load(),
		OutOfOrder:       s.outOfOrder.Load(),
		Implausible:      s.implausible.Load(),
		Forecasts:        s.forecasts.Load(),
		Outcomes:         s.outcomes.Load(),
		SinkErrors:       s.sinkErrors.Load(),
		Reemitted:        s.reemitted.Load(),
		Held:             s.held.Load(),
		Late:             s.late.Load(),
		Overflow:         s.overflow.Load(),
		BucketsClosed:    s.bucketsClosed.Load(),
		DroppedQueueFull: s.dropQueue.Load(),
		DroppedShutdown:  s.dropShutdown.Load(),
		DroppedClosed:    s.dropClosed.Load(),
		SeriesCreated:    s.created.Load(),
		SeriesEvicted:    s.evicted.Load(),
		EvictedLRU:       s.evictedLRU.Load(),
		EvictedUnsaved:   s.evictedUnsaved.Load(),
		SeriesActive:     r.series.Load(),
		SeriesLimit:      r.limit.Load(),
		Restored:         s.restored.Load(),
		RestoreFailed:    s.restoreFailed.Load(),
		Replayed:         s.replayed.Load(),
		Checkpointed:     s.checkpointed.Load(),
		CheckpointErrors: s.checkpointErrors.Load(),
		Models:           make([]ModelStats, len(r.models)),
		KernelCache:      svr.ColumnCache(),
	}
	r.modelStats(&st)
	return st
}

// modelStats fills in st.Models.
func (r *Runner) modelStats(st *RunnerStats) {
	for i := range r.models {
		c := &r.models[i]
		st.Models[i] = ModelStats{
			Kind:          pipeline.Kind(i),
			LearnErrors:   c.learnErrors.Load(),
			PredictErrors: c.predictErrors.Load(),
			Events: svr.AOSVRStats{
				Refreshes: c.refreshes.Load(),
				MaxDrift:  math.Float64frombits(c.maxDrift.Load()),
				Rebuilds:  c.rebuilds.Load(),
				Refused:   c.refused.Load(),
				Repairs:   c.repairs.Load(),
				Rollbacks: c.rollbacks.Load(),
				Failures:  c.failures.Load(),
			},
			Reports: c.reports.Load(),
		}
	}
}

// warn logs at most once a second.
func (r *Runner) warn(msg string, args ...any) {
	if r.errLog.Allow() {
		r.log.Warn(msg, args...)
	}
}

// MaxLoggedKey is the length at which Truncate cuts a series key (or any
// value a publisher chose) for a log line or an error message.
const MaxLoggedKey = 128

// Truncate returns s if it is at most MaxLoggedKey bytes long, else its
// first MaxLoggedKey bytes (cut at a UTF-8 boundary) followed by "…" and
// its length, e.g. "aaaa…(1048576 bytes)", so that a log line stays
// short whatever a publisher sent.
func Truncate(s string) string {
	if len(s) <= MaxLoggedKey {
		return s
	}
	n := MaxLoggedKey
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…(" + strconv.Itoa(len(s)) + " bytes)"
}
