package thresholdbench

import (
	"time"

	"github.com/forecastd/forecastd/anomaly/threshold"
	"github.com/forecastd/forecastd/pipeline"
)

// DefaultModel is the model of the comparison: forecastd's default at a
// step of an hour, 48 steps (two days) ahead.
func DefaultModel() pipeline.Config {
	cfg := pipeline.DefaultConfig()
	cfg.Step = time.Hour
	cfg.Horizon = 48
	return cfg
}

// Methods returns the methods compared: forecastd with the threshold th
// on model cfg, and the node-mixin's rules, plain and with their
// percentage guards.
func Methods(cfg pipeline.Config, th threshold.Config) []Method {
	return []Method{
		Forecastd("forecastd", cfg, th),
		PredictLinear(6*time.Hour, 24*time.Hour, time.Hour, 0),
		PredictLinear(6*time.Hour, 4*time.Hour, time.Hour, 0),
		PredictLinear(6*time.Hour, 24*time.Hour, time.Hour, 40),
		PredictLinear(6*time.Hour, 4*time.Hour, time.Hour, 15),
	}
}

// Run scores every method on the scenarios at each spacing and on all
// together.
func Run(ms []Method, ss []Scenario) ([]Row, error) {
	sets := []struct {
		name string
		keep func(*Scenario) bool
	}{
		{"10s", func(s *Scenario) bool { return s.Spacing == 10*time.Second }},
		{"1m", func(s *Scenario) bool { return s.Spacing == time.Minute }},
		{"all", func(*Scenario) bool { return true }},
	}
	var rows []Row
	for _, set := range sets {
		var sub []Scenario
		for i := range ss {
			if set.keep(&ss[i]) {
				sub = append(sub, ss[i])
			}
		}
		if len(sub) == 0 {
			continue
		}
		for _, m := range ms {
			r, err := Score(m, set.name, sub)
			if err != nil {
				return nil, err
			}
			rows = append(rows, r)
		}
	}
	return rows, nil
}
