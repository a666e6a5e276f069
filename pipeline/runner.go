package pipeline

import (
	"cmp"
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

	"github.com/forecastd/forecastd/internal/keyglob"
	"github.com/forecastd/forecastd/internal/retry"
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
	Point Point
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
	Tags []Tag
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

// Tag is one source tag (an InfluxDB tag), unescaped.
type Tag struct {
	Key, Value string
}

// Outputs is what a Runner emits to: it gives each new series its Sink.
// The daemon's implementation labels the series' records (model, subject,
// source tags) and tees them to NATS and InfluxDB.
type Outputs interface {
	// Open returns the Sink of the series key, created by its first point
	// in, with configuration cfg: in.Key's own series, or one of its
	// resolutions' (key ResolutionKey(in.Key, cfg.Step); see Rule). It is called on the series' shard
	// goroutine, and the Sink is used only there, until the series is
	// evicted. Sink calls must not block on the network: a Sink accepts
	// (buffers) or refuses, and the runner acknowledges the point
	// accordingly.
	Open(key string, cfg Config, in *Input) Sink
}

// Rule overrides the default configuration for the series whose key matches
// Match, a glob in Telegraf's dialect (internal/keyglob: '*' matches any
// run of characters, '/' included, '?' one character, '[…]' a class,
// '{a,b}' either alternative).
//
// A rule with Resolution set instead adds a series: every series whose key
// matches is also forecast at the rule's step (Config.Step > 0), by a
// series of its own, keyed ResolutionKey(key, step), with its own model
// and state. Such rules do not take part in choosing a series' own
// configuration; their steps must differ.
type Rule struct {
	Match      string
	Config     Config
	Resolution bool
}

// ResolutionKey is the key of the series forecasting key at step, added
// by a Resolution rule (the key of its state and its sink's series).
func ResolutionKey(key string, step time.Duration) string { return key + "@" + step.String() }

// Defaults of RunnerConfig.
const (
	DefaultQueueSize = 4096
	DefaultIdleTTL   = time.Hour
	// DefaultMaxSeries bounds the series held when RunnerConfig.MaxSeries
	// is zero, and with it the memory (what a series costs is measured in
	// BENCHMARKS.md, "Memory per series").
	DefaultMaxSeries = 100_000
)

// RunnerConfig configures a Runner. Zero fields take the defaults named.
type RunnerConfig struct {
	// Shards is the number of goroutines the series are spread over by a
	// hash of their key (default GOMAXPROCS). Config key `shards`.
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
	Default Config
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
}

// ModelStats counts what the models of one kind did since NewRunner,
// summed over their series (evicted ones included; what a restored
// series counted before its checkpoint is not).
type ModelStats struct {
	// Kind is the model kind counted.
	Kind Kind
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

type ruleSet struct {
	def         Config
	rules       []Rule
	globs       []keyglob.Glob // rules[i].Match compiled
	resolutions []Rule         // the Resolution rules
	resGlobs    []keyglob.Glob // their matches compiled
}

// NewRunner validates cfg and starts the shards' goroutines. Close it.
func NewRunner(cfg RunnerConfig) (*Runner, error) {
	var errs []error
	if cfg.Outputs == nil {
		errs = append(errs, errors.New("pipeline: runner: Outputs is required"))
	}
	if cfg.Shards < 0 || cfg.QueueSize < 0 || cfg.MaxSeries < 0 {
		errs = append(errs, fmt.Errorf("%w: shards, queue_size and max_series must not be negative", ErrBadConfig))
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
		cfg.Shards = runtime.GOMAXPROCS(0)
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
		models: make([]modelCounts, len(ModelKinds())),
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
			ckpt: make(chan chan struct{}, 1), shrink: make(chan struct{}, 1), series: make(map[string]*entry), keys: make(map[uint64]keyState)}
		if hc.Source != nil {
			sh.hist = make(chan histResult, hc.Concurrency)
		}
		sh.exited = make(chan struct{})
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

func newRuleSet(def Config, rules []Rule) (*ruleSet, error) {
	var errs []error
	if err := def.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("default: %w", err))
	}
	rs := &ruleSet{def: def}
	steps := map[time.Duration]bool{}
	for i, ru := range rules {
		g, err := keyglob.Compile(ru.Match)
		if err != nil {
			errs = append(errs, fmt.Errorf("%w: rules[%d].match %q: %v", ErrBadConfig, i, ru.Match, err))
		}
		if err := ru.Config.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("rules[%d] (match %q): %w", i, ru.Match, err))
		}
		if !ru.Resolution {
			rs.rules, rs.globs = append(rs.rules, ru), append(rs.globs, g)
			continue
		}
		if ru.Config.Step <= 0 {
			errs = append(errs, fmt.Errorf("%w: resolution %d (match %q): step must be set", ErrBadConfig, len(rs.resolutions), ru.Match))
		} else if steps[ru.Config.Step] {
			errs = append(errs, fmt.Errorf("%w: resolution %d (match %q): step %v twice", ErrBadConfig, len(rs.resolutions), ru.Match, ru.Config.Step))
		}
		steps[ru.Config.Step] = true
		rs.resolutions, rs.resGlobs = append(rs.resolutions, ru), append(rs.resGlobs, g)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return rs, nil
}

