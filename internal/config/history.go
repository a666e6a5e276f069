package config

import (
	"github.com/forecastd/forecastd/runner"
)

// RunnerHistory returns the runner's [history] settings around src.
func (c *Config) RunnerHistory(src runner.History) runner.HistoryConfig {
	return c.History.Runner(src)
}
