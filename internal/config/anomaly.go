package config

import (
	"github.com/forecastd/forecastd/anomaly"
	"github.com/forecastd/forecastd/pipeline"
)

// anomalyPipeline sets what of cfg's anomaly detector m's anomaly_* keys
// do not set by their `pipeline` tags (setDirect, which has run): the
// direction, reporting a bad one through bad, and N = K when only K is
// set.
// The numeric ranges are checked by cfg.Validate.
func (m ModelConfig) anomalyPipeline(cfg *pipeline.Config, bad func(key string, err error)) {
	a := &cfg.Anomaly
	if m.AnomalyDirection != nil {
		if d, err := anomaly.ParseDirection(*m.AnomalyDirection); err != nil {
			bad("anomaly_direction", err)
		} else {
			a.Direction = d
		}
	}
	if m.AnomalyOpenK != nil && m.AnomalyOpenN == nil {
		a.N = a.K // open_k alone: K of the last K
	}
}
