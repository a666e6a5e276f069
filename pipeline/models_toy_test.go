package pipeline_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/forecastd/forecastd/internal/statestore"
	"github.com/forecastd/forecastd/internal/wire"
	"github.com/forecastd/forecastd/lab/backtest"
	"github.com/forecastd/forecastd/pipeline"
	"github.com/forecastd/forecastd/runner"
	"github.com/forecastd/forecastd/svr"
)

// This file adds a model kind the way any new kind is added — one type
// implementing pipeline.ModelKind and one RegisterModel call — and runs it
// through the daemon's path (a Runner with a sink and checkpoints written
// by internal/statestore to files) without touching any other file.

// lms is a toy regressor: a linear model y ≈ w·x + b learned by normalised
// least mean squares, w ← w + rate·(y − ŷ)·x / (1 + |x|²). O(d) per call.
type lms struct {
	w    []float64
	b    float64
	n    uint64
	rate float64
}

var _ svr.Regressor = (*lms)(nil)

func (m *lms) Dim() int { return len(m.w) }

func (m *lms) Predict(x []float64) (float64, error) {
	if len(x) != len(m.w) {
		panic("lms: shape")
	}
	y := m.b
	for i, v := range x {
		y += m.w[i] * v
	}
	if math.IsNaN(y) || math.IsInf(y, 0) {
		return 0, fmt.Errorf("%w: lms: prediction %v", svr.ErrNumerical, y)
	}
	return y, nil
}

func (m *lms) Learn(x []float64, y float64) error {
	p, err := m.Predict(x)
	if err != nil {
		return err
	}
	norm := 1.0
	for _, v := range x {
		norm += v * v
	}
	g := m.rate * (y - p) / norm
	for i, v := range x {
		m.w[i] += g * v
	}
	m.b += g
	m.n++
	return nil
}

func (m *lms) Size() int       { return len(m.w) + 1 }
func (m *lms) StateBytes() int { return 8 * (len(m.w) + 3) }

// lmsParams is the toy kind's typed configuration, in Config.Params.
type lmsParams struct{ Rate float64 }

// lmsState is its checkpoint state.
type lmsState struct {
	W []float64
	B float64
	N uint64
}

type lmsKind struct{}

const lmsTag = 33

func (lmsKind) Name() string { return "lms" }
func (lmsKind) Keys() []pipeline.ModelKey {
	return []pipeline.ModelKey{{Key: "lms_rate", Type: pipeline.KeyFloat, Usage: "LMS step `RATE` in (0, 2)"}}
}

func (lmsKind) params(cfg pipeline.Config) lmsParams {
	if p, ok := cfg.Params.(lmsParams); ok {
		return p
	}
	return lmsParams{Rate: 0.1}
}

func (k lmsKind) Set(cfg *pipeline.Config, key string, v any) error {
	f, ok := v.(float64)
	if !ok || key != "lms_rate" {
		return fmt.Errorf("want a number, got %T", v)
	}
	p := k.params(*cfg)
	p.Rate = f
	cfg.Params = p
	return nil
}

func (k lmsKind) Validate(cfg pipeline.Config) error {
	if r := k.params(cfg).Rate; !(r > 0 && r < 2) {
		return fmt.Errorf("%w: lms_rate must lie in (0, 2), got %v", pipeline.ErrBadConfig, r)
	}
	return nil
}

func (k lmsKind) Fields(cfg pipeline.Config) []pipeline.ConfigField {
	return []pipeline.ConfigField{{Key: "lms_rate", Value: strconv.FormatFloat(k.params(cfg).Rate, 'g', -1, 64)}}
}

func (k lmsKind) New(cfg pipeline.Config) (pipeline.Model, error) {
	return &lms{w: make([]float64, cfg.ModelDim()), rate: k.params(cfg).Rate}, nil
}

func (lmsKind) Export(m pipeline.Model) (any, error) {
	l := m.(*lms)
	return &lmsState{W: slices.Clone(l.w), B: l.b, N: l.n}, nil
}

func (lmsKind) Import(_ pipeline.Config, m pipeline.Model, s any) error {
	l, st := m.(*lms), s.(*lmsState)
	if len(st.W) != len(l.w) {
		return fmt.Errorf("%w: lms: %d weights, want %d", pipeline.ErrBadState, len(st.W), len(l.w))
	}
	copy(l.w, st.W)
	l.b, l.n = st.B, st.N
	return nil
}

func (lmsKind) StateTags() []uint64 { return []uint64{lmsTag} }

func (lmsKind) EncodeState(s any) []pipeline.StateSection {
	st := s.(*lmsState)
	var e wire.Encoder
	e.Floats(st.W)
	e.Float(st.B)
	e.Uint(st.N)
	return []pipeline.StateSection{{Tag: lmsTag, Body: e.B}}
}

