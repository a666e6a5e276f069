package pipeline

import (
	"math"
	"time"

	"github.com/forecastd/forecastd/anomaly"
	"github.com/forecastd/forecastd/anomaly/threshold"
)

// Point is one observation of a series.
type Point struct {
	// Time is the observation's time; points must arrive in increasing
	// time order.
	Time time.Time
	// Value is the observation, in the series' units.
	Value float64
}

// Forecast is a one-step-ahead forecast with its prediction interval.
type Forecast struct {
	// Origin is the time of the last point the forecast was made from.
	Origin time.Time
	// Time is the target time: Origin plus the series' interval (see
	// Config.Interval), or Origin while no spacing is known yet.
	Time time.Time
	// Value is ŷ in the series' units.
	Value float64
	// Lower and Upper bound the prediction interval in the series' units;
	// both are NaN while too few residuals have been seen (see
	// Config.Coverage).
	Lower, Upper float64
	// Scaled is ŷ in the model's scaled units ([−1, 1] for the range of
	// the scale).
	Scaled float64
	// Path is, with Config.Horizon H > 1, the forecasts of the next H
	// points, steps 1…H (step 1 is the forecast above), each with its own
	// interval; nil with H = 1. It is owned by the Series and valid until
	// its next Push: a Sink copies what it keeps.
	Path []Step
	// Thresholds is, with Config.Thresholds, what this forecast says of
	// each threshold, in the order configured: when the path crosses it
	// and the event it opened, moved or closed; nil without thresholds.
	// Owned by the Series, valid until its next Push, as Path.
	Thresholds []threshold.Observation
}

// HasInterval reports whether f carries a prediction interval.
func (f Forecast) HasInterval() bool { return !math.IsNaN(f.Lower) }

// Outcome is a point that closed a forecast: the forecast made for it
// from the points before it, and the value that arrived.
type Outcome struct {
	// Forecast is the forecast that was made for this point (its Path
	// nil: the steps closed by the point are Path below).
	Forecast Forecast
	// Time is the point's time.
	Time time.Time
	// Actual is the point's value in the series' units.
	Actual float64
	// ActualScaled is the point's value in the model's scaled units.
	ActualScaled float64
	// Path is, with Config.Horizon H > 1, the steps forecast for this
	// point h points before, for h = 1 and the anchor steps h (2, 3, 4,
	// 6, 8, 12, 16, 24, …, and H: those whose errors calibrate the
	// others), in increasing h (a step whose forecast was not made, after
	// a gap, or that the anchor does not score, is left out); step 1 is
	// Forecast. nil with H = 1. Owned by the Series, valid until its next
	// Push.
	Path []Step
	// Anomaly is the series' anomaly detector's observation of the point:
	// its anomaly score (NaN without an interval) and event.
	Anomaly anomaly.Observation
}

// Result is what one point produced. At most one of each: an outcome if
// the point closed a forecast, and a forecast of the next point if the
// model could make one.
type Result struct {
	Outcome     Outcome
	HasOutcome  bool
	Forecast    Forecast
	HasForecast bool
}

// Sink receives what a Series produces: the daemon's outputs (NATS,
// InfluxDB) and the backtest's CSV implement it. The series key is the one
// given to New. A Sink must not retain anything beyond the call but the
// values passed.
type Sink interface {
	// Forecast is called with each new forecast of the next point.
	Forecast(series string, f Forecast) error
	// Outcome is called when a point arrives for which a forecast had
	// been made (before that point's own Forecast call).
	Outcome(series string, o Outcome) error
}

// Stats counts what a Series has done.
type Stats struct {
	// Points is the number of points accepted (not dropped).
	Points uint64
	// OutOfOrder counts points dropped for a time not after the previous.
	OutOfOrder uint64
	// NonFinite counts points dropped for a NaN or Inf value.
	NonFinite uint64
	// Implausible counts points dropped for a change beyond what the
	// series' scale makes plausible (not kept in its checkpoint).
	Implausible uint64
	// Restarts counts restarts of the embedding after a gap (Config.MaxGap)
	// or a non-finite value.
	Restarts uint64
	// Updates counts successful model updates (learned samples).
	Updates uint64
	// LearnErrors counts updates the model refused (a numerical failure;
	// the model is then unchanged and forecasting goes on).
	LearnErrors uint64
	// Forecasts counts forecasts made; PredictErrors those that failed.
	Forecasts, PredictErrors uint64
	// UpdateNanos is the time spent in model updates (forgetting included)
	// and PredictNanos in predictions, with Config.MeasureUpdates.
	UpdateNanos, PredictNanos int64
	// MaxModelSize is the largest model size seen after an update.
	MaxModelSize int
	// Anomalies counts the anomaly events opened.
	Anomalies uint64
	// Late counts raw points dropped, with Config.Step > 0, for a bucket
	// already closed.
	Late uint64
	// Overflow counts buckets, with Config.Step > 0, that made no point
	// because their value was beyond float64 (a sum, or a rate over a
	// short time); not kept in the series' checkpoint.
	Overflow uint64
}
