package pipeline

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/forecastd/forecastd/anomaly"
	"github.com/forecastd/forecastd/anomaly/threshold"
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
	// ErrImplausible is wrapped by the error for a value whose change is
	// beyond what the series' scale makes plausible (implausibleScales).
	ErrImplausible = errors.New("pipeline: value implausibly far from the series' last")
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
	key       string
	cfg       *Config // read only, maybe shared with other series
	model     *model
	delay     *embedding.Delay
	scaler    *embedding.Scaler
	warmup    *embedding.Warmup[wpoint]
	conformal *conformal // the interval's calibration
	detector  *anomaly.Detector

	train, input []float64

	learned         uint64 // samples learned since creation
	pendingForecast Forecast
	// pendingHalfWidth is pendingForecast's interval half-width in scaled
	// units (in running scales with target change), or −1 if it has none.
	pendingHalfWidth float64
	// implausibleRun counts the values refused in a row as implausible,
	// each near the one before; lastRefused is the last (scaled).
	implausibleRun int
	lastRefused    float64

	lastTime time.Time
	spacings [nSpacings]time.Duration // recent spacings, a ring
	nSpacing int

	stats Stats

	// Target change: the change features, the combination of the SVR and
	// the simple rules, whether input holds the input of the last point
	// (the sample learned when the next point arrives), and the running
	// scale pendingForecast was made in. changes is nil without target
	// change.
	changes      *embedding.Changes
	comb         *combiner
	guard        *combiner
	pendingScale float64
	// horizon forecasts steps 2…H with Config.Horizon H > 1, else nil.
	horizon *horizon

	// sampleHook, when set, is given every training sample instead of
	// the model when it returns false (see Samples).
	sampleHook func(x []float64, y float64) (learn bool)

	// buckets aggregates raw points with Config.Step > 0, else nil.
	buckets *Buckets

	// thresholds watches Config.Thresholds, else nil.
	thresholds *thresholds

	// The flags, together so that the struct has no padding between them.
	//
	// quietEvent: the detector's open event opened while the series
	// warmed, and is not reported (see anomalyWarm).
	quietEvent bool
	learning   bool
	// havePending: pendingForecast is the forecast made for the next
	// point, to be scored (Outcome) when it arrives.
	havePending bool
	restartNext bool
	havePoint   bool
	haveInput   bool
	// detecting: the seasonal periods were detected on fewer than
	// embedding.DetectLen values; they are detected again on that many.
	detecting bool
}

// New returns the pipeline of the series named key (used only to label what
// it emits), configured by cfg, or the error of cfg.Validate.
func New(key string, cfg Config) (*Series, error) { return newSeries(key, &cfg) }

// newSeries is New with a configuration that the series keeps and may
// share with others (a Runner's rule): neither changes it. Shared, it
// costs a series a pointer instead of a copy (496 B).
func newSeries(key string, cfg *Config) (*Series, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	m, err := cfg.newModel()
	if err != nil {
		return nil, err
	}
	det, err := anomaly.NewDetector(cfg.Anomaly)
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
	s := &Series{
		key:       key,
		cfg:       cfg,
		model:     m,
		delay:     d,
		scaler:    sc,
		warmup:    embedding.NewWarmup[wpoint](sc),
		conformal: newConformal(cfg.IntervalWindow, cfg.Coverage, cfg.IntervalAdapt),
		train:     make([]float64, cfg.Dim),
		input:     make([]float64, cfg.ModelDim()),
		learning:  true,
		detector:  det,
	}
	if cfg.Step > 0 {
		if s.buckets, err = NewBuckets(cfg.Step, cfg.Aggregate); err != nil {
			return nil, err
		}
	}
	if cfg.Target == TargetChange {
		if s.changes, err = embedding.NewChanges(cfg.changeSpec()); err != nil {
			return nil, err
		}
		if cfg.Combine {
			s.comb = newCombiner(s.candidates())
			s.guard = newGuard()
		}
		if cfg.Horizon > 1 {
			if s.horizon, err = newHorizon(*cfg); err != nil {
				return nil, err
			}
		}
		if len(cfg.Thresholds) > 0 {
			if s.thresholds, err = newThresholds(cfg.Thresholds); err != nil {
				return nil, err
			}
		}
	}
	return s, nil
}

// robustPoints is the number of last values whose median is the
// combination's persistence candidate: after a one-point spike it
// forecasts the level the series returns to, where persistence forecasts
// the spike again. Five measured best of 3 to 9 (BENCHMARKS.md, "How the
// default's parts were chosen"). The guard still weighs the combination
// against persistence itself.
const robustPoints = 5

// candidates returns the number of forecasters combined with target
// change: the model, the robust persistence (the median of the last
// robustPoints values), one exponential smoothing per level and
// one seasonal forecast per period (the median of the last cycles at
// the same phase, embedding.Changes.SeasonalMedianAhead).
func (s *Series) candidates() int { return 2 + len(defaultLevelRates) + len(s.cfg.Seasons) }

