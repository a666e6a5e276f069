package pipeline

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"

	"github.com/forecastd/forecastd/svr"
)

// Model is a series' regressor as the pipeline drives it: an
// svr.Regressor (whose Learn goes through a forgetting window, if the kind
// keeps one) that reports its size. A kind's New returns one.
//
// Optional capabilities are found by type assertion, as gonum's optimize
// asks a Method whether it is also a Statuser: a Model with a method
// Stats() svr.AOSVRStats reports its degenerate-case ladder to the
// Runner's ModelStats (AOSVR does).
type Model interface {
	svr.Regressor
	// Size is the model's size now: AOSVR's support vectors, SOG-SVR's
	// dictionary atoms, NORMA's kernel terms. O(1).
	Size() int
	// StateBytes is the bytes of the model's learned state (a forgetting
	// window's included). O(1).
	StateBytes() int
}

// KeyType is the type of a config key's value.
type KeyType int

const (
	// KeyInt: a Go int.
	KeyInt KeyType = iota
	// KeyFloat: a float64.
	KeyFloat
	// KeyString: a string.
	KeyString
	// KeyBool: a bool.
	KeyBool
	// KeyKernel: an svr.Kernel, which the caller builds from the key's
	// value (rbf, poly or linear) and the common keys gamma, degree and
	// coef0, as it builds `kernel`'s.
	KeyKernel
)

// ModelKey is a config key of a model kind's own settings.
type ModelKey struct {
	// Key is the key in the [model] table, a rule and the backtest's flag
	// of the same name, snake_case with the kind's prefix ("norma_tau").
	Key string
	// Type is the type of the value ModelKind.Set is given.
	Type KeyType
	// Usage documents the key's flag, its value's name in backquotes
	// (flag.UnquoteUsage).
	Usage string
	// Default is the value the kind takes when the key is absent, of the
	// key's Type (a string for a kernel), for the reference and the
	// flags; nil when it is not one value (Usage then says what it is).
	Default any
}

// StateSection is one section of a model's state in a checkpoint file
// (internal/statestore): a tag, odd for a section a reader must
// understand, even for one it may skip, and the body, written with
// internal/wire.
type StateSection struct {
	Tag  uint64
	Body []byte
}

// ModelState is a series' model state in a SeriesState: the kind's name
// and the state its Export made (a pointer to plain data sharing nothing
// with the model, such as *svr.NORMAState).
type ModelState struct {
	Kind  string
	State any
}

// ModelKind is the registration of one kind of regressor: everything the
// pipeline, the checkpoint file (internal/statestore) and the command line
// (cmd/forecastd: [model] keys, flags, check-config, backtest) need of it.
// Adding a kind is implementing this in one file and calling
// RegisterModel; nothing else switches on a kind. The built-in kinds are
// in models_aosvr.go, models_sogsvr.go and models_norma.go.
//
// The kind's settings live in Config: the built-in kinds' in its fields
// (Kernel, Window, C, Epsilon, SOG, NORMA), any other kind's in
// Config.Params, a value of the kind's own type that Set builds.
type ModelKind interface {
	// Name is the kind's config value of `kind`: lower case, unique.
	Name() string
	// Keys are the config keys of the kind's own settings, in order.
	// Every key is unique across kinds, and none is a common key.
	Keys() []ModelKey
	// Set decodes the value of one of Keys (of the key's Type: int,
	// float64, string or bool) into cfg, or returns an error saying what
	// is wrong with the value (without the key, which the caller adds).
	Set(cfg *Config, key string, value any) error
	// Validate reports every invalid setting of the kind in cfg at once,
	// joined, each error wrapping ErrBadConfig and naming its config key.
	// cfg's common settings are valid (ModelDim() ≥ 1).
	Validate(cfg Config) error
	// Fields returns the kind's settings that shape a series' state, by
	// config key, in canonical text form (see ConfigFields); defaults are
	// filled in, so that an explicit default is no change.
	Fields(cfg Config) []ConfigField
	// New returns an empty model configured by the valid cfg, whose
	// inputs have length cfg.ModelDim().
	New(cfg Config) (Model, error)
	// Export returns a deep copy of m's state (m was made by New).
	Export(m Model) (any, error)
	// Import sets the empty model m, made by New(cfg), to st (from Export,
	// possibly through DecodeState), or returns an error wrapping
	// ErrBadState for a state that is inconsistent or does not fit cfg.
	// It never panics on a bad state.
	Import(cfg Config, m Model, st any) error
	// StateTags are the tags of the sections EncodeState writes: the
	// first, odd, is always written and marks the kind's state; the
	// others, each at most once, follow it. Tags 11–16 are the built-in
	// kinds'; another kind uses tags of 33 and above (RegisterModel
	// refuses others), leaving the rest to the file's own sections.
	StateTags() []uint64
	// EncodeState returns the sections of st (from Export), the first
	// tagged StateTags()[0].
	EncodeState(st any) []StateSection
	// DecodeState reads sections written by EncodeState (those of
	// StateTags the file holds, in file order; unknown even ones are not
	// passed). It never panics, and allocates at most a small multiple of
	// the bodies' size (internal/wire's checks).
	DecodeState(secs []StateSection) (any, error)
}

