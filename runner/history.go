package runner

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"time"
	"unsafe"

	"golang.org/x/time/rate"

	"github.com/forecastd/forecastd/pipeline"
	"github.com/forecastd/forecastd/svr"
)

// History is where a new series' past comes from: the daemon's queries
// InfluxDB (internal/history). The Runner calls Load on goroutines of its
// own, never a shard's, at most HistoryConfig.Concurrency at once.
type History interface {
	// Load returns the past of req's series, before req.Until and at its
	// resolution: with req.Config.Step > 0 one point per bucket of Step,
	// dated by the bucket's start and aggregated by req.Config.Aggregate;
	// else the raw points. In increasing time order; the Runner drops what
	// is not (counted as dropped by the series). It must return when ctx
	// ends. The slice is the Runner's once returned.
	Load(ctx context.Context, req HistoryRequest) ([]pipeline.Point, error)
}

// HistoryRequest asks a History for one series' past.
type HistoryRequest struct {
	// Key is the series key (a resolution's is ResolutionKey(Base, step)).
	Key string
	// Base is the key of the input series the points arrive as (Input.Key).
	Base string
	// Config is the series' configuration: its Step and Aggregate say how
	// the past is to be aggregated.
	Config pipeline.Config
	// Origin is where the series' first point came from (subject; for line
	// protocol its measurement, field and tags).
	Origin Origin
	// Until bounds the past (exclusive): the start of the first live
	// point's bucket with a step, else the first live point's time.
	Until time.Time
}

// Defaults of HistoryConfig.
const (
	DefaultHistoryConcurrency = 4
	DefaultHistoryQueue       = 16384
	DefaultHistoryBuffer      = 1024
	DefaultHistoryTimeout     = 30 * time.Second
	DefaultHistoryMaxHeld     = 1 << 16 // about 10 MB of held points
	DefaultHistoryRate        = 200     // Loads started per second
	// MinHistoryRate and MaxHistoryRate bound HistoryConfig.Rate: at
	// the least, a Load every 1 000 s.
	MinHistoryRate = 0.001
	MaxHistoryRate = 1_000_000
)

// HistoryConfig is RunnerConfig.History: warm start of new series from
// their past. Zero fields take the defaults named.
type HistoryConfig struct {
	// Source loads a series' past. Nil: series start cold.
	Source History
	// Concurrency bounds the Loads running at once (default
	// DefaultHistoryConcurrency). Of them, at most GOMAXPROCS−1 (at least
	// 1) make and prime their series at once: a processor is left for the
	// series already held.
	Concurrency int
	// Rate bounds the Loads started per second (default
	// DefaultHistoryRate), evenly spaced: a burst of new series is fetched
	// and primed at this rate, so that the database's queries and the
	// priming (both on this host's cores when InfluxDB runs beside the
	// daemon) leave the live points their CPU. 10 000 new series take 50
	// s at the default; their live points wait meanwhile, held (Buffer).
	Rate float64
	// Queue bounds the series waiting for a Load to start (default
	// DefaultHistoryQueue); a new series beyond it starts cold, counted
	// (HistoryStats.Cold["queue_full"]).
	Queue int
	// Buffer bounds the live points an input series holds while its past
	// is loaded (default DefaultHistoryBuffer); the point beyond it makes
	// the series start cold with what it has (HistoryStats.Cold["buffer_full"]).
	Buffer int
	// Timeout bounds one Load (default DefaultHistoryTimeout).
	Timeout time.Duration
	// MaxHeld bounds the live points held over all waiting series
	// (default DefaultHistoryMaxHeld), each shard its share: a point
	// beyond makes its series start cold (HistoryStats.Cold["buffer_full"]),
	// so that a burst of new series holds a bounded memory.
	MaxHeld int
	// LoadBytes is the most memory one Load holds while it runs (what
	// its Source bounds), counted in HistoryStats.Bytes while it does; 0:
	// only the points it returns are counted, once returned.
	LoadBytes int64
}

