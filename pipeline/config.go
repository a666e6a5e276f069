package pipeline

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/forecastd/forecastd/anomaly"
	"github.com/forecastd/forecastd/anomaly/threshold"
	"github.com/forecastd/forecastd/embedding"
	"github.com/forecastd/forecastd/svr"
)

// ErrBadConfig is wrapped by every error about a series' configuration.
var ErrBadConfig = errors.New("pipeline: bad configuration")

// Kind selects a series' online regressor: an index into the registered
// model kinds (see ModelKind and RegisterModel), the built-in ones first.
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

// String returns the kind's config value, its registered name ("aosvr").
func (k Kind) String() string {
	if m := k.Model(); m != nil {
		return m.Name()
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// ParseKind returns the registered kind named by a config value (see
// Kind.String).
func ParseKind(s string) (Kind, error) {
	for _, k := range ModelKinds() {
		if k.String() == s {
			return k, nil
		}
	}
	return 0, fmt.Errorf("%w: kind %q: want %s", ErrBadConfig, s, orList(KindNames()))
}

// orList returns "a, b or c".
func orList(xs []string) string {
	if len(xs) <= 1 {
		return strings.Join(xs, "")
	}
	return strings.Join(xs[:len(xs)-1], ", ") + " or " + xs[len(xs)-1]
}

// Defaults of [DefaultConfig], chosen by measurement over the shared series
// and the NAB real streams (docs/design.md explains them): the model learns
// the next change in units of the series' running variability
// (TargetChange), so ε and γ are relative to it, and its forecast is
// combined with the simple rules'. B = 5 changes; a window of 100 samples:
// a larger one forecasts a little better for time and memory in
// proportion (BENCHMARKS.md, "How the default's parts were chosen").
const (
	DefaultDim            = 5
	DefaultDelay          = 1
	DefaultWindow         = 100
	DefaultGamma          = 0.01
	DefaultC              = 3.0
	DefaultEpsilon        = 0.6
	DefaultCoverage       = 0.9
	DefaultIntervalWindow = 200
	DefaultIntervalAdapt  = 0.01
	// DefaultScale leaves values as they are: with target change the
	// model's units are the running scale's.
	DefaultScale = "none"
	// DefaultNORMATau and DefaultSOGMaxDict bound the two bounded-memory
	// kinds below the default AOSVR series, at 16 KiB of RSS or less a
	// warm series. A dictionary of 16 costs SOG-SVR little accuracy
	// against 24. NORMA's τ = 48 terms forecast only if a new term near
	// a held one merges into it (DefaultNORMAMerge, κ = 0.85 of the
	// kernel's value) instead of pushing the oldest out: the terms then
	// cover the inputs seen rather than the last 48 samples. κ = 0.85
	// with τ = 48 against 0.8 with 32 is better on every series of
	// testdata/series and on the shared real streams, for at most 896 B
	// more a series (BENCHMARKS.md, "The bounded kinds' defaults in the
	// pipeline").
	DefaultNORMATau   = 48
	DefaultSOGMaxDict = 16
	DefaultNORMAMerge = 0.85
)

// The AOSVR paper's settings (Ma, Theiler and Perkins 2003, section 5.2.1:
// RBF γ = 1, C = 10, ε = 0.1 on series scaled into [−1, 1], and the
// forgetting window W = 200 of section 5.2.2), which [PaperConfig] returns.
const (
	PaperWindow  = 200
	PaperGamma   = 1.0
	PaperC       = 10.0
	PaperEpsilon = 0.1
	// PaperScale learns the [−1, 1] range from a series' first 100
	// values, which are then learned (replayed) but never forecast.
	PaperScale = "warmup:100"
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
	// Params are the settings of a kind registered outside this package
	// that keeps them in a type of its own (its ModelKind.Set builds the
	// value); nil means its defaults. The built-in kinds keep theirs in
	// the fields above and below, and ignore Params.
	Params any
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
	// Target is what the model learns: TargetChange (the default) the
	// next change in units of the series' running variability, TargetLevel
	// the next scaled level (the AOSVR paper's setup). Config key `target`.
	Target Target
	// Seasons are the seasonal periods whose lags the model sees (target
	// change only): for each, the seasonal naive's change and the change
	// one period ago, P = round(period / spacing) points back. A period
	// longer than embedding.MaxSeason points, or shorter than 2, is left
	// out for that series. Config key `seasons` (durations).
	Seasons []time.Duration
	// Combine, with target change, forecasts the exponentially weighted
	// combination of the SVR's forecast and the simple rules (persistence,
	// exponential smoothing, seasonal naive) by their recent errors instead
	// of the SVR's alone. Config key `combine`.
	Combine bool
	// Horizon is the number H of points ahead each forecast reaches
	// (Forecast.Path), 1 ≤ H ≤ MaxHorizon; 0 means 1. H > 1 needs target
	// change. Config key `horizon`.
	Horizon int
	// Step is the series' resolution: with Step > 0 raw points are
	// aggregated (by Aggregate) into buckets of Step aligned on the
	// Unix epoch, as InfluxDB's aggregateWindow makes them, and the model
	// sees one point per bucket (see Buckets); 0 is the raw spacing.
	// Config key `step` (a duration).
	Step time.Duration
	// Aggregate is how a bucket's raw points make its point (AggMean by
	// default; AggRate for counters). Config key `aggregate`.
	Aggregate Aggregate
	// StepGrace is how long past a bucket's end, and after the series'
	// last point, the daemon waits for its late points before it closes
	// the bucket without a point of the next; 0 means DefaultStepGrace.
	// Config key `step_grace`.
	StepGrace time.Duration
	// Min and Max are physical bounds of the series' values (NaN: none):
	// forecasts and interval bounds are clipped into them. Config keys
	// `min`, `max`.
	Min, Max float64
	// Anomaly configures the series' anomaly detector (see package
	// anomaly); DefaultConfig sets DefaultAnomaly. Config keys
	// `anomaly_direction`, `anomaly_threshold`, `anomaly_min_deviation`,
	// `anomaly_open_k`, `anomaly_open_n`, `anomaly_close_m`,
	// `anomaly_step_floor`, `anomaly_surprise`, `anomaly_surprise_window`,
	// `anomaly_extreme_quiet`, `anomaly_extreme_margin`, `anomaly_seasonal`,
	// `anomaly_seasonal_run`.
	Anomaly anomaly.Config
	// LearnAnomalies, when false, keeps the points inside an open anomaly
	// event out of the model and out of the interval's calibration.
	// Config key `learn_anomalies`.
	LearnAnomalies bool
	// Thresholds are the values whose crossing the series' forecasts
	// watch for (see package anomaly/threshold and Forecast.Thresholds),
	// at most MaxThresholds; they need target change. They do not shape
	// the series' state: a series' checkpoint is the same with or without
	// them, and their events' debounce is not kept in it. Config keys
	// `threshold_above`, `threshold_below`, `threshold_probability`,
	// `threshold_open`, `threshold_close`.
	Thresholds []threshold.Config
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

// Target says what a series' model learns.
type Target int

const (
	// TargetChange learns the next change x(t+1) − x(t) in units of a
	// robust running scale (embedding.Changes). Config value "change".
	TargetChange Target = iota
	// TargetLevel learns the next level from the delay vector of scaled
	// levels (embedding.Delay), the AOSVR paper's setup. Config value
	// "level".
	TargetLevel
)

// String returns the target's config value.
func (t Target) String() string {
	switch t {
	case TargetChange:
		return "change"
	case TargetLevel:
		return "level"
	}
	return fmt.Sprintf("Target(%d)", int(t))
}

// ParseTarget returns the target named by a config value.
func ParseTarget(s string) (Target, error) {
	switch s {
	case "change":
		return TargetChange, nil
	case "level":
		return TargetLevel, nil
	}
	return 0, fmt.Errorf("%w: target %q: want change or level", ErrBadConfig, s)
}

// UpdateObserver is told how long each model update took.
type UpdateObserver interface {
	ObserveUpdate(time.Duration)
}

// DefaultConfig returns forecastd's default: an AOSVR over a window of 100
// samples learning the next change (TargetChange) from the last 5 changes,
// the distances from three exponentially weighted levels and the daily and
// weekly seasonal lags, combined with persistence, exponential smoothing and
// seasonal naive by their recent errors, with 90 % intervals on 200
// residuals.
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
		Target:         TargetChange,
		Seasons:        slices.Clone(DefaultSeasons),
		Combine:        true,
		Min:            math.NaN(),
		Max:            math.NaN(),
		Anomaly:        DefaultAnomaly(),
		LearnAnomalies: DefaultLearnAnomalies,
		NORMA:          svr.NORMAConfig{Tau: DefaultNORMATau, Merge: DefaultNORMAMerge},
		SOG:            svr.SOGSVRConfig{MaxDict: DefaultSOGMaxDict},
	}
}

// PaperConfig returns the AOSVR paper's setup (section 5.2): the next
// level learned from the delay vector of levels scaled into [−1, 1] by the
// range of the first 100 points, RBF γ = 1, C = 10, ε = 0.1, no seasonal
// lags, no combination. The command line's equivalent is
// `--target level --scale warmup:100 --window 200 --gamma 1 --c 10 --epsilon 0.1
// --seasons "" --combine=false`.
func PaperConfig() Config {
	c := DefaultConfig()
	sc, err := embedding.ParseScale(PaperScale)
	if err != nil {
		panic(err)
	}
	c.Target, c.Scale, c.Seasons, c.Combine = TargetLevel, sc, nil, false
	c.Kernel, c.C, c.Epsilon, c.Window = svr.RBF{Gamma: PaperGamma}, PaperC, PaperEpsilon, PaperWindow
	return c
}

// Validate returns nil if c is usable, or the join of one error per invalid
// field, each wrapping ErrBadConfig (or the svr package's ErrBadConfig) and
// naming the field's config key.
func (c Config) Validate() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrBadConfig}, args...)...))
	}
	kindOK := c.Kind.Model() != nil
	if !kindOK {
		bad("kind: unknown kind %d", int(c.Kind))
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
	errs = append(errs, c.validateReach()...)
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
	switch c.Target {
	case TargetChange, TargetLevel:
	default:
		bad("target: unknown target %d", int(c.Target))
	}
	if len(c.Seasons) > 8 {
		bad("seasons: at most 8 periods, got %d", len(c.Seasons))
	}
	for _, p := range c.Seasons {
		if p <= 0 {
			bad("seasons: a period must be positive, got %v", p)
		}
	}
	if math.IsInf(c.Min, 0) || math.IsInf(c.Max, 0) {
		bad("min and max must be finite (or absent), got %v and %v", c.Min, c.Max)
	} else if c.Min >= c.Max {
		bad("min must be below max, got min %v ≥ max %v", c.Min, c.Max)
	}
	errs = append(errs, c.validateAnomaly()...)
	errs = append(errs, c.validateThresholds()...)
	if kindOK {
		m := c
		m.Dim = max(c.Dim, 1) // an invalid dim is reported above
		m.Seasons = nil
		errs = append(errs, c.Kind.Model().Validate(m))
	}
	return errors.Join(errs...)
}