// resolution returns the configuration of the series that forecasts key
// at the k-th resolution rule, nil if the rule does not match key.
func (rs *ruleSet) resolution(k int, key string) *Config {
	if rs.resGlobs[k].Match(key) {
		return &rs.resolutions[k].Config
	}
	return nil
}

// config returns the configuration of a new series key, shared by every
// series the rule set made with it: read only.
func (rs *ruleSet) config(key string) *Config {
	for i := range rs.rules {
		if rs.globs[i].Match(key) {
			return &rs.rules[i].Config
		}
	}
	return &rs.def
}

// SetRules replaces the default configuration and the rules for series
// created from now on; existing series keep theirs. On an invalid
// configuration it returns every problem and changes nothing.
func (r *Runner) SetRules(def Config, rules []Rule) error {
	rs, err := newRuleSet(def, rules)
	if err != nil {
		return err
	}
	r.rules.Store(rs)
	return nil
}

// ConfigFor returns the configuration a new series named key would get now.
func (r *Runner) ConfigFor(key string) Config { return *r.rules.Load().config(key) }

// SetSeriesLimit bounds the series held to n (each shard to its share, at
// least 1), below MaxSeries; n ≤ 0 removes the bound. Lowered, each shard
// evicts its least recently used series down to its share at once, as it
// would at MaxSeries (checkpointed first, with an EvictionSaver); raised,
// new series are let in again. A memory budget sets it (forecastd run's
// [pipeline] memory_budget).
func (r *Runner) SetSeriesLimit(n int) {
	if n < 0 {
		n = 0
	}
	old := r.limit.Swap(int64(n))
	if n > 0 && (old == 0 || int64(n) < old) {
		for _, sh := range r.shards {
			select {
			case sh.shrink <- struct{}{}:
			default:
			}
		}
	}
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

// keyState is what a shard's submitters know of a key, by its hash: whether
// its series is held, and how many of its points are in the slow lane.
type keyState struct {
	held bool
	slow int
}

// lane returns the queue a point of the key of hash h takes: the fast
// lane if its series is held and none of its points is in the slow lane,
// else the slow lane, where the point is then counted until the shard
// has taken it (slowDone). So a series' points stay in order: a point
// follows any of its key still in the slow lane, and the shard takes a
// point from the slow lane only once the fast lane holds nothing queued
// before it (shard.run). One read-locked map read on the fast lane.
func (sh *shard) lane(h uint64) (chan Input, bool) {
	sh.keysMu.RLock()
	k := sh.keys[h]
	sh.keysMu.RUnlock()
	if k.held && k.slow == 0 {
		return sh.fast, false
	}
	sh.keysMu.Lock()
	defer sh.keysMu.Unlock()
	k = sh.keys[h]
	if k.held && k.slow == 0 {
		return sh.fast, false
	}
	k.slow++
	sh.keys[h] = k
	return sh.slow, true
}

// slowDone uncounts a point of the key of hash h from the slow lane,
// taken by the shard or never queued.
func (sh *shard) slowDone(h uint64) {
	sh.keysMu.Lock()
	defer sh.keysMu.Unlock()
	k := sh.keys[h]
	if k.slow--; k.slow <= 0 && !k.held {
		delete(sh.keys, h)
		return
	}
	sh.keys[h] = k
}

// setHeld records whether the series of the key of hash h is held.
func (sh *shard) setHeld(h uint64, held bool) {
	sh.keysMu.Lock()
	defer sh.keysMu.Unlock()
	k := sh.keys[h]
	if k.held = held; !held && k.slow <= 0 {
		delete(sh.keys, h)
		return
	}
	sh.keys[h] = k
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
	}
	r.modelStats(&st)
	return st
}

