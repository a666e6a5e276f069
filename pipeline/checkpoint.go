package pipeline

import (
	"errors"
	"fmt"
	"github.com/forecastd/forecastd/ahead"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/forecastd/forecastd/anomaly"
	"github.com/forecastd/forecastd/embedding"
)

var (
	// ErrConfigChanged is wrapped by Restore's error when the series'
	// configuration differs from the one its checkpoint was taken with;
	// the error names every setting that changed, old → new. The caller
	// decides: start the series afresh with New, or keep the old
	// configuration.
	ErrConfigChanged = errors.New("pipeline: configuration changed since the checkpoint")
	// ErrBadState is wrapped by Restore's error for a state that is
	// inconsistent or does not fit the configuration.
	ErrBadState = errors.New("pipeline: bad checkpoint state")
)

// SeriesState is the whole state of a [Series], for checkpoints: a series
// restored from it (see [Restore]) goes on exactly as the exporting series
// would have. Its fields are plain data, deep copies that share nothing
// with the series, so that a state exported on the series' goroutine can
// be encoded and written on another. The encoding is the caller's
// (internal/statestore writes it to files).
type SeriesState struct {
	// Key is the series' key.
	Key string
	// Seq belongs to the caller: the daemon records in it the last
	// JetStream stream sequence applied to the series. Export leaves it
	// 0 and Restore ignores it.
	Seq uint64
	// Config identifies the configuration the state was made with: the
	// settings that shape it, by config key, in a canonical text form (see
	// ConfigFields). Restore refuses a state whose Config differs.
	Config []ConfigField

	// Learning is false once Freeze was called; Learned counts the
	// samples learned since creation.
	Learning bool
	Learned  uint64
	// RestartNext: the embedding restarts at the next point (after a
	// non-finite value).
	RestartNext bool
	// HavePoint: a point has been accepted, at LastTime.
	HavePoint bool
	LastTime  time.Time
	// Spacings are the recent spacings, Spacings[i%16] the i-th since
	// creation; NSpacing counts them all.
	Spacings [nSpacings]time.Duration
	NSpacing int
	// Pending: Pend is the forecast of the next point, to be scored when
	// it arrives; PendH is its interval half-width in scaled units, or −1
	// if it has none.
	Pending bool
	Pend    Forecast
	PendH   float64
	// Stats are the series' counters.
	Stats Stats
	// Anomaly is the anomaly detector's state (see anomaly.State). A state
	// that does not fit the configured detector (its settings changed) is
	// not an error: the detector starts afresh.
	Anomaly anomaly.State

	// Delay is the embedding's ring, Scaler the scale (its warm-up
	// progress or frozen range), Warmup the points held back during the
	// scale's warm-up, oldest first.
	Delay  embedding.DelayState
	Scaler embedding.ScalerState
	Warmup []WarmupPoint

	// Residuals are the absolute one-step residuals of the interval
	// calibration window, oldest first; Alpha is the adapted miscoverage
	// level α_t.
	Residuals []float64
	Alpha     float64

	// Changes is the change features' state with target change (nil
	// with target level); HaveInput says the input of the last point is
	// made (it is recomputed from Changes), PendS is the scale the pending
	// forecast was made in.
	Changes   *embedding.ChangesState
	HaveInput bool
	PendS     float64
	// Combine holds, with Config.Combine, the discounted losses and last
	// forecasts of the combined forecasters, then those of the guard
	// (the combination against persistence).
	Combine, Guard *CombinerState
	// Bucket is, with Config.Step > 0, the open bucket's state; nil
	// without a step.
	Bucket *BucketState
	// Horizon is, with Config.Horizon H > 1, the state of steps 2…H
	// (their forecasters, combination, calibration and pending
	// forecasts); nil with H = 1, and in files written before them (the
	// steps then start afresh). Pend.Path is not kept.
	Horizon *ahead.State

	// Model is the model's state, as its kind's ModelKind.Export made it
	// (*AOSVRState, *svr.SOGSVRState, *svr.NORMAState for the built-in
	// kinds).
	Model *ModelState
}

// CombinerState is the state of a forecast combination: each forecaster's
// discounted loss and its last forecast.
type CombinerState struct {
	Loss, Forecasts []float64
}

// WarmupPoint is a point held back during the scale's warm-up; Restart
// marks that the embedding restarts before it.
type WarmupPoint struct {
	Point
	Restart bool
}

// ConfigField is one setting of a configuration, by config key, in a
// canonical text form (floats in their shortest exact form).
type ConfigField struct {
	Key, Value string
}