// validateReach returns the problems of step, step_grace, aggregate and
// horizon: how far a forecast reaches past its origin.
func (c Config) validateReach() []error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrBadConfig}, args...)...))
	}
	if c.Step < 0 || c.StepGrace < 0 {
		bad("step and step_grace must not be negative, got %v and %v", c.Step, c.StepGrace)
	}
	if int(c.Aggregate) >= len(aggNames) {
		bad("unknown aggregate %d", c.Aggregate)
	}
	if c.Horizon < 0 || c.Horizon > MaxHorizon {
		bad("horizon must be between 1 and %d, got %d", MaxHorizon, c.Horizon)
	} else {
		if c.Horizon > 1 && c.Target != TargetChange {
			bad("horizon %d needs target = \"change\" (the recursive path feeds forecast changes back), got target %q", c.Horizon, c.Target)
		}
		for _, d := range []struct {
			key string
			v   time.Duration
		}{{"step", c.Step}, {"interval", c.Interval}} {
			if h := max(c.Horizon, 1); d.v > MaxReach/time.Duration(h) {
				bad("%s %s × horizon %d reaches %.0f years past a forecast's origin, beyond %d: its steps could not be dated (a duration overflows, and InfluxDB's clock ends in 2262); lower %s or horizon",
					d.key, durationText(d.v), h, d.v.Hours()*float64(h)/hoursAYear, int(MaxReach.Hours()/hoursAYear), d.key)
			}
		}
	}
	return errs
}

