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
	if budget > 0 {
		// Under a budget the cache starts empty and grows once the
		// series have stopped growing (HoldCache, steadyRest).
		svr.SetColumnCache(0)
	} else {
		svr.SetColumnCache(CacheLimit(0, 0, target))
	}
	return target
}

// steadyFor is how long the rest of the memory must have stopped growing
// before a cache under a memory budget grows, and steadyGrowth the
// growth that still counts as stopped.
const (
	steadyFor    = 30 * time.Second
	steadyGrowth = 0.02
)

// steadyRest tells whether the memory beside the kernel cache has stopped
// growing. Under a budget the series nearly fill, a cache that takes the
// room the series have not reached yet (a warm-up) must give it up as
// they come, and the columns it gives up leave the heap's spans part
// empty, which the budget counts, and holds fewer series for, until new
// series fill them (BENCHMARKS.md, "The kernel cache"). So the cache
// grows only once the rest has stayed within steadyGrowth of its least
// over steadyFor.
type steadyRest struct {
	polls []restPoll
}

type restPoll struct {
	at   time.Time
	rest int64
}

// steady records the rest's bytes at a poll at now and reports whether
// they have been steady for steadyFor.
func (s *steadyRest) steady(now time.Time, rest int64) bool {
	s.polls = append(s.polls, restPoll{now, rest})
	i := 0
	for i < len(s.polls)-1 && now.Sub(s.polls[i+1].at) >= steadyFor {
		i++ // polls[i+1] alone covers the span: drop polls[i]
	}
	s.polls = s.polls[:copy(s.polls, s.polls[i:])]
	if now.Sub(s.polls[0].at) < steadyFor {
		return false
	}
	least := rest
	for _, p := range s.polls {
		least = min(least, p.rest)
	}
	return float64(rest) <= (1+steadyGrowth)*float64(least)
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
// the columns given up. Under a budget (budgeted) the limit is raised
// only once the rest has stopped growing (steadyRest).
func HoldCache(stop <-chan struct{}, target int64, budgeted bool, shed func(bytes int64)) {
	fr := newFootprintReader()
	var mark atMark
	var rest steadyRest
	var shedAt uint64
	shedOnce := false
	t := time.NewTicker(budgetPoll)
	defer t.Stop()
	for {
		var now time.Time
		select {
		case <-stop:
			return
		case now = <-t.C:
		}
		f, ok := fr.read()
		if !ok {
			return
		}
		held := max(0, svr.ColumnCache().Bytes)
		atm := mark.add(f.cycles, uint64(held))
		limit := cacheLimitOf(f, atm, target)
		steady := rest.steady(now, int64(f.total())-int64(f.held(min(atm, f.live))))
		if cur := svr.ColumnCache().Limit; budgeted && limit > cur && !steady {
			limit = cur
		}
		svr.SetColumnCache(limit)
		if shed != nil && held > limit && (!shedOnce || f.cycles >= shedAt+2) {
			shed(held - limit)
			shedOnce, shedAt = true, f.cycles
		}
	}
}
