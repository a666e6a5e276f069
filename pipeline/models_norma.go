package pipeline

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/forecastd/forecastd/internal/wire"
	"github.com/forecastd/forecastd/svr"
)

// normaKind registers svr.NORMA (Kivinen, Smola and Williamson 2001),
// online kernel regression by stochastic gradient with a truncated
// expansion. Its settings are Config.NORMA (keys norma_*; its kernel is
// the common one unless norma_kernel is set); its state svr.NORMAState, in
// section 15.
type normaKind struct{}

// normaModel is a NORMA; its size is its kernel terms'.
type normaModel struct{ *svr.NORMA }

// Size is the number of kernel terms.
func (m normaModel) Size() int { return m.Len() }

func (normaKind) Name() string { return "norma" }

func (normaKind) Keys() []ModelKey {
	return []ModelKey{
		{"norma_kernel", KeyKernel, "NORMA's `KERNEL` (default: the kernel key's)", nil},
		{"norma_loss", KeyString, "NORMA `LOSS`: squared, epsilon or huber", svr.NORMASquared.String()},
		{"norma_eta", KeyFloat, "NORMA learning rate `ETA`" + byLoss(0), nil},
		{"norma_eta_schedule", KeyString, "NORMA rate `SCHEDULE`: constant or inv_sqrt", svr.NORMAConstantRate.String()},
		{"norma_lambda", KeyFloat, "NORMA regularisation `LAMBDA`" + byLoss(1), nil},
		{"norma_c", KeyFloat, "NORMA loss weight `C`" + byLoss(2), nil},
		{"norma_nu", KeyFloat, "NORMA `NU` of the ν-trick" + byLoss(3), nil},
		{"norma_tau", KeyInt, "NORMA kernel terms kept, `TAU`", DefaultNORMATau},
		{"norma_merge", KeyFloat, "NORMA (RBF): a new term within kernel value `K` of a held one is added to it instead of taking a term (QKLMS quantisation), in [0, 1); 0 appends every term", DefaultNORMAMerge},
	}
}

// byLoss says the default of the i-th loss-dependent setting (eta,
// lambda, c, nu) under each loss.
func byLoss(i int) string {
	var parts []string
	for _, l := range []svr.NORMALoss{svr.NORMASquared, svr.NORMAEpsilonNu, svr.NORMAHuber} {
		eta, lambda, c, nu := svr.NORMALossDefaults(l)
		v := [4]float64{eta, lambda, c, nu}[i]
		if i == 3 && l == svr.NORMASquared {
			continue // unused
		}
		parts = append(parts, fmt.Sprintf("%v with %s", v, l))
	}
	return " (default " + strings.Join(parts, ", ") + ")"
}

func (normaKind) Set(cfg *Config, key string, v any) error {
	n := &cfg.NORMA
	switch key {
	case "norma_kernel":
		k, ok := v.(svr.Kernel)
		if !ok {
			return fmt.Errorf("want a kernel, got %T", v)
		}
		n.Kernel = k
		return nil
	case "norma_loss", "norma_eta_schedule":
		s, err := stringKey(v)
		if err != nil {
			return err
		}
		if key == "norma_loss" {
			l, err := svr.ParseNORMALoss(s)
			n.Loss = l
			return err
		}
		sc, err := svr.ParseNORMASchedule(s)
		n.Schedule = sc
		return err
	case "norma_eta":
		return setFloatKey(&n.Eta, v)
	case "norma_lambda":
		return setFloatKey(&n.Lambda, v)
	case "norma_c":
		return setFloatKey(&n.C, v)
	case "norma_nu":
		return setFloatKey(&n.Nu, v)
	case "norma_tau":
		return setIntKey(&n.Tau, v)
	case "norma_merge":
		return setFloatKey(&n.Merge, v)
	}
	return errors.New("not a norma key")
}

// normaKeys maps svr.NORMAConfig's fields to config keys.
var normaKeys = map[string]string{
	"Dim": "dim", "Kernel": "norma_kernel", "Loss": "norma_loss", "Eta": "norma_eta",
	"Schedule": "norma_eta_schedule", "Lambda": "norma_lambda", "C": "norma_c", "Nu": "norma_nu", "Tau": "norma_tau", "Merge": "norma_merge",
}

