// Package runner runs the daemon's many series (package pipeline's
// Series): they are sharded by a hash of their key over a fixed set of
// goroutines, each owning its series map outright, fed by bounded queues
// (shard.go); a series is created on its first point from the first
// [Rule] matching its key (or the default configuration), and evicted
// when idle or when max_series would be exceeded (evict.go). Each point's
// [Acker] is told once its outcome and forecast were accepted by the
// series' sink (or why not), which is how the daemon acknowledges
// JetStream messages only after the sinks took their forecasts. The
// runner hands its series' states to a [Checkpointer] in bounded steps
// (checkpoint.go), warms new series from a [History] off the shards
// (history.go), and reports its counts to Prometheus (metrics.go).
//
// It declares what it emits to ([Outputs]) and what it reads from
// ([History], [Checkpointer]), and knows nothing of NATS, InfluxDB or
// configuration files.
package runner
