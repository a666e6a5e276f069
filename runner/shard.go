package runner

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/forecastd/forecastd/internal/prefetch"
	"github.com/forecastd/forecastd/pipeline"
	"github.com/forecastd/forecastd/svr"
)

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
		r.log.Warn("model failed; the series forecasts again once its model succeeds", "series", Truncate(e.s.Key()),
			"model", e.s.SharedConfig().Kind.String(), "learn_errors", st.LearnErrors, "predict_errors", st.PredictErrors)
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
	// shed receives the bytes of kernel columns ShedColumns asks the
	// shard's models to give up.
	shed chan int64
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
	// pools are the free lists the shard's models lend their call
	// buffers to (svr.Pools): the shard's own, so that they stay in the
	// caches of the CPU the shard runs on.
	pools *svr.Pools
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
	s          *pipeline.Series
	sink       pipeline.Sink
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
	// pooled is the series last given the shard's pools (SetPools).
	pooled *pipeline.Series
	// restored: made from a checkpoint (its past is not loaded).
	restored bool
	// waiting: s holds only the series' key and configuration while a
	// history worker makes and primes its series off the shard (see
	// warmNew); it takes no point meanwhile, its points being held by
	// its gate. install replaces it, with the primed series or a fresh
	// one.
	waiting bool
}

