// Package baseline computes the reference forecasts a backtest compares
// forecastd with: persistence, seasonal naive and simple exponential
// smoothing (SES). Each is a pure function of the series' values (and, for
// the seasonal period, its spacing) that uses only the past: the forecast
// ŷ[i] of y[i] depends on y[0…i−1] alone, except for SES's α, which is
// fitted on the first 30 % of the series (FitSES).
//
// The definitions mirror the independent evaluation script
// tools/eval_real_streams.py of the project's shared tools (functions
// ses_pred and main there), so that the numbers of `forecastd backtest`
// agree with it. A forecast that is undefined (no past to use) is NaN;
// the script fills those places with placeholders it never scores.
package baseline

import (
	"math"
	"slices"
	"time"
)

// Day is the season of SeasonalPeriod.
const Day = 24 * time.Hour

// Persistence returns the persistence (naive) forecasts ŷ[i] = y[i−1], with
// ŷ[0] = NaN. O(n) time, one slice of len(y).
func Persistence(y []float64) []float64 {
	p := make([]float64, len(y))
	if len(y) == 0 {
		return p
	}
	p[0] = math.NaN()
	copy(p[1:], y)
	return p
}

// MedianSpacing returns the median of the differences of consecutive
// times (the mean of the two middle ones for an even count), as numpy's
// median of numpy.diff does: differences that are zero or negative (points
// out of order) are counted as they are. It returns 0 for fewer than two
// times. O(n log n) time.
func MedianSpacing(times []time.Time) time.Duration {
	if len(times) < 2 {
		return 0
	}
	d := make([]time.Duration, len(times)-1)
	for i := range d {
		d[i] = times[i+1].Sub(times[i])
	}
	slices.Sort(d)
	m := len(d) / 2
	if len(d)%2 == 1 {
		return d[m]
	}
	return d[m-1] + (d[m]-d[m-1])/2
}

// SeasonalPeriod returns the daily period in points of a series of n points
// spaced by spacing: P = round(Day / spacing), rounding half to even as
// Python's round does. It returns 0 (no seasonal naive) when the spacing is
// not positive, P < 2, or the series is shorter than four periods (n < 4·P).
func SeasonalPeriod(n int, spacing time.Duration) int {
	if spacing <= 0 {
		return 0
	}
	p := math.RoundToEven(float64(Day) / float64(spacing))
	if p < 2 || float64(n) < 4*p {
		return 0
	}
	return int(p)
}

// SeasonalNaive returns the seasonal naive forecasts ŷ[i] = y[i−p], NaN for
// i < p. It panics unless p ≥ 1 (p = 0 means no seasonal naive: the caller
// decides, see SeasonalPeriod). O(n) time, one slice of len(y).
func SeasonalNaive(y []float64, p int) []float64 {
	if p < 1 {
		panic("baseline: seasonal period must be at least 1")
	}
	f := make([]float64, len(y))
	for i := range f {
		if i < p {
			f[i] = math.NaN()
		} else {
			f[i] = y[i-p]
		}
	}
	return f
}

// SES returns the simple exponential smoothing forecasts with smoothing
// factor alpha: the level starts at y[0] and after each point becomes
// α·y[i] + (1−α)·level; ŷ[i] is the level before y[i] is seen, for i ≥ 1
// (ŷ[0] = NaN: no past). O(n) time, one slice of len(y).
func SES(y []float64, alpha float64) []float64 {
	f := make([]float64, len(y))
	if len(y) == 0 {
		return f
	}
	f[0] = math.NaN()
	l := y[0]
	for i := 1; i < len(y); i++ {
		f[i] = l
		l = alpha*y[i] + (1-alpha)*l
	}
	return f
}

// SESGrid is the grid FitSES picks α from.
var SESGrid = []float64{0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 0.9, 1.0}

// FitFraction is the share of a series' first points FitSES fits α on.
const FitFraction = 0.3

// FitSES returns the α of SESGrid with the least one-step mean absolute
// error of SES on the first ⌊FitFraction·n⌋ points (the forecasts of
// points 1 … m−1 of those m), the first of the grid on a tie. With fewer
// than two points to fit on it returns SESGrid[0], as the script's min over
// NaN means does. O(len(SESGrid)·n) time, no allocation.
func FitSES(y []float64) float64 {
	m := int(FitFraction * float64(len(y)))
	best, bestMAE := SESGrid[0], math.Inf(1)
	if m < 2 {
		return best
	}
	for _, a := range SESGrid {
		var sum float64
		l := y[0]
		for i := 1; i < m; i++ {
			sum += math.Abs(l - y[i])
			l = a*y[i] + (1-a)*l
		}
		if mae := sum / float64(m-1); mae < bestMAE {
			best, bestMAE = a, mae
		}
	}
	return best
}

// Set is the baselines of one series.
type Set struct {
	// Persistence, SeasonalNaive and SES are the forecasts of every
	// point, NaN where undefined; SeasonalNaive is nil when Period is 0.
	Persistence, SeasonalNaive, SES []float64
	// Period is the seasonal naive's period in points (0: none, see
	// SeasonalPeriod); Alpha is SES's fitted α (see FitSES).
	Period int
	Alpha  float64
}

// Compute returns every baseline of the series y spaced by spacing (see
// MedianSpacing). O(n) time beyond FitSES, three slices of len(y).
func Compute(y []float64, spacing time.Duration) Set {
	s := Set{Persistence: Persistence(y), Period: SeasonalPeriod(len(y), spacing), Alpha: FitSES(y)}
	if s.Period > 0 {
		s.SeasonalNaive = SeasonalNaive(y, s.Period)
	}
	s.SES = SES(y, s.Alpha)
	return s
}
