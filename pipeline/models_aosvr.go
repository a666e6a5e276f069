package pipeline

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/forecastd/forecastd/internal/prefetch"
	"github.com/forecastd/forecastd/internal/wire"
	"github.com/forecastd/forecastd/svr"
	"github.com/forecastd/forecastd/window"
)

// aosvrKind registers svr.AOSVR (Ma, Theiler and Perkins 2003), the exact
// online ε-SVR, over a forgetting window of Config.Window samples. Its
// settings are Config.Window, Kernel, C and Epsilon (keys window, c,
// epsilon; kernel is common). Its state is svr.AOSVRState and the
// window's handles (*AOSVRState), in sections 11 (the samples, θ, the
// margin set, the handles) and 12 (optional: the incremental quantities
// that make a restored model go on bit for bit).
type aosvrKind struct{}

// AOSVRState is an AOSVR series' model state: the model's, and with a
// forgetting window (Config.Window > 0) the handles of the window's
// samples, oldest first: the samples themselves are the model's.
type AOSVRState struct {
	svr.AOSVRState
	Window []uint64
}

// aosvrModel is an AOSVR (its ladder Stats promoted: a capability the
// Runner finds by type assertion) learning through its window, if any.
type aosvrModel struct {
	*svr.AOSVR
	win *window.Window // nil: no forgetting
}

var _ Model = (*aosvrModel)(nil)

// Learn learns (x, y), through the window: O(W·|S|) at worst.
func (m *aosvrModel) Learn(x []float64, y float64) error {
	if m.win != nil {
		return m.win.Learn(x, y)
	}
	return m.AOSVR.Learn(x, y)
}

// Size is the number of support vectors.
func (m *aosvrModel) Size() int { return m.NumSupport() }

// StateBytes is the model's and the window's bytes.
func (m *aosvrModel) StateBytes() int {
	if m.win == nil {
		return m.AOSVR.StateBytes()
	}
	return m.AOSVR.StateBytes() + m.win.Bytes()
}

func (aosvrKind) Name() string { return "aosvr" }

func (aosvrKind) Keys() []ModelKey {
	return []ModelKey{
		{"window", KeyInt, "AOSVR forgetting window `W` in samples, 0 = no forgetting; the paper's 200", DefaultWindow},
		{"c", KeyFloat, "AOSVR box `C`; the paper's 10", DefaultC},
		{"epsilon", KeyFloat, "AOSVR tube epsilon `E`, in the model's units; the paper's 0.1", DefaultEpsilon},
	}
}

func (aosvrKind) Set(cfg *Config, key string, v any) error {
	switch key {
	case "window":
		return setIntKey(&cfg.Window, v)
	case "c":
		return setFloatKey(&cfg.C, v)
	case "epsilon":
		return setFloatKey(&cfg.Epsilon, v)
	}
	return fmt.Errorf("not an aosvr key")
}

// aosvrKeys maps svr.AOSVRConfig's fields to config keys.
var aosvrKeys = map[string]string{"C": "c", "Epsilon": "epsilon", "Capacity": "window", "Kernel": "kernel", "Dim": "dim"}

func (aosvrKind) config(cfg Config) svr.AOSVRConfig {
	return svr.AOSVRConfig{Dim: cfg.ModelDim(), Kernel: kernelOf(cfg), C: cfg.C, Epsilon: cfg.Epsilon, Capacity: cfg.Window}
}

func (k aosvrKind) Validate(cfg Config) error {
	var errs []error
	if cfg.Window < 0 {
		errs = append(errs, fmt.Errorf("%w: window must be ≥ 0 (0 = no forgetting), got %d", ErrBadConfig, cfg.Window))
	}
	c := k.config(cfg)
	c.Capacity = max(c.Capacity, 0) // reported above
	errs = append(errs, svrFieldErrors(c.Validate(), aosvrKeys)...)
	return errors.Join(errs...)
}

func (aosvrKind) Fields(cfg Config) []ConfigField {
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	return []ConfigField{
		{"window", strconv.Itoa(cfg.Window)},
		{"kernel", kernelOf(cfg).String()},
		{"c", f(cfg.C)},
		{"epsilon", f(cfg.Epsilon)},
	}
}

func (k aosvrKind) New(cfg Config) (Model, error) {
	m, err := svr.NewAOSVR(k.config(cfg))
	if err != nil {
		return nil, err
	}
	md := &aosvrModel{AOSVR: m}
	if cfg.Window > 0 {
		dim := cfg.ModelDim()
		w, err := window.New(m, cfg.Window, dim)
		if err != nil {
			return nil, fmt.Errorf("%w: window: %w", ErrBadConfig, err)
		}
		md.win = w
	}
	return md, nil
}

func (aosvrKind) Export(m Model) (any, error) {
	a, ok := m.(*aosvrModel)
	if !ok {
		return nil, fmt.Errorf("aosvr: export of a %T", m)
	}
	st := &AOSVRState{AOSVRState: a.AOSVR.Export()}
	if a.win != nil {
		st.Window = make([]uint64, 0, a.win.Len())
		a.win.Samples(func(_ []float64, _ float64, id uint64) bool {
			st.Window = append(st.Window, id)
			return true
		})
	}
	return st, nil
}