// ConfigFields returns the settings of cfg that shape a series' state, in a
// fixed order: the common ones, then those of cfg.Kind only (a NORMA series
// does not depend on `window`), as its ModelKind.Fields names them.
// Kernels are in the form of their String method; NORMA's defaults are
// filled in. MeasureUpdates is not among them.
// cfg must be valid.
func ConfigFields(cfg Config) []ConfigField {
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	i := strconv.Itoa
	scale := cfg.Scale.String()
	if sc, err := embedding.NewScaler(cfg.Scale); err == nil {
		scale = sc.Spec().String()
	}
	out := []ConfigField{
		{"kind", cfg.Kind.String()},
		{"dim", i(cfg.Dim)},
		{"delay", i(cfg.Delay)},
		{"scale", scale},
		{"coverage", f(cfg.Coverage)},
		{"interval_window", i(cfg.IntervalWindow)},
		{"interval_adapt", f(cfg.IntervalAdapt)},
		{"interval", cfg.Interval.String()},
		{"max_gap", f(cfg.MaxGap)},
		{"target", cfg.Target.String()},
	}
	if cfg.Target == TargetChange {
		seasons := make([]string, len(cfg.Seasons))
		for i, d := range cfg.Seasons {
			seasons[i] = d.String()
		}
		out = append(out,
			ConfigField{"seasons", strings.Join(seasons, ",")},
			ConfigField{"combine", strconv.FormatBool(cfg.Combine)})
	}
	if cfg.Horizon > 1 { // absent with H = 1, as before horizons
		out = append(out, ConfigField{"horizon", i(cfg.Horizon)})
	}
	if cfg.Step > 0 { // absent at the raw spacing, as before steps
		out = append(out, ConfigField{"step", cfg.Step.String()}, ConfigField{"aggregate", cfg.Aggregate.String()})
	}
	if k := cfg.Kind.Model(); k != nil {
		out = append(out, k.Fields(cfg)...)
	}
	return out
}

// diffConfig describes how the settings want differ from got ("window 200
// → 100, kernel …"), or returns "" if they are equal.
func diffConfig(got, want []ConfigField) string {
	old := make(map[string]string, len(got))
	for _, f := range got {
		old[f.Key] = f.Value
	}
	var d []string
	seen := make(map[string]bool, len(want))
	for _, f := range want {
		seen[f.Key] = true
		v, ok := old[f.Key]
		switch {
		case !ok:
			d = append(d, fmt.Sprintf("%s (unset) → %s", f.Key, f.Value))
		case v != f.Value:
			d = append(d, fmt.Sprintf("%s %s → %s", f.Key, v, f.Value))
		}
	}
	for _, f := range got {
		if !seen[f.Key] {
			d = append(d, fmt.Sprintf("%s %s → (unset)", f.Key, f.Value))
		}
	}
	return strings.Join(d, ", ")
}

// Export returns the series' whole state, a deep copy (see SeriesState).
// It must be called on the goroutine that owns the series, between two
// Push calls. It costs O(the model's state): O(W·d) for AOSVR, O(m² + m·d)
// for SOG-SVR, O(τ·d) for NORMA (its kind's Export), plus
// O(interval_window), and allocates
// as much.
func (s *Series) Export() (SeriesState, error) {
	st := SeriesState{
		Key:         s.key,
		Config:      ConfigFields(*s.cfg),
		Learning:    s.learning,
		Learned:     s.learned,
		RestartNext: s.restartNext,
		HavePoint:   s.havePoint,
		LastTime:    s.lastTime,
		Spacings:    s.spacings,
		NSpacing:    s.nSpacing,
		Pending:     s.havePending,
		Pend:        s.pendingForecast,
		PendH:       s.pendingHalfWidth,
		Stats:       s.stats,
		Delay:       s.delay.State(),
		Scaler:      s.scaler.State(),
		Alpha:       s.conformal.alpha,
		Anomaly:     s.detector.State(),
	}
	if p := s.warmup.Pending(); len(p) > 0 {
		st.Warmup = make([]WarmupPoint, len(p))
		for i, q := range p {
			st.Warmup[i] = WarmupPoint{q.Point, q.restart}
		}
	}
	st.Residuals = s.conformal.residuals()
	if s.changes != nil {
		cs := s.changes.State()
		st.Changes, st.HaveInput, st.PendS = &cs, s.haveInput, s.pendingScale
	}
	if s.comb != nil {
		st.Combine = s.comb.state()
		st.Guard = s.guard.state()
	}
	st.Pend.Path = nil
	if s.horizon != nil {
		st.Horizon = s.horizon.state()
	}
	if s.buckets != nil {
		b := s.buckets.State()
		st.Bucket = &b
	}
	k := s.cfg.Kind.Model()
	ms, err := k.Export(s.model.reg)
	if err != nil {
		return SeriesState{}, fmt.Errorf("series %q: export: %w", s.key, err)
	}
	st.Model = &ModelState{Kind: k.Name(), State: ms}
	return st, nil
}

