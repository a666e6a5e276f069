// Package memory sizes what a forecastd configuration can hold in memory,
// and holds the series to a memory budget while the daemon runs: it reads
// the live heap and bounds the series the runner holds, and sets the
// collector's percentage and soft limit.
package memory

import (
	"bufio"
	"cmp"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"unsafe"

	"github.com/forecastd/forecastd/embedding"
	"github.com/forecastd/forecastd/internal/history"
	"github.com/forecastd/forecastd/internal/statestore"
	"github.com/forecastd/forecastd/pipeline"
	"github.com/forecastd/forecastd/runner"
	"github.com/forecastd/forecastd/sinks"
	"github.com/forecastd/forecastd/sources"
	"github.com/forecastd/forecastd/svr"
)

// MaxSeriesState is the ceiling of the state one series can reach, every
// size key of its model at once: an AOSVR window of 2000 at dim 256
// (≈ 70 MB) fits; NORMA's τ = 100 000 at dim 256 (≈ 210 MB) does not.
const MaxSeriesState = 128 << 20

// Layout is what of a daemon's configuration takes memory.
type Layout struct {
	// Shards, QueueSize and MaxSeries are [pipeline]'s (0: the runner's
	// defaults).
	Shards, QueueSize, MaxSeries int
	// Readers are the subjects, or under partitions the consumers, read
	// at once (at least 1).
	Readers int
	// Checkpoints: [state] dir or store is set.
	Checkpoints bool
	// Budget is [pipeline] memory_budget in bytes (0: none).
	Budget int64
	// SinkBuffers is what the sinks hold at most, in bytes: the InfluxDB
	// and Prometheus sinks' metric_buffer_limit records, the alert
	// sinks' max_alerts alerts, the read API's max_series series.
	SinkBuffers int64
	// Model is [model]'s configuration, Rules the [[rules]]'.
	Model pipeline.Config
	Rules []runner.Rule
	// History: [history] is set, with HistoryConcurrency loads at once
	// of up to HistoryMaxPoints points each, and up to HistoryQueued
	// series waiting for theirs (0: their defaults).
	History                                             bool
	HistoryConcurrency, HistoryMaxPoints, HistoryQueued int
	// Cache is [pipeline] kernel_cache.
	Cache pipeline.KernelCache
}

// Need is what a configuration can need, in bytes.
type Need struct {
	// Queues are the shards' queues, allocated at start.
	Queues int64
	// Buffers are the other bounded buffers: the decoders' key caches,
	// the queue of evicted series' states, the sinks' buffers.
	Buffers int64
	// History is what warm start holds at most: the loads running (each
	// its points and its decoder's bound), the live points held meanwhile
	// and the series waiting for a load.
	History int64
	// PerSeries is the largest state one series can reach, under Table.
	PerSeries int64
	Table     string
	MaxSeries int
	// CacheLimit is what the kernel cache may hold: kernel_cache, or
	// under "auto" (CacheAuto) what CacheTarget leaves beside Fixed
	// before any series (the series take their part of it as they grow).
	// CacheColumns is what max_series AOSVR series keep in it, each at
	// a typical margin set (cacheColumns); 0 without an AOSVR table.
	CacheLimit, CacheColumns int64
	CacheAuto                bool
}

// Fixed is what the configuration holds whatever the series: the queues,
// the buffers and warm start's loads.
func (m Need) Fixed() int64 { return m.Queues + m.Buffers + m.History }

// Total is Fixed and max_series series each at their largest.
func (m Need) Total() int64 { return m.Fixed() + int64(m.MaxSeries)*m.PerSeries }

func (m Need) String() string {
	hist := ""
	if m.History > 0 {
		hist = fmt.Sprintf(", warm start up to %s", BytesText(m.History))
	}
	return fmt.Sprintf("memory: queues %s (at start), buffers up to %s%s, a series up to %s ([%s]) × max_series %d: up to %s in all if every series reached its largest state; %s",
		BytesText(m.Queues), BytesText(m.Buffers), hist, BytesText(m.PerSeries), m.Table, m.MaxSeries, BytesText(m.Total()), m.cacheText())
}