var models = struct {
	sync.RWMutex
	kinds []ModelKind
}{kinds: []ModelKind{AOSVR: aosvrKind{}, SOGSVR: sogsvrKind{}, NORMA: normaKind{}}}

// RegisterModel adds a model kind and returns its Kind. Call it from an
// init function (or a test) before any Runner is made: a Runner counts
// ModelStats for the kinds registered when it was made. It panics on a
// kind whose name, keys or state tags collide with a registered kind's or
// a common key, which is a programmer error.
func RegisterModel(k ModelKind) Kind {
	models.Lock()
	defer models.Unlock()
	name := k.Name()
	if name == "" || strings.ToLower(name) != name {
		panic(fmt.Sprintf("pipeline: RegisterModel: bad name %q", name))
	}
	tags := k.StateTags()
	if len(tags) == 0 || tags[0]%2 == 0 {
		panic(fmt.Sprintf("pipeline: RegisterModel %s: the first state tag must be odd, got %v", name, tags))
	}
	for _, t := range tags {
		if t < 33 {
			panic(fmt.Sprintf("pipeline: RegisterModel %s: state tag %d is below 33 (reserved)", name, t))
		}
	}
	for _, o := range models.kinds {
		if o.Name() == name {
			panic(fmt.Sprintf("pipeline: RegisterModel: kind %q registered twice", name))
		}
		for _, t := range o.StateTags() {
			for _, u := range tags {
				if t == u {
					panic(fmt.Sprintf("pipeline: RegisterModel %s: state tag %d is kind %s's", name, t, o.Name()))
				}
			}
		}
		for _, ok := range o.Keys() {
			for _, nk := range k.Keys() {
				if ok.Key == nk.Key {
					panic(fmt.Sprintf("pipeline: RegisterModel %s: key %s is kind %s's", name, nk.Key, o.Name()))
				}
			}
		}
	}
	for _, nk := range k.Keys() {
		for _, c := range CommonKeys {
			if nk.Key == c {
				panic(fmt.Sprintf("pipeline: RegisterModel %s: key %s is a common key", name, c))
			}
		}
	}
	models.kinds = append(models.kinds, k)
	return Kind(len(models.kinds) - 1)
}

// CommonKeys are the [model] config keys every kind shares (Config's
// fields other than the kinds' own); the kinds' own keys are their Keys.
var CommonKeys = []string{
	"kind", "dim", "delay", "kernel", "gamma", "degree", "coef0",
	"scale", "coverage", "interval_window", "interval_adapt", "interval", "max_gap",
	"target", "seasons", "combine", "min", "max",
}

// ModelKinds returns the registered kinds, in Kind order (the built-in
// ones first: AOSVR, SOGSVR, NORMA).
func ModelKinds() []Kind {
	models.RLock()
	defer models.RUnlock()
	ks := make([]Kind, len(models.kinds))
	for i := range ks {
		ks[i] = Kind(i)
	}
	return ks
}

// KindNames returns the registered kinds' names, in Kind order.
func KindNames() []string {
	ks := ModelKinds()
	names := make([]string, len(ks))
	for i, k := range ks {
		names[i] = k.String()
	}
	return names
}

