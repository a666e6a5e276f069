package main

import (
	"github.com/forecastd/forecastd/internal/memory"
	"github.com/forecastd/forecastd/internal/telemetry"
	"github.com/forecastd/forecastd/runner"
	"github.com/forecastd/forecastd/sources"
	"github.com/forecastd/forecastd/svr"
)

// dropLoop logs what was dropped, every d.dropLogEvery, until d.bg is
// closed (telemetry.LogDrops).
func (d *daemon) dropLoop() {
	defer d.wg.Done()
	telemetry.LogDrops(d.log.With("component", "daemon"), d.dropLogEvery, d.bg,
		func() sources.Stats { return d.src.Stats() }, func() runner.RunnerStats { return d.runner.Stats() })
}

// warmLoop logs what warm start did, every d.dropLogEvery, until d.bg is
// closed (telemetry.LogWarmStart).
func (d *daemon) warmLoop() {
	defer d.wg.Done()
	telemetry.LogWarmStart(d.log.With("component", "history"), d.dropLogEvery, d.bg, d.runner.HistoryStats)
}

// budgetLoop holds the series to the memory budget until d.bg is closed
// (memory.Hold).
func (d *daemon) budgetLoop(budget uint64) {
	defer d.wg.Done()
	var cache func() uint64
	if k := d.cfg.Pipeline.KernelCache; k.Auto || !k.IsSet() {
		cache = func() uint64 { return uint64(max(0, svr.ColumnCache().Bytes)) }
	}
	memory.Hold(d.bg, budget, d.cfg.Pipeline.MaxSeries, d.runner, func() uint64 {
		if d.ckpt != nil {
			return uint64(d.ckpt.Stats().Queued)
		} else if d.parts != nil {
			return uint64(d.parts.CheckpointStats().Queued)
		}
		return 0
	}, func() uint64 { return uint64(max(0, d.runner.HistoryStats().Bytes)) }, cache, d.log.With("component", "pipeline"))
}

// cacheLoop makes the kernel cache's limit follow what target leaves
// beside the rest of the live heap until d.bg is closed, the idle series
// giving up their columns over it (memory.HoldCache).
func (d *daemon) cacheLoop(target int64) {
	defer d.wg.Done()
	memory.HoldCache(d.bg, target, d.cfg.Pipeline.MemoryBudget.N > 0, d.runner.ShedColumns)
}