// cacheText says what the kernel cache will hold.
func (m Need) cacheText() string {
	limit := "kernel_cache " + BytesText(m.CacheLimit)
	if m.CacheAuto {
		limit = "kernel_cache auto: up to " + BytesText(m.CacheLimit) + ", less what the series hold"
	}
	if m.CacheColumns == 0 {
		return limit + " (no AOSVR table: unused)"
	}
	share := "every series keeps its kernel columns"
	if m.CacheLimit < m.CacheColumns {
		share = fmt.Sprintf("at most %.0f %% of the series keep their kernel columns, the others compute them at each update", 100*float64(m.CacheLimit)/float64(m.CacheColumns))
	}
	return fmt.Sprintf("%s; max_series AOSVR series keep about %s of kernel columns (a margin set of a sixth of the window each): %s",
		limit, BytesText(m.CacheColumns), share)
}

// cacheColumns is what a warm AOSVR series of configuration c keeps in
// the kernel cache at a margin set of a sixth of its window, about what
// the default's holds: the columns (each a window long, at its size
// class) and their list. 0 for another kind.
func cacheColumns(c pipeline.Config) int64 {
	if c.Kind != pipeline.AOSVR || c.Window <= 0 {
		return 0
	}
	s := int64(c.Window+5) / 6
	col := 8 * int64(cap(slices.Grow([]float64(nil), c.Window)))
	return s * (col + 24)
}

// Estimate is what a configuration laid out as l can need.
func Estimate(l Layout) Need {
	shards := cmp.Or(l.Shards, runner.DefaultShards())
	queue := cmp.Or(l.QueueSize, runner.DefaultQueueSize)
	m := Need{
		// Two queues a shard: the series held, the new series.
		Queues:    2 * int64(shards) * int64(queue) * int64(unsafe.Sizeof(runner.Input{})),
		MaxSeries: cmp.Or(l.MaxSeries, runner.DefaultMaxSeries),
	}
	m.Buffers = int64(max(l.Readers, 1)) * sources.DefaultMaxKeyBytes
	if l.Checkpoints {
		q := int64(statestore.MaxQueuedEvicted)
		if l.Budget > 0 {
			q = min(q, l.Budget/8) // the checkpoints' limits
		}
		m.Buffers += q
	}
	m.Buffers += 8 << 20                     // the NATS output's reconnect buffer (sinks.NATSOptions)
	m.Buffers += sinks.DefaultMaxUnconfirmed // its messages kept until confirmed
	m.Buffers += l.SinkBuffers
	if l.History {
		loads := int64(cmp.Or(l.HistoryConcurrency, runner.DefaultHistoryConcurrency))
		queued := int64(cmp.Or(l.HistoryQueued, runner.DefaultHistoryQueue))
		m.History = loads*history.LoadBytes(l.HistoryMaxPoints) +
			runner.DefaultHistoryMaxHeld*int64(unsafe.Sizeof(runner.Input{})) +
			queued*(int64(unsafe.Sizeof(runner.HistoryRequest{}))+64) // a job and its request
	}
	m.PerSeries, m.Table = SeriesState(l.Model), "model"
	cols := cacheColumns(l.Model)
	for i, r := range l.Rules {
		if n := SeriesState(r.Config); n > m.PerSeries {
			m.PerSeries, m.Table = n, fmt.Sprintf("rules[%d]", i)
		}
		cols = max(cols, cacheColumns(r.Config))
	}
	m.CacheColumns = int64(m.MaxSeries) * cols
	if m.CacheAuto = !l.Cache.IsSet() || l.Cache.Auto; m.CacheAuto {
		target, _ := CacheTarget(l.Budget)
		m.CacheLimit = max(0, target-m.Fixed())
	} else {
		m.CacheLimit = l.Cache.N
	}
	return m
}