// Model returns k's registration, or nil if k is not registered.
func (k Kind) Model() ModelKind {
	models.RLock()
	defer models.RUnlock()
	if k < 0 || int(k) >= len(models.kinds) {
		return nil
	}
	return models.kinds[k]
}

// KeyKind returns the kind whose own config key key is, or false if none
// is (a common key, or no key).
func KeyKind(key string) (Kind, ModelKey, bool) {
	models.RLock()
	defer models.RUnlock()
	for i, m := range models.kinds {
		for _, mk := range m.Keys() {
			if mk.Key == key {
				return Kind(i), mk, true
			}
		}
	}
	return 0, ModelKey{}, false
}

// ModelKeys returns every kind's own config keys, in Kind order.
func ModelKeys() []ModelKey {
	var out []ModelKey
	for _, k := range ModelKinds() {
		out = append(out, k.Model().Keys()...)
	}
	return out
}

// SetModelKey decodes the value of a kind's own config key into cfg
// (whichever kind cfg selects: a key of another kind is decoded too, so
// that its errors are reported). Errors wrap ErrBadConfig and name the key.
func SetModelKey(cfg *Config, key string, value any) error {
	k, _, ok := KeyKind(key)
	if !ok {
		return fmt.Errorf("%w: unknown model key %q", ErrBadConfig, key)
	}
	if err := k.Model().Set(cfg, key, value); err != nil {
		return fmt.Errorf("%w: %s: %w", ErrBadConfig, key, err)
	}
	return nil
}

// svrFieldErrors maps the *svr.FieldErrors joined in err to errors naming
// config keys by keys (Go field name → key; a field missing from keys
// keeps its name), each wrapping ErrBadConfig and the FieldError; other
// errors pass through.
func svrFieldErrors(err error, keys map[string]string) []error {
	var out []error
	for _, e := range unjoinErr(err) {
		var fe *svr.FieldError
		if !errors.As(e, &fe) {
			out = append(out, e)
			continue
		}
		parts := strings.Split(fe.Field, "·")
		for i, p := range parts {
			if k, ok := keys[p]; ok {
				parts[i] = k
			}
		}
		out = append(out, &keyError{msg: fmt.Sprintf("%v: %s %s", ErrBadConfig, strings.Join(parts, "·"), fe.Problem), field: fe})
	}
	return out
}

// keyError is an svr.FieldError told by config key; it wraps
// ErrBadConfig and the FieldError (so svr.ErrBadConfig too).
type keyError struct {
	msg   string
	field *svr.FieldError
}

func (e *keyError) Error() string { return e.msg }

// Is reports ErrBadConfig; Unwrap returns the FieldError (not a list, which
// callers flattening joined errors would split).
func (e *keyError) Is(target error) bool { return target == ErrBadConfig }
func (e *keyError) Unwrap() error        { return e.field }

// unjoinErr flattens a tree of joined errors into its leaves.
func unjoinErr(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, unjoinErr(e)...)
		}
		return out
	}
	return []error{err}
}

// Helpers for the kinds' Set: the value of a key of Type KeyFloat, KeyInt
// or KeyString.

func setFloatKey(dst *float64, v any) error {
	switch x := v.(type) {
	case float64:
		if math.IsNaN(x) {
			return errors.New("not a number: NaN")
		}
		*dst = x
	case int:
		*dst = float64(x)
	case int64:
		*dst = float64(x)
	default:
		return fmt.Errorf("want a number, got %T", v)
	}
	return nil
}

func setIntKey(dst *int, v any) error {
	switch x := v.(type) {
	case int:
		*dst = x
	case int64:
		if x < math.MinInt32 || x > math.MaxInt32 {
			return fmt.Errorf("%d is out of range", x)
		}
		*dst = int(x)
	default:
		return fmt.Errorf("want an integer, got %T", v)
	}
	return nil
}

func stringKey(v any) (string, error) {
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("want a string, got %T", v)
	}
	return s, nil
}

// kernelOf returns cfg's kernel, the default if nil.
func kernelOf(cfg Config) svr.Kernel {
	if cfg.Kernel == nil {
		return svr.RBF{Gamma: DefaultGamma}
	}
	return cfg.Kernel
}
