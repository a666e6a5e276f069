package statestore

import (
	"fmt"
	"time"

	"github.com/forecastd/forecastd/internal/config/schema"
)

// Config is [state]'s keys of the checkpoints: where they are written and
// how often, and how many states of evicted series they keep.
type Config struct {
	Dir                string          `toml:"dir" doc:"where state is kept: model checkpoints, the embedded server's JetStream store (empty: none kept)"`
	CheckpointInterval schema.Duration `toml:"checkpoint_interval" doc:"how often every changed series' state is saved"`
	KeepEvicted        *int            `toml:"keep_evicted" doc:"states of series evicted at max_series kept for their return (default: max_series)"`
}

// DefaultCheckpointInterval is checkpoint_interval's default.
const DefaultCheckpointInterval = 30 * time.Second

// MaxKeepEvicted is keep_evicted's ceiling.
const MaxKeepEvicted = 10_000_000

// WithDefaults returns c with its defaults filled in (keep_evicted's
// is the runner's max_series: see Limits).
func (c Config) WithDefaults() Config {
	if !c.CheckpointInterval.IsSet() {
		c.CheckpointInterval = schema.Dur(DefaultCheckpointInterval)
	}
	return c
}

// Validate returns the problem of checkpoint_interval, naming its key.
func (c Config) Validate() error {
	if msg := c.CheckpointInterval.Positive(false); msg != "" {
		return fmt.Errorf("checkpoint_interval: %s", msg)
	}
	return nil
}

// LimitErrors returns the problems of keep_evicted.
func (c Config) LimitErrors() []error {
	var e schema.Errors
	if k := c.KeepEvicted; k != nil {
		if *k < 1 {
			e.Add("keep_evicted", "must be at least 1, got %d", *k)
		}
		e.Ceiling("keep_evicted", *k, MaxKeepEvicted)
	}
	return e
}

// DirErrors is why forecastd could not write in dir (its models'
// checkpoints, the embedded server's JetStream store), checked on the
// file system as the process checking runs: under the systemd unit, as
// the daemon's own user.
func (c Config) DirErrors() []error {
	if c.Dir == "" {
		return nil
	}
	if err := CheckDir(c.Dir); err != nil {
		return []error{fmt.Errorf("dir: %w: forecastd keeps its models' state there and must be able to write in it (the systemd unit gives it /var/lib/forecastd)", err)}
	}
	return nil
}

// Limits bounds the states kept for series that are not live: keep_evicted
// states of series evicted at max_series (default maxSeries), and at start
// maxSeries + keep_evicted states; the evicted states' queue takes at most
// an eighth of a memory budget of budget bytes (0: none).
func (c Config) Limits(maxSeries int, budget int64) Limits {
	keep := maxSeries
	if c.KeepEvicted != nil {
		keep = *c.KeepEvicted
	}
	return Limits{MaxEvicted: keep, MaxLoaded: maxSeries + keep, MaxQueuedEvicted: int(budget / 8)}
}
