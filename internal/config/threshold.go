package config

import (
	"errors"
	"fmt"

	"github.com/forecastd/forecastd/anomaly/threshold"
	"github.com/forecastd/forecastd/pipeline"
)

// thresholdPipeline sets cfg's thresholds from m's threshold_* keys: one
// for threshold_above, one for threshold_below, each with
// threshold_probability, threshold_open, threshold_close and
// threshold_within. Those four
// without a threshold are reported through bad; the ranges are checked by
// cfg.Validate.
func (m ModelConfig) thresholdPipeline(cfg *pipeline.Config, bad func(key string, err error)) {
	base := threshold.Config{}
	setFloat(&base.Probability, m.ThresholdProbability)
	setInt(&base.Open, m.ThresholdOpen)
	setInt(&base.Close, m.ThresholdClose)
	if m.ThresholdWithin != nil && *m.ThresholdWithin != "" {
		if d, err := ParseDuration(*m.ThresholdWithin); err != nil || d < 0 {
			bad("threshold_within", fmt.Errorf("%q: want a duration like 4h or 1d", *m.ThresholdWithin))
		} else {
			base.Within = d
		}
	}
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
	}{{"threshold_probability", m.ThresholdProbability != nil}, {"threshold_open", m.ThresholdOpen != nil}, {"threshold_close", m.ThresholdClose != nil}, {"threshold_within", m.ThresholdWithin != nil}} {
		if k.set {
			bad(k.key, errors.New(k.key+" needs threshold_above or threshold_below"))
		}
	}
}
