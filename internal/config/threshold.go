package main

import (
	"errors"

	"github.com/forecastd/forecastd/anomaly/threshold"
	"github.com/forecastd/forecastd/pipeline"
)

// thresholdPipeline sets cfg's thresholds from m's threshold_* keys: one
// for threshold_above, one for threshold_below, each with
// threshold_probability, threshold_open and threshold_close. Those three
// without a threshold are reported through bad; the ranges are checked by
// cfg.Validate.
func (m ModelConfig) thresholdPipeline(cfg *pipeline.Config, bad func(key string, err error)) {
	base := threshold.Config{}
	setFloat(&base.Probability, m.ThresholdProbability)
	setInt(&base.Open, m.ThresholdOpen)
	setInt(&base.Close, m.ThresholdClose)
	cfg.Thresholds = nil
	for _, t := range []struct {
		v *float64
		d threshold.Direction
	}{{m.ThresholdAbove, threshold.Above}, {m.ThresholdBelow, threshold.Below}} {
		if t.v == nil {
			continue
		}
		c := base
		c.Value, c.Direction = *t.v, t.d
		cfg.Thresholds = append(cfg.Thresholds, c)
	}
	if cfg.Thresholds != nil {
		return
	}
	for _, k := range []struct {
		key string
		set bool
	}{{"threshold_probability", m.ThresholdProbability != nil}, {"threshold_open", m.ThresholdOpen != nil}, {"threshold_close", m.ThresholdClose != nil}} {
		if k.set {
			bad(k.key, errors.New(k.key+" needs threshold_above or threshold_below"))
		}
	}
}

// thresholdFlagUsage documents the flags of the threshold keys; init adds
// it to commonFlagUsage.
var thresholdFlagUsage = map[string]string{
	"threshold_above":       "warn before the series reaches `VALUE` from below: threshold events when a forecast's path crosses it within the horizon (needs target change)",
	"threshold_below":       "warn before the series falls to `VALUE` (needs target change)",
	"threshold_probability": "the probability `P` of being beyond the threshold, under the steps' calibrated residuals, at which a step counts as crossed, in (0, 1) (default 0.49: about where the path itself crosses)",
	"threshold_open":        "a threshold event opens after `N` forecasts in a row cross within the horizon (default 2)",
	"threshold_close":       "a threshold event closes after `N` forecasts in a row do not (default 3)",
}

func init() {
	for k, v := range thresholdFlagUsage {
		commonFlagUsage[k] = v
	}
}
