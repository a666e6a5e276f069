package pipeline

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/forecastd/forecastd/internal/wire"
	"github.com/forecastd/forecastd/svr"
)

// sogsvrKind registers svr.SOGSVR (Engel, Mannor and Meir's sparse online
// greedy SVR), with a bounded dictionary. Its settings are Config.SOG
// (keys sog_*) and the common Kernel; its state svr.SOGSVRState, in
// section 13.
type sogsvrKind struct{}

// sogModel is a SOG-SVR; its size is its dictionary's.
type sogModel struct{ *svr.SOGSVR }

// Size is the number of dictionary atoms.
func (m sogModel) Size() int { return m.Len() }

func (sogsvrKind) Name() string { return "sogsvr" }

func (sogsvrKind) Keys() []ModelKey {
	return []ModelKey{
		{"sog_lambda", KeyFloat, "SOG-SVR `LAMBDA` of k+λ²", svr.SOGDefaultLambda},
		{"sog_nu", KeyFloat, "SOG-SVR ALD threshold `NU`", svr.SOGDefaultNu},
		{"sog_ridge", KeyFloat, "SOG-SVR ALD `RIDGE`", 0.0},
		{"sog_c", KeyFloat, "SOG-SVR box `C`", float64(svr.SOGDefaultC)},
		{"sog_epsilon", KeyFloat, "SOG-SVR tube `EPSILON`", 0.0},
		{"sog_max_dict", KeyInt, "SOG-SVR dictionary cap `M`", DefaultSOGMaxDict},
		{"sog_on_full", KeyString, "SOG-SVR `POLICY` when full: replace or project", svr.SOGReplace.String()},
		{"sog_forget", KeyFloat, "SOG-SVR forgetting factor `RHO`", svr.SOGDefaultForget},
		{"sog_steps", KeyInt, "SOG-SVR line-search `STEPS` per sample", svr.SOGDefaultSteps},
	}
}

func (sogsvrKind) Set(cfg *Config, key string, v any) error {
	s := &cfg.SOG
	switch key {
	case "sog_lambda":
		return setFloatKey(&s.Lambda, v)
	case "sog_nu":
		return setFloatKey(&s.Nu, v)
	case "sog_ridge":
		return setFloatKey(&s.Ridge, v)
	case "sog_c":
		return setFloatKey(&s.C, v)
	case "sog_epsilon":
		return setFloatKey(&s.Epsilon, v)
	case "sog_max_dict":
		return setIntKey(&s.MaxDict, v)
	case "sog_on_full":
		str, err := stringKey(v)
		if err != nil {
			return err
		}
		p, err := svr.ParseSOGFullPolicy(str)
		if err != nil {
			return err
		}
		s.OnFull = p
		return nil
	case "sog_forget":
		return setFloatKey(&s.Forget, v)
	case "sog_steps":
		return setIntKey(&s.Steps, v)
	}
	return errors.New("not a sogsvr key")
}

// sogKeys maps svr.SOGSVRConfig's fields to config keys.
var sogKeys = map[string]string{
	"Dim": "dim", "Kernel": "kernel", "Lambda": "sog_lambda", "Nu": "sog_nu", "Ridge": "sog_ridge",
	"C": "sog_c", "Epsilon": "sog_epsilon", "MaxDict": "sog_max_dict", "OnFull": "sog_on_full",
	"Forget": "sog_forget", "Steps": "sog_steps",
}

func (sogsvrKind) config(cfg Config) svr.SOGSVRConfig {
	s := cfg.SOG
	s.Dim, s.Kernel = cfg.ModelDim(), kernelOf(cfg)
	return s
}

// Validate reports every invalid SOG-SVR setting (svr.SOGSVRConfig.Validate,
// which allocates no dictionary; zero settings take their defaults).
func (k sogsvrKind) Validate(cfg Config) error {
	return errors.Join(svrFieldErrors(k.config(cfg).Validate(), sogKeys)...)
}

func (sogsvrKind) Fields(cfg Config) []ConfigField {
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	i := strconv.Itoa
	s := cfg.SOG
	return []ConfigField{
		{"kernel", kernelOf(cfg).String()},
		{"sog_lambda", f(s.Lambda)},
		{"sog_nu", f(s.Nu)},
		{"sog_ridge", f(s.Ridge)},
		{"sog_c", f(s.C)},
		{"sog_epsilon", f(s.Epsilon)},
		{"sog_max_dict", i(s.MaxDict)},
		{"sog_on_full", s.OnFull.String()},
		{"sog_forget", f(s.Forget)},
		{"sog_steps", i(s.Steps)},
	}
}

func (k sogsvrKind) New(cfg Config) (Model, error) {
	m, err := svr.NewSOGSVR(k.config(cfg))
	if err != nil {
		return nil, err
	}
	return sogModel{m}, nil
}

func (sogsvrKind) Export(m Model) (any, error) {
	s, ok := m.(sogModel)
	if !ok {
		return nil, fmt.Errorf("sogsvr: export of a %T", m)
	}
	st := s.SOGSVR.Export()
	return &st, nil
}

func (sogsvrKind) Import(_ Config, m Model, s any) error {
	md, ok := m.(sogModel)
	st, ok2 := s.(*svr.SOGSVRState)
	if !ok || !ok2 || st == nil {
		return fmt.Errorf("%w: sogsvr: a %T state for a %T model", ErrBadState, s, m)
	}
	return importErr(md.SOGSVR.Import(*st))
}

const tagSOG = 13

func (sogsvrKind) StateTags() []uint64 { return []uint64{tagSOG} }

func (sogsvrKind) EncodeState(st any) []StateSection {
	s := st.(*svr.SOGSVRState)
	var e wire.Encoder
	e.B = make([]byte, 0, 8*(3*len(s.K)+len(s.Atoms)*(s.Dim+4))+32)
	e.Int(int64(s.Dim))
	e.Rows(s.Atoms, s.Dim)
	for _, v := range [][]float64{s.K, s.KInv, s.AtA, s.AtY, s.AtE, s.AStar, s.Alpha} {
		e.Floats(v)
	}
	e.Float(s.Weight)
	e.Int(s.Learned)
	e.Int(s.Evicted)
	return []StateSection{{tagSOG, e.B}}
}

func (sogsvrKind) DecodeState(secs []StateSection) (any, error) {
	s := &svr.SOGSVRState{}
	d := wire.Decoder{B: secs[0].Body}
	s.Dim = d.Intn()
	s.Atoms = d.Rows(s.Dim)
	for _, p := range []*[]float64{&s.K, &s.KInv, &s.AtA, &s.AtY, &s.AtE, &s.AStar, &s.Alpha} {
		*p = d.Floats()
	}
	s.Weight = d.Float()
	s.Learned = d.Int()
	s.Evicted = d.Int()
	return s, wireDone(&d)
}

// wireDone returns d's error, or one if bytes are left over.
func wireDone(d *wire.Decoder) error {
	if d.Err == nil && len(d.B) != 0 {
		return fmt.Errorf("%d bytes left over", len(d.B))
	}
	return d.Err
}
