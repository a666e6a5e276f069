package pipeline

import (
	"math"
	"slices"

	"github.com/forecastd/forecastd/embedding"
)

// stepChange is step with target change: the point closes the pending
// forecast, completes the sample of the previous point's input (its
// target the change to this point), joins the features, and the next
// point is forecast from the new input: the previous value plus the
// model's change, combined with the simple rules' forecasts.
func (s *Series) stepChange(q wpoint, last bool, res *Result) {
	v := s.scaler.Scale(q.Value)
	c := s.changes
	if q.restart {
		c.Restart()
		s.haveInput = false
		s.havePending = false
		s.stats.Restarts++
		if s.horizon != nil {
			s.horizon.restart()
		}
	}
	var step1 Step
	hasStep1 := s.havePending
	if s.horizon != nil {
		if c.FirstMove(v) {
			s.horizon.restart()
		}
		if hasStep1 {
			f := s.pendingForecast
			step1 = Step{Horizon: 1, Time: f.Time, Value: f.Value, Lower: f.Lower, Upper: f.Upper}
		}
	}
	skip := s.closeChange(q, v, res)
	if s.haveInput && !skip {
		s.learn(s.input, c.Target(v))
	}
	c.Push(v)
	if s.horizon != nil {
		s.pushAhead(q.Time, step1, hasStep1)
		if res.HasOutcome {
			res.Outcome.Path = s.horizon.done
		}
	}
	s.haveInput = false
	if c.Seasons() == nil {
		s.setSeasons()
	} else if s.detecting {
		s.detectAgain()
	}
	if !c.Ready() {
		return
	}
	c.Input(s.input)
	s.haveInput = true
	if last {
		s.forecastChange(q, v, res)
	}
}

// closeChange closes the pending forecast with the point q (v scaled):
// its outcome, the intervals' calibration and the combination's errors.
// It reports whether the point is an anomaly kept out of the model.
//
// Forecasts made before the series ever moved had no scale (Scale's
// placeholder 1, in the series' own units): the point that first moves
// it would enter their errors, in its own units, into calibrations and
// combinations kept in scales, and make the next intervals absurd. Its
// outcome is reported and the model learns it, but it is neither
// calibrated on nor combined; the steps ahead pending are dropped. A
// point equal to them (a flat series) errs by 0 in any unit and is kept.
func (s *Series) closeChange(q wpoint, v float64, res *Result) (skip bool) {
	if !s.havePending {
		return false
	}
	noScale := !s.changes.HasScale()
	s.havePending = false
	res.Outcome = Outcome{Forecast: s.pendingForecast, Time: q.Time, Actual: q.Value, ActualScaled: v}
	res.Outcome.Forecast.Path = nil // the steps closed are Outcome.Path
	res.HasOutcome = true
	skip = s.observeAnomaly(&res.Outcome)
	r := min(math.Abs(v-s.pendingForecast.Scaled)/s.pendingScale, maxResidual)
	firstMove := noScale && r != 0
	if s.pendingHalfWidth >= 0 && !skip && !firstMove {
		s.conformal.feedback(r > s.pendingHalfWidth)
	}
	if !skip && !firstMove {
		s.conformal.add(r)
	}
	if s.comb != nil && !firstMove {
		s.comb.update(v, s.pendingScale)
		s.guard.update(v, s.pendingScale)
	}
	return skip
}

// forecastChange forecasts the next point from the input made with q (v
// scaled): the previous value plus the model's change, combined with the
// simple rules' forecasts, with its interval, path and threshold
// observations; it is pending until the next point.
func (s *Series) forecastChange(q wpoint, v float64, res *Result) {
	c := s.changes
	y := 0.0 // a model that has learned nothing predicts no change
	if s.learned > 0 {
		var ok bool
		if y, ok = s.predict(); !ok {
			return
		}
	}
	scale := c.Scale()
	yhat := c.Unscale(y)
	if math.IsNaN(yhat) || math.IsInf(yhat, 0) { // beyond float64: no change
		yhat = v
	}
	if s.comb != nil {
		yhat = s.combineChange(yhat, v)
	}
	if math.IsNaN(yhat) || math.IsInf(yhat, 0) { // beyond float64: no change
		yhat = v
	}
	s.stats.Forecasts++
	f := Forecast{
		Origin: q.Time,
		Time:   q.Time.Add(s.Interval()),
		Value:  s.bound(s.scaler.Unscale(yhat)),
		Lower:  math.NaN(),
		Upper:  math.NaN(),
		Scaled: yhat,
	}
	s.pendingHalfWidth, s.pendingScale = -1, scale
	if h, ok := s.conformal.quantile(); ok {
		lo, hi := s.bound(s.scaler.Unscale(yhat-h*scale)), s.bound(s.scaler.Unscale(yhat+h*scale))
		if !math.IsInf(lo, 0) && !math.IsInf(hi, 0) {
			s.pendingHalfWidth, f.Lower, f.Upper = h, lo, hi
		}
	}
	if s.horizon != nil {
		s.forecastAhead(f, y, scale, v)
		f.Path = s.horizon.path
	}
	s.pendingForecast, s.havePending = f, true
	res.Forecast, res.HasForecast = f, true
	if s.thresholds != nil {
		res.Forecast.Thresholds = s.observeThresholds(&f, scale)
	}
}

