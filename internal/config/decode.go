package config

import (
	"encoding"
	"errors"
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pelletier/go-toml/v2"

	"github.com/forecastd/forecastd/internal/config/schema"
	"github.com/forecastd/forecastd/pipeline"
	"github.com/forecastd/forecastd/sinks"
	"github.com/forecastd/forecastd/sources"
)

// Check is a validation a caller adds to Load's own: it returns every
// problem of c it finds, each an error whose text begins with the key it
// names ("pipeline.shards: …"), so that Load places it on that key's line.
type Check func(c *Config) []error

// Load reads a config file strictly and returns every problem of it at
// once, as an *Error: a value of the wrong type, an unknown key (with the
// nearest known one), an invalid value (Config.Validate and checks), each
// with its file, line and key.
func Load(path string, checks ...Check) (*Config, error) {
	cfg, f, err := decodeFile(path)
	if err != nil {
		return nil, err
	}
	var errs []error
	if err := cfg.Validate(); err != nil {
		errs = unjoin(err)
	}
	for _, check := range checks {
		errs = append(errs, check(cfg)...)
	}
	for _, e := range errs {
		f.add(e)
	}
	if err := f.err(); err != nil {
		return nil, err
	}
	return cfg, nil
}

// Decode reads a config file without validating it. err is a file or
// syntax error; problems has one *Problem per value of the wrong type and
// per unknown key (a key under an unknown table is not reported again).
// What could be read is in cfg.
func Decode(path string) (cfg *Config, problems []error, err error) {
	cfg, f, err := decodeFile(path)
	if err != nil {
		return nil, nil, err
	}
	if ce := f.err(); ce != nil {
		for _, p := range ce.(*Error).Problems {
			problems = append(problems, p)
		}
	}
	return cfg, problems, nil
}

