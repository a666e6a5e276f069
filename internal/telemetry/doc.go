// Package telemetry serves forecastd's self-metrics and health endpoints
// on [http] listen: /metrics for Prometheus, /-/healthy and /-/ready.
//
// It is built on github.com/prometheus/client_golang, which gives the
// exposition formats (text, OpenMetrics, protobuf, negotiated with the
// scraper), a registry that checks names and label consistency, and the
// Go runtime and process collectors (go_*, process_*: goroutines, heap,
// GC, resident memory, open files, CPU).
//
// # Reading, not counting
//
// The components already count what they do, with their own atomics, and
// expose it in Stats structs; [Metrics] reads those at scrape time through
// the getters in [Config], so nothing is counted twice and nothing of this
// package runs per point. Only the two distributions need a call on the
// hot path: [Metrics.ObserveUpdate] per model update and
// [Metrics.ObserveAbsError] per outcome (or [Metrics.ScoreSink] around a
// series' sink), about 25 ns each and no allocation (BenchmarkObserve*;
// two shard goroutines hammering the same histogram without pause take
// about 110 ns, the contended worst case).
//
// # Metrics
//
// Names are prefixed forecastd_. Each comes from one field of one getter:
//
//	metric                                       type       Config getter: field
//	messages_received_total                      counter    Source: Received
//	parse_errors_total{reason}                   counter    Source: ParseErrors[r], every r of sources.Reasons(), 0 included
//	messages_refused_total                       counter    Source: Refused
//	messages_filtered_total                      counter    Source: Filtered
//	messages_dropped_total                       counter    Source: Dropped
//	messages_skipped_total                       counter    Source: Skipped
//	consumer_resets_total                        counter    Source: Resets
//	input_connected                              gauge      Source: Connected (0 or 1)
//	series_active                                gauge      Runner: SeriesActive
//	series_limit                                 gauge      Runner: SeriesLimit (memory_budget's bound, 0: none)
//	series_created_total                         counter    Runner: SeriesCreated
//	series_evicted_total{reason="idle"}          counter    Runner: SeriesEvicted
//	series_evicted_total{reason="max_series"}    counter    Runner: EvictedLRU (least recently used, at max_series)
//	series_evicted_unsaved_total                 counter    Runner: EvictedUnsaved (checkpoint queue full)
//	points_processed_total                       counter    Runner: Processed
//	forecasts_total                              counter    Runner: Forecasts
//	points_dropped_total{reason="queue_full"}    counter    Runner: DroppedQueueFull
//	points_dropped_total{reason="max_series"}    counter    Runner: DroppedMaxSeries
//	points_dropped_total{reason="shutdown"}      counter    Runner: DroppedShutdown
//	points_dropped_total{reason="closed"}        counter    Runner: DroppedClosed
//	points_dropped_total{reason="out_of_order"}  counter    Runner: OutOfOrder
//	points_dropped_total{reason="late"}          counter    Runner: Late
//	points_dropped_total{reason="implausible"}   counter    Runner: Implausible
//	records_written_total{sink="nats"}           counter    NATS: Published
//	write_errors_total{sink="nats"}              counter    NATS: Errors (records refused)
//	records_dropped_total{sink="nats",reason="buffer_full"}  NATS: BufferFull
//	buffer_bytes{sink="nats"}                    gauge      NATS: Buffered (bytes; absent once closed)
//	nats_republished_total                       counter    NATS: Republished
//	nats_unkept_total                            counter    NATS: Unkept
//	nats_unconfirmed_bytes                       gauge      NATS: Unconfirmed (bytes)
//	records_written_total{sink="influxdb"}       counter    Influx: Written
//	write_errors_total{sink="influxdb"}          counter    Influx: WriteErrors (requests, retries included)
//	records_dropped_total{sink="influxdb",reason="buffer"}   Influx: Dropped
//	records_dropped_total{sink="influxdb",reason="rejected"} Influx: Rejected
//	buffer_size{sink="influxdb"}                 gauge      Influx: Buffered (records)
//	checkpoints_discarded_total                  counter    Checkpoints: Discarded
//	checkpoint_queue_bytes                       gauge      Checkpoints: Queued
//	partitions_held                              gauge      Partitions: Held
//	partition_leases_acquired_total              counter    Partitions: Acquired
//	model_update_duration_seconds                histogram  ObserveUpdate; buckets UpdateBuckets, 1 µs to 100 ms
//	forecast_abs_error                           histogram  ObserveAbsError / ScoreSink; the model's units (raw with scale none), AbsErrorBuckets
//	build_info{version,goversion,revision}       gauge 1    Config.Version, Revision; runtime.Version()
//
// A nil getter leaves its rows out (no Influx getter: no sink="influxdb"
// series). The NATS client buffers bytes and the InfluxDB sink records, so
// they are two metrics, buffer_bytes and buffer_size: one name with two
// units would make sum() meaningless. Points and messages are counted
// apart for the same reason: a message may carry many points.
// forecast_abs_error is a histogram, not a summary: histograms aggregate
// across instances and their Observe is lock-free, where a summary takes a
// lock per observation.
//
// # Wiring it into cmd/forecastd/run.go
//
// The daemon gains three fields:
//
//	metrics  *telemetry.Metrics
//	telem    *telemetry.Server // nil without [http] listen
//	stopping atomic.Bool       // set first thing in shutdown
//
// plus, with the state store, restored atomic.Bool, set once the
// checkpoint is loaded. In start(), once d.natsOut and d.influx exist and
// before pipeline.NewRunner (Open, below, uses d.metrics):
//
//	var influxStats func() sinks.InfluxStats
//	if d.influx != nil {
//		influxStats = d.influx.Stats
//	}
//	d.metrics = telemetry.New(telemetry.Config{
//		// d.src and d.runner are set below, before the server starts.
//		Source:  func() sources.Stats { return d.src.Stats() },
//		Runner:  func() pipeline.RunnerStats { return d.runner.Stats() },
//		NATS:    d.natsOut.Stats,
//		Influx:  influxStats,
//		Ready:   d.readiness,
//		Version: version, // main.version, may be empty
//	})
//
// In the RunnerConfig, once pipeline has the hook (see below):
//
//	Observer: d.metrics, // pipeline calls ObserveUpdate per model update
//
// In Open, the series' sink is wrapped so that every outcome is scored:
//
//	return d.metrics.ScoreSink(ss)
//
// startHTTP is replaced, at the same place (the end of start(), after
// d.src and d.runner are set, so the getters never see nil):
//
//	if cfg.HTTP.Listen != "" {
//		d.telem = telemetry.NewServer(d.metrics.Handler(), d.log)
//		if err := d.telem.Start(cfg.HTTP.Listen); err != nil {
//			return fmt.Errorf("http.listen: %w", err)
//		}
//		d.httpAddr = d.telem.Addr()
//	}
//
// (To answer /-/healthy during a long state restore, start the server
// first in start() instead, with getters that return zero Stats while
// d.src or d.runner is nil, read through atomic.Pointer.)
//
// Readiness is the daemon's to decide; it must not block:
//
//	func (d *daemon) readiness() (bool, string) {
//		switch {
//		case d.stopping.Load():
//			return false, "shutting down"
//		case !d.restored.Load():
//			return false, "model state not restored"
//		case !d.src.Connected():
//			return false, "nats input not connected"
//		case !d.outConn.IsConnected():
//			return false, "nats output not connected"
//		}
//		return true, ""
//	}
//
// In shutdown: d.stopping.Store(true) first (/-/ready turns 503 while
// draining), and the server closed last, after the sinks and the source,
// so that a final scrape sees the final counts; it replaces
// d.httpSrv.Shutdown:
//
//	if d.telem != nil {
//		if err := d.telem.Close(ctx); err != nil {
//			errs = append(errs, err)
//		}
//	}
//
// # The update hook pipeline lacks
//
// model_update_duration_seconds stays empty until pipeline calls
// ObserveUpdate. The hook this package is designed for, declared by
// pipeline (the consumer):
//
//	// pipeline/runner.go
//	type UpdateObserver interface{ ObserveUpdate(d time.Duration) }
//	// RunnerConfig.Observer UpdateObserver: nil, none; otherwise every
//	// series is created with MeasureUpdates and told to call it.
//
//	// pipeline/series.go, Series.step, where UpdateNanos is added:
//	if s.cfg.MeasureUpdates {
//		d := time.Since(t0)
//		s.stats.UpdateNanos += int64(d)
//		if s.obs != nil {
//			s.obs.ObserveUpdate(d)
//		}
//	}
//
// Its cost per update is the two monotonic clock reads MeasureUpdates
// already makes (about 60 ns here, BenchmarkClockPair) and ObserveUpdate
// (about 25 ns), against an update of 1 µs (NORMA) to hundreds of µs
// (AOSVR, W = 200): no sampling needed. Without touching Series, the
// runner can do it alone in shard.process: read e.s.Stats() before and
// after Push, and when Updates grew by one, observe the growth of
// UpdateNanos.
package telemetry