func (normaKind) config(cfg Config) svr.NORMAConfig {
	n := cfg.NORMA
	n.Dim = cfg.ModelDim()
	if n.Kernel == nil {
		n.Kernel = kernelOf(cfg)
	}
	return n
}

func (k normaKind) Validate(cfg Config) error {
	keys := normaKeys
	if cfg.NORMA.Kernel == nil {
		keys = mapWith(normaKeys, "Kernel", "kernel")
	}
	return errors.Join(svrFieldErrors(k.config(cfg).Validate(), keys)...)
}

func mapWith(m map[string]string, k, v string) map[string]string {
	out := make(map[string]string, len(m))
	for a, b := range m {
		out[a] = b
	}
	out[k] = v
	return out
}

// Fields names NORMA's settings with the defaults of its loss filled in;
// norma_merge only when it merges, so that a checkpoint written before the
// key existed (no merging) restores under norma_merge = 0 and is refused,
// as a changed model, under any other.
func (k normaKind) Fields(cfg Config) []ConfigField {
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	n := k.config(cfg)
	if m, err := svr.NewNORMA(n); err == nil {
		n = m.Config()
	}
	fs := []ConfigField{
		{"norma_kernel", n.Kernel.String()},
		{"norma_loss", n.Loss.String()},
		{"norma_eta", f(n.Eta)},
		{"norma_eta_schedule", n.Schedule.String()},
		{"norma_lambda", f(n.Lambda)},
		{"norma_c", f(n.C)},
		{"norma_nu", f(n.Nu)},
		{"norma_tau", strconv.Itoa(n.Tau)},
	}
	if n.Merge != 0 {
		fs = append(fs, ConfigField{"norma_merge", f(n.Merge)})
	}
	return fs
}

func (k normaKind) New(cfg Config) (Model, error) {
	m, err := svr.NewNORMA(k.config(cfg))
	if err != nil {
		return nil, err
	}
	return normaModel{m}, nil
}

func (normaKind) Export(m Model) (any, error) {
	n, ok := m.(normaModel)
	if !ok {
		return nil, fmt.Errorf("norma: export of a %T", m)
	}
	st := n.NORMA.Export()
	return &st, nil
}

func (normaKind) Import(_ Config, m Model, s any) error {
	md, ok := m.(normaModel)
	st, ok2 := s.(*svr.NORMAState)
	if !ok || !ok2 || st == nil {
		return fmt.Errorf("%w: norma: a %T state for a %T model", ErrBadState, s, m)
	}
	return importErr(md.NORMA.Import(*st))
}

const tagNORMA = 15

func (normaKind) StateTags() []uint64 { return []uint64{tagNORMA} }

func (normaKind) EncodeState(st any) []StateSection {
	n := st.(*svr.NORMAState)
	dim := 0
	if len(n.X) > 0 {
		dim = len(n.X[0])
	}
	var e wire.Encoder
	e.B = make([]byte, 0, len(n.Coef)*(24+8*dim)+64)
	e.Int(n.Steps)
	e.Float(n.Offset)
	e.Float(n.Width)
	e.Float(n.Scale)
	e.Rows(n.X, dim)
	e.Floats(n.Coef)
	e.Uint(uint64(len(n.Born)))
	for _, b := range n.Born {
		e.Int(b)
	}
	return []StateSection{{tagNORMA, e.B}}
}

func (normaKind) DecodeState(secs []StateSection) (any, error) {
	m := &svr.NORMAState{}
	d := wire.Decoder{B: secs[0].Body}
	m.Steps = d.Int()
	m.Offset, m.Width, m.Scale = d.Float(), d.Float(), d.Float()
	m.X = d.Rows(-1)
	m.Coef = d.Floats()
	n := d.Count(1)
	m.Born = make([]int64, 0, n)
	for range n {
		m.Born = append(m.Born, d.Int())
	}
	return m, wireDone(&d)
}
