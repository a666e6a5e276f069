package pipeline

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/forecastd/forecastd/embedding"
	"github.com/forecastd/forecastd/svr"
	"github.com/forecastd/forecastd/window"
)

// ErrBadConfig is wrapped by every error about a series' configuration.
var ErrBadConfig = errors.New("pipeline: bad configuration")

// Kind selects a series' online regressor.
type Kind int

const (
	// AOSVR is svr.AOSVR, the exact online ε-SVR, kept over a sliding
	// forgetting window of Config.Window samples. Config value "aosvr".
	AOSVR Kind = iota
	// SOGSVR is svr.SOGSVR, the sparse online greedy SVR with a bounded
	// dictionary. Config value "sogsvr".
	SOGSVR
	// NORMA is svr.NORMA, online kernel regression by stochastic gradient
	// with a truncated expansion. Config value "norma".
	NORMA
)

// String returns the kind's config value: "aosvr", "sogsvr" or "norma".
func (k Kind) String() string {
	switch k {
	case AOSVR:
		return "aosvr"
	case SOGSVR:
		return "sogsvr"
	case NORMA:
		return "norma"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// ParseKind returns the kind named by a config value (see Kind.String).
func ParseKind(s string) (Kind, error) {
	switch s {
	case "aosvr":
		return AOSVR, nil
	case "sogsvr":
		return SOGSVR, nil
	case "norma":
		return NORMA, nil
	}
	return 0, fmt.Errorf("%w: kind %q: want aosvr, sogsvr or norma", ErrBadConfig, s)
}

// Defaults of [DefaultConfig]: the settings of the AOSVR paper's
// experiments (Ma, Theiler and Perkins 2003, section 5.2.1: RBF γ = 1,
// C = 10, ε = 0.1, B = 5, τ = 1) and the forgetting window of its section
// 5.2.2.
const (
	DefaultDim            = 5
	DefaultDelay          = 1
	DefaultWindow         = 200
	DefaultGamma          = 1.0
	DefaultC              = 10.0
	DefaultEpsilon        = 0.1
	DefaultCoverage       = 0.9
	DefaultIntervalWindow = 200
	DefaultIntervalAdapt  = 0.01
	// DefaultScale learns the [−1, 1] range from a series' first 100
	// values, which are then learned (replayed) but never forecast.
	DefaultScale = "warmup:100"
)

// Config configures one series' pipeline. Unlike the leaf packages' configs
// its zero value is not usable, because zero is a meaningful setting for
// several fields (Window 0 = no forgetting, Epsilon 0): start from
// [DefaultConfig] and change what differs. [Config.Validate] reports every
// invalid field at once, naming its config key.
type Config struct {
	// Kind is the regressor. Config key `kind`.
	Kind Kind
	// Dim is the embedding dimension B ≥ 1, the length of every input
	// vector. Config key `dim`.
	Dim int
	// Delay is the embedding delay τ ≥ 1, in points. Config key `delay`.
	Delay int
	// Window is the AOSVR forgetting window W ≥ 0 in samples: once it holds
	// W samples, the oldest is unlearned before each new one is learned.
	// 0 means no forgetting (the model grows without bound). Used by AOSVR
	// only: SOG-SVR and NORMA bound themselves (sog_max_dict, norma_tau).
	// Config key `window`.
	Window int
	// Kernel is the kernel of AOSVR and SOG-SVR, and of NORMA unless
	// NORMA.Kernel is set; nil means RBF{Gamma: 1}. Config keys `kernel`,
	// `gamma`, `degree`, `coef0`.
	Kernel svr.Kernel
	// C is AOSVR's box bound, > 0. Config key `c`.
	C float64
	// Epsilon is AOSVR's tube half-width ε ≥ 0. Config key `epsilon`.
	Epsilon float64
	// NORMA configures NORMA (Kind NORMA); Dim is filled in from Dim.
	// Config keys `norma_*` (see svr.NORMAConfig).
	NORMA svr.NORMAConfig
	// SOG configures SOG-SVR (Kind SOGSVR); Dim and Kernel are filled in
	// from Dim and Kernel. Config keys `sog_*` (see svr.SOGSVRConfig).
	SOG svr.SOGSVRConfig
	// Scale maps the series' values into [−1, 1] before they are embedded.
	// With embedding.ScaleWarmup the first Scale.N points are held back
	// until the range is known, then learned in order (no point is lost);
	// none of them is forecast. Config key `scale`.
	Scale embedding.ScaleSpec
	// Coverage is the nominal coverage of the prediction intervals, in
	// (0, 1). Config key `coverage`.
	Coverage float64
	// IntervalWindow is the number of recent one-step residuals the
	// intervals are calibrated on, ≥ 2. Config key `interval_window`.
	IntervalWindow int
	// IntervalAdapt is the rate γ ≥ 0 at which the intervals' quantile
	// level adapts to the misses seen (adaptive conformal inference; see
	// conformal); 0 is plain split conformal over the rolling window.
	// Config key `interval_adapt`.
	IntervalAdapt float64
	// Interval is the series' spacing, which dates a forecast: its target
	// time is the last point's time plus Interval. 0 means the median of
	// the recent spacings. Config key `interval` (a duration string).
	Interval time.Duration
	// MaxGap restarts the embedding (not the model) when two consecutive
	// points are more than MaxGap intervals apart; the forecast pending
	// then is dropped, unscored. 0 never restarts. Config key `max_gap`.
	MaxGap float64
	// MeasureUpdates times every model update (and every prediction) with
	// the monotonic clock, for Stats.UpdateNanos and Stats.PredictNanos.
	// It costs two clock reads per call.
	MeasureUpdates bool
	// Observer, when not nil, is told the duration of every model update
	// (forgetting included), for a latency histogram; it turns on the
	// update timing of MeasureUpdates. It is called on the series'
	// goroutine, so it must be cheap and safe for concurrent use across
	// series. Not a config key, and not part of a series' identity: the
	// daemon sets it.
	Observer UpdateObserver
}

// UpdateObserver is told how long each model update took.
type UpdateObserver interface {
	ObserveUpdate(time.Duration)
}

// DefaultConfig returns the paper's settings for an AOSVR over a window of
// 200 samples, with 90 % intervals on 200 residuals and warm-up scaling.
func DefaultConfig() Config {
	sc, err := embedding.ParseScale(DefaultScale)
	if err != nil {
		panic(err)
	}
	return Config{
		Kind:           AOSVR,
		Dim:            DefaultDim,
		Delay:          DefaultDelay,
		Window:         DefaultWindow,
		Kernel:         svr.RBF{Gamma: DefaultGamma},
		C:              DefaultC,
		Epsilon:        DefaultEpsilon,
		Scale:          sc,
		Coverage:       DefaultCoverage,
		IntervalWindow: DefaultIntervalWindow,
		IntervalAdapt:  DefaultIntervalAdapt,
	}
}

// Validate returns nil if c is usable, or the join of one error per invalid
// field, each wrapping ErrBadConfig (or the svr package's ErrBadConfig) and
// naming the field's config key.
func (c Config) Validate() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrBadConfig}, args...)...))
	}
	kindOK := true
	switch c.Kind {
	case AOSVR, SOGSVR, NORMA:
	default:
		bad("kind: unknown kind %d", int(c.Kind))
		kindOK = false
	}
	dimOK := c.Dim >= 1
	if !dimOK {
		bad("dim must be at least 1, got %d", c.Dim)
	}
	if c.Delay < 1 {
		bad("delay must be at least 1, got %d", c.Delay)
	}
	if dimOK && c.Delay >= 1 {
		if _, err := embedding.NewDelay(c.Dim, c.Delay); err != nil {
			errs = append(errs, fmt.Errorf("%w: dim, delay: %w", ErrBadConfig, err))
		}
	}
	if c.Window < 0 {
		bad("window must be ≥ 0 (0 = no forgetting), got %d", c.Window)
	}
	if err := c.Scale.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("%w: scale: %w", ErrBadConfig, err))
	}
	if !(c.Coverage > 0 && c.Coverage < 1) {
		bad("coverage must lie in (0, 1), got %v", c.Coverage)
	}
	if c.IntervalWindow < 2 {
		bad("interval_window must be at least 2, got %d", c.IntervalWindow)
	}
	if !(c.IntervalAdapt >= 0 && c.IntervalAdapt < 1) {
		bad("interval_adapt must lie in [0, 1), got %v", c.IntervalAdapt)
	}
	if c.Interval < 0 {
		bad("interval must not be negative, got %v", c.Interval)
	}
	if !(c.MaxGap >= 0) || math.IsInf(c.MaxGap, 0) {
		bad("max_gap must be ≥ 0 and finite (0 = never restart), got %v", c.MaxGap)
	}
	if kindOK {
		m := c
		m.Dim = max(c.Dim, 1) // an invalid dim is reported above
		errs = append(errs, m.validateModel())
	}
	return errors.Join(errs...)
}

