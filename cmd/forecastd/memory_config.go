package main

import (
	"github.com/forecastd/forecastd/internal/memory"
	"github.com/forecastd/forecastd/pipeline"
)

// memoryNeed estimates what c can need; the model tables must have
// resolved (pipelineRules).
func (c *Config) memoryNeed(def pipeline.Config, rules []pipeline.Rule) memory.Need {
	l := memory.Layout{
		Shards: c.Pipeline.Shards, QueueSize: c.Pipeline.QueueSize, MaxSeries: c.Pipeline.MaxSeries,
		Readers:     len(c.Input.Subjects),
		Checkpoints: c.State.Dir != "" || c.State.Store != "",
		Budget:      c.Pipeline.MemoryBudget.N,
		Model:       def, Rules: rules,
	}
	if js := c.Input.JetStream; js != nil {
		l.Readers = js.Partitions
	}
	if ic := c.Output.InfluxDB; ic != nil {
		l.Influx, l.InfluxBuffer = true, ic.MetricBufferLimit
	}
	return memory.Estimate(l)
}

// memoryErrors are the problems of c's memory as a whole (Need.Errors).
func (c *Config) memoryErrors(m memory.Need) []error {
	return m.Errors(c.Pipeline.MemoryBudget.N, c.Pipeline.MemoryBudget.Text)
}