// MaxReach bounds how far a forecast's path reaches past its origin,
// horizon × step (or interval): the product then never overflows a
// time.Duration, and every step of a forecast made up to the year 2162 is
// dated within the nanosecond clock of InfluxDB and of UnixNano, which
// ends in 2262.
const MaxReach = 100 * hoursAYear * time.Hour

// hoursAYear is a Julian year's hours.
const hoursAYear = 8766

// durationText is d as a person writes it: "9000h", "1h30m", not
// "9000h0m0s".
func durationText(d time.Duration) string {
	s := d.String()
	if t, ok := strings.CutSuffix(s, "m0s"); ok && strings.ContainsAny(t, "h") {
		s = t + "m"
	}
	if t, ok := strings.CutSuffix(s, "h0m"); ok {
		s = t + "h"
	}
	return s
}

// Default level rates and seasonal periods of target change.
var (
	// defaultLevelRates are the rates of the exponentially weighted levels
	// the inputs measure the distance from (and whose exponential
	// smoothing forecasts join the combination): slow, middle and fast.
	defaultLevelRates = []float64{0.05, 0.2, 0.5}
	// DefaultSeasons are a day and a week.
	DefaultSeasons = []time.Duration{24 * time.Hour, 7 * 24 * time.Hour}
)

// changeSpec returns the embedding.ChangeSpec of target change.
func (c Config) changeSpec() embedding.ChangeSpec {
	return embedding.ChangeSpec{Dim: c.Dim, LevelRates: defaultLevelRates, Seasons: len(c.Seasons), PairHistory: c.Horizon > 1}
}