// Import imports the AOSVR state and, with a forgetting window, rebuilds
// the window's ring from the model's samples in the order of st.Window,
// with the model's handles: window.Restore adds each sample to a replay
// that hands back the saved handle instead of learning, and passes every
// later Add and Remove through to the model. The cost is svr.AOSVR.Import's,
// O(n·(|S| + |E|)·d + |S|³).
func (aosvrKind) Import(cfg Config, m Model, s any) error {
	md, ok := m.(*aosvrModel)
	st, ok2 := s.(*AOSVRState)
	if !ok || !ok2 || st == nil {
		return fmt.Errorf("%w: aosvr: a %T state for a %T model", ErrBadState, s, m)
	}
	a := &st.AOSVRState
	if cfg.Window == 0 {
		if len(st.Window) != 0 {
			return fmt.Errorf("%w: %d window handles with no forgetting window", ErrBadState, len(st.Window))
		}
		return importErr(md.AOSVR.Import(*a))
	}
	if len(st.Window) != len(a.X) || len(st.Window) > cfg.Window {
		return fmt.Errorf("%w: window of %d (capacity %d) over a model of %d samples", ErrBadState, len(st.Window), cfg.Window, len(a.X))
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
	if err := md.AOSVR.Import(*a); err != nil {
		return importErr(err)
	}
	r := &replay{m: md.AOSVR, ids: st.Window}
	w, err := window.Restore(r, cfg.Window, cfg.ModelDim(), xs, ys)
	if err != nil {
		return fmt.Errorf("%w: window: %w", ErrBadState, err)
	}
	md.win = w
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

// Sample and Oldest make the restored window what window.New makes over
// the model itself: it reads samples back from the model and stores no
// handles while they come in sequence.
func (r *replay) Sample(id uint64, x []float64) (float64, bool) { return r.m.Sample(id, x) }

func (r *replay) Oldest() (uint64, bool) { return r.m.Oldest() }

// State sections of AOSVR, as in statestore's version 1.
const (
	tagAOSVR    = 11
	tagAOSVRInc = 12
)

func (aosvrKind) StateTags() []uint64 { return []uint64{tagAOSVR, tagAOSVRInc} }

func (aosvrKind) EncodeState(s any) []StateSection {
	st := s.(*AOSVRState)
	a := &st.AOSVRState
	var e wire.Encoder
	e.B = make([]byte, 0, len(a.X)*(8*a.Dim+32)+10*len(st.Window)+32)
	e.Int(int64(a.Dim))
	e.Rows(a.X, a.Dim)
	e.Floats(a.Y)
	e.Floats(a.Theta)
	e.Uints(a.IDs)
	e.Uint(uint64(len(a.Margin)))
	for _, i := range a.Margin {
		e.Int(int64(i))
	}
	e.Float(a.Bias)
	e.Uint(a.Next)
	e.Uints(st.Window)
	secs := []StateSection{{tagAOSVR, e.B}}
	if len(a.H) > 0 {
		var e wire.Encoder
		e.Floats(a.H)
		e.Floats(a.R)
		e.Int(int64(a.Ops))
		e.Bools(a.RefreshPending)
		secs = append(secs, StateSection{tagAOSVRInc, e.B})
	}
	return secs
}

func (aosvrKind) DecodeState(secs []StateSection) (any, error) {
	st := &AOSVRState{}
	a := &st.AOSVRState
	for i, s := range secs {
		d := wire.Decoder{B: s.Body}
		switch s.Tag {
		case tagAOSVR:
			a.Dim = d.Intn()
			a.X = d.Rows(a.Dim)
			a.Y = d.Floats()
			a.Theta = d.Floats()
			a.IDs = d.Uints()
			n := d.Count(1)
			a.Margin = make([]int, 0, n)
			for range n {
				a.Margin = append(a.Margin, d.Intn())
			}
			a.Bias = d.Float()
			a.Next = d.Uint()
			st.Window = d.Uints()
		case tagAOSVRInc:
			if i == 0 {
				return nil, fmt.Errorf("aosvr-incremental: comes before the aosvr section")
			}
			a.H = d.Floats()
			a.R = d.Floats()
			a.Ops = d.Intn()
			a.RefreshPending = d.Bool()
		}
		if d.Err == nil && len(d.B) != 0 {
			d.Err = fmt.Errorf("%d bytes left over", len(d.B))
		}
		if d.Err != nil {
			return nil, fmt.Errorf("section %d: %w", s.Tag, d.Err)
		}
	}
	return st, nil
}

// Prefetch asks the CPU to start loading the model's state and its
// window's (see internal/prefetch).
func (m *aosvrModel) Prefetch() {
	prefetch.Object(m.AOSVR)
	if m.win != nil {
		prefetch.Object(m.win)
		m.win.Prefetch() // and the model's
		return
	}
	m.AOSVR.Prefetch()
}
