package pipeline

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/forecastd/forecastd/anomaly"
	"github.com/forecastd/forecastd/anomaly/threshold"
	"github.com/forecastd/forecastd/embedding"
	"github.com/forecastd/forecastd/internal/config/schema"
	"github.com/forecastd/forecastd/svr"
)

// Keys is the [model] table: a series' configuration as the file, a
// [[rules]] or [[resolutions]] entry and the backtest's flags write it.
// Every field is a pointer so that an absent key is told from a zero:
// layers merge ([model] ← rule ← flags) with Merge, and Config fills what
// is still absent with DefaultConfig's values (DefaultKeys states them).
// A field with a `pipeline` tag goes into Config as it is, at that path;
// the others are mapped by Config. The model kinds' own keys (window, c,
// norma_*, sog_*, and any kind registered later) are declared by their
// kinds (ModelKind.Keys) and held in Params. The flag of each key has
// the key's name, except kind, whose flag is --model.
type Keys struct {
	Kind  *string `toml:"kind" arg:"KIND" doc:"model KIND, a registered kind"`
	Dim   *int    `toml:"dim" pipeline:"Dim" arg:"B" doc:"embedding dimension B"`
	Delay *int    `toml:"delay" pipeline:"Delay" arg:"TAU" doc:"embedding delay TAU in points"`

	Kernel *string  `toml:"kernel" arg:"KERNEL" doc:"KERNEL: rbf, poly or linear"`
	Gamma  *float64 `toml:"gamma" arg:"G" doc:"kernel gamma G of rbf and poly (the paper's 1)"`
	Degree *int     `toml:"degree" arg:"D" doc:"poly kernel degree D"`
	Coef0  *float64 `toml:"coef0" arg:"C0" doc:"poly kernel C0"`

	Scale          *string  `toml:"scale" arg:"SPEC" doc:"SPEC none, fixed:MIN,MAX or warmup:N: maps values into [-1, 1]"`
	Coverage       *float64 `toml:"coverage" pipeline:"Coverage" arg:"COVERAGE" doc:"nominal COVERAGE of the prediction intervals, in (0, 1)"`
	IntervalWindow *int     `toml:"interval_window" pipeline:"IntervalWindow" arg:"N" doc:"the last N residuals the intervals are calibrated on"`
	IntervalAdapt  *float64 `toml:"interval_adapt" pipeline:"IntervalAdapt" arg:"RATE" doc:"adaptation RATE of the intervals' quantile level; 0 = plain split conformal"`
	Interval       *string  `toml:"interval" arg:"DURATION" doc:"series spacing DURATION that dates forecasts; \"\" or \"0s\": the median of recent spacings"`
	MaxGap         *float64 `toml:"max_gap" pipeline:"MaxGap" arg:"K" doc:"restart the embedding after a gap of more than K intervals; 0 = never"`
	Horizon        *int     `toml:"horizon" pipeline:"Horizon" arg:"H" doc:"forecast the next H points, each step with its own interval, 1..336; H × step (or interval) at most 100 years"`
	Step           *string  `toml:"step" arg:"DURATION" doc:"forecast at the resolution DURATION: raw points aggregated into epoch-aligned buckets; \"\" = raw"`
	Aggregate      *string  `toml:"aggregate" arg:"AGG" doc:"how a bucket's points make one: AGG mean, min, max, last, sum, count or rate"`
	StepGrace      *string  `toml:"step_grace" arg:"DURATION" doc:"wait DURATION past a bucket's end, and after the series' last point, for its late points (default: 10% of step, at least 1s)"`

	Target  *string  `toml:"target" arg:"change" doc:"what the model learns: change (the next change, in units of the series' running variability) or level (the paper's)"`
	Seasons *string  `toml:"seasons" arg:"PERIODS" doc:"seasonal PERIODS whose lags the model sees, comma-separated durations (1d, 7d, 12h); \"\" for none"`
	Combine *bool    `toml:"combine" pipeline:"Combine" doc:"combine the SVR with persistence, exponential smoothing and seasonal naive by their recent errors"`
	Min     *float64 `toml:"min" pipeline:"Min" arg:"MIN" doc:"physical lower bound MIN: forecasts and intervals are clipped to it (e.g. 0 for percentages and counters)"`
	Max     *float64 `toml:"max" pipeline:"Max" arg:"MAX" doc:"physical upper bound MAX (e.g. 100 for percentages)"`

	// Anomaly detection (anomaly.go).
	AnomalyDirection    *string  `toml:"anomaly_direction" arg:"SIDE" doc:"anomalies counted on SIDE: both, above or below the forecast"`
	AnomalyThreshold    *float64 `toml:"anomaly_threshold" pipeline:"Anomaly.Threshold" arg:"SCORE" doc:"anomaly SCORE above which a point is outside (1 = on the interval's bound)"`
	AnomalyMinDeviation *float64 `toml:"anomaly_min_deviation" pipeline:"Anomaly.MinDeviation" arg:"D" doc:"smallest absolute deviation D from the forecast that can count as outside"`
	AnomalyOpenK        *int     `toml:"anomaly_open_k" pipeline:"Anomaly.K" arg:"K" doc:"an anomaly event opens on a point outside when K of the last anomaly_open_n points were outside, one of them a surprise (anomaly_surprise); alone, it sets anomaly_open_n to K too"`
	AnomalyOpenN        *int     `toml:"anomaly_open_n" pipeline:"Anomaly.N" arg:"N" doc:"the debounce window N of anomaly_open_k, at most 64"`
	AnomalyCloseM       *int     `toml:"anomaly_close_m" pipeline:"Anomaly.M" arg:"M" doc:"an anomaly event closes after M points in a row inside"`
	AnomalyStepFloor    *float64 `toml:"anomaly_step_floor" pipeline:"Anomaly.StepFloor" arg:"F" doc:"each half-width of the interval counts as at least F times the series' mean absolute change between points when deciding whether a point is outside; 0 no floor"`
	AnomalySurprise     *float64 `toml:"anomaly_surprise" pipeline:"Anomaly.Surprise" arg:"C" doc:"an anomaly event opens only when one of the anomaly_open_k points outside scored above C times the highest score of the anomaly_surprise_window before it; 0 off"`
	AnomalySurpriseWin  *string  `toml:"anomaly_surprise_window" pipeline:"Anomaly.SurpriseWindow" arg:"DURATION" doc:"the DURATION of anomaly_surprise, 24s to 8784h; the default, a day and a bit, compares a deviation the series makes every day with yesterday's"`
	AnomalyExtremeQuiet *string  `toml:"anomaly_extreme_quiet" pipeline:"Anomaly.ExtremeQuiet" arg:"DURATION" doc:"an anomaly event also opens on a new all-time high or low of the series after DURATION without one, whatever its score; \"0s\" off"`
	AnomalyExtremeMarg  *float64 `toml:"anomaly_extreme_margin" pipeline:"Anomaly.ExtremeMargin" arg:"F" doc:"a new all-time high or low opens an event only if beyond the last by more than F times the series' mean absolute change between points; 0 any"`
	AnomalySeasonal     *float64 `toml:"anomaly_seasonal" pipeline:"Anomaly.Seasonal" arg:"K" doc:"an anomaly event also opens when anomaly_seasonal_run points in a row, on one side, differ from the series' value a day or a week before (the closer) by more than K times the mean such difference, and no event opened in the previous anomaly_surprise_window; 0 off"`
	AnomalySeasonalRun  *int     `toml:"anomaly_seasonal_run" pipeline:"Anomaly.SeasonalRun" arg:"N" doc:"the N points in a row of anomaly_seasonal, 1 to 1000"`
	LearnAnomalies      *bool    `toml:"learn_anomalies" pipeline:"LearnAnomalies" doc:"learn the points inside an open anomaly event; false keeps them out of the model and the intervals for up to interval_window points"`

	// Thresholds (threshold.go).
	ThresholdAbove       *float64 `toml:"threshold_above" arg:"VALUE" doc:"warn before the series reaches VALUE from below: threshold events when a forecast's path crosses it within the horizon (needs target change)"`
	ThresholdBelow       *float64 `toml:"threshold_below" arg:"VALUE" doc:"warn before the series falls to VALUE (needs target change)"`
	ThresholdProbability *float64 `toml:"threshold_probability" arg:"P" doc:"the probability P of being beyond the threshold, under the steps' calibrated residuals, at which a step counts as crossed, in (0, 1); the default is about where the path itself crosses"`
	ThresholdOpen        *int     `toml:"threshold_open" arg:"N" doc:"a threshold event opens after N forecasts in a row cross within the horizon, and is updated after N in a row find its crossing materially moved"`
	ThresholdClose       *int     `toml:"threshold_close" arg:"N" doc:"a threshold event closes after N forecasts in a row do not"`
	ThresholdWithin      *string  `toml:"threshold_within" arg:"DURATION" doc:"a forecast counts as crossing for the threshold's event only if its ETA is within this duration, e.g. 4h (\"\": the whole horizon)"`

	// Params holds the model kinds' own keys (ModelKind.Keys), each a
	// value of its key's type (a string for a kernel).
	Params map[string]any `toml:"-"`
}