// Key returns the series' key.
func (s *Series) Key() string { return s.key }

// Config returns the series' configuration.
func (s *Series) Config() Config { return *s.cfg }

// Stats returns the series' counters.
func (s *Series) Stats() Stats {
	st := s.stats
	if s.buckets != nil {
		st.Overflow = s.buckets.Overflowed()
	}
	return st
}

// ModelSize returns the model's size now: AOSVR's support vectors, SOG-SVR's
// dictionary atoms or NORMA's kernel terms.
func (s *Series) ModelSize() int { return s.model.size() }

// ModelBytes returns the bytes of the model's learned state (with AOSVR, the
// window's stored samples included).
func (s *Series) ModelBytes() int { return s.model.bytes() }

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
	if s.cfg.Step > 0 {
		return s.cfg.Step
	}
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
	if s.buckets != nil {
		q, ok, err := s.buckets.Add(p)
		switch {
		case errors.Is(err, ErrLate):
			s.stats.Late++
			return Result{}, err
		case errors.Is(err, ErrOutOfOrder):
			s.stats.OutOfOrder++
			return Result{}, err
		case errors.Is(err, ErrNonFinite):
			s.stats.NonFinite++ // a raw value: the bucket stays open
			return Result{}, err
		case !ok:
			return Result{}, nil // in the open bucket
		}
		p = q
	}
	return s.push(p)
}

// CloseBucket closes, with Config.Step > 0, the open bucket if its end
// plus grace is not after now, and runs its point through the pipeline
// as Push would have when the next bucket's first point arrived; ok is
// false if no bucket was due (or the bucket held no value).
func (s *Series) CloseBucket(now time.Time, grace time.Duration) (res Result, ok bool, err error) {
	if s.buckets == nil {
		return Result{}, false, nil
	}
	end, open := s.buckets.OpenEnd()
	if !open || end.Add(grace).After(now) {
		return Result{}, false, nil
	}
	p, ok := s.buckets.Close()
	if !ok {
		return Result{}, false, nil
	}
	res, err = s.push(p)
	return res, err == nil, err
}

// BucketDue returns when the open bucket, with Config.Step > 0, is due to
// close after grace, and false if none is open.
func (s *Series) BucketDue(grace time.Duration) (time.Time, bool) {
	if s.buckets == nil {
		return time.Time{}, false
	}
	end, open := s.buckets.OpenEnd()
	return end.Add(grace), open
}