// run is the shard's goroutine: it takes the points of its queues, the
// fast lane's first, the results of warm start, the ticks of idle
// eviction and of the buckets' closing, and the steps of checkpoints,
// until its queues close (drained) or the runner aborts.
func (sh *shard) run() {
	defer sh.r.wg.Done()
	defer close(sh.exited)
	defer sh.pools.Release()
	tick, bucketTick, stopTicks := sh.tickers()
	defer stopTicks()
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
			if sh.takeRun(in, fast) {
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
			if sh.takeSlow(in, fast) {
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
		case b := <-sh.shed:
			sh.shedColumns(b)
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

// tickers returns the ticks of idle eviction (nil without IdleTTL) and
// of the buckets' closing, and the function that stops them.
func (sh *shard) tickers() (idle, buckets <-chan time.Time, stop func()) {
	var t *time.Ticker
	if ttl := sh.r.cfg.IdleTTL; ttl > 0 {
		t = time.NewTicker(max(ttl/4, 10*time.Millisecond))
		idle = t.C
	}
	// Buckets past their grace are closed on a tick of their own.
	bt := time.NewTicker(cmp.Or(sh.r.cfg.bucketTick, bucketTickEvery))
	return idle, bt.C, func() {
		if t != nil {
			t.Stop()
		}
		bt.Stop()
	}
}

// takeSlow processes in, a point of the slow lane (one that creates its
// series), after what the fast lane held when it was taken, which was
// queued first: a point of in's series among it is older than in. It
// reports true if the runner aborted meanwhile.
func (sh *shard) takeSlow(in Input, fast chan Input) bool {
	for range len(fast) {
		if sh.take(<-fast) {
			sh.abandon(in)
			return true
		}
	}
	stop := sh.take(in)
	sh.slowDone(sh.r.hash(in.Key))
	return stop
}

// runLength bounds the points a shard takes from its fast lane in a row
// (takeRun) before it looks at its other work again: at most a few
// milliseconds of points.
const runLength = 64

// takeRun processes in, a point of the fast lane, and then the points
// the lane holds after it, up to runLength in all; before processing
// each it prefetches the series of the next (see prefetch). It reports
// true if the runner aborted meanwhile.
func (sh *shard) takeRun(in Input, fast chan Input) bool {
	for i := 1; ; i++ {
		var next Input
		more := false
		if i < runLength {
			select {
			case next, more = <-fast: // false once closed
			default:
			}
		}
		if more {
			sh.prefetch(next)
		}
		if sh.take(in) {
			if more { // taken from the queue take abandoned
				sh.r.stats.dropShutdown.Add(1)
				done(next, ErrShutdown)
			}
			return true
		}
		if !more {
			return false
		}
		in = next
	}
}

// prefetch asks the CPU to start loading the state in's series holds
// (pipeline.Series.Prefetch), if held: among many series, each point's
// is out of the CPU's caches, and its loads then overlap the work of the
// point before instead of stalling its own.
func (sh *shard) prefetch(in Input) {
	if e := sh.series[in.Key]; e != nil {
		prefetch.Object(e)
		e.s.Prefetch()
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
		grace := e.s.SharedConfig().Grace()
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
			err = errors.Join(err, sh.processKey(in, pipeline.ResolutionKey(in.Key, cfg.Step), cfg))
		}
	}
	done(in, err)
}

// processKey gives in's point to the series key (in.Key's own, or one of
// its resolutions', configured by cfg), creating it if new, and returns
// what the point's Acker is to be told of it.
func (sh *shard) processKey(in Input, key string, cfg *pipeline.Config) error {
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
	if e.unsent && r.cfg.RedeliveryHold > 0 && in.Point.Time.After(e.s.LastTime()) && now.Sub(e.failedAt) < r.cfg.RedeliveryHold {
		r.stats.held.Add(1)
		return ErrHeld
	}
	r.stats.processed.Add(1)
	if e.pooled != e.s { // new, or replaced (history)
		e.s.SetPools(sh.pools)
		e.pooled = e.s
	}
	res, err := e.s.Push(in.Point)
	sh.countModel(e)
	e.dirty = true // even a refused point may count in the series' stats
	e.seq = max(e.seq, in.Seq)
	if err != nil {
		if errors.Is(err, pipeline.ErrLate) {
			r.stats.late.Add(1)
			return nil // a redelivery would be as late
		}
		if errors.Is(err, pipeline.ErrOutOfOrder) {
			r.stats.outOfOrder.Add(1)
			if e.unsent && in.Point.Time.Equal(e.s.LastTime()) {
				// The redelivery of a point whose forecast a sink
				// refused: send that forecast again.
				f, ok := e.s.Pending()
				err = sh.emit(e, pipeline.Result{Forecast: f, HasForecast: ok}, now)
				if err == nil {
					r.stats.reemitted.Add(1)
				}
				return err
			}
			return nil // a duplicate: already applied
		}
		if errors.Is(err, pipeline.ErrImplausible) {
			r.stats.implausible.Add(1)
			return nil // settled: a redelivery would be as implausible
		}
		return err // non-finite: cannot come from sources
	}
	return sh.emit(e, res, now)
}

// emit hands res to the series' sink, and records whether the forecast
// remains to be sent.
func (sh *shard) emit(e *entry, res pipeline.Result, now time.Time) error {
	r := sh.r
	var errs [2]error
	if res.HasOutcome {
		if errs[0] = e.sink.Outcome(e.s.Key(), res.Outcome); errs[0] == nil {
			r.stats.outcomes.Add(1)
		}
	}
	e.unsent = false
	if res.HasForecast {
		if errs[1] = e.sink.Forecast(e.s.Key(), res.Forecast); errs[1] == nil {
			r.stats.forecasts.Add(1)
		} else {
			e.unsent, e.failedAt = true, now
		}
	}
	if errs[0] == nil && errs[1] == nil {
		return nil
	}
	err := fmt.Errorf("series %q: %w", e.s.Key(), errors.Join(errs[0], errs[1]))
	r.stats.sinkErrors.Add(1)
	r.warn("sink refused a record", "series", Truncate(e.s.Key()), "err", err)
	return err
}

// create makes the series key (in.Key's own, or one of its resolutions'
// configured by cfg; nil: by the rules), evicting the shard's least
// recently used series first if it holds its capacity. Its sink is opened
// with key and in. With waiting, a series not restored from a checkpoint
// is left for a history worker to make: the entry is waiting.
func (sh *shard) create(in Input, key string, cfg *pipeline.Config, now time.Time, waiting bool) (*entry, error) {
	r := sh.r
	for len(sh.series) >= sh.capacity() && sh.evictLRU(now) {
	}
	r.series.Add(1)
	if cfg == nil {
		cfg = r.rules.Load().config(key)
	}
	var s *pipeline.Series
	var seq uint64
	restored := false
	if cp := r.cfg.Checkpoints; cp != nil {
		if st, from, ok := cp.Saved(key); ok {
			var err error
			if s, err = pipeline.RestoreShared(key, cfg, st); err != nil {
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
		s = pipeline.NewWaiting(key, cfg)
	} else if s == nil {
		var err error
		if s, err = pipeline.NewShared(key, cfg); err != nil { // validated by SetRules: cannot happen
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
		if l, ok := s.Model().(ladderStats); ok && e.kind >= 0 {
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