func (lmsKind) DecodeState(secs []pipeline.StateSection) (any, error) {
	d := wire.Decoder{B: secs[0].Body}
	st := &lmsState{W: d.Floats(), B: d.Float(), N: d.Uint()}
	if d.Err == nil && len(d.B) > 0 {
		d.Err = errors.New("bytes left over")
	}
	return st, d.Err
}

var lmsKindID = pipeline.RegisterModel(lmsKind{})

// lmsConfig is the toy kind's series configuration, learning the next
// change, not combined with the simple rules, so that forecasts are the
// toy's.
func lmsConfig(t *testing.T, rate float64) pipeline.Config {
	t.Helper()
	cfg := pipeline.DefaultConfig()
	var err error
	if cfg.Kind, err = pipeline.ParseKind("lms"); err != nil {
		t.Fatal(err)
	}
	cfg.Combine, cfg.Seasons = false, nil
	if err := pipeline.SetModelKey(&cfg, "lms_rate", rate); err != nil {
		t.Fatal(err)
	}
	return cfg
}

func TestRegisteredKindConfig(t *testing.T) {
	if lmsKindID.String() != "lms" || !slices.Contains(pipeline.KindNames(), "lms") {
		t.Fatalf("kind %v, names %v", lmsKindID, pipeline.KindNames())
	}
	if k, mk, ok := pipeline.KeyKind("lms_rate"); !ok || k != lmsKindID || mk.Type != pipeline.KeyFloat {
		t.Fatalf("KeyKind(lms_rate) = %v, %v, %v", k, mk, ok)
	}
	if err := lmsConfig(t, 0.2).Validate(); err != nil {
		t.Fatal(err)
	}
	cfg := lmsConfig(t, 3)
	cfg.Dim = 0
	err := cfg.Validate()
	if !errors.Is(err, pipeline.ErrBadConfig) || !strings.Contains(err.Error(), "lms_rate must lie in (0, 2), got 3") || !strings.Contains(err.Error(), "dim must be at least 1") {
		t.Errorf("Validate = %v, want both the common and the kind's problem", err)
	}
	if err := pipeline.SetModelKey(&cfg, "lms_rate", "fast"); err == nil || !strings.Contains(err.Error(), "lms_rate") {
		t.Errorf("SetModelKey(lms_rate, \"fast\") = %v, want an error naming the key", err)
	}
	fields := pipeline.ConfigFields(lmsConfig(t, 0.2))
	if f := fields[len(fields)-1]; f.Key != "lms_rate" || f.Value != "0.2" {
		t.Errorf("last config field %v, want lms_rate 0.2", f)
	}
	if _, err := pipeline.ParseKind("svm"); err == nil || !strings.Contains(err.Error(), "aosvr, sogsvr, norma or lms") {
		t.Errorf("ParseKind(svm) = %v, want the registered kinds listed", err)
	}
}

// fileCheckpoints is the daemon's kind of Checkpointer, simplified: states
// written and read through internal/statestore's files.
type fileCheckpoints struct {
	t     *testing.T
	store *statestore.Store
}

func (c fileCheckpoints) Saved(key string) (pipeline.SeriesState, string, bool) {
	st, err := c.store.Load(key)
	if err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			c.t.Errorf("load %s: %v", key, err)
		}
		return pipeline.SeriesState{}, "", false
	}
	return st, c.store.Path(key), true
}

func (c fileCheckpoints) Save(st pipeline.SeriesState) {
	if err := c.store.Save(st.Key, st); err != nil {
		c.t.Errorf("save %s: %v", st.Key, err)
	}
}

func (c fileCheckpoints) Forget(key string) { _ = c.store.Delete(key) }

// forecasts is an Outputs whose sinks keep every forecast's value.
type forecasts struct {
	mu   sync.Mutex
	vals map[string][]float64
}

func (f *forecasts) Open(string, pipeline.Config, *runner.Input) pipeline.Sink { return f }
func (f *forecasts) Forecast(series string, fc pipeline.Forecast) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.vals[series] = append(f.vals[series], fc.Value)
	return nil
}
func (f *forecasts) Outcome(string, pipeline.Outcome) error { return nil }

