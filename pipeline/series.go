package pipeline

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/forecastd/forecastd/anomaly"
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
// the spike again. Five, chosen by measurement (BENCHMARKS.md, "How the
// default's parts were chosen"): fewer and two spikes in a row pass, more
// and it lags a real level shift. The guard still weighs the combination
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