func (c HistoryConfig) withDefaults() (HistoryConfig, error) {
	if c.Concurrency < 0 || c.Queue < 0 || c.Buffer < 0 || c.Timeout < 0 || c.MaxHeld < 0 || c.LoadBytes < 0 || c.Rate < 0 || math.IsNaN(c.Rate) {
		return c, fmt.Errorf("%w: history concurrency, rate, queue, buffer, max held, load bytes and timeout must not be negative", pipeline.ErrBadConfig)
	}
	if c.Rate != 0 && (c.Rate < MinHistoryRate || c.Rate > MaxHistoryRate) {
		// Beyond, the interval between loads (a second over the rate) is
		// below a nanosecond or overflows a time.Duration.
		return c, fmt.Errorf("%w: history rate %v: want %v to %v series a second", pipeline.ErrBadConfig, c.Rate, MinHistoryRate, MaxHistoryRate)
	}
	if c.Rate == 0 {
		c.Rate = DefaultHistoryRate
	}
	if c.MaxHeld == 0 {
		c.MaxHeld = DefaultHistoryMaxHeld
	}
	if c.Concurrency == 0 {
		c.Concurrency = DefaultHistoryConcurrency
	}
	if c.Queue == 0 {
		c.Queue = DefaultHistoryQueue
	}
	if c.Buffer == 0 {
		c.Buffer = DefaultHistoryBuffer
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultHistoryTimeout
	}
	return c, nil
}

// Why a new series without a checkpoint started cold, the keys of
// HistoryStats.Cold.
const (
	ColdFailed     = "failed"      // its Load returned an error (the History counts by class)
	ColdEmpty      = "empty"       // its Load returned no point
	ColdQueueFull  = "queue_full"  // HistoryConfig.Queue series were already waiting
	ColdBufferFull = "buffer_full" // more than HistoryConfig.Buffer live points came while it waited, or MaxHeld were held
	ColdShutdown   = "shutdown"    // the runner closed while it waited
	ColdEvicted    = "evicted"     // it was evicted before its past arrived
)

// ColdReasons are the keys of HistoryStats.Cold, in order.
var ColdReasons = []string{ColdFailed, ColdEmpty, ColdQueueFull, ColdBufferFull, ColdShutdown, ColdEvicted}

// Why a point a History returned was not learned, the keys of
// HistoryStats.Dropped.
const (
	// HistoryNotBefore: the point is not before its series' first live
	// point (HistoryRequest.Until). Learned, it would make the live
	// points that follow out of order, for good.
	HistoryNotBefore = "not_before_live"
)

// HistoryDropReasons are the keys of HistoryStats.Dropped, in order.
var HistoryDropReasons = []string{HistoryNotBefore}

// HistoryStats counts what warm start did, totals since NewRunner.
type HistoryStats struct {
	// Requested counts series whose past was asked for; Warmed those that
	// learned at least one point of it, Points the points they learned.
	Requested, Warmed, Points uint64
	// Cold counts the series that started cold, by reason (ColdReasons).
	Cold map[string]uint64
	// Dropped counts the points Loads returned that were not learned, by
	// reason (HistoryDropReasons).
	Dropped map[string]uint64
	// Waiting is the number of input series holding live points for
	// their past now.
	Waiting int64
	// Bytes is the memory the Loads hold now: HistoryConfig.LoadBytes per
	// Load running, then the points it returned until they are learned.
	Bytes int64
}

// histJob is one input series' requests, made on its shard and loaded by
// a history worker.
type histJob struct {
	sh   *shard
	g    *histGate
	reqs []HistoryRequest
	ents []*entry           // the series of reqs, to tell an evicted one (not read off the shard)
	cfgs []*pipeline.Config // their configurations, shared and immutable
}

// histResult is the outcome of one request of a job: the series made
// off the shard, primed with n points of its past (fresh if none, or if
// err says why its past was not loaded), for the shard to install.
type histResult struct {
	g   *histGate
	e   *entry
	s   *pipeline.Series
	n   int
	err error
}