// Restore returns the series key configured by cfg, in the state st
// (from Export, possibly through an encoding): a series that goes on
// exactly as the exporting one would have. Its forecasts equal the
// uninterrupted series' bit for bit with SOG-SVR and NORMA, and to rounding
// with AOSVR, whose Import rebuilds its factorisation (svr.AOSVR.Import).
// The model is imported, never re-learned: with a forgetting window the
// window is rebuilt from the model's own samples and handles.
//
// Restore returns an error naming the series and wrapping ErrConfigChanged,
// listing every setting that changed, if cfg's settings differ from those
// of st (ConfigFields); an error wrapping ErrBadState, or cfg.Validate's
// error, for a state that is inconsistent or does not fit cfg. It never
// panics on a bad state. st is not retained. The cost is that of the
// model's Import (for AOSVR O(n·(|S| + |E|)·d + |S|³)).
func Restore(key string, cfg Config, st SeriesState) (*Series, error) {
	return restoreSeries(key, &cfg, st)
}

// restoreSeries is Restore with a configuration the series may share (see
// newSeries).
func restoreSeries(key string, cfg *Config, st SeriesState) (*Series, error) {
	s, err := newSeries(key, cfg)
	if err != nil {
		return nil, fmt.Errorf("series %q: restore: %w", key, err)
	}
	if st.Key != key {
		return nil, fmt.Errorf("series %q: restore: %w: the state is series %q's", key, ErrBadState, st.Key)
	}
	if d := diffConfig(st.Config, ConfigFields(*cfg)); d != "" {
		return nil, fmt.Errorf("series %q: restore: %w: %s", key, ErrConfigChanged, d)
	}
	if err := s.restore(&st); err != nil {
		return nil, fmt.Errorf("series %q: restore: %w", key, err)
	}
	return s, nil
}

// restore fills the new series s from st, its configuration checked.
func (s *Series) restore(st *SeriesState) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrBadState}, args...)...)
	}
	if st.NSpacing < 0 {
		return bad("%d spacings", st.NSpacing)
	}
	for i := range min(st.NSpacing, nSpacings) {
		if st.Spacings[i] <= 0 {
			return bad("spacing %d is %v", i, st.Spacings[i])
		}
	}
	if st.Pending && !(isFinite(st.Pend.Scaled) && isFinite(st.Pend.Value) && isFinite(st.PendH) && st.PendH >= -1) {
		return bad("pending forecast %v (scaled %v, half-width %v)", st.Pend.Value, st.Pend.Scaled, st.PendH)
	}
	if st.Learned > st.Stats.Updates {
		return bad("%d samples learned but %d updates counted", st.Learned, st.Stats.Updates)
	}
	if err := s.delay.SetState(st.Delay); err != nil {
		return fmt.Errorf("%w: %w", ErrBadState, err)
	}
	if err := s.scaler.SetState(st.Scaler); err != nil {
		return fmt.Errorf("%w: %w", ErrBadState, err)
	}
	if st.Pending && !s.scaler.Frozen() {
		return bad("a forecast is pending during the scale's warm-up")
	}
	pend := make([]wpoint, len(st.Warmup))
	for i, p := range st.Warmup {
		if !isFinite(p.Value) {
			return bad("warm-up point %d is %v", i, p.Value)
		}
		pend[i] = wpoint{p.Point, p.Restart}
	}
	if err := s.warmup.SetPending(pend); err != nil {
		return fmt.Errorf("%w: warm-up: %w", ErrBadState, err)
	}
	if err := s.conformal.restore(st.Residuals, st.Alpha); err != nil {
		return err
	}
	if (st.Bucket != nil) != (s.buckets != nil) {
		return fmt.Errorf("%w: bucket state present %v with step %v", ErrBadState, st.Bucket != nil, s.cfg.Step)
	}
	if st.Bucket != nil {
		if err := s.buckets.SetState(*st.Bucket); err != nil {
			return fmt.Errorf("%w: %w", ErrBadState, err)
		}
	}
	if err := s.restoreChange(st); err != nil {
		return err
	}
	s.detecting = s.changes != nil && s.changes.Keeping() // detected once, to detect again
	if err := s.restoreModel(st); err != nil {
		return err
	}
	s.learning, s.learned = st.Learning, st.Learned
	s.restartNext, s.havePoint, s.lastTime = st.RestartNext, st.HavePoint, st.LastTime
	s.spacings, s.nSpacing = st.Spacings, st.NSpacing
	s.havePending, s.pendingForecast, s.pendingHalfWidth = st.Pending, st.Pend, st.PendH
	s.pendingForecast.Path = nil // the pending forecast's steps beyond 1 are not kept
	s.stats = st.Stats
	if s.detector.Restore(st.Anomaly) != nil {
		s.detector.Reset()
	}
	// An event open in a series still warming opened while it warmed.
	s.quietEvent = s.detector.Open() && !s.anomalyWarm()
	if s.changes != nil && s.changes.Seasons() == nil {
		// Periods still to detect: the history is reserved again before
		// the next value, as the series had reserved it (setSeasons
		// does nothing else here: seasons the spacing gives would have
		// been set before the checkpoint).
		s.setSeasons()
	}
	return nil
}

