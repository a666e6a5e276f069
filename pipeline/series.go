// Package pipeline is forecastd's per-series flow, shared by the daemon and
// by `forecastd backtest`, so that a backtest predicts exactly what the
// daemon would have published:
//
//	point → scale (warm-up) → delay-embed → learn the previous sample
//	(through the forgetting window) → forecast the next point → emit
//
// following the one-step-ahead protocol of Ma, Theiler and Perkins,
// "Accurate On-line Support Vector Regression" (2003), section 5.2. Each
// forecast carries a split-conformal prediction interval calibrated on a
// rolling window of the series' own one-step residuals, its quantile level
// adapted to the misses seen (adaptive conformal inference), so that the
// long-run coverage stays at nominal when the residuals drift.
//
// Cost per point: one model update (AOSVR: O(W·|S|) at worst, usually
// O(|S|·d); SOG-SVR: O(m²); NORMA: O(d), its prediction having been made
// the step before), one prediction (O(|S|·d), O(m·d), O(τ·d)) and
// O(interval_window) for the residual window. No allocation once warm.
//
// A [Series] is owned by one goroutine (the daemon's shard); it is not safe
// for concurrent use. A [Runner] runs many: series are sharded by a hash of
// their key over a fixed set of goroutines, each owning its series map
// outright, fed by bounded queues; a series is created on its first point
// from the first [Rule] matching its key (or the default [Config]), and
// evicted when idle. Each point's [Acker] is told once its outcome and
// forecast were accepted by the series' [Sink] (or why not), which is how the
// daemon acknowledges JetStream messages only after the sinks took their
// forecasts.
//
// The package declares what it emits to ([Sink], [Outputs], [Acker]) and
// knows nothing of NATS, InfluxDB or configuration files; it depends on svr,
// embedding and window.
package pipeline

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/forecastd/forecastd/embedding"
)

var (
	// ErrOutOfOrder is wrapped by the error for a point whose time is not
	// after the previous point's: it is dropped (and counted).
	ErrOutOfOrder = errors.New("pipeline: point out of order or duplicate")
	// ErrNonFinite is wrapped by the error for a NaN or Inf value: the
	// point is dropped, counted, and treated as a gap (the embedding
	// restarts at the next point).
	ErrNonFinite = errors.New("pipeline: value is NaN or Inf")
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
}

// HasInterval reports whether f carries a prediction interval.
func (f Forecast) HasInterval() bool { return !math.IsNaN(f.Lower) }

// Outcome is a point that closed a forecast: the forecast made for it
// from the points before it, and the value that arrived.
type Outcome struct {
	// Forecast is the forecast that was made for this point.
	Forecast Forecast
	// Time is the point's time.
	Time time.Time
	// Actual is the point's value in the series' units.
	Actual float64
	// ActualScaled is the point's value in the model's scaled units.
	ActualScaled float64
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
}

// wpoint is a point held through warm-up, with whether the embedding must
// restart before it.
type wpoint struct {
	Point
	restart bool
}

// Series is the pipeline of one series: its scaler and warm-up buffer,
// delay embedding, model (with its forgetting window) and residual window.
// Once warm it does not allocate per point.
type Series struct {
	key    string
	cfg    Config
	m      *model
	delay  *embedding.Delay
	scaler *embedding.Scaler
	warm   *embedding.Warmup[wpoint]
	conf   *conformal

	train, input []float64

	learning    bool
	learned     uint64 // samples learned since creation
	pending     bool   // pend is the forecast of the next point
	pend        Forecast
	pendH       float64 // pend's interval half-width in scaled units, or −1
	restartNext bool

	havePoint bool
	lastTime  time.Time
	spacings  [nSpacings]time.Duration // recent spacings, a ring
	nSpacing  int

	stats Stats
}

// New returns the pipeline of the series named key (used only to label what
// it emits), configured by cfg, or the error of cfg.Validate.
func New(key string, cfg Config) (*Series, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	m, err := cfg.newModel()
	if err != nil {
		return nil, err
	}
	d, err := embedding.NewDelay(cfg.Dim, cfg.Delay)
	if err != nil {
		return nil, err
	}
	sc, err := embedding.NewScaler(cfg.Scale)
	if err != nil {
		return nil, err
	}
	return &Series{
		key:      key,
		cfg:      cfg,
		m:        m,
		delay:    d,
		scaler:   sc,
		warm:     embedding.NewWarmup[wpoint](sc),
		conf:     newConformal(cfg.IntervalWindow, cfg.Coverage, cfg.IntervalAdapt),
		train:    make([]float64, cfg.Dim),
		input:    make([]float64, cfg.Dim),
		learning: true,
	}, nil
}

