package memory

import (
	"runtime/metrics"
	"time"

	"github.com/forecastd/forecastd/pipeline"
	"github.com/forecastd/forecastd/svr"
)

// CacheTarget is the live heap the series and the kernel cache share
// under kernel_cache "auto": budgetFill of a memory_budget of budget
// bytes, or without one (0) half of the host's memory; ok is false when
// neither is known.
func CacheTarget(budget int64) (target int64, ok bool) {
	if budget > 0 {
		return int64(budgetFill * float64(budget)), true
	}
	host, ok := HostMemory()
	return host / 2, ok
}

// CacheLimit is kernel_cache "auto"'s limit: what a target of live heap
// leaves beside a live heap of live bytes, held of them the cache's.
func CacheLimit(live, held, target int64) int64 {
	return max(0, target-max(0, live-held))
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
// beside the rest of the live heap (CacheLimit), read every budgetPoll,
// until stop is closed: as the series grow, the cache gives up columns
// (each model at the end of its next call), and it takes them back as the
// series shrink. Hold leaves the cache out of the series' heap, so the
// series never make room for it.
func HoldCache(stop <-chan struct{}, target int64) {
	sample := []metrics.Sample{{Name: heapLiveMetric}}
	t := time.NewTicker(budgetPoll)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		metrics.Read(sample)
		if sample[0].Value.Kind() != metrics.KindUint64 {
			return
		}
		live := int64(sample[0].Value.Uint64())
		svr.SetColumnCache(CacheLimit(live, svr.ColumnCache().Bytes, target))
	}
}
