package runner

import "time"

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
		k := e.s.Key()
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
			es.KeepEvicted(e.s.Key())
		}
	}
	sh.remove(e)
	r.series.Add(-1)
	r.stats.evictedLRU.Add(1)
	r.log.Debug("series evicted: max_series reached", "series", Truncate(e.s.Key()), "idle", now.Sub(e.seen))
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
	delete(sh.series, e.s.Key())
	sh.setHeld(sh.r.hash(e.s.Key()), false)
	if e.s.SharedConfig().Step > 0 {
		sh.stepped--
	}
}

// columnReleaser is a model that can give up the kernel columns it keeps
// between points (svr.AOSVR).
type columnReleaser interface{ ReleaseColumns() int64 }

// ShedColumns asks the shards to give up about bytes of the kernel
// columns their models keep between points (the process's column cache,
// svr.SetColumnCache), each in proportion to the series it holds, from
// its least recently used series: a model gives its columns up over the
// cache's limit only at its next point, and a series that gets none for a
// while (a warm-up that fills one series after another, a sparse series)
// would hold them meanwhile. The forecasts do not change; the models
// compute the columns again when they need them. A shard still busy with
// the previous request skips this one. Safe for concurrent use.
func (r *Runner) ShedColumns(bytes int64) {
	if bytes <= 0 {
		return
	}
	for _, sh := range r.shards {
		select {
		case sh.shed <- bytes:
		default:
		}
	}
}

// shedColumns releases the kernel columns of the shard's series, least
// recently used first, until its share of bytes (by the series it holds
// of all the runner's) is released or none is left. O(series walked).
func (sh *shard) shedColumns(bytes int64) {
	if all := sh.r.series.Load(); all > int64(len(sh.series)) {
		bytes = int64(float64(bytes) * float64(len(sh.series)) / float64(all))
	}
	for e := sh.lru.prev; e != &sh.lru && bytes > 0; e = e.prev {
		if e.waiting {
			continue // no model yet
		}
		if m, ok := e.s.Model().(columnReleaser); ok {
			bytes -= m.ReleaseColumns()
		}
	}
}