// decodeFile reads a config file into a Config, key by key, so that a
// value of the wrong type does not stop the reading of the others: every
// such value and every unknown key is a problem in f. err is a file or
// TOML syntax error, after which nothing can be read.
func decodeFile(path string) (*Config, *configFile, error) {
	b, err := readFile(path)
	if err != nil {
		return nil, nil, err
	}
	var root map[string]any
	if err := toml.Unmarshal(b, &root); err != nil {
		var de *toml.DecodeError
		if errors.As(err, &de) {
			line, _ := de.Position()
			msg := strings.TrimPrefix(de.Error(), "toml: ")
			return nil, nil, &Error{Path: path, Problems: []*Problem{{Path: path, Line: line, Err: errors.New(msg)}}}
		}
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	f := &configFile{path: path, lines: keyLines(b)}
	cfg := new(Config)
	d := &decoder{f: f}
	d.table(root, reflect.ValueOf(cfg).Elem(), "")
	return cfg, f, nil
}

// decoder decodes a file's tables, as go-toml reads them (map[string]any,
// []any, int64, float64, string, bool, dates), into the schema's structs
// one key at a time.
type decoder struct {
	f *configFile
}

// table decodes the keys of a TOML table into the struct rv; path is the
// table's ("" at the top, "input.jetstream", "rules[1]"). A key that is
// no field may be a plug-in's: a model kind's in [model] and a rule
// (pipeline.Keys.Params), a format's in [input]
// (sources.InputConfig.Settings).
func (d *decoder) table(keys map[string]any, rv reflect.Value, path string) {
	fields := schemaFields(rv.Type())
	for _, key := range slices.Sorted(maps.Keys(keys)) {
		at := join(path, tomlKeyPart(key))
		if index, ok := fields[key]; ok {
			d.value(keys[key], rv.FieldByIndex(index), at)
			continue
		}
		if mk, ok := paramKey(key); ok {
			if pk := keysOf(rv); pk != nil {
				d.param(keys[key], pk, mk, at)
				continue
			}
		}
		if in := inputOf(rv); in != nil {
			if fv, ok := formatSetting(in, key); ok {
				d.value(keys[key], fv, at)
				continue
			}
		}
		d.f.add(&keyError{msg: unknownKey(rv.Type(), path, key), at: []string{at}})
	}
}

// keysOf returns the pipeline.Keys the struct rv is or embeds, or nil.
func keysOf(rv reflect.Value) *pipeline.Keys {
	if rv.Type() == reflect.TypeFor[pipeline.Keys]() {
		return rv.Addr().Interface().(*pipeline.Keys)
	}
	if f := rv.FieldByName("Keys"); f.IsValid() && f.Type() == reflect.TypeFor[pipeline.Keys]() {
		return f.Addr().Interface().(*pipeline.Keys)
	}
	return nil
}

// inputOf returns the sources.InputConfig the struct rv is or embeds, or
// nil.
func inputOf(rv reflect.Value) *sources.InputConfig {
	if rv.Type() == reflect.TypeFor[sources.InputConfig]() {
		return rv.Addr().Interface().(*sources.InputConfig)
	}
	if f := rv.FieldByName("InputConfig"); f.IsValid() && f.Type() == reflect.TypeFor[sources.InputConfig]() {
		return f.Addr().Interface().(*sources.InputConfig)
	}
	return nil
}

// formatSetting returns the field of a registered format's settings
// (sources.Configurable) whose key is key, the settings made in
// in.Settings if need be.
func formatSetting(in *sources.InputConfig, key string) (reflect.Value, bool) {
	for _, f := range sources.Formats() {
		k, ok := f.Kind().(sources.Configurable)
		if !ok {
			continue
		}
		st := in.Settings[f.String()]
		if st == nil {
			st = k.NewSettings()
		}
		index, ok := schemaFields(reflect.TypeOf(st).Elem())[key]
		if !ok {
			continue
		}
		if in.Settings == nil {
			in.Settings = map[string]any{}
		}
		in.Settings[f.String()] = st
		return reflect.ValueOf(st).Elem().FieldByIndex(index), true
	}
	return reflect.Value{}, false
}

// formatKeys returns the keys of the registered formats' settings.
func formatKeys() []string {
	var out []string
	for _, f := range sources.Formats() {
		if k, ok := f.Kind().(sources.Configurable); ok {
			out = append(out, slices.Sorted(maps.Keys(schemaFields(reflect.TypeOf(k.NewSettings()).Elem())))...)
		}
	}
	return out
}

// outputs decodes [output]: each sub-table into the configuration of the
// kind of sink of its name (sinks.Configurable).
func (d *decoder) outputs(v any, fv reflect.Value, path string) {
	tbl, ok := d.tableValue(v, path)
	if !ok {
		return
	}
	out := Outputs{}
	for _, name := range slices.Sorted(maps.Keys(tbl)) {
		at := join(path, tomlKeyPart(name))
		k := sinkKind(name)
		if k == nil {
			d.f.add(&keyError{msg: unknownOutput(name), at: []string{at}})
			continue
		}
		sub, ok := d.tableValue(tbl[name], at)
		if !ok {
			continue
		}
		cfg := k.NewConfig()
		d.table(sub, reflect.ValueOf(cfg).Elem(), at)
		out[name] = cfg
	}
	fv.Set(reflect.ValueOf(out))
}

// sinkKind returns the registered kind of sink named name that has
// settings, or nil.
func sinkKind(name string) sinks.Configurable {
	for _, k := range sinks.Kinds() {
		if c, ok := k.(sinks.Configurable); ok && k.Name() == name {
			return c
		}
	}
	return nil
}

// unknownOutput says that [output] has no table name, with the nearest
// kind's if one is close.
func unknownOutput(name string) string {
	var names []string
	for _, k := range sinks.Kinds() {
		if _, ok := k.(sinks.Configurable); ok {
			names = append(names, k.Name())
		}
	}
	return unknownAmong(fmt.Sprintf("unknown key %q", join("output", tomlKeyPart(name))), name, names)
}

// param decodes the value of the kind's key mk into k.Params.
func (d *decoder) param(v any, k *pipeline.Keys, mk pipeline.ModelKey, path string) {
	p := reflect.ValueOf(paramValue(mk.Type)).Elem()
	if msg := d.leaf(v, p, path); msg != "" {
		d.f.add(&keyError{key: path, msg: msg, at: []string{path}})
		return
	}
	if k.Params == nil {
		k.Params = map[string]any{}
	}
	k.Params[mk.Key] = p.Interface()
}

var textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()

// value decodes one key's value into fv: a table, an array of tables, or a
// leaf value, whose wrong type is a problem that leaves fv zero.
func (d *decoder) value(v any, fv reflect.Value, path string) {
	t := fv.Type()
	if reflect.PointerTo(t).Implements(textUnmarshaler) {
		// A typed value (Duration, DataFormat, …), parsed once, here;
		// the file must write it as a string.
		s, ok := v.(string)
		if !ok {
			d.f.add(&keyError{key: path, msg: mismatch(v, reflect.TypeFor[string](), t, path), at: []string{path}})
			return
		}
		if err := fv.Addr().Interface().(encoding.TextUnmarshaler).UnmarshalText([]byte(s)); err != nil {
			fv.SetZero()
			d.f.add(&keyError{key: path, msg: err.Error(), at: []string{path}, err: err})
		}
		return
	}
	switch {
	case t == reflect.TypeFor[Outputs]():
		d.outputs(v, fv, path)
		return
	case t.Kind() == reflect.Struct:
		if sub, ok := d.tableValue(v, path); ok {
			d.table(sub, fv, path)
		}
		return
	case t.Kind() == reflect.Pointer && t.Elem().Kind() == reflect.Struct:
		if sub, ok := d.tableValue(v, path); ok {
			n := reflect.New(t.Elem())
			d.table(sub, n.Elem(), path)
			fv.Set(n)
		}
		return
	case t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Struct:
		elems, ok := tables(v)
		if !ok {
			d.f.add(&keyError{key: path, msg: "want an array of tables, [[…]], got " + describe(v), at: []string{path}})
			return
		}
		s := reflect.MakeSlice(t, len(elems), len(elems))
		for i, e := range elems {
			d.table(e, s.Index(i), fmt.Sprintf("%s[%d]", path, i))
		}
		fv.Set(s)
		return
	}
	if msg := d.leaf(v, fv, path); msg != "" {
		fv.SetZero()
		d.f.add(&keyError{key: path, msg: msg, at: []string{path}})
	}
}

// tableValue returns v as a table, reporting a value that is not one.
func (d *decoder) tableValue(v any, path string) (map[string]any, bool) {
	m, ok := v.(map[string]any)
	if !ok {
		d.f.add(&keyError{key: path, msg: "want a table, got " + describe(v), at: []string{path}})
	}
	return m, ok
}

// tables returns v as an array of tables.
func tables(v any) ([]map[string]any, bool) {
	switch a := v.(type) {
	case []map[string]any:
		return a, true
	case []any:
		out := make([]map[string]any, len(a))
		for i, e := range a {
			m, ok := e.(map[string]any)
			if !ok {
				return nil, false
			}
			out[i] = m
		}
		return out, true
	}
	return nil, false
}

// leaf sets fv, an int, float64, string, bool, a pointer to one, or a
// []string, to v, or returns what is wrong ("" if nothing is).
func (d *decoder) leaf(v any, fv reflect.Value, path string) string {
	t := fv.Type()
	if t.Kind() == reflect.Pointer {
		p := reflect.New(t.Elem())
		if msg := d.leaf(v, p.Elem(), path); msg != "" {
			return msg
		}
		fv.Set(p)
		return ""
	}
	switch t.Kind() {
	case reflect.Int:
		n, ok := v.(int64)
		if !ok {
			return mismatch(v, t, t, path)
		}
		if n < math.MinInt || n > math.MaxInt {
			return fmt.Sprintf("want an integer: %d is out of range", n)
		}
		fv.SetInt(n)
	case reflect.Float64:
		switch x := v.(type) {
		case float64:
			fv.SetFloat(x)
		case int64:
			if x > 1<<53 || x < -(1<<53) {
				return fmt.Sprintf("want a number: %d cannot be represented exactly", x)
			}
			fv.SetFloat(float64(x))
		default:
			return mismatch(v, t, t, path)
		}
	case reflect.String:
		s, ok := v.(string)
		if !ok {
			return mismatch(v, t, t, path)
		}
		fv.SetString(s)
	case reflect.Bool:
		b, ok := v.(bool)
		if !ok {
			return mismatch(v, t, t, path)
		}
		fv.SetBool(b)
	case reflect.Slice:
		a, ok := v.([]any)
		if !ok || t.Elem().Kind() != reflect.String {
			return mismatch(v, t, t, path)
		}
		s := make([]string, len(a))
		for i, e := range a {
			if s[i], ok = e.(string); !ok {
				return mismatch(v, t, t, path)
			}
		}
		fv.Set(reflect.ValueOf(s))
	default:
		return "want " + t.String() + ", got " + describe(v)
	}
	return ""
}

// durationKeys are the [model] keys of type string whose value is a
// duration (their flag's value is a DURATION).
var durationKeys = func() []string {
	var out []string
	for _, f := range reflect.VisibleFields(reflect.TypeFor[pipeline.Keys]()) {
		if f.Tag.Get("arg") == "DURATION" {
			out = append(out, f.Tag.Get("toml"))
		}
	}
	return out
}()

// mismatch says what a key wants (t, or typed, a typed value) and what it
// got.
func mismatch(v any, t, typed reflect.Type, path string) string {
	got := describe(v)
	key := path[strings.LastIndex(path, ".")+1:]
	if typed == reflect.TypeFor[schema.Duration]() || t.Kind() == reflect.String && slices.Contains(durationKeys, key) {
		return `durations are strings, like "30s" or "1h"; got ` + got
	}
	var want string
	switch t.Kind() {
	case reflect.String:
		want = "a string"
	case reflect.Int:
		want = "an integer"
	case reflect.Float64:
		want = "a number"
	case reflect.Bool:
		want = "true or false"
	case reflect.Slice:
		want = `a list of strings, like ["a", "b"]`
	default:
		want = t.String()
	}
	return "want " + want + ", got " + got
}

// describe names a TOML value's type, with the value if it is short.
func describe(v any) string {
	switch v := v.(type) {
	case string:
		if len(v) > 40 {
			return "a string"
		}
		return fmt.Sprintf("the string %q", v)
	case int64:
		return fmt.Sprintf("the integer %d", v)
	case float64:
		return fmt.Sprintf("the number %v", v)
	case bool:
		return fmt.Sprintf("%v", v)
	case []any:
		if _, ok := tables(v); ok && len(v) > 0 {
			return "an array of tables"
		}
		return "an array"
	case []map[string]any:
		return "an array of tables"
	case map[string]any:
		return "a table"
	case time.Time, toml.LocalDate, toml.LocalDateTime, toml.LocalTime:
		return "a date"
	}
	return fmt.Sprintf("%T", v)
}

// schemaFields maps the TOML keys of a struct type to their fields'
// indexes, those of an embedded struct (RuleConfig's ModelConfig) included.
func schemaFields(t reflect.Type) map[string][]int {
	out := map[string][]int{}
	for _, f := range reflect.VisibleFields(t) {
		if key := f.Tag.Get("toml"); key != "" && key != "-" {
			out[key] = f.Index
		}
	}
	return out
}

// isTable reports whether the schema type t is a table: a struct that is
// not a typed value (Duration, DataFormat, …).
func isTable(t reflect.Type) bool {
	return t.Kind() == reflect.Struct && !reflect.PointerTo(t).Implements(textUnmarshaler)
}

// tomlKeyPart writes one part of a key as TOML would: bare if it can be.
func tomlKeyPart(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-')
	}) < 0 {
		return s
	}
	return strconv.Quote(s)
}

// unjoin flattens a tree of joined errors into its leaves.
func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, unjoin(e)...)
		}
		return out
	}
	return []error{err}
}
