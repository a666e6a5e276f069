package config

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/forecastd/forecastd/embedding"
	"github.com/forecastd/forecastd/pipeline"
	"github.com/forecastd/forecastd/svr"
)

// Merge returns m with every key set in over replacing m's.
func (m ModelConfig) Merge(over ModelConfig) ModelConfig {
	dst := reflect.ValueOf(&m).Elem()
	src := reflect.ValueOf(over)
	for i := range len(modelKeys()) {
		if f := src.Field(i); !f.IsNil() {
			dst.Field(i).Set(f)
		}
	}
	if len(over.Params) > 0 {
		p := maps.Clone(m.Params)
		if p == nil {
			p = map[string]any{}
		}
		maps.Copy(p, over.Params)
		m.Params = p
	}
	return m
}

// ModelKeys returns the config key of each ModelConfig field, in order
// (Params, last, is not one): the common keys and the built-in kinds'.
func ModelKeys() []string { return modelKeys() }

func modelKeys() []string {
	t := reflect.TypeFor[ModelConfig]()
	keys := make([]string, 0, t.NumField())
	for i := range t.NumField() {
		if k := t.Field(i).Tag.Get("toml"); k != "-" {
			keys = append(keys, k)
		}
	}
	return keys
}

// setDirect sets the field of cfg each key with a `pipeline` tag names
// (a path of field names: "Anomaly.Threshold") to the key's value, if it
// is set: an int, float64 or bool as it is, a string into a
// time.Duration by ParseDuration, whose error is reported through bad.
func (m ModelConfig) setDirect(cfg *pipeline.Config, bad func(key string, err error)) {
	mv := reflect.ValueOf(m)
	dst := reflect.ValueOf(cfg).Elem()
	for i := range mv.NumField() {
		f := mv.Type().Field(i)
		path := f.Tag.Get("pipeline")
		if path == "" || mv.Field(i).IsNil() {
			continue
		}
		v := mv.Field(i).Elem()
		d := pipelineField(dst, path)
		if d.Type() == reflect.TypeFor[time.Duration]() && v.Kind() == reflect.String {
			x, err := ParseDuration(v.String())
			if err != nil {
				bad(f.Tag.Get("toml"), err)
				continue
			}
			v = reflect.ValueOf(x)
		}
		d.Set(v)
	}
}

// pipelineField returns the field of cfg at path ("Anomaly.Threshold").
func pipelineField(cfg reflect.Value, path string) reflect.Value {
	for _, name := range strings.Split(path, ".") {
		cfg = cfg.FieldByName(name)
	}
	return cfg
}