// Key returns the series' key.
func (s *Series) Key() string { return s.key }

// Config returns the series' configuration.
func (s *Series) Config() Config { return s.cfg }

// Stats returns the series' counters.
func (s *Series) Stats() Stats { return s.stats }

// ModelSize returns the model's size now: AOSVR's support vectors, SOG-SVR's
// dictionary atoms or NORMA's kernel terms.
func (s *Series) ModelSize() int { return s.m.size() }

// ModelBytes returns the bytes of the model's learned state (with AOSVR, the
// window's stored samples included).
func (s *Series) ModelBytes() int { return s.m.bytes() }

// Freeze stops learning: from now on the model only forecasts (the AOSVR
// paper's "fixed" predictor, section 5.2.1). Intervals keep calibrating.
func (s *Series) Freeze() { s.learning = false }

// Learning reports whether the model still learns (Freeze not called).
func (s *Series) Learning() bool { return s.learning }

// Warm reports whether the scale's warm-up is over, so that points are
// embedded and forecast as they arrive.
func (s *Series) Warm() bool { return s.scaler.Frozen() }

// Interval returns the spacing that dates forecasts: Config.Interval, or
// the median of the last 16 spacings (gaps excluded), or 0 before the
// second point. O(1).
func (s *Series) Interval() time.Duration {
	if s.cfg.Interval > 0 {
		return s.cfg.Interval
	}
	n := s.nSpacing
	if n > len(s.spacings) {
		n = len(s.spacings)
	}
	if n == 0 {
		return 0
	}
	var a [nSpacings]time.Duration
	copy(a[:], s.spacings[:n])
	for i := 1; i < n; i++ { // insertion sort of at most 16
		for j := i; j > 0 && a[j] < a[j-1]; j-- {
			a[j], a[j-1] = a[j-1], a[j]
		}
	}
	if n%2 == 1 {
		return a[n/2]
	}
	return (a[n/2-1] + a[n/2]) / 2
}

// Push takes the series' next point and runs it through the pipeline:
//
//  1. a point not after the previous one is dropped (ErrOutOfOrder), a NaN
//     or Inf value is dropped and restarts the embedding (ErrNonFinite);
//     a point more than MaxGap intervals after the previous restarts it;
//  2. during the scale's warm-up the point is held back; the point that
//     completes the range releases every held point, oldest first;
//  3. each released point is scaled and embedded; if a forecast was made
//     for it, that forecast and the point form the Outcome, and the
//     absolute residual joins the interval calibration;
//  4. the sample completed by the point, (X(t−1), x(t)), is learned through
//     the forgetting window (unless frozen);
//  5. the next point is forecast from X(t), made of this point and those
//     before it only, with its interval.
//
// Warm-up points are learned but never forecast: their scale depends on
// the points after them. A model that has learned nothing does not
// forecast. A point that releases several is one call and returns the
// forecast made after the newest. Push does not allocate once the model is
// warm (AOSVR with a window, SOG-SVR, NORMA), but for the error it returns
// when it drops a point.
func (s *Series) Push(p Point) (Result, error) {
	if math.IsNaN(p.Value) || math.IsInf(p.Value, 0) {
		s.stats.NonFinite++
		s.dropPending()
		return Result{}, fmt.Errorf("%w: %v at %v", ErrNonFinite, p.Value, p.Time)
	}
	restart := s.restartNext
	if s.havePoint {
		d := p.Time.Sub(s.lastTime)
		if d <= 0 {
			s.stats.OutOfOrder++
			return Result{}, fmt.Errorf("%w: %v is not after %v", ErrOutOfOrder, p.Time, s.lastTime)
		}
		iv := s.Interval()
		if s.cfg.MaxGap > 0 && iv > 0 && float64(d) > s.cfg.MaxGap*float64(iv) {
			restart = true
		} else {
			s.spacings[s.nSpacing%len(s.spacings)] = d
			s.nSpacing++
		}
	}
	s.havePoint = true
	s.lastTime = p.Time
	s.restartNext = false
	s.stats.Points++

	pts, err := s.warm.Add(wpoint{p, restart}, p.Value)
	if err != nil { // cannot happen: the value is finite
		return Result{}, err
	}
	var res Result
	for i := range pts {
		s.step(pts[i], i == len(pts)-1, &res)
	}
	return res, nil
}