// validateModel reports every invalid setting of the model c.Kind selects.
// AOSVR's few settings are checked here; NORMA's by svr.NewNORMA, which
// reports them all (and allocates O(τ·Dim)); SOG-SVR's one field at a time,
// because svr.NewSOGSVR stops at the first, on small probe models.
func (c Config) validateModel() error {
	k := c.Kernel
	if k == nil {
		k = svr.RBF{Gamma: DefaultGamma}
	}
	var errs []error
	switch c.Kind {
	case AOSVR:
		if !(c.C > 0) || math.IsInf(c.C, 0) {
			errs = append(errs, fmt.Errorf("%w: c must be positive and finite, got %v", ErrBadConfig, c.C))
		}
		if !(c.Epsilon >= 0) || math.IsInf(c.Epsilon, 0) {
			errs = append(errs, fmt.Errorf("%w: epsilon must be ≥ 0 and finite, got %v", ErrBadConfig, c.Epsilon))
		}
		if err := k.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("kernel: %w", err))
		}
	case NORMA:
		cfg := c.NORMA
		cfg.Dim = c.Dim
		if cfg.Kernel == nil {
			cfg.Kernel = k
		}
		if _, err := svr.NewNORMA(cfg); err != nil {
			errs = append(errs, err)
		}
	case SOGSVR:
		if err := k.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("kernel: %w", err))
		}
		s := c.SOG
		// Each probe sets one field on a 1×1 model; the dictionary cap is
		// checked here (svr.NewSOGSVR's bound) so that no probe allocates
		// a large dictionary.
		for _, p := range []svr.SOGSVRConfig{
			{Lambda: s.Lambda}, {Nu: s.Nu}, {Ridge: s.Ridge}, {C: s.C},
			{Epsilon: s.Epsilon}, {OnFull: s.OnFull}, {Forget: s.Forget},
			{Steps: s.Steps},
		} {
			p.Dim, p.MaxDict = 1, 1
			if _, err := svr.NewSOGSVR(p); err != nil {
				errs = append(errs, err)
			}
		}
		if s.MaxDict < 0 || s.MaxDict > 1<<14 {
			errs = append(errs, fmt.Errorf("%w: sog_max_dict must be between 1 and 16384 (0 = default %d), got %d",
				ErrBadConfig, svr.SOGDefaultMaxDict, s.MaxDict))
		}
	}
	return errors.Join(errs...)
}

