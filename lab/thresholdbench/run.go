package thresholdbench

import (
	"fmt"
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

// PageModel and PageThreshold are the configuration compared with the
// node-mixin's 4 h rules, as docs/events.md recommends for an alert that
// pages: a 10-minute step, 48 steps (8 h) ahead, the event open while
// the disk is forecast to be full within 4 h with probability 0.6 (more
// likely than not, with a margin: a page wakes someone) for three
// forecasts in a row (half an hour, where the rules wait an hour).
func PageModel() pipeline.Config {
	cfg := pipeline.DefaultConfig()
	cfg.Step = 10 * time.Minute
	cfg.Horizon = 48
	return cfg
}

// PageThreshold is th with PageModel's probability, debounce and
// lookahead.
func PageThreshold(th threshold.Config) threshold.Config {
	th.Probability = 0.6
	th.Within = 4 * time.Hour
	th.Open = 3
	return th
}

// Methods returns the methods compared: forecastd with the threshold th
// on model cfg (its whole horizon) beside the node-mixin's 24 h rules,
// then forecastd on PageModel with PageThreshold(th) beside its 4 h
// rules, each rule plain and with its percentage guard.
func Methods(cfg pipeline.Config, th threshold.Config) []Method {
	page := PageThreshold(th)
	pm := PageModel()
	return []Method{
		Forecastd("forecastd", cfg, th),
		PredictLinear(6*time.Hour, 24*time.Hour, time.Hour, 0),
		PredictLinear(6*time.Hour, 24*time.Hour, time.Hour, 40),
		Forecastd(fmt.Sprintf("forecastd (step %s, horizon %d, p %g, within %s, open %d)", short(pm.Step), pm.Horizon, page.Probability, short(page.Within), page.Open), pm, page),
		PredictLinear(6*time.Hour, 4*time.Hour, time.Hour, 0),
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
