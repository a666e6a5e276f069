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

// thresholds watches a series' thresholds: one tracker each, the
// observations of the newest forecast, and per anchor step the margin
// each step must reach (scratch).
type thresholds struct {
	tr   []*threshold.Tracker
	obs  []threshold.Observation
	need []float64 // per anchor step
}

func newThresholds(cs []threshold.Config, z *horizon) (*thresholds, error) {
	t := &thresholds{tr: make([]*threshold.Tracker, len(cs)), obs: make([]threshold.Observation, len(cs))}
	for i, c := range cs {
		tr, err := threshold.NewTracker(c)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrBadConfig, err)
		}
		t.tr[i] = tr
	}
	if z != nil {
		t.need = make([]float64, len(z.anchors))
	}
	return t, nil
}

// observeThresholds finds, for each threshold, the first step of the
// forecast f (and its path) at which the probability of being beyond the
// threshold reaches the threshold's, under the step's calibrated residuals
// (see package anomaly/threshold: step 1 the series' own window, an
// anchor step its window, a step between anchors their quantile functions
// interpolated as its interval is), and debounces it into events. scale
// is the running scale the forecast was made in. It returns the
// observations, owned by the series.
//
// Cost per threshold: a quantile per anchor step, a comparison per step
// until the first crossing, and one probability (a bisection on the
// level): O(anchors + H). No allocation.
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
	t, z := s.thresholds, s.horizon
	sign := 1.0
	if c.Direction == threshold.Below {
		sign = -1
	}
	tz := s.scaler.Scale(c.Value)
	margin := func(yhat float64) float64 { return sign * (yhat - tz) / scale }

	// The step chosen (the first crossing, else the closest) and its
	// distribution.
	best, bestH := math.Inf(-1), 0
	var lo, hi []float64
	var lam float64
	cross := false
	if s.pendingHalfWidth >= 0 && len(s.conformal.sorted) > 0 {
		m := margin(f.Scaled)
		best, bestH = m, 1
		lo, hi = s.conformal.sorted, s.conformal.sorted
		cross = m >= threshold.Need(s.conformal.sorted, c.Probability)
	}
	if !cross && z != nil {
		for i := range z.anchors {
			if z.halfWidths[i] >= 0 {
				t.need[i] = threshold.Need(z.anchors[i].conf.sorted, c.Probability)
			}
		}
		for h := 2; h <= z.h; h++ {
			il, ih, l := z.around(h)
			if z.halfWidths[il] < 0 || z.halfWidths[ih] < 0 {
				continue
			}
			m := margin(z.scaled[h-1])
			c := m >= (1-l)*t.need[il]+l*t.need[ih]
			if c || m > best {
				best, bestH = m, h
				lo, hi, lam = z.anchors[il].conf.sorted, z.anchors[ih].conf.sorted, l
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
	o.Probability = threshold.Prob(lo, hi, lam, best)
	st := Step{Time: f.Time, Value: f.Value, Lower: f.Lower, Upper: f.Upper}
	if bestH > 1 {
		st = z.path[bestH-1]
	}
	o.Forecast, o.Lower, o.Upper = st.Value, st.Lower, st.Upper
	if cross {
		o.Crossing, o.Step, o.At, o.ETA = true, bestH, st.Time, st.Time.Sub(f.Origin)
	}
}