// model is the pipeline's handle on a series' regressor.
type model struct {
	reg   svr.Regressor
	win   *window.Window                     // AOSVR's forgetting window, or nil
	learn func(x []float64, y float64) error // through the window, if any
	size  func() int                         // support vectors, atoms or terms
	bytes func() int                         // bytes of learned state
}

// newModel builds the regressor c describes. Errors name the config key.
func (c Config) newModel() (*model, error) {
	k := c.Kernel
	if k == nil {
		k = svr.RBF{Gamma: DefaultGamma}
	}
	switch c.Kind {
	case AOSVR:
		m, err := svr.NewAOSVR(svr.AOSVRConfig{Dim: c.Dim, Kernel: k, C: c.C, Epsilon: c.Epsilon, Capacity: c.Window})
		if err != nil {
			return nil, fmt.Errorf("aosvr: %w", err)
		}
		md := &model{reg: m, learn: m.Learn, size: m.NumSupport, bytes: m.StateBytes}
		if c.Window > 0 {
			w, err := window.New(m, c.Window, c.Dim)
			if err != nil {
				return nil, fmt.Errorf("%w: window: %w", ErrBadConfig, err)
			}
			md.win, md.learn = w, w.Learn
			winBytes := 8 * c.Window * (c.Dim + 2)
			md.bytes = func() int { return m.StateBytes() + winBytes }
		}
		return md, nil
	case SOGSVR:
		cfg := c.SOG
		cfg.Dim = c.Dim
		cfg.Kernel = k
		m, err := svr.NewSOGSVR(cfg)
		if err != nil {
			return nil, err
		}
		return &model{reg: m, learn: m.Learn, size: m.Len, bytes: m.StateBytes}, nil
	case NORMA:
		cfg := c.NORMA
		cfg.Dim = c.Dim
		if cfg.Kernel == nil {
			cfg.Kernel = k
		}
		m, err := svr.NewNORMA(cfg)
		if err != nil {
			return nil, err
		}
		return &model{reg: m, learn: m.Learn, size: m.Len, bytes: m.StateBytes}, nil
	}
	return nil, fmt.Errorf("%w: kind: unknown kind %d", ErrBadConfig, int(c.Kind))
}