// ModelDim returns the length of the model's input vectors: Dim with
// target level; with target change, Dim lagged changes, one distance per
// level and two inputs per seasonal period.
func (c Config) ModelDim() int {
	if c.Target == TargetChange {
		return c.Dim + len(defaultLevelRates) + 2*len(c.Seasons)
	}
	return c.Dim
}

// model is a series' handle on its regressor.
type model struct{ reg Model }

func (m *model) learn(x []float64, y float64) error { return m.reg.Learn(x, y) }
func (m *model) size() int                          { return m.reg.Size() }
func (m *model) bytes() int                         { return m.reg.StateBytes() }

// newModel builds the regressor c describes, by its kind's registration.
func (c Config) newModel() (*model, error) {
	k := c.Kind.Model()
	if k == nil {
		return nil, fmt.Errorf("%w: kind: unknown kind %d", ErrBadConfig, int(c.Kind))
	}
	m, err := k.New(c)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", k.Name(), err)
	}
	return &model{reg: m}, nil
}

// DefaultStepGrace is the least grace of a bucket (Config.StepGrace 0):
// otherwise a tenth of the step.
const DefaultStepGrace = time.Second

// Grace returns how long past a bucket's end its late points are waited
// for: Config.StepGrace, or a tenth of the step, at least
// DefaultStepGrace.
func (c *Config) Grace() time.Duration {
	if c.StepGrace > 0 {
		return c.StepGrace
	}
	return max(c.Step/10, DefaultStepGrace)
}
