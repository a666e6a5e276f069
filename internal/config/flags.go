package config

import (
	"flag"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/forecastd/forecastd/pipeline"
)

// AddModelFlags declares on fs a flag for every [model] key of m but those
// in skip, named as the key (kind's flag is --model), its usage the key's
// doc and default: a subcommand's flags and the configuration file's keys
// are one list. A flag given sets its key in m, so that m.Merge over the
// file's layers tells which were.
func AddModelFlags(fs *flag.FlagSet, m *pipeline.Keys, skip ...string) {
	mv := reflect.ValueOf(m).Elem()
	for i, key := range pipeline.KeyNames() {
		if slices.Contains(skip, key) {
			continue
		}
		name := key
		if key == "kind" {
			name = "model"
		}
		fs.Var(modelFlag{field: mv.Field(i)}, name, ModelKeyUsage(key))
	}
	for _, mk := range pipeline.ModelKeys() {
		if !slices.Contains(skip, mk.Key) {
			fs.Var(paramFlag{m: m, mk: mk}, mk.Key, ModelKeyUsage(mk.Key))
		}
	}
}

// ModelKeyUsage is the usage of the flag of the [model] key: its doc,
// the name of its value in backquotes (flag.UnquoteUsage), and its
// default (pipeline.DefaultKeys); kind's lists the registered kinds, a
// model kind's own key has the kind's usage (pipeline.ModelKey.Usage).
func ModelKeyUsage(key string) string {
	if _, mk, ok := pipeline.KeyKind(key); ok {
		if mk.Default == nil {
			return mk.Usage
		}
		return mk.Usage + " (default " + flagDefault(reflect.ValueOf(mk.Default)) + ")"
	}
	i := slices.Index(pipeline.KeyNames(), key)
	if i < 0 {
		return ""
	}
	f := reflect.TypeFor[pipeline.Keys]().Field(i)
	doc := f.Tag.Get("doc")
	if key == "kind" {
		doc += ": " + strings.Join(pipeline.KindNames(), ", ")
	}
	if arg := f.Tag.Get("arg"); arg != "" {
		if i := wordIndex(doc, arg); i >= 0 {
			doc = doc[:i] + "`" + arg + "`" + doc[i+len(arg):]
		} else {
			doc = "`" + arg + "`: " + doc
		}
	}
	if def := reflect.ValueOf(pipeline.DefaultKeys()).Field(i); !def.IsNil() && !(def.Elem().Kind() == reflect.String && def.Elem().String() == "") { // the doc says what "" is
		doc += " (default " + flagDefault(def) + ")"
	}
	return doc
}

// flagDefault writes a default in a flag's usage: as TOML writes it, a
// string unquoted.
func flagDefault(v reflect.Value) string {
	t := tomlText(v)
	if s, err := strconv.Unquote(t); err == nil {
		return s
	}
	return t
}

// wordIndex returns the index of the first whole-word w in s, or -1.
func wordIndex(s, w string) int {
	isWord := func(b byte) bool {
		return b == '_' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9'
	}
	for i := 0; i+len(w) <= len(s); i++ {
		if s[i:i+len(w)] == w && (i == 0 || !isWord(s[i-1])) && (i+len(w) == len(s) || !isWord(s[i+len(w)])) {
			return i
		}
	}
	return -1
}

// paramFlag is a flag.Value setting one key of ModelConfig.Params.
type paramFlag struct {
	m  *pipeline.Keys
	mk pipeline.ModelKey
}

func (f paramFlag) String() string {
	if f.m == nil || f.m.Params == nil {
		return ""
	}
	if v, ok := f.m.Params[f.mk.Key]; ok {
		return fmt.Sprint(v)
	}
	return ""
}

func (f paramFlag) IsBoolFlag() bool { return f.mk.Type == pipeline.KeyBool }

func (f paramFlag) Set(s string) error {
	p := reflect.New(reflect.TypeOf(paramValue(f.mk.Type))) // **T: its Elem is settable
	if err := (modelFlag{field: p.Elem()}).Set(s); err != nil {
		return err
	}
	if f.m.Params == nil {
		f.m.Params = map[string]any{}
	}
	f.m.Params[f.mk.Key] = p.Elem().Elem().Interface()
	return nil
}

// modelFlag is a flag.Value setting one pipeline.Keys field (a *int, *float64
// or *string), so that the flags of the [model] keys are declared once, from
// the struct, and Merge tells which were given.
type modelFlag struct {
	field reflect.Value // the pointer field
}

func (f modelFlag) String() string {
	if !f.field.IsValid() || f.field.IsNil() {
		return ""
	}
	return fmt.Sprint(f.field.Elem().Interface())
}

// IsBoolFlag lets a boolean key's flag stand alone (--combine) or take a
// value (--combine=false).
func (f modelFlag) IsBoolFlag() bool {
	return f.field.IsValid() && f.field.Type().Elem().Kind() == reflect.Bool
}

func (f modelFlag) Set(s string) error {
	var v any
	switch f.field.Type().Elem().Kind() {
	case reflect.Int:
		n, err := strconv.Atoi(s)
		if err != nil {
			return fmt.Errorf("not an integer: %q", s)
		}
		v = n
	case reflect.Bool:
		x, err := strconv.ParseBool(s)
		if err != nil {
			return fmt.Errorf("not true or false: %q", s)
		}
		v = x
	case reflect.Float64:
		x, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsNaN(x) {
			return fmt.Errorf("not a number: %q", s)
		}
		v = x
	default:
		v = s
	}
	p := reflect.New(f.field.Type().Elem())
	p.Elem().Set(reflect.ValueOf(v))
	f.field.Set(p)
	return nil
}