// Default values of the common keys that DefaultConfig states otherwise
// (as a kernel).
const (
	DefaultDegree = 3
	DefaultCoef0  = 0.0
)

// KeyNames returns the key of each Keys field, in order (Params, last, is
// not one).
func KeyNames() []string {
	t := reflect.TypeFor[Keys]()
	keys := make([]string, 0, t.NumField())
	for i := range t.NumField() {
		if k := t.Field(i).Tag.Get("toml"); k != "-" {
			keys = append(keys, k)
		}
	}
	return keys
}

// IsKey reports whether key is a [model] key: a common one or a kind's.
func IsKey(key string) bool {
	_, _, ok := KeyKind(key)
	return ok || slices.Contains(KeyNames(), key)
}

// Merge returns k with every key set in over replacing k's.
func (k Keys) Merge(over Keys) Keys {
	dst := reflect.ValueOf(&k).Elem()
	src := reflect.ValueOf(over)
	for i := range len(KeyNames()) {
		if f := src.Field(i); !f.IsNil() {
			dst.Field(i).Set(f)
		}
	}
	if len(over.Params) > 0 {
		p := maps.Clone(k.Params)
		if p == nil {
			p = map[string]any{}
		}
		maps.Copy(p, over.Params)
		k.Params = p
	}
	return k
}

