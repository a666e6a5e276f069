package pipeline

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/forecastd/forecastd/embedding"
	"github.com/forecastd/forecastd/svr"
	"github.com/forecastd/forecastd/window"
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

	// Exactly one of AOSVR, SOG and NORMA is set, by the kind.
	AOSVR *svr.AOSVRState
	// Window holds, with AOSVR over a forgetting window (Window > 0), the
	// handles of the window's samples, oldest first: the samples
	// themselves are the model's, in AOSVR.
	Window []uint64
	SOG    *svr.SOGSVRState
	NORMA  *svr.NORMAState
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
// does not depend on `window`). Kernels are in the form of their String
// method; NORMA's defaults are filled in. MeasureUpdates is not among them.
// cfg must be valid.
func ConfigFields(cfg Config) []ConfigField {
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	i := strconv.Itoa
	k := cfg.Kernel
	if k == nil {
		k = svr.RBF{Gamma: DefaultGamma}
	}
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
	}
	switch cfg.Kind {
	case AOSVR:
		out = append(out,
			ConfigField{"window", i(cfg.Window)},
			ConfigField{"kernel", k.String()},
			ConfigField{"c", f(cfg.C)},
			ConfigField{"epsilon", f(cfg.Epsilon)})
	case SOGSVR:
		s := cfg.SOG
		out = append(out,
			ConfigField{"kernel", k.String()},
			ConfigField{"sog_lambda", f(s.Lambda)},
			ConfigField{"sog_nu", f(s.Nu)},
			ConfigField{"sog_ridge", f(s.Ridge)},
			ConfigField{"sog_c", f(s.C)},
			ConfigField{"sog_epsilon", f(s.Epsilon)},
			ConfigField{"sog_max_dict", i(s.MaxDict)},
			ConfigField{"sog_on_full", s.OnFull.String()},
			ConfigField{"sog_forget", f(s.Forget)},
			ConfigField{"sog_steps", i(s.Steps)})
	case NORMA:
		n := cfg.NORMA
		n.Dim = cfg.Dim
		if n.Kernel == nil {
			n.Kernel = k
		}
		if m, err := svr.NewNORMA(n); err == nil {
			n = m.Config()
		}
		out = append(out,
			ConfigField{"norma_kernel", n.Kernel.String()},
			ConfigField{"norma_loss", n.Loss.String()},
			ConfigField{"norma_eta", f(n.Eta)},
			ConfigField{"norma_eta_schedule", n.Schedule.String()},
			ConfigField{"norma_lambda", f(n.Lambda)},
			ConfigField{"norma_c", f(n.C)},
			ConfigField{"norma_nu", f(n.Nu)},
			ConfigField{"norma_tau", i(n.Tau)})
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
// for SOG-SVR, O(τ·d) for NORMA, plus O(interval_window), and allocates
// as much.
func (s *Series) Export() (SeriesState, error) {
	st := SeriesState{
		Key:         s.key,
		Config:      ConfigFields(s.cfg),
		Learning:    s.learning,
		Learned:     s.learned,
		RestartNext: s.restartNext,
		HavePoint:   s.havePoint,
		LastTime:    s.lastTime,
		Spacings:    s.spacings,
		NSpacing:    s.nSpacing,
		Pending:     s.pending,
		Pend:        s.pend,
		PendH:       s.pendH,
		Stats:       s.stats,
		Delay:       s.delay.State(),
		Scaler:      s.scaler.State(),
		Alpha:       s.conf.alpha,
	}
	if p := s.warm.Pending(); len(p) > 0 {
		st.Warmup = make([]WarmupPoint, len(p))
		for i, q := range p {
			st.Warmup[i] = WarmupPoint{q.Point, q.restart}
		}
	}
	c := s.conf
	st.Residuals = make([]float64, 0, c.n)
	if c.n < len(c.ring) {
		st.Residuals = append(st.Residuals, c.ring[:c.n]...)
	} else {
		st.Residuals = append(append(st.Residuals, c.ring[c.head:]...), c.ring[:c.head]...)
	}
	switch m := s.m.reg.(type) {
	case *svr.AOSVR:
		a := m.Export()
		st.AOSVR = &a
		if s.m.win != nil {
			st.Window = make([]uint64, 0, s.m.win.Len())
			s.m.win.Samples(func(_ []float64, _ float64, id uint64) bool {
				st.Window = append(st.Window, id)
				return true
			})
		}
	case *svr.SOGSVR:
		a := m.Export()
		st.SOG = &a
	case *svr.NORMA:
		a := m.Export()
		st.NORMA = &a
	default:
		return SeriesState{}, fmt.Errorf("series %q: export: unknown regressor %T", s.key, s.m.reg)
	}
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
	s, err := New(key, cfg)
	if err != nil {
		return nil, fmt.Errorf("series %q: restore: %w", key, err)
	}
	if st.Key != key {
		return nil, fmt.Errorf("series %q: restore: %w: the state is series %q's", key, ErrBadState, st.Key)
	}
	if d := diffConfig(st.Config, ConfigFields(cfg)); d != "" {
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
	if err := s.warm.SetPending(pend); err != nil {
		return fmt.Errorf("%w: warm-up: %w", ErrBadState, err)
	}
	if err := s.conf.restore(st.Residuals, st.Alpha); err != nil {
		return err
	}
	if err := s.restoreModel(st); err != nil {
		return err
	}
	s.learning, s.learned = st.Learning, st.Learned
	s.restartNext, s.havePoint, s.lastTime = st.RestartNext, st.HavePoint, st.LastTime
	s.spacings, s.nSpacing = st.Spacings, st.NSpacing
	s.pending, s.pend, s.pendH = st.Pending, st.Pend, st.PendH
	s.stats = st.Stats
	return nil
}

// restoreModel imports st's model into s's fresh one.
func (s *Series) restoreModel(st *SeriesState) error {
	n := 0
	for _, set := range []bool{st.AOSVR != nil, st.SOG != nil, st.NORMA != nil} {
		if set {
			n++
		}
	}
	if n != 1 {
		return fmt.Errorf("%w: the state holds %d models, want 1", ErrBadState, n)
	}
	switch m := s.m.reg.(type) {
	case *svr.AOSVR:
		if st.AOSVR == nil {
			return fmt.Errorf("%w: no AOSVR state for an %s series", ErrBadState, s.cfg.Kind)
		}
		return s.restoreAOSVR(m, st)
	case *svr.SOGSVR:
		if st.SOG == nil {
			return fmt.Errorf("%w: no SOG-SVR state for an %s series", ErrBadState, s.cfg.Kind)
		}
		return importErr(m.Import(*st.SOG))
	case *svr.NORMA:
		if st.NORMA == nil {
			return fmt.Errorf("%w: no NORMA state for an %s series", ErrBadState, s.cfg.Kind)
		}
		return importErr(m.Import(*st.NORMA))
	}
	return fmt.Errorf("%w: unknown regressor %T", ErrBadState, s.m.reg)
}

// restoreAOSVR imports the AOSVR state and, with a forgetting window,
// rebuilds the window's ring from the model's samples in the order of
// st.Window, with the model's handles: window.Restore adds each sample to
// a replay that hands back the saved handle instead of learning, and
// passes every later Add and Remove through to the model.
func (s *Series) restoreAOSVR(m *svr.AOSVR, st *SeriesState) error {
	a := st.AOSVR
	if s.cfg.Window == 0 {
		if len(st.Window) != 0 {
			return fmt.Errorf("%w: %d window handles with no forgetting window", ErrBadState, len(st.Window))
		}
		return importErr(m.Import(*a))
	}
	if len(st.Window) != len(a.X) || len(st.Window) > s.cfg.Window {
		return fmt.Errorf("%w: window of %d (capacity %d) over a model of %d samples", ErrBadState, len(st.Window), s.cfg.Window, len(a.X))
	}
	if len(a.Y) != len(a.X) || len(a.IDs) != len(a.X) {
		return fmt.Errorf("%w: aosvr: %d inputs but %d targets and %d handles", ErrBadState, len(a.X), len(a.Y), len(a.IDs))
	}
	pos := make(map[uint64]int, len(a.IDs))
	for i, id := range a.IDs {
		pos[id] = i
	}
	xs := make([][]float64, len(st.Window))
	ys := make([]float64, len(st.Window))
	for i, id := range st.Window {
		j, ok := pos[id]
		if !ok {
			return fmt.Errorf("%w: window sample %d has handle %d, which the model does not hold", ErrBadState, i, id)
		}
		delete(pos, id) // a repeated handle is then not found
		xs[i], ys[i] = a.X[j], a.Y[j]
	}
	if err := m.Import(*a); err != nil {
		return importErr(err)
	}
	r := &replay{m: m, ids: st.Window}
	w, err := window.Restore(r, s.cfg.Window, s.cfg.Dim, xs, ys)
	if err != nil {
		return fmt.Errorf("%w: window: %w", ErrBadState, err)
	}
	s.m.win, s.m.learn = w, w.Learn
	return nil
}

// importErr wraps a model's Import error with ErrBadState.
func importErr(err error) error {
	if err != nil {
		return fmt.Errorf("%w: %w", ErrBadState, err)
	}
	return nil
}

// replay is the window.Model of a restored AOSVR window: its first
// len(ids) Adds return the saved handles without learning (the model
// already holds those samples, imported); later calls go to the model.
type replay struct {
	m   *svr.AOSVR
	ids []uint64
}

func (r *replay) Add(x []float64, y float64) (uint64, error) {
	if len(r.ids) > 0 {
		id := r.ids[0]
		r.ids = r.ids[1:]
		if len(r.ids) == 0 {
			r.ids = nil
		}
		return id, nil
	}
	return r.m.Add(x, y)
}

func (r *replay) Remove(id uint64) error { return r.m.Remove(id) }

// restore replaces the calibration window with the residuals rs, oldest
// first, and the level with alpha.
func (c *conformal) restore(rs []float64, alpha float64) error {
	if len(rs) > len(c.ring) {
		return fmt.Errorf("%w: %d residuals for an interval window of %d", ErrBadState, len(rs), len(c.ring))
	}
	for i, r := range rs {
		if !(r >= 0) || math.IsInf(r, 0) {
			return fmt.Errorf("%w: residual %d is %v", ErrBadState, i, r)
		}
	}
	if !isFinite(alpha) {
		return fmt.Errorf("%w: interval level α is %v", ErrBadState, alpha)
	}
	copy(c.ring, rs)
	c.head, c.n = 0, len(rs)
	c.sorted = append(c.sorted[:0], rs...)
	slices.Sort(c.sorted)
	c.alpha = alpha
	return nil
}

func isFinite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
