package backtest

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/forecastd/forecastd/lab/baseline"
	"github.com/forecastd/forecastd/pipeline"
)

// HoldoutResult is the forecast of a series' last H points made from the
// point before them, the forecasting competitions' protocol (the M4
// competition's: Makridakis, Spiliotis and Assimakopoulos, "The M4
// Competition: 100,000 time series and 61 forecasting methods",
// International Journal of Forecasting 36, 2020), scored as they score it:
//
//	MASE  = mean_h |y − ŷ| / scale
//	sMAPE = mean_h 200·|y − ŷ| / (|y| + |ŷ|)
//	MSIS  = mean_h [(U − L) + (2/α)(L − y)·1{y < L} + (2/α)(y − U)·1{y > U}] / scale
//
// with scale the in-sample mean |y(t) − y(t−m)| over the training points,
// m the seasonal period (Period), and α = 1 − coverage. Seasonal naive
// (ŷ(T+h) = y(T+h−m·⌈h/m⌉)) is scored on the same points.
type HoldoutResult struct {
	// H is the points held out, Train the points before them, Period the
	// MASE's seasonal period m.
	H, Train, Period int
	// Coverage is the intervals' nominal coverage.
	Coverage float64
	// Actual, Forecast, Lower, Upper and Snaive are per step, index h−1;
	// Lower and Upper NaN where the step had no interval.
	Actual, Forecast, Lower, Upper, Snaive []float64
	// Times of the held-out points.
	Times []time.Time
	// Scale is MASE's denominator.
	Scale float64
	// The scores; MSIS and Covered are NaN unless every step had an
	// interval.
	MASE, SMAPE, MSIS, Covered Float
	SnaiveMASE, SnaiveSMAPE    Float
}

// ErrHoldout wraps why a holdout could not be made.
var ErrHoldout = errors.New("holdout")

// MASEPeriod returns the seasonal period m of MASE for a series spaced by
// spacing: the points in a day, or 1 (non-seasonal) when a day is less than
// two points or not a whole number of them.
func MASEPeriod(spacing time.Duration) int {
	if spacing <= 0 || spacing > baseline.Day/2 || baseline.Day%spacing != 0 {
		return 1
	}
	return int(baseline.Day / spacing)
}

// Holdout runs a new pipeline over data's points but the last h, and scores
// the path it forecast at the last of them against the h held out. period
// is MASE's m (0: MASEPeriod of the median spacing). The configuration's
// Horizon must be at least h. The held-out points are never pushed.
func Holdout(name string, cfg pipeline.Config, data Data, h, period int) (*HoldoutResult, error) {
	n := len(data.Values)
	if h < 1 {
		return nil, fmt.Errorf("%w: %d points held out, want at least 1", ErrHoldout, h)
	}
	if max(1, cfg.Horizon) < h {
		return nil, fmt.Errorf("%w: %d points held out but the horizon is %d: set the horizon to at least %d", ErrHoldout, h, max(1, cfg.Horizon), h)
	}
	if period == 0 {
		period = MASEPeriod(baseline.MedianSpacing(data.Times))
	}
	train := n - h
	if train <= period+1 {
		return nil, fmt.Errorf("%w: %d points, too few to hold out %d and scale by a period of %d", ErrHoldout, n, h, period)
	}
	s, err := pipeline.New(name, cfg)
	if err != nil {
		return nil, err
	}
	var last pipeline.Forecast
	have := false
	for i := range train {
		res, err := s.Push(pipeline.Point{Time: data.Times[i], Value: data.Values[i]})
		if errors.Is(err, pipeline.ErrOutOfOrder) {
			continue
		} else if err != nil {
			return nil, fmt.Errorf("point %d: %w", i, err)
		}
		if i == train-1 {
			last, have = res.Forecast, res.HasForecast
		}
	}
	if !have {
		return nil, fmt.Errorf("%w: no forecast was made at the last training point (%d points are too few for the model to warm up)", ErrHoldout, train)
	}
	r := &HoldoutResult{H: h, Train: train, Period: period, Coverage: cfg.Coverage,
		Actual: slices.Clone(data.Values[train:]), Times: data.Times[train:],
		Forecast: make([]float64, h), Lower: make([]float64, h), Upper: make([]float64, h), Snaive: make([]float64, h)}
	path := last.Path
	if path == nil { // H = 1: the forecast is the path
		path = []pipeline.Step{{Horizon: 1, Time: last.Time, Value: last.Value, Lower: last.Lower, Upper: last.Upper}}
	}
	y := data.Values[:train]
	for k := range h {
		st := path[k]
		r.Forecast[k], r.Lower[k], r.Upper[k] = st.Value, st.Lower, st.Upper
		r.Snaive[k] = y[train+k-period*((k+period)/period)]
	}
	var sc float64
	for i := period; i < train; i++ {
		sc += math.Abs(y[i] - y[i-period])
	}
	r.Scale = sc / float64(train-period)
	r.MASE, r.SMAPE = Float(mase(r.Actual, r.Forecast, r.Scale)), Float(smape(r.Actual, r.Forecast))
	r.SnaiveMASE, r.SnaiveSMAPE = Float(mase(r.Actual, r.Snaive, r.Scale)), Float(smape(r.Actual, r.Snaive))
	r.MSIS, r.Covered = msis(r.Actual, r.Lower, r.Upper, 1-cfg.Coverage, r.Scale)
	return r, nil
}

func mase(y, f []float64, scale float64) float64 {
	var s float64
	for i := range y {
		s += math.Abs(y[i] - f[i])
	}
	return s / float64(len(y)) / scale
}

// smape is the M4 competition's sMAPE in percent; a step where both the
// actual and the forecast are 0 errs by 0.
func smape(y, f []float64) float64 {
	var s float64
	for i := range y {
		if d := math.Abs(y[i]) + math.Abs(f[i]); d > 0 {
			s += 200 * math.Abs(y[i]-f[i]) / d
		}
	}
	return s / float64(len(y))
}

// msis returns the mean scaled interval score and the share of actuals
// inside their intervals; NaN for both if a step has no interval.
func msis(y, lo, hi []float64, alpha, scale float64) (Float, Float) {
	var s float64
	in := 0
	for i := range y {
		if math.IsNaN(lo[i]) || math.IsNaN(hi[i]) {
			return NaN, NaN
		}
		s += hi[i] - lo[i]
		if y[i] < lo[i] {
			s += 2 / alpha * (lo[i] - y[i])
		} else if y[i] > hi[i] {
			s += 2 / alpha * (y[i] - hi[i])
		} else {
			in++
		}
	}
	return Float(s / float64(len(y)) / scale), Float(float64(in) / float64(len(y)))
}
