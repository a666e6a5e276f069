package memory

import (
	"cmp"
	"log/slog"
	"runtime/debug"
	"time"

	"github.com/forecastd/forecastd/runner"
)

// [pipeline] memory_budget: the memory the daemon keeps its heap under by
// holding fewer series than max_series.
const (
	// budgetPoll is how often the heap is read against the budget.
	budgetPoll = 250 * time.Millisecond
	// budgetFill is the share of the budget the series are sized to, in
	// the bytes the process holds for them (footprint.total), so that
	// growth between two polls stays under it and the collector, at its
	// soft limit of the whole budget, has the rest to run in (at 100 000
	// default series under 2.4 GB: a collection every few seconds, 2–3 %
	// of the CPU).
	budgetFill = 0.95
	// MinBudget is the smallest budget check-config accepts: the
	// daemon's own needs (NATS clients, buffers, caches) come first.
	MinBudget = 64 << 20
)

// DefaultGCPercent is [pipeline] gc_percent's default: the collector
// starts a cycle when the heap has grown by a fifth of what was live
// after the last one (Go's own default is 100: twice). The daemon's heap
// is mostly its series' models, which steady traffic rewrites in place
// without allocating, so collections are rare either way; what the
// percentage sets is how much freed memory the process keeps for the
// heap to grow into, which is RSS (BENCHMARKS.md, "The collector's
// headroom").
const DefaultGCPercent = 20

// MaxGCPercent is gc_percent's ceiling: 10 times the live heap.
const MaxGCPercent = 1000

// SetGCPercent sets the collector's target percentage to [pipeline]
// gc_percent (DefaultGCPercent when nil) unless the environment's GOGC
// set one, and returns the percentage in force and where it came from.
func SetGCPercent(cfg *int, gogc string) (int, string) {
	if gogc != "" {
		// The runtime parsed GOGC at start; read its value back.
		p := debug.SetGCPercent(-1)
		debug.SetGCPercent(p)
		return p, "GOGC"
	}
	p := DefaultGCPercent
	if cfg != nil {
		p = *cfg
	}
	debug.SetGCPercent(p)
	return p, "pipeline.gc_percent"
}

// SeriesLimit returns the bound on the series held that keeps the live
// bytes the process holds for its heap (footprint.total: the live heap in
// its spans, and the runtime's own), with active series held, under
// budgetFill of budget;
// current is the bound in force (0: none). transit is the part of live in
// transit, not the series' (the states queued for the checkpoint writer,
// bounded on their own): it is left out of the heap per series, so that
// evicting series into that queue does not make each series look dearer,
// and counted on its own against the target (at most half of it), so
// that the series and the queue together stay under it: the live heap
// then stays under the runtime's memory limit, which holds RSS near the
// budget. history is the part of live the history loads hold (bounded
// by [history] concurrency and max_points, which check-config counts
// against the budget): it is left out altogether, neither the series'
// nor taken from their room, so that warming new series never evicts
// the series held. It takes the heap per series as
// (live − history − transit)/active, which charges the daemon's fixed
// overhead to the series and so errs low; the bound is raised again, up
// to maxSeries (returned as 0: no bound below it), as the heap falls.
// With nothing held, or under the budget without a bound, it leaves the
// bound as it is.
func SeriesLimit(live, transit, history, budget uint64, active, current int64, maxSeries int) int64 {
	if active <= 0 || live == 0 {
		return current
	}
	live -= min(history, live-1)
	target := budgetFill * float64(budget)
	if current == 0 && float64(live) <= target {
		return 0
	}
	transit = min(transit, live-1)
	// The queue takes its own share of the target, at most half.
	room := max(target-float64(transit), target/2)
	n := int64(float64(active) * room / float64(live-transit))
	if n >= int64(maxSeries) {
		return 0
	}
	return max(n, 1)
}

// Runner is what Hold bounds: runner.Runner.
type Runner interface {
	Stats() runner.RunnerStats
	SetSeriesLimit(n int)
}

// Hold holds the runner's series to the memory budget (bytes) until stop
// is closed: it reads the runtime's footprint every budgetPoll and sets
// the runner's series limit (holder.step; maxSeries is [pipeline]
// max_series, 0 its default), logging each change. transit is the part of
// the heap queued for the checkpoint writer, history the part the
// history loads hold (nil: none), cache the part the kernel cache holds
// and gives up as the series grow (kernel_cache "auto"; nil: none), left
// out of the series' heap.
func Hold(stop <-chan struct{}, budget uint64, maxSeries int, r Runner, transit, history, cache func() uint64, log *slog.Logger) {
	h := holder{budget: budget, maxSeries: cmp.Or(maxSeries, runner.DefaultMaxSeries)}
	fr := newFootprintReader()
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
			log.Error("memory_budget: the runtime does not report its heap; the budget is not enforced", "metrics", footprintMetrics)
			return
		}
		st := r.Stats()
		var in holderInput
		if cache != nil {
			in.cache = cache()
		}
		if transit != nil {
			in.transit = transit()
		}
		if history != nil {
			in.history = history()
		}
		if n := h.step(f, in, st.SeriesActive, st.SeriesLimit); n != st.SeriesLimit {
			r.SetSeriesLimit(int(n))
			log.Info("memory_budget: series held bound changed", "budget", budget, "heap_live", f.live, "held", f.total(),
				"span_ratio", f.spans, "kernel_cache", in.cache, "checkpoint_queue", in.transit, "history", in.history,
				"series_active", st.SeriesActive, "series_limit", n, "max_series", h.maxSeries)
		}
	}
}

// holderInput is what a poll reads beside the footprint: the bytes of
// the kernel cache, of the checkpoint queue and of the history loads.
type holderInput struct{ cache, transit, history uint64 }

// holder decides the series bound from poll to poll.
type holder struct {
	budget    uint64
	maxSeries int
	cache     atMark
	lowered   bool   // the bound was lowered once
	loweredAt uint64 // collections completed when it was last lowered
}

// step returns the bound on the series held after a poll that read the
// footprint f and in, with active series held under the bound current
// (0: none): SeriesLimit over the bytes the process holds (the live heap
// in its spans, and the runtime's other memory), the kernel cache's bytes
// at the last marking left out. The bound is lowered again only once a
// collection has both begun and completed since it was last lowered: until
// then the heap read still holds the series evicted, and lowering on it
// would evict more (a cascade). It is raised at any poll, by 1 % or more.
func (h *holder) step(f footprint, in holderInput, active, current int64) int64 {
	cache := h.cache.add(f.cycles, in.cache)
	live := f.live - min(cache, f.live/2)
	n := SeriesLimit(f.held(live)+f.other, f.held(in.transit), f.held(in.history), h.budget, active, current, h.maxSeries)
	if n != 0 && (current == 0 || n < current) {
		if h.lowered && f.cycles < h.loweredAt+2 {
			return current
		}
		h.lowered, h.loweredAt = true, f.cycles
	}
	if current > 0 && n > current && float64(n) < raiseStep*float64(current) {
		return current // as the spans fill, the bound would creep up at every poll
	}
	return n
}

// raiseStep is the least factor by which a bound in force is raised
// (a bound removed is removed at once).
const raiseStep = 1.01

// SetLimit sets the runtime's soft memory limit to the budget,
// unless GOMEMLIMIT set one.
func SetLimit(budget uint64, gomemlimit string) {
	if gomemlimit == "" {
		debug.SetMemoryLimit(int64(budget))
	}
}