// KeyError is a problem of one [model] key, or with Key "" of the keys
// its message names ("dim must be at least 1, got 0").
type KeyError struct {
	Key string
	Err error
}

func (e *KeyError) Error() string {
	if e.Key == "" {
		return e.Err.Error()
	}
	return e.Key + ": " + e.Err.Error()
}

func (e *KeyError) Unwrap() error { return e.Err }

// Config returns the configuration k describes, defaults filled in, or
// every problem at once, each a *KeyError.
func (k Keys) Config() (Config, error) {
	cfg := DefaultConfig()
	var errs []error
	bad := func(key string, err error) { errs = append(errs, &KeyError{key, err}) }

	if k.Kind != nil {
		if kind, err := ParseKind(*k.Kind); err != nil {
			bad("kind", err)
		} else {
			cfg.Kind = kind
		}
	}
	k.setDirect(&cfg, bad)
	kernel := k.kernels(bad)
	if kr := kernel("kernel", k.Kernel); kr != nil {
		cfg.Kernel = kr
	} else {
		cfg.Kernel = svr.RBF{Gamma: DefaultGamma} // reported above
	}
	k.setParsed(&cfg, bad)
	k.setKindKeys(&cfg, kernel, bad)
	k.setAnomaly(&cfg, bad)
	k.setThresholds(&cfg, bad)

	// Numeric ranges: the pipeline's and the models' own checks, each
	// naming its key; a value that failed to parse above kept its default
	// and is not reported twice.
	for _, e := range unjoinErr(cfg.Validate()) {
		errs = append(errs, &KeyError{Err: e})
	}
	if err := errors.Join(errs...); err != nil {
		return Config{}, err
	}
	return cfg, nil
}

// setDirect sets the field of cfg each key with a `pipeline` tag names
// (a path of field names: "Anomaly.Threshold") to the key's value, if it
// is set: an int, float64 or bool as it is, a string into a
// time.Duration by schema.ParseDuration, whose error is reported through
// bad.
func (k Keys) setDirect(cfg *Config, bad func(key string, err error)) {
	kv := reflect.ValueOf(k)
	dst := reflect.ValueOf(cfg).Elem()
	for i := range kv.NumField() {
		f := kv.Type().Field(i)
		path := f.Tag.Get("pipeline")
		if path == "" || kv.Field(i).IsNil() {
			continue
		}
		v := kv.Field(i).Elem()
		d := dst
		for _, name := range strings.Split(path, ".") {
			d = d.FieldByName(name)
		}
		if d.Type() == reflect.TypeFor[time.Duration]() && v.Kind() == reflect.String {
			x, err := schema.ParseDuration(v.String())
			if err != nil {
				bad(f.Tag.Get("toml"), err)
				continue
			}
			v = reflect.ValueOf(x)
		}
		d.Set(v)
	}
}

