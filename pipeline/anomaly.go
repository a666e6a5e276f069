package pipeline

import (
	"fmt"
	"math"
	"time"

	"github.com/forecastd/forecastd/anomaly"
)

// The default anomaly detector, chosen on the 41 NAB files of
// ../shared/data/nab, each setting by leaving one category of files out
// at a time (lab/nab; BENCHMARKS.md "Anomaly detection"): a point is
// outside when it is more than 3 half-widths of the 90 % interval away
// from the forecast, each half-width counted as at least the series' mean
// absolute change between points; an event opens on the second of two
// points in a row outside, one of which scored above 1.4 times the
// highest of the points of the 25 hours before it (a day and a bit:
// yesterday's deviation at the same time of day is no surprise), and
// closes after 10 points back inside; an event also opens on a new
// all-time high or low of the series, beyond the last by a tenth of its
// mean absolute change, after two days without one, and when 8 points in
// a row, on one side, each differ from the series' value a day or a week
// before (whichever is closer) by more than 6 times the mean such
// difference, unless an event opened in the previous 25 hours.
const (
	DefaultAnomalyThreshold      = 3.0
	DefaultAnomalyOpenK          = 2
	DefaultAnomalyOpenN          = 2
	DefaultAnomalyCloseM         = 10
	DefaultAnomalyStepFloor      = 1.0
	DefaultAnomalySurprise       = 1.4
	DefaultAnomalySurpriseWindow = 25 * time.Hour
	DefaultAnomalyExtremeQuiet   = 48 * time.Hour
	DefaultAnomalyExtremeMargin  = 0.1
	DefaultAnomalySeasonal       = 6.0
	DefaultAnomalySeasonalRun    = 8
)

// DefaultAnomaly returns the default anomaly detector's configuration.
func DefaultAnomaly() anomaly.Config {
	return anomaly.Config{
		Threshold: DefaultAnomalyThreshold, K: DefaultAnomalyOpenK, N: DefaultAnomalyOpenN, M: DefaultAnomalyCloseM,
		StepFloor: DefaultAnomalyStepFloor, Surprise: DefaultAnomalySurprise, SurpriseWindow: DefaultAnomalySurpriseWindow,
		ExtremeQuiet: DefaultAnomalyExtremeQuiet, ExtremeMargin: DefaultAnomalyExtremeMargin,
		Seasonal: DefaultAnomalySeasonal, SeasonalRun: DefaultAnomalySeasonalRun,
	}
}

// validateAnomaly returns the anomaly settings' problems, one error each.
func (c Config) validateAnomaly() []error {
	err := c.Anomaly.Validate()
	if err == nil {
		return nil
	}
	errs := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	}
	out := make([]error, len(errs))
	for i, e := range errs {
		out[i] = fmt.Errorf("%w: %v", ErrBadConfig, e) // one %w: the config loader splits multi-wrapped errors
	}
	return out
}

// observeAnomaly scores the outcome o against its forecast's interval with
// the series' detector, records the observation in o, and reports whether
// the point must be kept out of the model and the interval's calibration:
// with Config.LearnAnomalies false, a point inside an open event (the one
// that opens it included, the one that closes it not) is not learned, so
// that one outage does not teach the model that outages are normal. The
// protection lasts at most IntervalWindow points of an event: one that
// lasts longer is the series' new normal (a level shift), and both the
// model and the interval learn it again; without that bound the interval,
// calibrated on the old level, would keep every point outside and the
// event open for ever. O(1).
func (s *Series) observeAnomaly(o *Outcome) (skip bool) {
	ob := s.detector.ObserveSeasonal(o.Time, o.Actual, o.Forecast.Value, o.Forecast.Lower, o.Forecast.Upper, s.seasonalRef(o.Actual))
	switch {
	case ob.Event == anomaly.Opened && !s.anomalyWarm():
		ob.Event, ob.Extreme, ob.Seasonal = anomaly.None, false, false
		s.quietEvent = true
	case ob.Event == anomaly.Closed && s.quietEvent:
		ob.Event = anomaly.None
		s.quietEvent = false
	}
	if s.quietEvent {
		ob.Open = false
	}
	o.Anomaly = ob
	if ob.Event == anomaly.Opened {
		s.stats.Anomalies++
	}
	return !s.cfg.LearnAnomalies && ob.Open && s.detector.State().Age < s.cfg.IntervalWindow
}

// anomalyWarm reports whether the series may raise anomaly events: once
// its one-step interval is calibrated on AnomalyWarmup(IntervalWindow)
// residuals. Before that the model is young and the interval rests on a
// few residuals, and events came thick (58 of a Telegraf host's first 89
// in its first 3 minutes). The detector still observes every outcome (its
// scales and recent highs learn from them, and its events after warm-up
// are those it would have had), but an event it opens while the series
// warms is not reported, nor its closing (quietEvent). The residuals are
// in the checkpoint, so a restored series is as warm as it was.
func (s *Series) anomalyWarm() bool {
	return len(s.conformal.sorted) >= AnomalyWarmup(s.cfg.IntervalWindow)
}

// AnomalyWarmup returns the residuals a series' interval must hold before
// its anomaly detector starts: the interval window, full, up to the
// default window's DefaultIntervalWindow (a longer window would keep a
// series quiet for longer than its interval needs to be usable).
func AnomalyWarmup(intervalWindow int) int { return min(intervalWindow, DefaultIntervalWindow) }

// DefaultLearnAnomalies is whether points inside an open anomaly event are
// learned by default (see Config.LearnAnomalies), chosen by measurement on
// the NAB files (BENCHMARKS.md "Anomaly detection").
const DefaultLearnAnomalies = true

// seasonalRef returns the seasonal reference of the actual y for the
// detector's Config.Seasonal: of the series' values one seasonal period
// before it (a day and a week by default; the periods the change features
// keep history for, see Config.Seasons), the one closest to y, in y's
// units; NaN when there is none (target level, a young series, or no
// seasonal detection). It must be called before y joins the history.
func (s *Series) seasonalRef(y float64) float64 {
	c := s.changes
	if c == nil || s.cfg.Anomaly.Seasonal == 0 {
		return math.NaN()
	}
	ref, best := math.NaN(), math.Inf(1)
	for k := range c.Seasons() {
		sv, ok := c.Seasonal(k)
		if !ok {
			continue
		}
		sv = s.scaler.Unscale(sv)
		if d := math.Abs(y - sv); d < best {
			ref, best = sv, d
		}
	}
	return ref
}