// Pipeline returns the pipeline configuration m describes, defaults filled
// in, or every problem at once, each error naming its key ("model.KEY").
func (m ModelConfig) Pipeline() (pipeline.Config, error) {
	cfg := pipeline.DefaultConfig()
	var errs []error
	bad := func(key string, err error) { errs = append(errs, modelError(key, err)) }

	if m.Kind != nil {
		if k, err := pipeline.ParseKind(*m.Kind); err != nil {
			bad("kind", err)
		} else {
			cfg.Kind = k
		}
	}
	m.setDirect(&cfg, bad)

	gamma, degree, coef0 := pipeline.DefaultGamma, 3, 0.0
	setFloat(&gamma, m.Gamma)
	setInt(&degree, m.Degree)
	setFloat(&coef0, m.Coef0)
	kernel := func(key string, name *string) svr.Kernel {
		n := "rbf"
		if name != nil {
			n = *name
		}
		var k svr.Kernel
		switch n {
		case "rbf":
			k = svr.RBF{Gamma: gamma}
		case "poly":
			k = svr.Poly{Gamma: gamma, Degree: degree, Coef0: coef0}
		case "linear":
			k = svr.Linear{}
		default:
			bad(key, fmt.Errorf("unknown kernel %q: want rbf, poly or linear", n))
			return nil
		}
		if err := k.Validate(); err != nil {
			bad(key, err)
			return nil
		}
		return k
	}
	if k := kernel("kernel", m.Kernel); k != nil {
		cfg.Kernel = k
	} else {
		cfg.Kernel = svr.RBF{Gamma: pipeline.DefaultGamma} // reported above
	}

	if m.Scale != nil {
		if s, err := embedding.ParseScale(*m.Scale); err != nil {
			bad("scale", err)
		} else {
			cfg.Scale = s
		}
	}
	if m.Target != nil {
		if t, err := pipeline.ParseTarget(*m.Target); err != nil {
			bad("target", err)
		} else {
			cfg.Target = t
		}
	}
	if m.Seasons != nil {
		if s, err := parseSeasons(*m.Seasons); err != nil {
			bad("seasons", err)
		} else {
			cfg.Seasons = s
		}
	}
	if m.Interval != nil && *m.Interval != "" {
		if d, err := ParseDuration(*m.Interval); err != nil {
			bad("interval", err)
		} else {
			cfg.Interval = d
		}
	}
	for _, d := range []struct {
		key string
		v   *string
		dst *time.Duration
	}{{"step", m.Step, &cfg.Step}, {"step_grace", m.StepGrace, &cfg.StepGrace}} {
		if d.v == nil || *d.v == "" {
			continue
		}
		if x, err := parseSeasons(*d.v); err != nil || len(x) != 1 {
			bad(d.key, fmt.Errorf("%q: want one duration like 5m, 1h or 1d", *d.v))
		} else {
			*d.dst = x[0]
		}
	}
	if m.Aggregate != nil {
		if a, err := pipeline.ParseAggregate(*m.Aggregate); err != nil {
			bad("aggregate", err)
		} else {
			cfg.Aggregate = a
		}
	}

	// The model kinds' own keys (window, c, epsilon, norma_*, sog_*), each
	// decoded by the kind that registered it (pipeline.ModelKind.Set).
	mv := reflect.ValueOf(m)
	for i, key := range modelKeys() {
		f := mv.Field(i)
		_, mk, ok := pipeline.KeyKind(key)
		if !ok || f.IsNil() {
			continue
		}
		v := f.Elem().Interface()
		if mk.Type == pipeline.KeyKernel {
			k := kernel(key, f.Interface().(*string))
			if k == nil {
				continue // reported
			}
			v = k
		}
		if err := pipeline.SetModelKey(&cfg, key, v); err != nil {
			bad(key, err)
		}
	}
	for _, mk := range paramKeys() {
		v, ok := m.Params[mk.Key]
		if !ok {
			continue
		}
		if mk.Type == pipeline.KeyKernel {
			name, _ := v.(string)
			k := kernel(mk.Key, &name)
			if k == nil {
				continue // reported
			}
			v = k
		}
		if err := pipeline.SetModelKey(&cfg, mk.Key, v); err != nil {
			bad(mk.Key, err)
		}
	}

	m.anomalyPipeline(&cfg, bad)
	m.thresholdPipeline(&cfg, bad)

	// Numeric ranges: the pipeline's and the models' own checks, each
	// naming its key; a value that failed to parse above kept its default
	// and is not reported twice.
	if err := cfg.Validate(); err != nil {
		for _, e := range unjoin(err) {
			errs = append(errs, modelError("", e))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return pipeline.Config{}, err
	}
	return cfg, nil
}

// internalName is the packages' prefixes ("svr: bad configuration: "),
// which a person writing the file has no use for. (The model kinds name
// their settings by config key: pipeline maps svr's field names.)
var internalName = regexp.MustCompile(`\b(?:pipeline|svr|embedding|window): bad configuration: |\bthreshold: bad config: `)

var word = regexp.MustCompile(`[a-z0-9_]+`)

// modelError is a problem of the [model] key (or, key "", of the keys its
// message begins with: "dim must be at least 1"), told without the
// packages' internal names; at lists the model keys the message names.
func modelError(key string, err error) *keyError {
	msg := internalName.ReplaceAllString(err.Error(), "")
	if key != "" {
		msg = strings.TrimPrefix(msg, key+" ")
		msg = strings.TrimPrefix(msg, key+": ")
	}
	var at []string
	for _, w := range word.FindAllString(msg, -1) {
		_, isParam := paramKey(w)
		if (slices.Contains(modelKeys(), w) || isParam) && !slices.Contains(at, w) && w != key {
			at = append(at, w)
		}
	}
	if key != "" && key != "kernel" && key != "norma_kernel" {
		at = append([]string{key}, at...) // a kernel's fault is in its parameter's line
	}
	return &keyError{table: "model", key: key, msg: msg, at: at, err: err}
}

// parseSeasons reads a comma-separated list of durations: Go's ("36h",
// "90m") or a whole number of days or weeks ("1d", "7d", "2w"); "" or
// "none" is no seasonal period.
func parseSeasons(s string) ([]time.Duration, error) {
	s = strings.TrimSpace(s)
	if s == "" || s == "none" {
		return []time.Duration{}, nil
	}
	var out []time.Duration
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		var d time.Duration
		if n, ok := strings.CutSuffix(f, "d"); ok {
			k, err := strconv.Atoi(n)
			if err != nil || k <= 0 {
				return nil, fmt.Errorf("%q: want a positive whole number of days, like 1d", f)
			}
			if d, err = days(f, k, 1); err != nil {
				return nil, err
			}
		} else if n, ok := strings.CutSuffix(f, "w"); ok {
			k, err := strconv.Atoi(n)
			if err != nil || k <= 0 {
				return nil, fmt.Errorf("%q: want a positive whole number of weeks, like 1w", f)
			}
			if d, err = days(f, k, 7); err != nil {
				return nil, err
			}
		} else {
			var err error
			if d, err = time.ParseDuration(f); err != nil {
				return nil, fmt.Errorf("%q: want a duration like 1d, 7d or 12h", f)
			}
		}
		if d <= 0 {
			return nil, fmt.Errorf("%q: a period must be positive", f)
		}
		out = append(out, d)
	}
	return out, nil
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

func setInt(dst *int, v *int) {
	if v != nil {
		*dst = *v
	}
}

func setFloat(dst *float64, v *float64) {
	if v != nil {
		*dst = *v
	}
}

// paramKey returns the registration of a model kind's key that has no
// ModelConfig field (a key of ModelConfig.Params).
func paramKey(key string) (pipeline.ModelKey, bool) {
	if slices.Contains(modelKeys(), key) {
		return pipeline.ModelKey{}, false
	}
	_, mk, ok := pipeline.KeyKind(key)
	return mk, ok
}

// paramKeys returns the model kinds' keys that have no ModelConfig field.
func paramKeys() []pipeline.ModelKey {
	var out []pipeline.ModelKey
	for _, mk := range pipeline.ModelKeys() {
		if _, ok := paramKey(mk.Key); ok {
			out = append(out, mk)
		}
	}
	return out
}

// paramValue returns a new value of the Go type of a key of type t.
func paramValue(t pipeline.KeyType) any {
	switch t {
	case pipeline.KeyInt:
		return new(int)
	case pipeline.KeyFloat:
		return new(float64)
	case pipeline.KeyBool:
		return new(bool)
	}
	return new(string)
}