// histGate holds the live points of an input series while the past of
// its new series is loaded: they are processed in order once every
// request has its result, or at once, cold, if the gate is abandoned.
type histGate struct {
	key       string
	pending   int
	buf       []Input
	abandoned bool
}

// startHistory starts the workers of cfg.History.
func (r *Runner) startHistory() {
	hc := r.hist
	r.histq = make(chan histJob, hc.Queue)
	r.histCtx, r.histCancel = context.WithCancel(context.Background())
	r.primes = make(chan struct{}, min(hc.Concurrency, max(1, runtime.GOMAXPROCS(0)-1)))
	r.histPace = rate.NewLimiter(rate.Limit(hc.Rate), 1)
	for range hc.Concurrency {
		r.hwg.Add(1)
		go r.historyWorker()
	}
}

func (r *Runner) historyWorker() {
	defer r.hwg.Done()
	for {
		select {
		case <-r.histCtx.Done():
			return
		case j := <-r.histq:
			for i, req := range j.reqs {
				if r.histPace.Wait(r.histCtx) != nil { // ended, or past its deadline
					return
				}
				ctx, cancel := context.WithTimeout(r.histCtx, r.hist.Timeout)
				r.histStats.bytes.Add(r.hist.LoadBytes)
				pts, err := r.hist.Source.Load(ctx, req)
				cancel()
				held := int64(len(pts)) * int64(unsafe.Sizeof(pipeline.Point{}))
				r.histStats.bytes.Add(held - r.hist.LoadBytes)
				pts = r.before(req, pts)
				res := histResult{g: j.g, e: j.ents[i], err: err}
				// Made and primed here, not on the shard: a new
				// series' model and a long past cost this worker's
				// CPU, never another series' latency. The shard only
				// installs it in the waiting entry. At most
				// GOMAXPROCS−1 workers make and prime at once, so that
				// a processor is left for the shards.
				select {
				case r.primes <- struct{}{}:
				case <-r.histCtx.Done():
					r.histStats.bytes.Add(-held)
					return
				}
				s, err := pipeline.NewShared(req.Key, j.cfgs[i])
				if err == nil && res.err == nil && len(pts) > 0 {
					if res.n = s.PrimeYield(pts, r.yieldPriming); res.n == 0 {
						// Every point refused: it starts as a new series.
						s, err = pipeline.NewShared(req.Key, j.cfgs[i])
					}
				}
				if err != nil { // validated by SetRules: cannot happen
					s, res.err = nil, err
				}
				res.s = s
				pts = nil
				r.histStats.bytes.Add(-held)
				<-r.primes
				select {
				case j.sh.hist <- res:
				case <-j.sh.exited: // its gate was abandoned: nobody waits
				case <-r.histCtx.Done():
					return
				}
			}
		}
	}
}

// before returns the points of pts strictly before req.Until, the
// series' first live point (or its bucket's start), in place: a History
// that returned later ones (a server that ignored the query's bounds, or
// a point dated far ahead) would have the series learn them, then drop
// every live point as out of order. What is dropped is counted, and
// logged at most once a second with what to do.
func (r *Runner) before(req HistoryRequest, pts []pipeline.Point) []pipeline.Point {
	kept := pts[:0]
	for _, p := range pts {
		if p.Time.Before(req.Until) {
			kept = append(kept, p)
		}
	}
	if n := len(pts) - len(kept); n > 0 {
		clear(pts[len(kept):])
		r.histStats.dropped[histNotBefore].Add(uint64(n))
		if r.histDropLog.Allow() {
			r.log.Warn("history: points not before the series' first live point dropped; the past learned stops before it",
				"series", Truncate(req.Key), "dropped", n, "first_live", req.Until,
				"fix", "the history server answered beyond the query's time range, or holds points dated ahead of the live ones: check [history] url and what writes to it")
		}
	}
	return kept
}

// Indexes of HistoryDropReasons.
const (
	histNotBefore = iota
	nHistDrop
)

// stopHistory stops the workers, once the shards have exited.
func (r *Runner) stopHistory() {
	if r.histCancel != nil {
		r.histCancel()
		r.hwg.Wait()
	}
}

