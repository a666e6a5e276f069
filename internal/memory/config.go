package memory

import (
	"errors"

	"github.com/forecastd/forecastd/internal/config/schema"
)

// Config is [pipeline]'s keys of memory: the budget the series are held
// to (Hold) and the collector's percentage (SetGCPercent).
type Config struct {
	MemoryBudget schema.ByteSize `toml:"memory_budget" doc:"memory the daemon keeps its heap under by holding fewer series, like \"512MiB\" (default: none)"`
	GCPercent    *int            `toml:"gc_percent" doc:"the collector's GOGC unless the environment sets it"`
}

// WithDefaults returns c with its defaults filled in.
func (c Config) WithDefaults() Config {
	if c.GCPercent == nil {
		p := DefaultGCPercent
		c.GCPercent = &p
	}
	return c
}

// Validate returns every problem of c at once, each naming its key.
func (c Config) Validate() error {
	var e schema.Errors
	if b := c.MemoryBudget; b.IsSet() && b.N < MinBudget {
		e.Add("memory_budget", "%q is under the smallest budget, 64MiB (the daemon's own needs come first)", b.Text)
	}
	if g := c.GCPercent; g != nil && (*g < 1 || *g > MaxGCPercent) {
		e.Add("gc_percent", "must be 1 to %d, got %d (the heap may grow to 1 + gc_percent/100 times what is live before a collection)", MaxGCPercent, *g)
	}
	return errors.Join(e...)
}