// kernels returns the function that builds the kernel a key names (rbf,
// poly or linear, nil for rbf) with the common gamma, degree and coef0,
// reporting a bad one through bad and returning nil.
func (k Keys) kernels(bad func(key string, err error)) func(key string, name *string) svr.Kernel {
	gamma, degree, coef0 := DefaultGamma, DefaultDegree, DefaultCoef0
	setPtr(&gamma, k.Gamma)
	setPtr(&degree, k.Degree)
	setPtr(&coef0, k.Coef0)
	return func(key string, name *string) svr.Kernel {
		n := "rbf"
		if name != nil {
			n = *name
		}
		var kr svr.Kernel
		switch n {
		case "rbf":
			kr = svr.RBF{Gamma: gamma}
		case "poly":
			kr = svr.Poly{Gamma: gamma, Degree: degree, Coef0: coef0}
		case "linear":
			kr = svr.Linear{}
		default:
			bad(key, fmt.Errorf("unknown kernel %q: want rbf, poly or linear", n))
			return nil
		}
		if err := kr.Validate(); err != nil {
			bad(key, err)
			return nil
		}
		return kr
	}
}

// setParsed sets what the keys of text values say: scale, target,
// seasons, interval, step, step_grace, aggregate.
func (k Keys) setParsed(cfg *Config, bad func(key string, err error)) {
	if k.Scale != nil {
		if s, err := embedding.ParseScale(*k.Scale); err != nil {
			bad("scale", err)
		} else {
			cfg.Scale = s
		}
	}
	if k.Target != nil {
		if t, err := ParseTarget(*k.Target); err != nil {
			bad("target", err)
		} else {
			cfg.Target = t
		}
	}
	if k.Seasons != nil {
		if s, err := ParseSeasons(*k.Seasons); err != nil {
			bad("seasons", err)
		} else {
			cfg.Seasons = s
		}
	}
	if k.Interval != nil && *k.Interval != "" {
		if d, err := schema.ParseDuration(*k.Interval); err != nil {
			bad("interval", err)
		} else {
			cfg.Interval = d
		}
	}
	for _, d := range []struct {
		key string
		v   *string
		dst *time.Duration
	}{{"step", k.Step, &cfg.Step}, {"step_grace", k.StepGrace, &cfg.StepGrace}} {
		if d.v == nil || *d.v == "" {
			continue
		}
		if x, err := ParseSeasons(*d.v); err != nil || len(x) != 1 {
			bad(d.key, fmt.Errorf("%q: want one duration like 5m, 1h or 1d", *d.v))
		} else {
			*d.dst = x[0]
		}
	}
	if k.Aggregate != nil {
		if a, err := ParseAggregate(*k.Aggregate); err != nil {
			bad("aggregate", err)
		} else {
			cfg.Aggregate = a
		}
	}
}

// setKindKeys has each model kind decode its own keys (ModelKind.Set),
// whichever kind cfg selects, so that every key's problems are reported.
func (k Keys) setKindKeys(cfg *Config, kernel func(string, *string) svr.Kernel, bad func(key string, err error)) {
	for _, mk := range ModelKeys() {
		v, ok := k.Params[mk.Key]
		if !ok {
			continue
		}
		if mk.Type == KeyKernel {
			name, _ := v.(string)
			kr := kernel(mk.Key, &name)
			if kr == nil {
				continue // reported
			}
			v = kr
		}
		if err := SetModelKey(cfg, mk.Key, v); err != nil {
			bad(mk.Key, err)
		}
	}
}

// setAnomaly sets what of cfg's anomaly detector the anomaly_* keys do
// not set by their `pipeline` tags (setDirect, which has run): the
// direction, reporting a bad one through bad, and N when only K is set.
// The numeric ranges are checked by cfg.Validate.
func (k Keys) setAnomaly(cfg *Config, bad func(key string, err error)) {
	a := &cfg.Anomaly
	if k.AnomalyDirection != nil {
		if d, err := anomaly.ParseDirection(*k.AnomalyDirection); err != nil {
			bad("anomaly_direction", err)
		} else {
			a.Direction = d
		}
	}
	if k.AnomalyOpenK != nil && k.AnomalyOpenN == nil {
		a.N = a.K // open_k alone: K of the last K
	}
}