// HistoryStats returns warm start's counters.
func (r *Runner) HistoryStats() HistoryStats {
	h := &r.histStats
	st := HistoryStats{Requested: h.requested.Load(), Warmed: h.warmed.Load(), Points: h.points.Load(),
		Cold: make(map[string]uint64, len(ColdReasons)), Dropped: make(map[string]uint64, len(HistoryDropReasons)),
		Waiting: h.waiting.Load(), Bytes: h.bytes.Load()}
	for i, k := range ColdReasons {
		st.Cold[k] = h.cold[i].Load()
	}
	for i, k := range HistoryDropReasons {
		st.Dropped[k] = h.dropped[i].Load()
	}
	return st
}

func (r *Runner) cold(reason int, key string) {
	r.histStats.cold[reason].Add(1)
	if r.histLog[reason].Allow() {
		r.log.Warn("series starts cold, without its history", "series", Truncate(key), "reason", ColdReasons[reason])
	}
}

// Indexes of ColdReasons.
const (
	coldFailed = iota
	coldEmpty
	coldQueueFull
	coldBufferFull
	coldShutdown
	coldEvicted
	nCold
)

// warmNew is process's path, with a History, for the input whose own
// series the shard does not hold: it creates in's series, and if any of
// them is new without a checkpoint, asks for their past and holds in; it
// reports whether in was held. Resolution keys are made here only, once
// per new input series.
func (sh *shard) warmNew(in Input) bool {
	r := sh.r
	rs := r.rules.Load()
	now := r.now()
	var reqs []HistoryRequest
	var ents []*entry
	var cfgs []*pipeline.Config
	add := func(key string, cfg *pipeline.Config) {
		if sh.series[key] != nil {
			return
		}
		e, err := sh.create(in, key, cfg, now, true)
		if err != nil || e.restored {
			return
		}
		c := e.s.SharedConfig()
		until := in.Point.Time
		if c.Step > 0 {
			until = until.Truncate(c.Step) // epoch-aligned, as Buckets
		}
		reqs = append(reqs, HistoryRequest{Key: key, Base: in.Key, Config: *c, Origin: in.Origin(), Until: until})
		ents, cfgs = append(ents, e), append(cfgs, c)
	}
	add(in.Key, nil)
	for k := range rs.resolutions {
		if cfg := rs.resolution(k, in.Key); cfg != nil {
			add(pipeline.ResolutionKey(in.Key, cfg.Step), cfg)
		}
	}
	if len(reqs) == 0 {
		return false
	}
	r.histStats.requested.Add(uint64(len(reqs)))
	if sh.heldPts >= sh.maxHeld() {
		for range reqs {
			r.cold(coldBufferFull, in.Key)
		}
		return false
	}
	g := &histGate{key: in.Key, pending: len(reqs)}
	select {
	case r.histq <- histJob{sh: sh, g: g, reqs: reqs, ents: ents, cfgs: cfgs}:
	default:
		for range reqs {
			r.cold(coldQueueFull, in.Key)
		}
		return false
	}
	if sh.gates == nil {
		sh.gates = make(map[string]*histGate)
	}
	sh.gates[in.Key] = g
	r.histStats.waiting.Add(1)
	g.buf = append(g.buf, in)
	sh.heldPts++
	return true
}

// hold queues in behind its gate; the point beyond HistoryConfig.Buffer
// opens the gate, cold.
func (sh *shard) hold(g *histGate, in Input) {
	if len(g.buf) >= sh.r.hist.Buffer || sh.heldPts >= sh.maxHeld() {
		for range g.pending {
			sh.r.cold(coldBufferFull, g.key)
		}
		sh.release(g)
		sh.processNow(in)
		return
	}
	g.buf = append(g.buf, in)
	sh.heldPts++
}

// maxHeld is the shard's share of HistoryConfig.MaxHeld, at least 1.
func (sh *shard) maxHeld() int { return max(1, sh.r.hist.MaxHeld/len(sh.r.shards)) }

