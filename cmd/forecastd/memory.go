package main

import (
	"bufio"
	"cmp"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"unsafe"

	"github.com/forecastd/forecastd/embedding"
	"github.com/forecastd/forecastd/internal/statestore"
	"github.com/forecastd/forecastd/pipeline"
	"github.com/forecastd/forecastd/sinks"
	"github.com/forecastd/forecastd/sources"
	"github.com/forecastd/forecastd/svr"
)

// maxSeriesState is the ceiling of the state one series can reach, every
// size key of its model at once: an AOSVR window of 2000 at dim 256
// (≈ 70 MB) fits; NORMA's τ = 100 000 at dim 256 (≈ 210 MB) does not.
const maxSeriesState = 128 << 20

// memoryNeed is what a configuration can need, in bytes.
type memoryNeed struct {
	// queues are the shards' queues, allocated at start.
	queues int64
	// buffers are the other bounded buffers: the decoders' key caches,
	// the queue of evicted series' states, the sinks' buffers.
	buffers int64
	// perSeries is the largest state one series can reach, under table.
	perSeries int64
	table     string
	maxSeries int
}

// total is the queues, the buffers and max_series series each at their
// largest.
func (m memoryNeed) total() int64 { return m.queues + m.buffers + int64(m.maxSeries)*m.perSeries }

func (m memoryNeed) String() string {
	return fmt.Sprintf("memory: queues %s (at start), buffers up to %s, a series up to %s ([%s]) × max_series %d: up to %s in all",
		bytesText(m.queues), bytesText(m.buffers), bytesText(m.perSeries), m.table, m.maxSeries, bytesText(m.total()))
}

// memoryNeed estimates what c can need; the model tables must have
// resolved (pipelineRules).
func (c *Config) memoryNeed(def pipeline.Config, rules []pipeline.Rule) memoryNeed {
	p := c.Pipeline
	shards := cmp.Or(p.Shards, runtime.GOMAXPROCS(0))
	queue := cmp.Or(p.QueueSize, pipeline.DefaultQueueSize)
	m := memoryNeed{
		// Two queues a shard: the series held, the new series.
		queues:    2 * int64(shards) * int64(queue) * int64(unsafe.Sizeof(pipeline.Input{})),
		maxSeries: cmp.Or(p.MaxSeries, pipeline.DefaultMaxSeries),
	}
	readers := max(len(c.Input.Subjects), 1)
	if js := c.Input.JetStream; js != nil {
		readers = max(js.Partitions, 1)
	}
	m.buffers = int64(readers) * sources.DefaultMaxKeyBytes
	if c.State.Dir != "" || c.State.Store != "" {
		q := int64(statestore.MaxQueuedEvicted)
		if b := c.Pipeline.MemoryBudget.N; b > 0 {
			q = min(q, b/8) // checkpointLimits
		}
		m.buffers += q
	}
	m.buffers += 8 << 20                     // the NATS output's reconnect buffer (sinks.NATSOptions)
	m.buffers += sinks.DefaultMaxUnconfirmed // its messages kept until confirmed
	if ic := c.Output.InfluxDB; ic != nil {
		m.buffers += int64(cmp.Or(ic.MetricBufferLimit, sinks.DefaultMetricBufferLimit)) * int64(unsafe.Sizeof(sinks.Record{})) // held by value (528 B)
	}
	m.perSeries, m.table = seriesState(def), "model"
	for i, r := range rules {
		if n := seriesState(r.Config); n > m.perSeries {
			m.perSeries, m.table = n, fmt.Sprintf("rules[%d]", i)
		}
	}
	return m
}

// seriesState bounds the state a series of configuration m can reach, in
// bytes: its model at its largest (AOSVR: R and the kernel columns of a
// window whose every sample is a support vector, and the samples; NORMA:
// τ terms, svr.NORMA.MaxStateBytes; SOG-SVR: its fixed arrays), the
// interval calibration of each horizon step, the pending forecasts, the
// seasonal history and a fixed overhead.
func seriesState(m pipeline.Config) int64 {
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

// memoryErrors are the problems of c's memory as a whole: a series'
// state over maxSeriesState; the queues and buffers, allocated or bounded
// whatever the traffic, over memory_budget or, without one, over half of
// the host's memory (the series need the rest); a memory_budget over the
// host's memory.
func (c *Config) memoryErrors(m memoryNeed) []error {
	var errs []error
	if m.perSeries > maxSeriesState {
		errs = append(errs, fmt.Errorf("%s: a series' state can reach %s, over the ceiling of %s per series (README \"Limits\"): lower window, dim, norma_tau, sog_max_dict, interval_window or horizon",
			m.table, bytesText(m.perSeries), bytesText(maxSeriesState)))
	}
	fixed := m.queues + m.buffers
	host, hostOK := hostMemory()
	if b := c.Pipeline.MemoryBudget; b.N > 0 {
		if fixed > b.N {
			errs = append(errs, fmt.Errorf("pipeline: the queues and buffers alone can take %s, over memory_budget %s: lower shards or queue_size, or raise memory_budget", bytesText(fixed), b.Text))
		}
		if hostOK && b.N > host {
			errs = append(errs, fmt.Errorf("pipeline.memory_budget: %s exceeds this host's memory, %s", b.Text, bytesText(host)))
		}
	} else if hostOK && fixed > host/2 {
		errs = append(errs, fmt.Errorf("pipeline: the queues and buffers alone can take %s, over half of this host's memory (%s): lower shards or queue_size", bytesText(fixed), bytesText(host)))
	}
	return errs
}

// hostMemory is the host's memory (MemTotal of /proc/meminfo); ok is
// false where it cannot be read.
func hostMemory() (int64, bool) {
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

// bytesText writes n bytes in the largest binary unit below it, e.g.
// "10.2 GiB".
func bytesText(n int64) string {
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