// modelStats fills in st.Models.
func (r *Runner) modelStats(st *RunnerStats) {
	for i := range r.models {
		c := &r.models[i]
		st.Models[i] = ModelStats{
			Kind:          Kind(i),
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

// countModel adds what e's model did since the last call to the runner's
// ModelStats, and logs the series' learn and predict errors, at most once
// a second. It runs after each point, on the shard: a copy of the
// series' and the model's counters and a few comparisons, no allocation.
func (sh *shard) countModel(e *entry) {
	r := sh.r
	st := e.s.Stats()
	if st.Overflow > e.overflow {
		r.stats.overflow.Add(st.Overflow - e.overflow)
		e.overflow = st.Overflow
	}
	if e.kind < 0 {
		return
	}
	c := &r.models[e.kind]
	dl, dp := st.LearnErrors-e.learnErrors, st.PredictErrors-e.predictErrors
	e.learnErrors, e.predictErrors = st.LearnErrors, st.PredictErrors
	if dl > 0 {
		c.learnErrors.Add(dl)
	}
	if dp > 0 {
		c.predictErrors.Add(dp)
	}
	if (dl > 0 || dp > 0) && r.modelLog.Allow() {
		r.log.Warn("model failed; the series forecasts again once its model succeeds", "series", Truncate(e.s.key),
			"model", e.s.cfg.Kind.String(), "learn_errors", st.LearnErrors, "predict_errors", st.PredictErrors)
	}
	if e.ladder == nil {
		return
	}
	ev := e.ladder.Stats()
	last := &e.events
	add := func(a *atomic.Uint64, now, before uint64) {
		if now > before {
			a.Add(now - before)
		}
	}
	add(&c.refreshes, ev.Refreshes, last.Refreshes)
	add(&c.rebuilds, ev.Rebuilds, last.Rebuilds)
	add(&c.refused, ev.Refused, last.Refused)
	add(&c.repairs, ev.Repairs, last.Repairs)
	add(&c.rollbacks, ev.Rollbacks, last.Rollbacks)
	add(&c.failures, ev.Failures, last.Failures)
	if ev.MaxDrift > last.MaxDrift {
		for {
			old := c.maxDrift.Load()
			if math.Float64frombits(old) >= ev.MaxDrift || c.maxDrift.CompareAndSwap(old, math.Float64bits(ev.MaxDrift)) {
				break
			}
		}
	}
	*last = ev
}

// warn logs at most once a second.
func (r *Runner) warn(msg string, args ...any) {
	if r.errLog.Allow() {
		r.log.Warn(msg, args...)
	}
}

// shard owns its series: only its goroutine touches them.
type shard struct {
	r *Runner
	// fast queues the points of the series held, slow those of the
	// series not held yet: the shard serves fast first, so that the
	// creation of many series does not delay the series held.
	fast, slow chan Input
	ckpt       chan chan struct{} // checkpoint requests, closed when done
	series     map[string]*entry
	// lru is the sentinel of the ring of the shard's series, most
	// recently used first: lru.next is the newest, lru.prev the oldest.
	lru entry
	// maxShare is the shard's share of MaxSeries (at least 1).
	maxShare int
	// shrink is signalled when SetSeriesLimit lowered the bound.
	shrink chan struct{}
	// todo are the keys of the checkpoint in progress still to export,
	// and todoDone is closed when it is finished.
	todo     []string
	todoDone chan struct{}
	// stepped counts the series held with a step (Config.Step > 0).
	stepped int
	// hist receives the History's results (nil without one); gates are
	// the input series holding their points until their past is learned.
	hist    chan histResult
	gates   map[string]*histGate
	heldPts int // live points held by gates
	// exited is closed when the shard's goroutine returns.
	exited chan struct{}
	// keys is what the submitters know of the keys of the shard, by
	// their hash (Runner.hash): those of the series the shard holds, and
	// those with points in the slow lane (see lane). Written under
	// keysMu's lock, read under its read lock.
	keysMu sync.RWMutex
	keys   map[uint64]keyState
}

// entry is one series held by a shard.
type entry struct {
	// prev and next link the entry into its shard's lru ring.
	prev, next *entry
	s          *Series
	sink       Sink
	seen       time.Time // wall clock of the last point, for eviction
	// unsent is set when a sink refused the forecast made from the
	// series' last point: a redelivery of that point (a duplicate) sends
	// it again instead of being skipped.
	unsent   bool
	failedAt time.Time // when unsent was set, for RedeliveryHold
	// dirty: changed since its last checkpoint. seq is the highest
	// Input.Seq applied, restoredSeq the checkpoint's at restore.
	dirty            bool
	seq, restoredSeq uint64
	// kind indexes Runner.models; learnErrors, predictErrors and
	// events are the series' and its model's counters last added to
	// them (countModel); ladder is the model if it reports its ladder.
	kind                       int
	learnErrors, predictErrors uint64
	ladder                     ladderStats
	events                     svr.AOSVRStats
	// overflow is the series' Stats.Overflow last added to the runner's
	// (countModel).
	overflow uint64
	// restored: made from a checkpoint (its past is not loaded).
	restored bool
	// waiting: s holds only the series' key and configuration while a
	// history worker makes and primes its series off the shard (see
	// warmNew); it takes no point meanwhile, its points being held by
	// its gate. install replaces it, with the primed series or a fresh
	// one.
	waiting bool
}

func (sh *shard) run() {
	defer sh.r.wg.Done()
	defer close(sh.exited)
	var tick <-chan time.Time
	if ttl := sh.r.cfg.IdleTTL; ttl > 0 {
		every := ttl / 4
		if every < 10*time.Millisecond {
			every = 10 * time.Millisecond
		}
		t := time.NewTicker(every)
		defer t.Stop()
		tick = t.C
	}
	// Buckets past their grace are closed on a tick of their own.
	bt := time.NewTicker(cmp.Or(sh.r.cfg.bucketTick, bucketTickEvery))
	defer bt.Stop()
	bucketTick := bt.C
	// On exit, whether the queue was drained or abandoned, the state of
	// every series changed is checkpointed: what was applied is kept.
	defer sh.finalCheckpoint()
	// fast and slow are nil once closed; when both are while series
	// still wait for their past, the shard waits for it (bounded by
	// HistoryConfig.Timeout) or for the abort.
	fast, slow := sh.fast, sh.slow
	for {
		// While a checkpoint is in progress, a step of it is ready
		// whenever a point is; select picks among them at random.
		var step <-chan struct{}
		ckpt := sh.ckpt
		if sh.todoDone != nil {
			step, ckpt = ready, nil
		}
		select {
		case in, ok := <-fast:
			if !ok {
				fast = nil
				if slow == nil && len(sh.gates) == 0 {
					return
				}
				continue
			}
			if sh.take(in) {
				return
			}
		case in, ok := <-slow:
			if !ok {
				slow = nil
				if fast == nil && len(sh.gates) == 0 {
					return
				}
				continue
			}
			// What the fast lane held when in was taken was queued
			// first: a point of in's series among it is older than in.
			for range len(fast) {
				if sh.take(<-fast) {
					sh.abandon(in)
					return
				}
			}
			stop := sh.take(in)
			sh.slowDone(sh.r.hash(in.Key))
			if stop {
				return
			}
		case res := <-sh.hist:
			sh.historyResult(res)
			if fast == nil && slow == nil && len(sh.gates) == 0 {
				return
			}
		case <-tick:
			sh.evictIdle(sh.r.now())
		case <-bucketTick:
			sh.closeBuckets(sh.r.now())
		case <-sh.shrink:
			now := sh.r.now()
			for len(sh.series) > sh.capacity() && sh.evictLRU(now) {
			}
		case req := <-ckpt:
			sh.startCheckpoint(req)
		case <-step:
			sh.checkpointStep()
		case <-sh.r.abort:
			sh.releaseAll(true)
			sh.drop()
			return
		}
	}
}

// take processes in, and reports true if it abandoned it instead, and
// everything queued, the runner's Close deadline having passed.
func (sh *shard) take(in Input) bool {
	select {
	case <-sh.r.abort:
		sh.releaseAll(true)
		sh.abandon(in)
		return true
	default:
	}
	sh.process(in)
	return false
}

// bucketTickEvery is how often a shard closes the buckets past their
// grace: a bucket closes at most this late after its end plus grace.
const bucketTickEvery = time.Second

// closeBuckets closes, in the series with a step, the open buckets whose
// end plus grace is not after now and whose series has had no point for
// grace, and emits what their points made, as the first point of the
// next bucket would have. The second condition keeps a bucket open while
// its points still come: points read faster than they were made (a
// backlog after an outage, a replay) all end long before now, and a tick
// between two of one bucket would close it and make the rest late.
// O(series of the shard) when any series has a step, else O(1).
func (sh *shard) closeBuckets(now time.Time) {
	if sh.stepped == 0 {
		return
	}
	for _, e := range sh.series {
		grace := e.s.cfg.grace()
		if due, open := e.s.BucketDue(grace); !open || due.After(now) || e.seen.Add(grace).After(now) {
			continue
		}
		res, ok, err := e.s.CloseBucket(now, grace)
		sh.countModel(e)
		if err != nil || !ok {
			continue // a dropped bucket point is counted by the series
		}
		e.dirty = true
		sh.r.stats.bucketsClosed.Add(1)
		_ = sh.emit(e, res, now) // its raw points were acknowledged: a refusal is counted
	}
}

// abandon drops in and everything still queued, at shutdown.
func (sh *shard) abandon(in Input) {
	sh.r.stats.dropShutdown.Add(1)
	done(in, ErrShutdown)
	sh.drop()
}

// drop drops everything still queued, at shutdown (the queues are
// closed before the abort).
func (sh *shard) drop() {
	for _, q := range []chan Input{sh.fast, sh.slow} {
		for in := range q {
			sh.r.stats.dropShutdown.Add(1)
			done(in, ErrShutdown)
		}
	}
}

func (sh *shard) process(in Input) {
	if sh.hist != nil {
		// One map lookup per point; a new input series may be held.
		if g := sh.gates[in.Key]; g != nil {
			sh.hold(g, in)
			return
		}
		if sh.series[in.Key] == nil && sh.warmNew(in) {
			return
		}
	}
	sh.processNow(in)
}

// processNow gives in's point to its series and resolutions, and tells
// its Acker.
func (sh *shard) processNow(in Input) {
	rs := sh.r.rules.Load()
	err := sh.processKey(in, in.Key, nil)
	for k := range rs.resolutions {
		if cfg := rs.resolution(k, in.Key); cfg != nil {
			err = errors.Join(err, sh.processKey(in, ResolutionKey(in.Key, cfg.Step), cfg))
		}
	}
	done(in, err)
}

// processKey gives in's point to the series key (in.Key's own, or one of
// its resolutions', configured by cfg), creating it if new, and returns
// what the point's Acker is to be told of it.
func (sh *shard) processKey(in Input, key string, cfg *Config) error {
	r := sh.r
	now := r.now()
	e := sh.series[key]
	if e == nil {
		var err error
		if e, err = sh.create(in, key, cfg, now, false); err != nil {
			return err
		}
	} else if e.waiting {
		// Its gate opened before its series came (cold): made here.
		if err := sh.makeNow(e); err != nil {
			return err
		}
	}
	e.seen = now
	sh.touch(e)
	if in.Seq != 0 && in.Seq <= e.restoredSeq {
		// Applied before the checkpoint this series was restored from.
		r.stats.replayed.Add(1)
		return nil
	}
	if e.unsent && r.cfg.RedeliveryHold > 0 && in.Point.Time.After(e.s.lastTime) && now.Sub(e.failedAt) < r.cfg.RedeliveryHold {
		r.stats.held.Add(1)
		return ErrHeld
	}
	r.stats.processed.Add(1)
	res, err := e.s.Push(in.Point)
	sh.countModel(e)
	e.dirty = true // even a refused point may count in the series' stats
	e.seq = max(e.seq, in.Seq)
	if err != nil {
		if errors.Is(err, ErrLate) {
			r.stats.late.Add(1)
			return nil // a redelivery would be as late
		}
		if errors.Is(err, ErrOutOfOrder) {
			r.stats.outOfOrder.Add(1)
			if e.unsent && in.Point.Time.Equal(e.s.lastTime) {
				// The redelivery of a point whose forecast a sink
				// refused: send that forecast again.
				err = sh.emit(e, Result{Forecast: e.s.pendingForecast, HasForecast: e.s.havePending}, now)
				if err == nil {
					r.stats.reemitted.Add(1)
				}
				return err
			}
			return nil // a duplicate: already applied
		}
		if errors.Is(err, ErrImplausible) {
			r.stats.implausible.Add(1)
			return nil // settled: a redelivery would be as implausible
		}
		return err // non-finite: cannot come from sources
	}
	return sh.emit(e, res, now)
}

// emit hands res to the series' sink, and records whether the forecast
// remains to be sent.
func (sh *shard) emit(e *entry, res Result, now time.Time) error {
	r := sh.r
	var errs [2]error
	if res.HasOutcome {
		if errs[0] = e.sink.Outcome(e.s.key, res.Outcome); errs[0] == nil {
			r.stats.outcomes.Add(1)
		}
	}
	e.unsent = false
	if res.HasForecast {
		if errs[1] = e.sink.Forecast(e.s.key, res.Forecast); errs[1] == nil {
			r.stats.forecasts.Add(1)
		} else {
			e.unsent, e.failedAt = true, now
		}
	}
	if errs[0] == nil && errs[1] == nil {
		return nil
	}
	err := fmt.Errorf("series %q: %w", e.s.key, errors.Join(errs[0], errs[1]))
	r.stats.sinkErrors.Add(1)
	r.warn("sink refused a record", "series", Truncate(e.s.key), "err", err)
	return err
}

// create makes the series key (in.Key's own, or one of its resolutions'
// configured by cfg; nil: by the rules), evicting the shard's least
// recently used series first if it holds its capacity. Its sink is opened
// with key and in. With waiting, a series not restored from a checkpoint
// is left for a history worker to make: the entry is waiting.
func (sh *shard) create(in Input, key string, cfg *Config, now time.Time, waiting bool) (*entry, error) {
	r := sh.r
	for len(sh.series) >= sh.capacity() && sh.evictLRU(now) {
	}
	r.series.Add(1)
	if cfg == nil {
		cfg = r.rules.Load().config(key)
	}
	var s *Series
	var seq uint64
	restored := false
	if cp := r.cfg.Checkpoints; cp != nil {
		if st, from, ok := cp.Saved(key); ok {
			var err error
			if s, err = restoreSeries(key, cfg, st); err != nil {
				// Logged once: Saved forgets the state it returns.
				r.stats.restoreFailed.Add(1)
				r.log.Warn("checkpoint not restored; the series starts afresh", "series", Truncate(key), "file", from, "err", err)
				s = nil
			} else {
				r.stats.restored.Add(1)
				restored = true
				seq = st.Seq
				r.log.Debug("series restored", "series", Truncate(key), "file", from, "seq", seq)
			}
		}
	}
	waiting = waiting && s == nil
	if waiting {
		s = &Series{key: key, cfg: cfg}
	} else if s == nil {
		var err error
		if s, err = newSeries(key, cfg); err != nil { // validated by SetRules: cannot happen
			r.series.Add(-1)
			return nil, err
		}
	}
	e := &entry{s: s, sink: r.cfg.Outputs.Open(key, *cfg, &in), seen: now, seq: seq, restoredSeq: seq, restored: restored, waiting: waiting}
	e.kind = int(cfg.Kind)
	if e.kind >= len(r.models) {
		e.kind = -1 // registered after NewRunner: not counted
	}
	if !waiting {
		// What a restored series counted before is not this runner's.
		st := s.Stats()
		e.learnErrors, e.predictErrors = st.LearnErrors, st.PredictErrors
		if l, ok := s.model.reg.(ladderStats); ok && e.kind >= 0 {
			e.ladder, e.events = l, l.Stats()
			r.models[e.kind].reports.Store(true)
		}
	}
	sh.series[key] = e
	sh.setHeld(r.hash(key), true)
	sh.link(e)
	if cfg.Step > 0 {
		sh.stepped++
	}
	r.stats.created.Add(1)
	r.log.Debug("series created", "series", Truncate(key), "model", cfg.Kind.String())
	return e, nil
}

// evictIdle forgets the series idle for longer than IdleTTL and returns how
// many it evicted. It walks the lru ring from its oldest end and stops at
// the first series not idle: O(evicted), not a scan of the shard.
func (sh *shard) evictIdle(now time.Time) int {
	ttl := sh.r.cfg.IdleTTL
	if ttl <= 0 {
		return 0
	}
	n := 0
	for e := sh.lru.prev; e != &sh.lru && now.Sub(e.seen) > ttl; e = sh.lru.prev {
		k := e.s.key
		sh.remove(e)
		if cp := sh.r.cfg.Checkpoints; cp != nil {
			cp.Forget(k)
		}
		n++
		sh.r.log.Debug("series evicted", "series", Truncate(k), "idle", now.Sub(e.seen))
	}
	if n > 0 {
		sh.r.series.Add(int64(-n))
		sh.r.stats.evicted.Add(uint64(n))
	}
	return n
}

// evictLRU evicts the shard's least recently used series to make room for
// a new one, and reports whether there was one. With Checkpoints, a
// series that learned something since its last checkpoint is exported and
// handed to Save first (its checkpoint is kept, not forgotten), so that
// it is restored if it comes back. O(1) without Checkpoints; with them,
// plus one Export of the evicted series when it is dirty.
func (sh *shard) evictLRU(now time.Time) bool {
	e := sh.lru.prev
	if e == &sh.lru {
		return false
	}
	r := sh.r
	if cp := r.cfg.Checkpoints; cp != nil {
		if e.dirty {
			sh.exportTo(e, true)
		} else if es, ok := cp.(EvictionSaver); ok {
			es.KeepEvicted(e.s.key)
		}
	}
	sh.remove(e)
	r.series.Add(-1)
	r.stats.evictedLRU.Add(1)
	r.log.Debug("series evicted: max_series reached", "series", Truncate(e.s.key), "idle", now.Sub(e.seen))
	return true
}

// capacity is how many series the shard may hold: maxShare, or its share
// of SetSeriesLimit's bound if lower (at least 1).
func (sh *shard) capacity() int {
	n := sh.maxShare
	if l := sh.r.limit.Load(); l > 0 {
		share := max(1, int(l)/len(sh.r.shards))
		n = min(n, share)
	}
	return n
}

// link puts the new entry e at the newest end of the lru ring.
func (sh *shard) link(e *entry) {
	e.prev, e.next = &sh.lru, sh.lru.next
	e.prev.next, e.next.prev = e, e
}

// touch moves e to the newest end of the lru ring, in O(1).
func (sh *shard) touch(e *entry) {
	if sh.lru.next == e {
		return
	}
	e.prev.next, e.next.prev = e.next, e.prev
	sh.link(e)
}

// remove deletes e from the shard's map and lru ring; the caller adjusts
// the series count.
func (sh *shard) remove(e *entry) {
	e.prev.next, e.next.prev = e.next, e.prev
	e.prev, e.next = nil, nil
	delete(sh.series, e.s.key)
	sh.setHeld(sh.r.hash(e.s.key), false)
	if e.s.cfg.Step > 0 {
		sh.stepped--
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