// setThresholds sets cfg's thresholds from the threshold_* keys: one for
// threshold_above, one for threshold_below, each with
// threshold_probability, threshold_open, threshold_close and
// threshold_within. Those four without a threshold are reported through
// bad; the ranges are checked by cfg.Validate.
func (k Keys) setThresholds(cfg *Config, bad func(key string, err error)) {
	base := threshold.Config{}
	setPtr(&base.Probability, k.ThresholdProbability)
	setPtr(&base.Open, k.ThresholdOpen)
	setPtr(&base.Close, k.ThresholdClose)
	if k.ThresholdWithin != nil && *k.ThresholdWithin != "" {
		if d, err := schema.ParseDuration(*k.ThresholdWithin); err != nil || d < 0 {
			bad("threshold_within", fmt.Errorf("%q: want a duration like 4h or 1d", *k.ThresholdWithin))
		} else {
			base.Within = d
		}
	}
	cfg.Thresholds = nil
	for _, t := range []struct {
		v *float64
		d threshold.Direction
	}{{k.ThresholdAbove, threshold.Above}, {k.ThresholdBelow, threshold.Below}} {
		if t.v == nil {
			continue
		}
		c := base
		c.Value, c.Direction = *t.v, t.d
		cfg.Thresholds = append(cfg.Thresholds, c)
	}
	if cfg.Thresholds != nil {
		return
	}
	for _, t := range []struct {
		key string
		set bool
	}{{"threshold_probability", k.ThresholdProbability != nil}, {"threshold_open", k.ThresholdOpen != nil}, {"threshold_close", k.ThresholdClose != nil}, {"threshold_within", k.ThresholdWithin != nil}} {
		if t.set {
			bad(t.key, errors.New(t.key+" needs threshold_above or threshold_below"))
		}
	}
}

func setPtr[T any](dst *T, v *T) {
	if v != nil {
		*dst = *v
	}
}