// release opens g: its held points are processed in order, and a result
// still to come is ignored.
func (sh *shard) release(g *histGate) {
	g.abandoned = true
	delete(sh.gates, g.key)
	sh.r.histStats.waiting.Add(-1)
	buf := g.buf
	g.buf = nil
	sh.heldPts -= len(buf)
	for _, in := range buf {
		sh.processNow(in)
	}
}

// historyResult learns a result's past into its series, if still held
// and waiting, and opens the gate after its last result.
func (sh *shard) historyResult(res histResult) {
	g, r := res.g, sh.r
	if g.abandoned {
		return // counted cold when abandoned
	}
	e := res.e
	held := sh.series[e.s.Key()] == e
	if held && e.waiting && res.s != nil {
		sh.install(e, res.s)
	}
	switch {
	case !held:
		r.cold(coldEvicted, e.s.Key())
	case res.err != nil:
		r.cold(coldFailed, e.s.Key())
	case res.n == 0:
		r.cold(coldEmpty, e.s.Key())
	default:
		n := res.n
		e.dirty = true
		// The forecast its past made for the first live point is
		// published, as the point before it would have.
		if f, ok := e.s.Pending(); ok {
			_ = sh.emit(e, pipeline.Result{Forecast: f, HasForecast: true}, r.now()) // a refusal is counted
		}
		r.histStats.warmed.Add(1)
		r.histStats.points.Add(uint64(n))
		r.log.Debug("series warmed from history", "series", Truncate(e.s.Key()), "points", n)
	}
	if g.pending--; g.pending == 0 {
		sh.release(g)
	}
}

// install makes s, made off the shard, the series of e, which was
// waiting for it and has taken no point: its model's counters are
// counted from 0.
func (sh *shard) install(e *entry, s *pipeline.Series) {
	e.s, e.waiting = s, false
	e.learnErrors, e.predictErrors = 0, 0
	e.ladder, e.events = nil, svr.AOSVRStats{}
	if l, ok := s.Model().(ladderStats); ok && e.kind >= 0 {
		e.ladder = l
		sh.r.models[e.kind].reports.Store(true)
	}
	sh.countModel(e)
}

// makeNow makes the series of e, waiting, on the shard: its gate opened
// before a worker's series came, and it starts cold.
func (sh *shard) makeNow(e *entry) error {
	s, err := pipeline.NewShared(e.s.Key(), e.s.SharedConfig())
	if err != nil { // validated by SetRules: cannot happen
		return err
	}
	sh.install(e, s)
	return nil
}

// releaseAll opens every gate at shutdown: their points are processed
// cold (drain) or dropped (abort, dropped true).
func (sh *shard) releaseAll(drop bool) {
	for _, g := range sh.gates {
		for range g.pending {
			sh.r.cold(coldShutdown, g.key)
		}
		if drop {
			g.abandoned = true
			delete(sh.gates, g.key)
			sh.r.histStats.waiting.Add(-1)
			for _, in := range g.buf {
				sh.r.stats.dropShutdown.Add(1)
				done(in, ErrShutdown)
			}
			sh.heldPts -= len(g.buf)
			g.buf = nil
			continue
		}
		sh.release(g)
	}
}

// yieldPriming is how a history worker yields after each primeSlice of
// priming. While any shard has points queued, it sleeps for a slice:
// its processor then looks for work and takes the goroutines queued on
// the other processors (a shard readied behind a busy shard or source),
// which runtime.Gosched would not do (it puts the worker on the global
// queue, from which the same processor takes it back at once). Live
// points come first; priming resumes when they are served. Otherwise it
// yields with runtime.Gosched, so that the goroutines queued on its own
// processor (the inputs' timers and network polls) run within a slice
// instead of after the scheduler's preemption (10 ms).
func (r *Runner) yieldPriming() {
	for _, sh := range r.shards {
		if len(sh.fast)+len(sh.slow) > 0 {
			time.Sleep(pipeline.PrimeSlice)
			return
		}
	}
	runtime.Gosched()
}
