// Package anomaly scores a series' actual values against their forecasts'
// prediction intervals and turns the scores into debounced anomaly events.
//
// The score of a point is its deviation from the forecast relative to the
// interval's half-width on the side it fell: 0 on the forecast, 1 on the
// bound, above 1 outside the interval, as VictoriaMetrics' anomaly
// detection defines its anomaly_score. A [Detector] counts a point as
// outside when its score (each half-width floored at a multiple of the
// series' mean absolute change) exceeds a threshold in the watched
// direction and its absolute deviation is at least a minimum; it opens an
// event when K of the last N points were outside and one of them was a
// surprise (its score above a multiple of the highest over a recent
// window), when the point is a new all-time high or low, by a margin,
// after a quiet period, or when the series has left its seasonal pattern
// for a run of points, and closes it when M points in a row were inside.
//
// A [Likelihood] turns the history of scores into the probability that the
// recent scores are unusually high for this series, as the anomaly
// likelihood of Ahmad, Lavin, Purdy and Agha, "Unsupervised real-time
// anomaly detection for streaming data" (Neurocomputing 262, 2017),
// section 4.2 (eqs. 3–6), does for HTM's raw anomaly scores.
//
// The package is a leaf: no I/O, no clock, no configuration files. A
// Detector and a Likelihood are owned by one goroutine; neither is safe for
// concurrent use. Neither allocates per point.
package anomaly

import (
	"errors"
	"fmt"
	"math"
)

// ErrBadConfig is wrapped by the errors of Config.Validate and of Restore.
var ErrBadConfig = errors.New("anomaly: bad config")

// Direction says which deviations count as anomalous.
type Direction int

const (
	// Both counts deviations above and below the forecast. Config value
	// "both".
	Both Direction = iota
	// Above counts only actuals above the forecast. Config value "above".
	Above
	// Below counts only actuals below the forecast. Config value "below".
	Below
)

// String returns the direction's config value.
func (d Direction) String() string {
	switch d {
	case Both:
		return "both"
	case Above:
		return "above"
	case Below:
		return "below"
	}
	return fmt.Sprintf("Direction(%d)", int(d))
}

// ParseDirection returns the direction named by a config value.
func ParseDirection(s string) (Direction, error) {
	switch s {
	case "both":
		return Both, nil
	case "above":
		return Above, nil
	case "below":
		return Below, nil
	}
	return 0, fmt.Errorf("%w: direction %q: want both, above or below", ErrBadConfig, s)
}

// MaxScore bounds a score: a point off a forecast whose interval has zero
// width on that side scores MaxScore, not +Inf, so that the score can be
// written to JSON and InfluxDB.
const MaxScore = 1e9

// Score returns the anomaly score of actual y against the forecast yhat
// with prediction interval [lower, upper]: (y − yhat)/(upper − yhat) above
// the forecast, (yhat − y)/(yhat − lower) below it; 0 when y = yhat, 1 on
// a bound, > 1 outside the interval, capped at MaxScore. NaN when the
// forecast has no interval (lower or upper NaN) or y or yhat is NaN. O(1).
func Score(y, yhat, lower, upper float64) float64 {
	var dev, half float64
	switch {
	case y > yhat:
		dev, half = y-yhat, upper-yhat
	case y < yhat:
		dev, half = yhat-y, yhat-lower
	case y == yhat && !math.IsNaN(lower) && !math.IsNaN(upper):
		return 0
	default: // NaN somewhere
		return math.NaN()
	}
	if math.IsNaN(half) {
		return math.NaN()
	}
	if half <= 0 {
		return MaxScore
	}
	return min(dev/half, MaxScore)
}

// Side returns the direction of y's deviation from yhat: Above, Below, or
// Both when y = yhat (or either is NaN).
func Side(y, yhat float64) Direction {
	switch {
	case y > yhat:
		return Above
	case y < yhat:
		return Below
	}
	return Both
}
