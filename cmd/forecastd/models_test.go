package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/forecastd/forecastd/internal/config"
	"github.com/forecastd/forecastd/internal/wire"
	"github.com/forecastd/forecastd/pipeline"
	"github.com/forecastd/forecastd/svr"
)

// meanKind is a toy model kind registered by this file alone: it forecasts
// the exponentially weighted mean of the targets it learned, at rate
// mean_rate. The command line decodes its key from [model], rules and
// flags, check-config reports its problems on their lines, and backtest
// runs it, with no change to the command's code.
type meanKind struct{}

type meanModel struct {
	dim  int
	rate float64
	m    float64
	n    uint64
}

func (m *meanModel) Dim() int                           { return m.dim }
func (m *meanModel) Predict([]float64) (float64, error) { return m.m, nil }
func (m *meanModel) Size() int                          { return 1 }
func (m *meanModel) StateBytes() int                    { return 24 }
func (m *meanModel) Learn(_ []float64, y float64) error {
	m.m += m.rate * (y - m.m)
	m.n++
	return nil
}

func (meanKind) Name() string { return "mean" }
func (meanKind) Keys() []pipeline.ModelKey {
	return []pipeline.ModelKey{{Key: "mean_rate", Type: pipeline.KeyFloat, Usage: "mean's `RATE` in (0, 1]"}}
}
func (meanKind) rate(cfg pipeline.Config) float64 {
	if r, ok := cfg.Params.(float64); ok {
		return r
	}
	return 0.1
}
func (meanKind) Set(cfg *pipeline.Config, key string, v any) error {
	cfg.Params = v.(float64)
	return nil
}
func (k meanKind) Validate(cfg pipeline.Config) error {
	if r := k.rate(cfg); !(r > 0 && r <= 1) {
		return fmt.Errorf("%w: mean_rate must lie in (0, 1], got %v", pipeline.ErrBadConfig, r)
	}
	return nil
}
func (k meanKind) Fields(cfg pipeline.Config) []pipeline.ConfigField {
	return []pipeline.ConfigField{{Key: "mean_rate", Value: strconv.FormatFloat(k.rate(cfg), 'g', -1, 64)}}
}
func (k meanKind) New(cfg pipeline.Config) (pipeline.Model, error) {
	return &meanModel{dim: cfg.ModelDim(), rate: k.rate(cfg)}, nil
}
func (meanKind) Export(m pipeline.Model) (any, error) { return [2]float64{m.(*meanModel).m, 0}, nil }
func (meanKind) Import(_ pipeline.Config, m pipeline.Model, st any) error {
	m.(*meanModel).m = st.([2]float64)[0]
	return nil
}
func (meanKind) StateTags() []uint64 { return []uint64{35} }
func (meanKind) EncodeState(st any) []pipeline.StateSection {
	var e wire.Encoder
	e.Float(st.([2]float64)[0])
	return []pipeline.StateSection{{Tag: 35, Body: e.B}}
}
func (meanKind) DecodeState(secs []pipeline.StateSection) (any, error) {
	d := wire.Decoder{B: secs[0].Body}
	return [2]float64{d.Float(), 0}, d.Err
}

var _ svr.Regressor = (*meanModel)(nil)

var meanKindID = pipeline.RegisterModel(meanKind{})

func TestRegisteredKindConfigFile(t *testing.T) {
	p := writeConfig(t, `[nats]
embedded = true

[input]
subjects = ["a.>"]

[model]
kind = "mean"
mean_rate = 0.25

[[rules]]
match = "x.*"
mean_rate = 0.5

[[rules]]
match = "y.*"
mean_rate = "fast"

[[rules]]
match = "z.*"
mean_rate = 7.0
`)
	_, err := config.Load(p, config.DaemonChecks)
	var ce *config.Error
	if !errors.As(err, &ce) {
		t.Fatalf("config.Load = %v, want a *config.Error", err)
	}
	text := err.Error()
	for _, want := range []string{
		p + `:17: rules[1].mean_rate: want a number, got the string "fast"`,
		p + `:21: rules[2] (match "z.*"): mean_rate must lie in (0, 1], got 7`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("errors lack %q:\n%s", want, text)
		}
	}
	if len(ce.Problems) != 2 {
		t.Errorf("%d problems, want 2:\n%s", len(ce.Problems), text)
	}

	p = writeConfig(t, `[input]
subjects = ["a.>"]

[model]
kind = "mean"
mean_rate = 0.25

[[rules]]
match = "x.*"
mean_rate = 0.5
`)
	cfg, err := config.Load(p, config.DaemonChecks)
	if err != nil {
		t.Fatal(err)
	}
	def, rules, err := cfg.PipelineRules()
	if err != nil {
		t.Fatal(err)
	}
	if def.Kind != meanKindID || def.Params != 0.25 || len(rules) != 1 || rules[0].Config.Params != 0.5 {
		t.Errorf("default %v %v, rules %+v: want mean at 0.25, the rule's at 0.5", def.Kind, def.Params, rules)
	}

	// Flags: the kind's key is a flag of its own, and --model lists it.
	var m pipeline.Keys
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	config.AddModelFlags(fs, &m)
	if err := fs.Parse([]string{"--model", "mean", "--mean_rate", "0.75"}); err != nil {
		t.Fatal(err)
	}
	pc, err := cfg.Model.Merge(m).Config()
	if err != nil || pc.Params != 0.75 {
		t.Errorf("flags: params %v, err %v; want 0.75", pc.Params, err)
	}
	if u := fs.Lookup("model").Usage; !strings.Contains(u, "aosvr, sogsvr, norma") || !strings.Contains(u, "mean") {
		t.Errorf("--model's usage %q does not list the registered kinds", u)
	}

	// check-config names the registered kinds for an unknown one.
	p = writeConfig(t, "[input]\nsubjects = [\"a.>\"]\n\n[model]\nkind = \"median\"\n")
	var o, e bytes.Buffer
	if code := run([]string{"check-config", p}, &o, &e); code != 1 || !strings.Contains(e.String(), p+`:5: model.kind: "median": want aosvr, sogsvr, norma or mean`) {
		t.Errorf("check-config: exit %d, stderr %q; want the kinds listed on line 5", code, e.String())
	}
}

// TestRegisteredKindBacktest: backtest runs the registered kind, its
// forecasts the model's (the weighted mean of the changes is not
// persistence, so its error differs).
func TestRegisteredKindBacktest(t *testing.T) {
	var rows []string
	for i := range 300 {
		rows = append(rows, fmt.Sprintf("%d,%d", i*60, i%7))
	}
	p := filepath.Join(t.TempDir(), "saw.csv")
	if err := os.WriteFile(p, []byte("t,value\n"+strings.Join(rows, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	res := map[string]any{}
	for _, rate := range []string{"0.05", "1"} {
		var o, e bytes.Buffer
		if code := run([]string{"backtest", "--json", "--model", "mean", "--mean_rate", rate, "--combine=false", "--seasons", "", p}, &o, &e); code != 0 {
			t.Fatalf("exit %d: %s", code, e.String())
		}
		var raw map[string]any
		if err := json.Unmarshal(o.Bytes(), &raw); err != nil {
			t.Fatal(err)
		}
		if raw["model"] != "mean" {
			t.Errorf("model %v, want mean", raw["model"])
		}
		res[rate] = raw["mae"]
	}
	if res["0.05"] == res["1"] || res["0.05"] == nil {
		t.Errorf("MAE %v at rate 0.05 and %v at 1: the kind's setting is not used", res["0.05"], res["1"])
	}
}
