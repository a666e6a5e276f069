package config

import "github.com/forecastd/forecastd/pipeline"

// RunnerHistory returns the runner's [history] settings around src.
func (c *Config) RunnerHistory(src pipeline.History) pipeline.HistoryConfig {
	return c.History.Runner(src)
}