// ParseSeasons reads a comma-separated list of durations: Go's ("36h",
// "90m") or a whole number of days or weeks ("1d", "7d", "2w"); "" or
// "none" is no seasonal period.
func ParseSeasons(s string) ([]time.Duration, error) {
	s = strings.TrimSpace(s)
	if s == "" || s == "none" {
		return []time.Duration{}, nil
	}
	var out []time.Duration
	for _, f := range strings.Split(s, ",") {
		d, err := parsePeriod(strings.TrimSpace(f))
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, nil
}

// parsePeriod reads one period of ParseSeasons.
func parsePeriod(f string) (time.Duration, error) {
	var d time.Duration
	if n, ok := strings.CutSuffix(f, "d"); ok {
		k, err := strconv.Atoi(n)
		if err != nil || k <= 0 {
			return 0, fmt.Errorf("%q: want a positive whole number of days, like 1d", f)
		}
		if d, err = days(f, k, 1); err != nil {
			return 0, err
		}
	} else if n, ok := strings.CutSuffix(f, "w"); ok {
		k, err := strconv.Atoi(n)
		if err != nil || k <= 0 {
			return 0, fmt.Errorf("%q: want a positive whole number of weeks, like 1w", f)
		}
		if d, err = days(f, k, 7); err != nil {
			return 0, err
		}
	} else {
		var err error
		if d, err = time.ParseDuration(f); err != nil {
			return 0, fmt.Errorf("%q: want a duration like 1d, 7d or 12h", f)
		}
	}
	if d <= 0 {
		return 0, fmt.Errorf("%q: a period must be positive", f)
	}
	return d, nil
}

// days returns k periods of n days, or an error naming f if a duration
// cannot hold them (about 292 years): the product would wrap.
func days(f string, k, n int) (time.Duration, error) {
	unit := time.Duration(n) * 24 * time.Hour
	if time.Duration(k) > math.MaxInt64/unit {
		return 0, fmt.Errorf("%q: longer than a duration holds (about 292 years)", f)
	}
	return time.Duration(k) * unit, nil
}

// DefaultKeys returns every key of Keys set to its default, the value
// Config fills in when the key is absent (those without one value, as
// step_grace's or min's, stay nil), and every kind's key with a Default.
func DefaultKeys() Keys {
	c := DefaultConfig()
	str := func(s string) *string { return &s }
	th := threshold.Config{}.WithDefaults()
	seasons := make([]string, len(c.Seasons))
	for i, p := range c.Seasons {
		seasons[i] = schema.DurationText(p)
	}
	k := Keys{
		Kind: str(c.Kind.String()), Dim: &c.Dim, Delay: &c.Delay,
		Kernel: str("rbf"), Gamma: new(float64), Degree: new(int), Coef0: new(float64),
		Scale: str(DefaultScale), Coverage: &c.Coverage, IntervalWindow: &c.IntervalWindow, IntervalAdapt: &c.IntervalAdapt,
		Interval: str(""), MaxGap: &c.MaxGap, Horizon: new(int), Step: str(""), Aggregate: str(c.Aggregate.String()),
		Target: str(c.Target.String()), Seasons: str(strings.Join(seasons, ",")), Combine: &c.Combine,
		AnomalyDirection: str(c.Anomaly.Direction.String()), AnomalyThreshold: &c.Anomaly.Threshold,
		AnomalyMinDeviation: &c.Anomaly.MinDeviation, AnomalyOpenK: &c.Anomaly.K, AnomalyOpenN: &c.Anomaly.N,
		AnomalyCloseM: &c.Anomaly.M, AnomalyStepFloor: &c.Anomaly.StepFloor, AnomalySurprise: &c.Anomaly.Surprise,
		AnomalySurpriseWin:  str(schema.DurationText(c.Anomaly.SurpriseWindow)),
		AnomalyExtremeQuiet: str(schema.DurationText(c.Anomaly.ExtremeQuiet)), AnomalyExtremeMarg: &c.Anomaly.ExtremeMargin,
		AnomalySeasonal: &c.Anomaly.Seasonal, AnomalySeasonalRun: &c.Anomaly.SeasonalRun, LearnAnomalies: &c.LearnAnomalies,
		ThresholdProbability: &th.Probability, ThresholdOpen: &th.Open, ThresholdClose: &th.Close, ThresholdWithin: str(""),
	}
	*k.Gamma, *k.Degree, *k.Coef0, *k.Horizon = DefaultGamma, DefaultDegree, DefaultCoef0, max(c.Horizon, 1)
	for _, mk := range ModelKeys() {
		if mk.Default != nil {
			if k.Params == nil {
				k.Params = map[string]any{}
			}
			k.Params[mk.Key] = mk.Default
		}
	}
	return k
}

// Ceilings of the model's size keys, so that a configuration that cannot
// fit is refused before it runs out of memory; each is the key's default
// times a margin.
const (
	// MaxWindow bounds AOSVR's window W: its R matrix is up to W² floats
	// and its kernel rows W per sample, per series.
	MaxWindow = 2000
	// MaxIntervalWindow bounds the residuals kept per series and per
	// horizon step (10 to 12 bytes each).
	MaxIntervalWindow = 100_000
	MaxDim            = 256
	MaxDelay          = 10_000
	// MaxSOGDict bounds SOG-SVR's dictionary M: its two matrices are
	// M(M+1)/2 floats each, and a call borrows two of M².
	MaxSOGDict = 1024
	// MaxNORMATau bounds NORMA's kernel terms: τ·B floats per series.
	MaxNORMATau = 100_000
)

// LimitErrors returns the size keys of c beyond their ceilings, each
// naming its key.
func (c Config) LimitErrors() []error {
	var e schema.Errors
	if c.Kind == AOSVR && c.Window == 0 {
		e.Add("window", "0 (no forgetting) keeps every point a series is sent, without bound: set a window of at most %d", MaxWindow)
	}
	e.Ceiling("window", c.Window, MaxWindow)
	e.Ceiling("interval_window", c.IntervalWindow, MaxIntervalWindow)
	e.Ceiling("dim", c.Dim, MaxDim)
	e.Ceiling("delay", c.Delay, MaxDelay)
	e.Ceiling("sog_max_dict", c.SOG.MaxDict, MaxSOGDict)
	e.Ceiling("norma_tau", c.NORMA.Tau, MaxNORMATau)
	return e
}
