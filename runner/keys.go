package runner

import (
	"errors"
	"time"

	"github.com/forecastd/forecastd/internal/config/schema"
)

// RunnerKeys are [pipeline]'s keys of the Runner: how the series are
// spread and bounded. Runner makes its configuration of them.
type RunnerKeys struct {
	Shards    int             `toml:"shards" doc:"goroutines the series are spread over (0: four a CPU, 4 × GOMAXPROCS)"`
	QueueSize int             `toml:"queue_size" doc:"points queued per shard, in each of its two queues: the points of the series it holds, served first, and those that create series (0: the default)"`
	MaxSeries int             `toml:"max_series" doc:"series held at most (0: the default)"`
	IdleTTL   schema.Duration `toml:"idle_ttl" doc:"a series without points for this long is evicted (\"0s\": never)"`
}

// Ceilings of RunnerKeys: a larger value is refused, so that a
// configuration that cannot fit is refused before it runs out of memory.
const (
	MaxShards    = 1024
	MaxQueueSize = 1 << 16 // per shard; a queued point is about 100 bytes
	MaxMaxSeries = 10_000_000
)

// WithDefaults returns k with its defaults filled in.
func (k RunnerKeys) WithDefaults() RunnerKeys {
	if k.QueueSize == 0 {
		k.QueueSize = DefaultQueueSize
	}
	if k.MaxSeries == 0 {
		k.MaxSeries = DefaultMaxSeries
	}
	if !k.IdleTTL.IsSet() {
		k.IdleTTL = schema.Dur(DefaultIdleTTL)
	}
	return k
}

// Validate returns every problem of k at once, each naming its key.
func (k RunnerKeys) Validate() error {
	var e schema.Errors
	for _, v := range []struct {
		key string
		n   int
	}{{"shards", k.Shards}, {"queue_size", k.QueueSize}, {"max_series", k.MaxSeries}} {
		if v.n < 0 {
			e.Add(v.key, "must not be negative, got %d", v.n)
		}
	}
	if msg := k.IdleTTL.Positive(true); msg != "" {
		e.Add("idle_ttl", "%s", msg)
	}
	return errors.Join(e...)
}

// LimitErrors returns the keys of k beyond their ceilings.
func (k RunnerKeys) LimitErrors() []error {
	var e schema.Errors
	e.Ceiling("shards", k.Shards, MaxShards)
	e.Ceiling("queue_size", k.QueueSize, MaxQueueSize)
	e.Ceiling("max_series", k.MaxSeries, MaxMaxSeries)
	return e
}

// Runner returns the Runner's configuration of k; the caller adds the
// models, outputs, checkpoints, history and redelivery hold.
func (k RunnerKeys) Runner() RunnerConfig {
	ttl := time.Duration(0) // the runner's default
	switch {
	case k.IdleTTL.IsSet() && k.IdleTTL.D > 0:
		ttl = k.IdleTTL.D
	case k.IdleTTL.IsSet():
		ttl = -1 // "0s": never
	}
	return RunnerConfig{Shards: k.Shards, QueueSize: k.QueueSize, MaxSeries: k.MaxSeries, IdleTTL: ttl}
}
