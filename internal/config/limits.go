package config

import (
	"fmt"

	"github.com/forecastd/forecastd/internal/memory"
	"github.com/forecastd/forecastd/pipeline"
	"github.com/forecastd/forecastd/sources"
)

// Ceilings of the size keys (README "Limits"): `check-config` and `run`
// refuse a larger value, so that a configuration that cannot fit
// is refused before it runs out of memory. Each is the key's default
// times a margin, and its cost is stated where it is not obvious.
const (
	maxShards    = 1024
	maxQueueSize = 1 << 16 // per shard; a queued point is about 100 bytes
	maxMaxSeries = 10_000_000
	// maxWindow bounds AOSVR's window W: its R matrix is up to W² floats
	// (32 MB at 2000) and its kernel rows W per sample, per series.
	maxWindow = 2000
	// maxIntervalWindow bounds the residuals kept per series and per
	// horizon step (12 bytes each beyond 65 536, 10 below: 1.2 MB at the
	// ceiling).
	maxIntervalWindow = 100_000
	maxDim            = 256
	maxDelay          = 10_000
	// maxSOGDict bounds SOG-SVR's dictionary M: its two matrices are
	// M(M+1)/2 floats each (4 MB at 1024), and a call borrows two of M²
	// (8 MB each); 16384 took 6.4 GB per series.
	maxSOGDict = 1024
	// maxNORMATau bounds NORMA's kernel terms: τ·B floats per series.
	maxNORMATau = 100_000

	// MaxPayload is the largest [input] max_payload: the embedded
	// server's own limit must lie above it, and NATS allows at most 64 MiB.
	MaxPayload = 32 << 20
)

// LimitErrors returns the problems of the size keys beyond their
// ceilings: [input] bounds, [pipeline] sizes, and the model sizes of [model] and every [[rules]]
// entry as they resolve (none if they do not). Validate reports them.
func (c *Config) LimitErrors() []error {
	var errs []error
	bad := func(key string, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", key, fmt.Sprintf(format, args...)))
	}
	ceiling := func(key string, n, max int) {
		if n > max {
			bad(key, "%d exceeds the ceiling of %d (README \"Limits\")", n, max)
		}
	}
	in := c.Input
	if in.MaxPast.D < 0 {
		bad("input.max_past", "must not be negative, got %q (\"0s\": no bound)", in.MaxPast.Text)
	}
	if in.MaxFuture.IsSet() && (in.MaxFuture.D <= 0 || in.MaxFuture.D > sources.MaxMaxFuture) {
		bad("input.max_future", "must be positive and at most %v, got %q", sources.MaxMaxFuture, in.MaxFuture.Text)
	}
	if in.MaxKeyLen < 0 || in.MaxPoints < 0 {
		bad("input", "max_key_len and max_points must not be negative, got %d and %d", in.MaxKeyLen, in.MaxPoints)
	}
	ceiling("input.max_key_len", in.MaxKeyLen, sources.MaxMaxKeyLen)
	ceiling("input.max_points", in.MaxPoints, sources.MaxMaxPoints)

	p := c.Pipeline
	ceiling("pipeline.shards", p.Shards, maxShards)
	ceiling("pipeline.queue_size", p.QueueSize, maxQueueSize)
	ceiling("pipeline.max_series", p.MaxSeries, maxMaxSeries)
	if b := p.MemoryBudget; b.IsSet() && b.N < memory.MinBudget {
		bad("pipeline.memory_budget", "%q is under the smallest budget, 64MiB (the daemon's own needs come first)", b.Text)
	}
	if g := p.GCPercent; g != nil && (*g < 1 || *g > memory.MaxGCPercent) {
		bad("pipeline.gc_percent", "must be 1 to %d, got %d (the heap may grow to 1 + gc_percent/100 times what is live before a collection)", memory.MaxGCPercent, *g)
	}
	if k := c.State.KeepEvicted; k != nil {
		if *k < 1 {
			bad("state.keep_evicted", "must be at least 1, got %d", *k)
		}
		ceiling("state.keep_evicted", *k, maxMaxSeries)
	}

	def, rules, err := c.PipelineRules()
	if err != nil {
		return errs // reported by Validate
	}
	check := func(table string, m pipeline.Config) {
		if m.Kind == pipeline.AOSVR && m.Window == 0 {
			bad(table+".window", "0 (no forgetting) keeps every point a series is sent, without bound: set a window of at most %d", maxWindow)
		}
		ceiling(table+".window", m.Window, maxWindow)
		ceiling(table+".interval_window", m.IntervalWindow, maxIntervalWindow)
		ceiling(table+".dim", m.Dim, maxDim)
		ceiling(table+".delay", m.Delay, maxDelay)
		ceiling(table+".sog_max_dict", m.SOG.MaxDict, maxSOGDict)
		ceiling(table+".norma_tau", m.NORMA.Tau, maxNORMATau)
	}
	check("model", def)
	for i, r := range rules {
		check(fmt.Sprintf("rules[%d]", i), r.Config)
	}
	return errs
}