// combineChange combines yhat, the model's forecast, with the simple
// rules' (the median of the last points, the levels, the seasonal
// medians; v, the last value, where a season has none), guarded against
// persistence.
func (s *Series) combineChange(yhat, v float64) float64 {
	c := s.changes
	f := s.comb.f
	f[0], f[1] = yhat, c.Median(robustPoints)
	i := 2
	for k := range defaultLevelRates {
		f[i] = c.Level(k)
		i++
	}
	for k := range s.cfg.Seasons {
		f[i] = v
		if sv, ok := c.SeasonalMedianAhead(k, 1); ok {
			f[i] = sv
		}
		i++
	}
	s.guard.f[0], s.guard.f[1] = s.comb.forecast(), v
	return s.guard.forecast()
}

// maxResidual bounds a residual, in running scales, in the interval's
// calibration with target change, so that values at the edge of float64
// cannot make an interval infinite for a window's length. Not lower: after
// a long flat stretch the running scale is tiny and real residuals of
// 10⁶–10¹⁰ scales happen (NAB's keystroke timings).
const maxResidual = 1e12

// setSeasons fixes the seasonal periods in points once the spacing is
// known (Config.Interval, or the median of at least four spacings).
func (s *Series) setSeasons() {
	if s.cfg.Interval <= 0 && s.cfg.Step <= 0 && s.nSpacing < 4 {
		return
	}
	iv := s.Interval()
	ps := make([]int, len(s.cfg.Seasons))
	any := false
	for k, d := range s.cfg.Seasons {
		p := math.Round(float64(d) / float64(iv))
		if p >= 2 && p <= embedding.MaxSeason {
			ps[k], any = int(p), true
		}
	}
	if !any && len(ps) > 0 {
		// No configured period fits the spacing (a series timed by its
		// index, or spaced so finely that a day is beyond MaxSeason):
		// the periods are detected from the series' own values once
		// DetectLen of them are held.
		c := s.changes
		c.ReserveHistory(embedding.DetectLen)
		if c.Held() < detectFirst {
			return
		}
		copy(ps, embedding.DetectPeriods(c.History(nil), len(ps)))
		if c.Held() < embedding.DetectLen {
			s.detecting = true
			_ = c.SetSeasonsKeeping(ps) // valid by construction
			s.setAheadPeriods()
			return
		}
	}
	_ = s.changes.SetSeasons(ps) // valid by construction
	s.setAheadPeriods()
}

// setAheadPeriods gives the forecasts ahead the two longest seasonal
// periods set, which start afresh on the values held.
func (s *Series) setAheadPeriods() {
	if s.horizon == nil {
		return
	}
	var p1, p2 int
	for _, p := range s.changes.Seasons() {
		switch {
		case p > p2:
			p1, p2 = p2, p
		case p > p1 && p != p2:
			p1 = p
		}
	}
	s.horizon.fc.SetPeriods(p1, p2, s.changes)
}

// detectFirst is the number of values the seasonal periods are first
// detected from, when the spacing gives none: enough for a day of hours
// (three cycles and their double), so that the seasonal forecasts start
// days before a week's values are in; the intervals gain more than the
// point forecasts lose against detecting once on DetectLen values
// (BENCHMARKS.md, "Hours to days ahead").
const detectFirst = 256

// detectAgain detects the periods a second time, on DetectLen values:
// a longer period (a week) in the slots the first detection left empty.
func (s *Series) detectAgain() {
	c := s.changes
	if c.Held() < embedding.DetectLen {
		return
	}
	s.detecting = false
	ps := make([]int, len(s.cfg.Seasons))
	copy(ps, embedding.DetectPeriods(c.History(nil), len(ps)))
	had := slices.Clone(c.Seasons())
	_ = c.FillSeasons(ps) // valid by construction
	if !slices.Equal(had, c.Seasons()) {
		s.setAheadPeriods()
	}
}