// restoreChange restores the change features and the combination.
func (s *Series) restoreChange(st *SeriesState) error {
	if (st.Changes != nil) != (s.changes != nil) {
		return fmt.Errorf("%w: change state present: %v, target %s", ErrBadState, st.Changes != nil, s.cfg.Target)
	}
	if (st.Combine != nil) != (s.comb != nil) || (st.Guard != nil) != (s.guard != nil) {
		return fmt.Errorf("%w: combination state present: %v, combine %v", ErrBadState, st.Combine != nil, s.cfg.Combine)
	}
	if s.changes == nil {
		return nil
	}
	if st.Pending && !(st.PendS > 0) {
		return fmt.Errorf("%w: pending forecast's scale %v", ErrBadState, st.PendS)
	}
	if err := s.changes.SetState(*st.Changes); err != nil {
		return fmt.Errorf("%w: %w", ErrBadState, err)
	}
	if st.HaveInput {
		if !s.changes.Ready() {
			return fmt.Errorf("%w: an input is made but the features are not ready", ErrBadState)
		}
		s.changes.Input(s.input)
	}
	s.haveInput, s.pendingScale = st.HaveInput, st.PendS
	if st.Horizon != nil && s.horizon == nil {
		return fmt.Errorf("%w: horizon state present, horizon %d", ErrBadState, s.cfg.Horizon)
	}
	if s.horizon != nil {
		if err := s.horizon.restore(st.Horizon); err != nil {
			return err
		}
	}
	if s.comb != nil {
		if err := s.comb.restore(st.Combine); err != nil {
			return err
		}
		return s.guard.restore(st.Guard)
	}
	return nil
}

// state returns a deep copy of the combiner's state.
func (c *combiner) state() *CombinerState {
	return &CombinerState{Loss: slices.Clone(c.loss), Forecasts: slices.Clone(c.f)}
}

// restore sets the combiner's state from st.
func (c *combiner) restore(st *CombinerState) error {
	if len(st.Loss) != len(c.loss) || len(st.Forecasts) != len(c.f) {
		return fmt.Errorf("%w: combination of %d losses and %d forecasts, want %d", ErrBadState, len(st.Loss), len(st.Forecasts), len(c.loss))
	}
	for i := range st.Loss {
		if !(st.Loss[i] >= 0) || math.IsInf(st.Loss[i], 0) || !isFinite(st.Forecasts[i]) {
			return fmt.Errorf("%w: combination loss %v, forecast %v", ErrBadState, st.Loss[i], st.Forecasts[i])
		}
	}
	copy(c.loss, st.Loss)
	copy(c.f, st.Forecasts)
	return nil
}

// restoreModel imports st's model into s's fresh one, by its kind.
func (s *Series) restoreModel(st *SeriesState) error {
	k := s.cfg.Kind.Model()
	if st.Model == nil || st.Model.State == nil {
		return fmt.Errorf("%w: the state holds no model", ErrBadState)
	}
	if st.Model.Kind != k.Name() {
		return fmt.Errorf("%w: a %s model's state for a %s series", ErrBadState, st.Model.Kind, k.Name())
	}
	return k.Import(*s.cfg, s.model.reg, st.Model.State)
}

// importErr wraps a model's Import error with ErrBadState.
func importErr(err error) error {
	if err != nil {
		return fmt.Errorf("%w: %w", ErrBadState, err)
	}
	return nil
}

func isFinite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