// SeriesState bounds the state a series of configuration m can reach, in
// bytes: its model at its largest (AOSVR: R and the kernel columns of a
// window whose every sample is a support vector, and the samples; NORMA:
// τ terms, svr.NORMA.MaxStateBytes; SOG-SVR: its fixed arrays), the
// interval calibration of each horizon step, the pending forecasts, the
// seasonal history and a fixed overhead.
func SeriesState(m pipeline.Config) int64 {
	d := int64(m.Dim) + 16 // the embedding's inputs: lags, levels, seasons
	var model int64
	switch m.Kind {
	case pipeline.AOSVR:
		w := int64(m.Window)
		model = 8 * (2*(w+1)*(w+1) + w*(d+16))
	case pipeline.NORMA:
		tau := int64(cmp.Or(m.NORMA.Tau, svr.DefaultNORMATau))
		model = 8 * (tau*(d+2) + d)
	case pipeline.SOGSVR:
		n := int64(cmp.Or(m.SOG.MaxDict, svr.SOGDefaultMaxDict))
		model = 8*(n*d+3*n*(n+1)/2+5*n) + 512
	}
	h := int64(max(m.Horizon, 1))
	intervals := h * (12*int64(cmp.Or(m.IntervalWindow, pipeline.DefaultIntervalWindow)) + 1024)
	pending := h * (h + 1) / 2 * 64
	seasons := int64(len(m.Seasons)) * embedding.MaxSeason * 16
	return model + intervals + pending + seasons + 8<<10
}

// Errors are the problems of m as a whole, under [pipeline]
// memory_budget of budget bytes (0: none), written budgetText: a series'
// state over MaxSeriesState; the queues, buffers and warm start's loads,
// allocated or bounded whatever the traffic, over the budget or, without
// one, over half of the host's memory (the series need the rest); a
// budget over the host's memory.
func (m Need) Errors(budget int64, budgetText string) []error {
	var errs []error
	if m.PerSeries > MaxSeriesState {
		errs = append(errs, fmt.Errorf("%s: a series' state can reach %s, over the ceiling of %s per series (docs/operations.md \"Limits\"): lower window, dim, norma_tau, sog_max_dict, interval_window or horizon",
			m.Table, BytesText(m.PerSeries), BytesText(MaxSeriesState)))
	}
	fixed := m.Fixed()
	host, hostOK := HostMemory()
	if budget > 0 {
		if fixed > budget {
			errs = append(errs, fmt.Errorf("pipeline: the queues and buffers alone can take %s, over memory_budget %s: lower shards or queue_size (or [history] concurrency and max_points), or raise memory_budget", BytesText(fixed), budgetText))
		}
		if hostOK && budget > host {
			errs = append(errs, fmt.Errorf("pipeline.memory_budget: %s exceeds this host's memory, %s", budgetText, BytesText(host)))
		}
	} else if hostOK && fixed > host/2 {
		errs = append(errs, fmt.Errorf("pipeline: the queues and buffers alone can take %s, over half of this host's memory (%s): lower shards or queue_size (or [history] concurrency and max_points)", BytesText(fixed), BytesText(host)))
	}
	return errs
}

// Warnings are what may keep a configuration from doing what it says,
// though it can run: under a memory_budget of budget bytes, written
// budgetText, room for no series at its largest beside what is fixed.
// Without a budget, the series held are bounded by max_series alone,
// and every one of them at its largest state is no forecast of the
// memory used (a warm series usually holds far less): nothing is said.
func (m Need) Warnings(budget int64, budgetText string) []string {
	if budget <= 0 || m.Fixed() > budget {
		return nil // none, or an error already
	}
	if room := budgetFill*float64(budget) - float64(m.Fixed()); room < float64(m.PerSeries) {
		return []string{fmt.Sprintf("pipeline.memory_budget: %s leaves room for no series at its largest state (%s, [%s]) beside the queues and buffers (%s): raise memory_budget or lower the model's size keys",
			budgetText, BytesText(m.PerSeries), m.Table, BytesText(m.Fixed()))}
	}
	return nil
}

// HostMemory is the host's memory (MemTotal of /proc/meminfo); ok is
// false where it cannot be read.
func HostMemory() (int64, bool) {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "MemTotal:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10, err == nil
		}
	}
	return 0, false
}

// BytesText writes n bytes in the largest binary unit below it, e.g.
// "10.2 GiB".
func BytesText(n int64) string {
	const units = "KMGT"
	if n < 1<<10 {
		return fmt.Sprintf("%d B", n)
	}
	v, i := float64(n)/1024, 0
	for v >= 1024 && i < len(units)-1 {
		v /= 1024
		i++
	}
	return fmt.Sprintf("%.1f %ciB", v, units[i])
}
