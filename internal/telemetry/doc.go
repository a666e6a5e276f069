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
// expose it in Stats structs, and their own prometheus.Collector that reads
// those at scrape time; the daemon hands the collectors in
// Config.Collectors, and this package only serves them, so nothing is
// counted twice and nothing of this package runs per point: the input
// (sources.NewCollector), the runner (runner.NewRunnerCollector and,
// with [history], NewHistoryCollector), every sink (package sinks:
// records_written_total{sink}, write_errors_total{sink},
// records_dropped_total{sink,reason}, buffer_size, buffer_bytes, nats_*)
// and the sinks' gate
// (non_finite_total, anomalies_total, threshold_events_total,
// forecast_abs_error). The one call on the hot path is
// [Metrics.ObserveUpdate] per model update: it allocates nothing and
// takes no lock (BenchmarkObserveUpdate measures it, contended too).
//
// # Metrics
//
// Names are prefixed forecastd_. Each comes from one field of one Stats:
//
//	metric                                       type       Stats (collector or Config getter): field
//	messages_received_total                      counter    sources.Stats: Received
//	parse_errors_total{reason}                   counter    sources.Stats: ParseErrors[r], every r of sources.Reasons(), 0 included
//	messages_refused_total                       counter    sources.Stats: Refused
//	messages_filtered_total                      counter    sources.Stats: Filtered
//	messages_dropped_total                       counter    sources.Stats: Dropped
//	messages_skipped_total                       counter    sources.Stats: Skipped
//	consumer_resets_total                        counter    sources.Stats: Resets
//	input_connected                              gauge      sources.Stats: Connected (0 or 1)
//	series_active                                gauge      RunnerStats: SeriesActive
//	series_limit                                 gauge      RunnerStats: SeriesLimit (memory_budget's bound, 0: none)
//	kernel_cache_bytes                           gauge      RunnerStats: KernelCache.Bytes (AOSVR's kept kernel columns)
//	kernel_cache_limit_bytes                     gauge      RunnerStats: KernelCache.Limit (kernel_cache, or what "auto" leaves)
//	kernel_cache_hits_total                      counter    RunnerStats: KernelCache.Hits
//	kernel_cache_misses_total                    counter    RunnerStats: KernelCache.Misses
//	series_created_total                         counter    RunnerStats: SeriesCreated
//	series_evicted_total{reason="idle"}          counter    RunnerStats: SeriesEvicted
//	series_evicted_total{reason="max_series"}    counter    RunnerStats: EvictedLRU (least recently used, at max_series)
//	series_evicted_unsaved_total                 counter    RunnerStats: EvictedUnsaved (checkpoint queue full)
//	points_processed_total                       counter    RunnerStats: Processed
//	forecasts_total                              counter    RunnerStats: Forecasts
//	points_dropped_total{reason="queue_full"}    counter    RunnerStats: DroppedQueueFull
//	points_dropped_total{reason="max_series"}    counter    always 0 (at max_series a series is evicted), kept for existing queries
//	points_dropped_total{reason="shutdown"}      counter    RunnerStats: DroppedShutdown
//	points_dropped_total{reason="closed"}        counter    RunnerStats: DroppedClosed
//	points_dropped_total{reason="out_of_order"}  counter    RunnerStats: OutOfOrder
//	points_dropped_total{reason="late"}          counter    RunnerStats: Late
//	points_dropped_total{reason="implausible"}   counter    RunnerStats: Implausible
//	checkpoints_discarded_total                  counter    Checkpoints: Discarded
//	checkpoint_queue_bytes                       gauge      Checkpoints: Queued
//	partitions_held                              gauge      Partitions: Held
//	partition_leases_acquired_total              counter    Partitions: Acquired
//	model_update_duration_seconds                histogram  ObserveUpdate; buckets UpdateBuckets, 1 µs to 100 ms
//	build_info{version,goversion,revision}       gauge 1    Config.Version, Revision; runtime.Version()
//
// A nil getter, or a collector not handed, leaves its rows out. Points and messages are counted apart:
// a message may carry many points.
package telemetry
