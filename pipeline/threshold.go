package pipeline

import (
	"fmt"
	"math"

	"github.com/forecastd/forecastd/anomaly/threshold"
)

// MaxThresholds bounds Config.Thresholds.
const MaxThresholds = 8

// validateThresholds returns the thresholds' problems, one error each.
func (c Config) validateThresholds() []error {
	if len(c.Thresholds) == 0 {
		return nil
	}
	var out []error
	if len(c.Thresholds) > MaxThresholds {
		out = append(out, fmt.Errorf("%w: at most %d thresholds, got %d", ErrBadConfig, MaxThresholds, len(c.Thresholds)))
	}
	if c.Target != TargetChange {
		out = append(out, fmt.Errorf("%w: threshold_%s needs target = \"change\" (the forecast's path and its calibration), got target %q",
			ErrBadConfig, c.Thresholds[0].Direction, c.Target))
	}
	for _, t := range c.Thresholds {
		if err := t.Validate(); err != nil {
			for _, e := range unjoinErr(err) {
				out = append(out, fmt.Errorf("%w: %v", ErrBadConfig, e)) // one %w, as validateAnomaly
			}
		}
	}
	return out
}

// thresholds watches a series' thresholds: one tracker each, and the
// observations of the newest forecast.
type thresholds struct {
	tr  []*threshold.Tracker
	obs []threshold.Observation
}

func newThresholds(cs []threshold.Config) (*thresholds, error) {
	t := &thresholds{tr: make([]*threshold.Tracker, len(cs)), obs: make([]threshold.Observation, len(cs))}
	for i, c := range cs {
		tr, err := threshold.NewTracker(c)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrBadConfig, err)
		}
		t.tr[i] = tr
	}
	return t, nil
}

// observeThresholds finds, for each threshold, the first step of the
// forecast f (and its path) at which the probability of being beyond the
// threshold reaches the threshold's, under the step's calibrated errors
// (see package anomaly/threshold: step 1 the series' own residual window,
// a step ahead the recent errors of the steps ahead relative to their
// step's mean error, times the step's: ahead.Forecaster.Errors), and
// debounces it into events. scale is the running scale the forecast was
// made in. It returns the observations, owned by the series.
//
// Cost per threshold: a comparison per step until the first crossing, and
// one probability (a bisection on the level): O(H). No allocation.
func (s *Series) observeThresholds(f *Forecast, scale float64) []threshold.Observation {
	t := s.thresholds
	for k, tr := range t.tr {
		c := tr.Config()
		o := &t.obs[k]
		*o = threshold.Observation{Value: c.Value, Direction: c.Direction,
			Probability: math.NaN(), Forecast: math.NaN(), Lower: math.NaN(), Upper: math.NaN()}
		if scale > 0 && !math.IsInf(scale, 0) {
			s.crossing(o, c, f, scale)
		}
		tr.Observe(o)
	}
	return t.obs
}

// crossing fills o's crossing and probability for the threshold c.
func (s *Series) crossing(o *threshold.Observation, c threshold.Config, f *Forecast, scale float64) {
	z := s.horizon
	sign := 1.0
	if c.Direction == threshold.Below {
		sign = -1
	}
	tz := s.scaler.Scale(c.Value)
	margin := func(yhat float64) float64 { return sign * (yhat - tz) / scale }

	// The step chosen (the first crossing, else the closest), its margin
	// in its distribution's units and that distribution.
	best, bestH := math.Inf(-1), 0
	var dist []float64
	bestUnit := 1.0
	cross := false
	if s.pendingHalfWidth >= 0 && len(s.conformal.sorted) > 0 {
		m := margin(f.Scaled)
		best, bestH, dist = m, 1, s.conformal.sorted
		cross = m >= threshold.Need(s.conformal.sorted, c.Probability)
	}
	if !cross && z != nil {
		path := z.scaled()
		need := math.NaN() // in units of a step's mean error, the same at every step
		for h := 2; h <= len(path); h++ {
			sorted, unit := z.errors(h)
			if sorted == nil {
				continue
			}
			if math.IsNaN(need) {
				need = threshold.Need(sorted, c.Probability)
			}
			m := margin(path[h-1])
			c := m >= need*unit
			if c || m > best {
				best, bestH, dist, bestUnit = m, h, sorted, unit
			}
			if c {
				cross = true
				break
			}
		}
	}
	if bestH == 0 {
		return // no step calibrated
	}
	o.Probability = threshold.Prob(dist, dist, 0, best/bestUnit)
	st := Step{Time: f.Time, Value: f.Value, Lower: f.Lower, Upper: f.Upper}
	if bestH > 1 {
		st = z.path[bestH-1]
	}
	o.Forecast, o.Lower, o.Upper = st.Value, st.Lower, st.Upper
	if cross {
		o.Crossing, o.Step, o.At, o.ETA = true, bestH, st.Time, st.Time.Sub(f.Origin)
	}
}