// dropPending handles a gap: the embedding restarts at the next point and
// the forecast pending now will not be scored.
func (s *Series) dropPending() {
	s.restartNext = true
	s.pending = false
}

// step runs one released point through steps 3–5 of Push; only the newest
// point of a release (last) is forecast from.
func (s *Series) step(q wpoint, last bool, res *Result) {
	v := s.scaler.Scale(q.Value)
	if q.restart {
		s.delay.Reset()
		s.pending = false
		s.stats.Restarts++
	}
	trained, ready := s.delay.Step(v, s.train, s.input)
	if s.pending {
		s.pending = false
		r := math.Abs(v - s.pend.Scaled)
		if s.pendH >= 0 {
			s.conf.feedback(r > s.pendH)
		}
		s.conf.add(r)
		res.Outcome = Outcome{Forecast: s.pend, Time: q.Time, Actual: q.Value, ActualScaled: v}
		res.HasOutcome = true
	}
	if trained && s.learning {
		var t0 time.Time
		timed := s.cfg.MeasureUpdates || s.cfg.Observer != nil
		if timed {
			t0 = time.Now()
		}
		err := s.m.learn(s.train, v)
		if timed {
			d := time.Since(t0)
			if s.cfg.MeasureUpdates {
				s.stats.UpdateNanos += int64(d)
			}
			if s.cfg.Observer != nil {
				s.cfg.Observer.ObserveUpdate(d)
			}
		}
		if err != nil {
			s.stats.LearnErrors++
		} else {
			s.stats.Updates++
			s.learned++
			if n := s.m.size(); n > s.stats.MaxModelSize {
				s.stats.MaxModelSize = n
			}
		}
	}
	if !ready || !last || s.learned == 0 {
		return
	}
	var t0 time.Time
	if s.cfg.MeasureUpdates {
		t0 = time.Now()
	}
	y, err := s.m.reg.Predict(s.input)
	if s.cfg.MeasureUpdates {
		s.stats.PredictNanos += int64(time.Since(t0))
	}
	if err != nil {
		s.stats.PredictErrors++
		return
	}
	s.stats.Forecasts++
	f := Forecast{
		Origin: q.Time,
		Time:   q.Time.Add(s.Interval()),
		Value:  s.scaler.Unscale(y),
		Lower:  math.NaN(),
		Upper:  math.NaN(),
		Scaled: y,
	}
	s.pendH = -1
	if h, ok := s.conf.quantile(); ok {
		s.pendH = h
		f.Lower = s.scaler.Unscale(y - h)
		f.Upper = s.scaler.Unscale(y + h)
	}
	s.pend, s.pending = f, true
	res.Forecast, res.HasForecast = f, true
}

// Process pushes p and hands the result to sink: the Outcome first, then
// the Forecast. Errors are wrapped with the series key; a dropped point's
// error wraps ErrOutOfOrder or ErrNonFinite.
func (s *Series) Process(p Point, sink Sink) error {
	res, err := s.Push(p)
	if err != nil {
		return fmt.Errorf("series %q: %w", s.key, err)
	}
	if res.HasOutcome {
		if err := sink.Outcome(s.key, res.Outcome); err != nil {
			return fmt.Errorf("series %q: outcome: %w", s.key, err)
		}
	}
	if res.HasForecast {
		if err := sink.Forecast(s.key, res.Forecast); err != nil {
			return fmt.Errorf("series %q: forecast: %w", s.key, err)
		}
	}
	return nil
}

// nSpacings is the number of recent spacings whose median dates forecasts.
const nSpacings = 16

// Scale maps a raw value into the model's scaled units, as the series
// does; ok is false during the scale's warm-up.
func (s *Series) Scale(v float64) (scaled float64, ok bool) {
	if !s.scaler.Frozen() {
		return 0, false
	}
	return s.scaler.Scale(v), true
}