// TestRegisteredKindDaemonPath: a kind registered by this file alone runs
// through a Runner into a sink, is checkpointed to a state file by
// internal/statestore, and a second Runner restores it from the file and
// forecasts exactly as a series that was never interrupted; the Runner
// counts its model stats under its name.
func TestRegisteredKindDaemonPath(t *testing.T) {
	cfg := lmsConfig(t, 0.3)
	dir := t.TempDir()
	store, err := statestore.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC)
	point := func(i int) pipeline.Point {
		return pipeline.Point{Time: t0.Add(time.Duration(i) * time.Minute), Value: 10 + 3*math.Sin(float64(i)/7) + math.Sin(float64(i)/2.3)}
	}
	const key, n, cut = "toy/lms", 400, 250

	// The uninterrupted series.
	ref, err := pipeline.New(key, cfg)
	if err != nil {
		t.Fatal(err)
	}
	var want []float64
	var persist, model float64
	for i := range n {
		r, err := ref.Push(point(i))
		if err != nil {
			t.Fatal(err)
		}
		if r.HasForecast {
			want = append(want, r.Forecast.Value)
			if i+1 < n && i > 50 {
				persist += math.Abs(point(i+1).Value - point(i).Value)
				model += math.Abs(point(i+1).Value - r.Forecast.Value)
			}
		}
	}
	// The toy learns: it beats persistence on this smooth series (it
	// would not if it did not learn: with zero weights the change forecast
	// is zero, which is persistence).
	if !(model < 0.8*persist) {
		t.Fatalf("lms absolute error %v, persistence's %v: the toy did not learn", model, persist)
	}

	run := func(from, to int) (*forecasts, runner.RunnerStats) {
		out := &forecasts{vals: map[string][]float64{}}
		r, err := runner.NewRunner(runner.RunnerConfig{Shards: 2, Default: cfg, Outputs: out, Checkpoints: fileCheckpoints{t, store}})
		if err != nil {
			t.Fatal(err)
		}
		for i := from; i < to; i++ {
			if err := r.Submit(context.Background(), runner.Input{Key: key, Point: point(i)}); err != nil {
				t.Fatal(err)
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := r.Close(ctx); err != nil { // checkpoints every series
			t.Fatal(err)
		}
		return out, r.Stats()
	}
	first, st1 := run(0, cut)
	if _, err := os.Stat(filepath.Join(dir, statestore.FileName(key))); err != nil {
		t.Fatalf("no state file after the first run: %v", err)
	}
	saved, err := store.Load(key)
	if err != nil {
		t.Fatal(err)
	}
	if saved.Model == nil || saved.Model.Kind != "lms" {
		t.Fatalf("saved model %+v, want an lms", saved.Model)
	}
	if ls, ok := saved.Model.State.(*lmsState); !ok || ls.N == 0 || len(ls.W) != cfg.ModelDim() {
		t.Fatalf("saved lms state %+v", saved.Model.State)
	}
	second, st2 := run(cut, n)
	if st2.Restored != 1 {
		t.Fatalf("second run restored %d series, want 1", st2.Restored)
	}
	got := append(first.vals[key], second.vals[key]...)
	if len(got) != len(want) {
		t.Fatalf("%d forecasts through the runners, %d uninterrupted", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("forecast %d: %v through the runners and the state file, %v uninterrupted", i, got[i], want[i])
		}
	}
	for _, st := range []runner.RunnerStats{st1, st2} {
		if len(st.Models) != len(pipeline.ModelKinds()) || st.Models[lmsKindID].Kind.String() != "lms" || st.Models[lmsKindID].Reports {
			t.Errorf("model stats %+v", st.Models)
		}
	}
}

// TestRegisteredKindBacktest: the toy kind runs through the backtest
// engine (lab/backtest, what `forecastd backtest` runs) and scores
// the forecasts the series makes: each scored row's forecast is the one a
// plain series made for that point, and its MAE beats persistence's on
// the same points.
func TestRegisteredKindBacktest(t *testing.T) {
	cfg := lmsConfig(t, 0.3)
	const n = 400
	t0 := time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC)
	data := backtest.Data{Times: make([]time.Time, n), Secs: make([]float64, n), Values: make([]float64, n)}
	for i := range n {
		data.Times[i] = t0.Add(time.Duration(i) * time.Minute)
		data.Secs[i] = float64(data.Times[i].Unix())
		data.Values[i] = 10 + 3*math.Sin(float64(i)/7) + math.Sin(float64(i)/2.3)
	}
	ref, err := pipeline.New("toy/lms", cfg)
	if err != nil {
		t.Fatal(err)
	}
	want := map[int]float64{} // forecast of point i
	for i := range n {
		r, err := ref.Push(pipeline.Point{Time: data.Times[i], Value: data.Values[i]})
		if err != nil {
			t.Fatal(err)
		}
		if r.HasForecast {
			want[i+1] = r.Forecast.Value
		}
	}
	var rows int
	res, err := backtest.Run("toy/lms", cfg, data, backtest.Options{ScoreFrom: 0.25, OnRow: func(r backtest.Row) error {
		rows++
		if w, ok := want[r.Index]; !ok || r.Forecast != w {
			return fmt.Errorf("row %d: forecast %v, the series made %v (%v)", r.Index, r.Forecast, w, ok)
		}
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	if rows == 0 || res.N != rows {
		t.Fatalf("%d rows scored, result counts %d", rows, res.N)
	}
	if !(res.AE < 0.8*res.PersistenceAE) {
		t.Errorf("backtest MAE %v, persistence's %v: the toy's forecasts were not scored as made", res.AE/float64(res.N), res.PersistenceAE/float64(res.N))
	}
	if res.Config.Kind.String() != "lms" {
		t.Errorf("backtest ran kind %s", res.Config.Kind)
	}
}