// push is Push of a point at the series' resolution.
func (s *Series) push(p Point) (Result, error) {
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
		if refuse, level := s.implausible(p.Value); refuse {
			return Result{}, fmt.Errorf("%w: %v at %v", ErrImplausible, p.Value, p.Time)
		} else if level {
			restart = true
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

	pts, err := s.warmup.Add(wpoint{p, restart}, p.Value)
	if err != nil { // cannot happen: the value is finite
		return Result{}, err
	}
	var res Result
	for i := range pts {
		s.step(pts[i], i == len(pts)-1, &res)
	}
	return res, nil
}

// implausibleScales is how many running scales of a series' changes, and
// how many times the range of its scale (scaled units), a value's change
// must exceed to be implausible; maxImplausibleRun how many such values
// in a row, each near the one before, are refused before they are a new
// level. The range is needed too: after a long flat stretch the running
// scale is near 0, and a real step (20 → 68) is 10⁶ of them.
//
// A series that has never moved has no running scale: its level stands
// for one, but not below flatScale (scaled units), so that a counter
// flat at 0 may first move by up to 10¹² (a burst of bytes) while ±1e308
// is refused on any flat series.
const (
	implausibleScales = 1e6
	maxImplausibleRun = 3
	flatScale         = 1e6
)

// implausible decides on v, a value of a warm series with target change
// whose change from the last is beyond implausibleScales running scales
// and ranges (or, while the series has no scale, levels; see flatScale):
// refused (counted), rather than learned clipped, because a clipped value
// still enters the running scale as a change of that size, widening every
// interval after it, and the next real value is as large a change back.
// A value that follows maxImplausibleRun refused values in a row, each
// within implausibleScales of the one before, is a real change of level
// (a counter reset, new units): it is taken, restarting the embedding as
// after a gap. Values that disagree with each other (±1e308 in turn) are
// refused for as long as they come.
func (s *Series) implausible(v float64) (refuse, level bool) {
	c := s.changes
	if c == nil || !s.scaler.Frozen() || c.Held() == 0 || s.restartNext {
		return false, false
	}
	x, lim := s.scaler.Scale(v), implausibleScales*max(c.Scale(), 1)
	if !c.HasScale() {
		lim = implausibleScales * max(math.Abs(c.Last()), flatScale)
	}
	if !(math.Abs(x-c.Last()) > lim) {
		s.implausibleRun = 0
		return false, false
	}
	agrees := s.implausibleRun > 0 && !(math.Abs(x-s.lastRefused) > lim)
	if agrees && s.implausibleRun >= maxImplausibleRun {
		s.implausibleRun = 0
		return false, true
	}
	if !agrees {
		s.implausibleRun = 0
	}
	s.implausibleRun++
	s.lastRefused = x
	s.stats.Implausible++
	return true, false
}

// dropPending handles a gap: the embedding restarts at the next point and
// the forecast pending now will not be scored.
func (s *Series) dropPending() {
	s.restartNext = true
	s.havePending = false
}

// step runs one released point through steps 3–5 of Push; only the newest
// point of a release (last) is forecast from.
func (s *Series) step(q wpoint, last bool, res *Result) {
	if s.changes != nil {
		s.stepChange(q, last, res)
		return
	}
	v := s.scaler.Scale(q.Value)
	if q.restart {
		s.delay.Reset()
		s.havePending = false
		s.stats.Restarts++
	}
	trained, ready := s.delay.Step(v, s.train, s.input)
	skip := false
	if s.havePending {
		s.havePending = false
		res.Outcome = Outcome{Forecast: s.pendingForecast, Time: q.Time, Actual: q.Value, ActualScaled: v}
		res.HasOutcome = true
		skip = s.observeAnomaly(&res.Outcome)
		r := math.Abs(v - s.pendingForecast.Scaled)
		if s.pendingHalfWidth >= 0 && !skip {
			s.conformal.feedback(r > s.pendingHalfWidth)
		}
		if !skip {
			s.conformal.add(r)
		}
	}
	if trained && !skip {
		s.learn(s.train, v)
	}
	if !ready || !last || s.learned == 0 {
		return
	}
	y, ok := s.predict()
	if !ok {
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
	s.pendingHalfWidth = -1
	if h, ok := s.conformal.quantile(); ok {
		s.pendingHalfWidth = h
		f.Lower = s.scaler.Unscale(y - h)
		f.Upper = s.scaler.Unscale(y + h)
	}
	s.pendingForecast, s.havePending = f, true
	res.Forecast, res.HasForecast = f, true
}

// learn gives the sample (x, y) to the model through the forgetting window,
// unless frozen, timing it if asked.
func (s *Series) learn(x []float64, y float64) {
	if !s.learning || (s.sampleHook != nil && !s.sampleHook(x, y)) {
		return
	}
	var t0 time.Time
	timed := s.cfg.MeasureUpdates || s.cfg.Observer != nil
	if timed {
		t0 = time.Now()
	}
	err := s.model.learn(x, y)
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
		return
	}
	s.stats.Updates++
	s.learned++
	if n := s.model.size(); n > s.stats.MaxModelSize {
		s.stats.MaxModelSize = n
	}
}

// predict returns the model's prediction from s.input.
func (s *Series) predict() (float64, bool) {
	var t0 time.Time
	if s.cfg.MeasureUpdates {
		t0 = time.Now()
	}
	y, err := s.model.reg.Predict(s.input)
	if s.cfg.MeasureUpdates {
		s.stats.PredictNanos += int64(time.Since(t0))
	}
	if err != nil || math.IsNaN(y) || math.IsInf(y, 0) {
		s.stats.PredictErrors++
		return 0, false
	}
	return y, true
}

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
	// Forecasts made before the series ever moved had no scale (Scale's
	// placeholder 1, in the series' own units): the point that first
	// moves it would enter their errors, in its own units, into
	// calibrations and combinations kept in scales, and make the next
	// intervals absurd (measured: ±1.6e15 around values of 1e8 on a NAB
	// disk-write series starting at 0). Its outcome is reported and the
	// model learns it, but it is neither calibrated on nor combined; the
	// steps ahead pending are dropped. A point equal to them (a flat
	// series) errs by 0 in any unit and is kept.
	noScale := !c.HasScale()
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
	skip := false
	if s.havePending {
		s.havePending = false
		res.Outcome = Outcome{Forecast: s.pendingForecast, Time: q.Time, Actual: q.Value, ActualScaled: v}
		res.Outcome.Forecast.Path = nil // the steps closed are Outcome.Path
		res.HasOutcome = true
		skip = s.observeAnomaly(&res.Outcome)
		r := math.Min(math.Abs(v-s.pendingForecast.Scaled)/s.pendingScale, maxResidual)
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
	}
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
	if !last {
		return
	}
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
		yhat = s.guard.forecast()
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

// bound clips v into the configured [Min, Max].
func (s *Series) bound(v float64) float64 {
	if v < s.cfg.Min { // false when Min is NaN
		return s.cfg.Min
	}
	if v > s.cfg.Max {
		return s.cfg.Max
	}
	return v
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
