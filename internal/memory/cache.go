package memory

import (
	"time"

	"github.com/forecastd/forecastd/pipeline"
	"github.com/forecastd/forecastd/svr"
)

// cacheFill is the share of a memory_budget kernel_cache "auto" fills,
// the series' heap included: below budgetFill, so that the series grow
// into the cache's room before any is evicted, and the collector keeps a
// fifth of the budget to run in.
const cacheFill = 0.8

// CacheTarget is the memory the series and the kernel cache share under
// kernel_cache "auto": cacheFill of a memory_budget of budget bytes, or
// without one (0) half of the host's memory; ok is false when neither is
// known.
func CacheTarget(budget int64) (target int64, ok bool) {
	if budget > 0 {
		return int64(cacheFill * float64(budget)), true
	}
	host, ok := HostMemory()
	return host / 2, ok
}

// CacheLimit is kernel_cache "auto"'s limit: what a target of live heap
// leaves beside a live heap of live bytes, held of them the cache's.
func CacheLimit(live, held, target int64) int64 {
	return max(0, target-max(0, live-held))
}

// cacheLimitOf is CacheLimit in the bytes the process holds: what the
// target leaves beside footprint f, of which the cache held held bytes
// at the last marking, in the cache's own bytes (each takes f.spans of
// the target).
func cacheLimitOf(f footprint, held uint64, target int64) int64 {
	held = min(held, f.live)
	return int64(float64(CacheLimit(int64(f.total()), int64(f.held(held)), target)) / f.spans)
}

// SetCache sets the column cache's limit to kernel_cache k, and for
// "auto" (or unset) returns the target the limit follows (CacheTarget;
// 0: svr's default is left, the host's memory unknown).
func SetCache(k pipeline.KernelCache, budget int64) int64 {
	if k.IsSet() && !k.Auto {
		svr.SetColumnCache(k.N)
		return 0
	}
	target, ok := CacheTarget(budget)
	if !ok {
		return 0
	}
	svr.SetColumnCache(CacheLimit(0, 0, target))
	return target
}

// HoldCache makes the column cache's limit follow what the target leaves
// beside the rest of the process's memory (cacheLimitOf), read every
// budgetPoll, until stop is closed: as the series grow, the cache gives
// up columns (each model at the end of its next call), and it takes them
// back as the series shrink. Hold leaves the cache out of the series'
// heap, so the series never make room for it. The cache's bytes at the
// last marking (atMark) are subtracted from the heap it read, so that the
// columns given up since, still in that heap, are not counted twice (the
// limit would fall with every column given up, to none, until the next
// collection). When the cache holds more than its limit, shed (nil: none)
// is asked for the excess, which the idle series hold and would
// otherwise keep until their next point; it is asked again only once a
// collection has begun and completed since, so that the heap read shows
// the columns given up.
func HoldCache(stop <-chan struct{}, target int64, shed func(bytes int64)) {
	fr := newFootprintReader()
	var mark atMark
	var shedAt uint64
	shedOnce := false
	t := time.NewTicker(budgetPoll)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		f, ok := fr.read()
		if !ok {
			return
		}
		now := max(0, svr.ColumnCache().Bytes)
		limit := cacheLimitOf(f, mark.add(f.cycles, uint64(now)), target)
		svr.SetColumnCache(limit)
		if shed != nil && now > limit && (!shedOnce || f.cycles >= shedAt+2) {
			shed(now - limit)
			shedOnce, shedAt = true, f.cycles
		}
	}
}
