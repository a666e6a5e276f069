package config

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"time"

	"github.com/forecastd/forecastd/internal/config/schema"
	"github.com/forecastd/forecastd/internal/keyglob"
	"github.com/forecastd/forecastd/pipeline"
	"github.com/forecastd/forecastd/runner"
	"github.com/forecastd/forecastd/sinks"
)

// Validate returns nil if c can be run, or every problem at once, each
// error naming its key ("input.data_format: …"): each table's own
// (its component's Validate), and those across tables.
func (c *Config) Validate() error {
	var e schema.Errors
	switch c.LogFormat {
	case "", "text", "json":
	default:
		e.Add("log_format", "want %q or %q, got %q", "text", "json", c.LogFormat)
	}
	e.Prefixed("nats", c.NATS.Validate())
	if len(c.Input.Subjects) == 0 && c.Input.JetStream == nil && len(c.Input.PromQL) == 0 {
		e.Add("input.subjects", "at least one subject is required (or [input.jetstream], or [[input.promql]])")
	}
	for i, p := range c.Input.PromQL {
		e.Prefixed(fmt.Sprintf("input.promql[%d]", i), p.Validate())
	}
	if len(c.Input.PromQL) > 0 && c.State.JetStream() {
		e.Add("input.promql", `not with [state] store = "jetstream": every instance would pull every series; run one instance for the pulled series`)
	}
	e.Prefixed("input", c.Input.InputConfig.Validate())
	if js := c.Input.JetStream; js != nil {
		e.Prefixed("input.jetstream", js.ConsumerConfig.Validate())
		if c.NATS.Embedded && c.State.Dir == "" {
			e.Add("state.dir", "required with [nats] embedded = true and [input.jetstream]: the embedded server's JetStream store")
		}
	}
	if _, _, err := c.PipelineRules(); err != nil {
		e = append(e, schema.Unjoin(err)...)
	}
	e = append(e, c.LimitErrors()...)
	e.Prefixed("pipeline", c.Pipeline.RunnerKeys.Validate())
	if msg := c.Pipeline.ShutdownTimeout.Positive(false); msg != "" {
		e.Add("pipeline.shutdown_timeout", "%s", msg)
	}
	for _, k := range sinks.Kinds() {
		if v, ok := c.Output[k.Name()].(interface{ Validate() error }); ok {
			e.Prefixed("output."+k.Name(), v.Validate())
		}
	}
	if h := c.History; h != nil {
		e.Prefixed("history", h.Validate(c.HistorySource()))
	}
	e.Prefixed("state", c.State.Config.Validate())
	e.Prefixed("http", c.HTTP.Validate())
	return errors.Join(e...)
}

// LimitErrors returns the problems of the size keys beyond their
// ceilings (docs/operations.md, "Limits"): [input] bounds, [pipeline]
// sizes and memory, [state] keep_evicted, and the model sizes of [model]
// and every [[rules]] entry as they resolve (none if they do not).
// Validate reports them.
func (c *Config) LimitErrors() []error {
	var e schema.Errors
	e.Prefixed("input", errors.Join(c.Input.LimitErrors()...))
	e.Prefixed("pipeline", errors.Join(c.Pipeline.RunnerKeys.LimitErrors()...))
	e.Prefixed("pipeline", c.Pipeline.Config.Validate())
	e.Prefixed("state", errors.Join(c.State.Config.LimitErrors()...))
	def, rules, err := c.PipelineRules()
	if err != nil {
		return e // reported by Validate
	}
	e.Prefixed("model", errors.Join(def.LimitErrors()...))
	for i, r := range rules {
		e.Prefixed(fmt.Sprintf("rules[%d]", i), errors.Join(r.Config.LimitErrors()...))
	}
	return e
}

// PipelineRules returns the configuration of a series no rule matches
// ([model]) and the rules ([model] ← [[rules]] entry), or every problem.
// A rule's errors are prefixed with "rules[i] (match …)"; when [model] is
// itself invalid, a rule is checked on the defaults, so that [model]'s
// problems are not repeated for every rule.
func (c *Config) PipelineRules() (pipeline.Config, []runner.Rule, error) {
	var errs []error
	def, err := c.Model.Config()
	modelOK := err == nil
	if err != nil {
		errs = append(errs, modelErrors("model", err)...)
	}
	base := c.Model
	if !modelOK {
		base = pipeline.Keys{}
	}
	var rules []runner.Rule
	for i, rc := range c.Rules {
		name := fmt.Sprintf("rules[%d]", i)
		if rc.Match == nil || *rc.Match == "" {
			errs = append(errs, fmt.Errorf("%s.match: required", name))
			continue
		}
		if _, err := keyglob.Compile(*rc.Match); err != nil {
			errs = append(errs, fmt.Errorf("%s.match: %v", name, err))
		}
		cfg, err := base.Merge(rc.Keys).Config()
		if err != nil {
			errs = append(errs, entryErrors(name, *rc.Match, err)...)
			continue
		}
		rules = append(rules, runner.Rule{Match: *rc.Match, Config: cfg})
	}
	res, rerrs := c.resolutions(base)
	if err := errors.Join(append(errs, rerrs...)...); err != nil {
		return pipeline.Config{}, nil, err
	}
	return def, append(rules, res...), nil
}

// resolutions returns the rules of [[resolutions]] over base, or their
// problems.
func (c *Config) resolutions(base pipeline.Keys) ([]runner.Rule, []error) {
	var rules []runner.Rule
	var errs []error
	steps := map[time.Duration]int{}
	for i, rc := range c.Resolutions {
		name := fmt.Sprintf("resolutions[%d]", i)
		match := "*"
		if rc.Match != nil && *rc.Match != "" {
			match = *rc.Match
		}
		if _, err := keyglob.Compile(match); err != nil {
			errs = append(errs, fmt.Errorf("%s.match: %v", name, err))
		}
		if rc.Step == nil || *rc.Step == "" {
			errs = append(errs, fmt.Errorf("%s.step: required (the resolution, like \"1h\")", name))
			continue
		}
		cfg, err := base.Merge(rc.Keys).Config()
		if err != nil {
			errs = append(errs, entryErrors(name, match, err)...)
			continue
		}
		if j, ok := steps[cfg.Step]; ok {
			errs = append(errs, fmt.Errorf("%s.step: %s, as resolutions[%d]'s: each resolution has its own", name, *rc.Step, j))
			continue
		}
		steps[cfg.Step] = i
		rules = append(rules, runner.Rule{Match: match, Config: cfg, Resolution: true})
	}
	return rules, errs
}

// entryErrors are the errors of the [model] keys of a [[rules]] or
// [[resolutions]] entry, each named by the entry (its table and match).
func entryErrors(name, match string, err error) []error {
	var out []error
	for _, e := range modelErrors("model", err) {
		var ke *keyError
		if errors.As(e, &ke) {
			re := *ke
			re.table, re.note = name, fmt.Sprintf("match %q", match)
			e = &re
		} else {
			e = fmt.Errorf("%s (match %q): %w", name, match, e)
		}
		out = append(out, e)
	}
	return out
}

// Changes lists what differs between two configurations, one line per
// changed key ("model.dim: 5 → 7", "rules: 1 → 2 entries",
// "rules[0].match: "a*" → "b*""), and the tables whose change needs a
// restart.
func Changes(old, cur *Config) (changed, needRestart []string) {
	diff := func(prefix string, a, b map[string]string) {
		keys := map[string]bool{}
		for k := range a {
			keys[k] = true
		}
		for k := range b {
			keys[k] = true
		}
		for _, k := range slices.Sorted(mapsKeys(keys)) {
			av, aok := a[k]
			bv, bok := b[k]
			switch {
			case !aok:
				changed = append(changed, fmt.Sprintf("%s%s: set to %s", prefix, k, bv))
			case !bok:
				changed = append(changed, fmt.Sprintf("%s%s: unset (was %s)", prefix, k, av))
			case av != bv:
				changed = append(changed, fmt.Sprintf("%s%s: %s → %s", prefix, k, av, bv))
			}
		}
	}
	diff("model.", describeKeys(old.Model), describeKeys(cur.Model))
	if len(old.Rules) != len(cur.Rules) {
		changed = append(changed, fmt.Sprintf("rules: %d → %d entries", len(old.Rules), len(cur.Rules)))
	}
	for i := range max(len(old.Rules), len(cur.Rules)) {
		diff(fmt.Sprintf("rules[%d].", i), describeRule(old.Rules, i), describeRule(cur.Rules, i))
	}
	for _, t := range []struct {
		name string
		a, b any
	}{
		{"nats", old.NATS, cur.NATS}, {"input", old.Input, cur.Input}, {"pipeline", old.Pipeline, cur.Pipeline},
		{"output", old.Output, cur.Output}, {"http", old.HTTP, cur.HTTP}, {"state", old.State, cur.State},
		{"history", old.History, cur.History},
	} {
		if !reflect.DeepEqual(t.a, t.b) {
			needRestart = append(needRestart, t.name)
		}
	}
	return changed, needRestart
}

// describeKeys returns the keys set in k with their values as text.
func describeKeys(k pipeline.Keys) map[string]string {
	out := map[string]string{}
	v := reflect.ValueOf(k)
	for i, key := range pipeline.KeyNames() {
		if f := v.Field(i); !f.IsNil() {
			out[key] = fmt.Sprintf("%v", f.Elem().Interface())
		}
	}
	for key, p := range k.Params {
		out[key] = fmt.Sprintf("%v", p)
	}
	return out
}

// describeRule describes rules[i] as describeKeys does, with its match;
// empty if there is none.
func describeRule(rules []RuleConfig, i int) map[string]string {
	if i >= len(rules) {
		return map[string]string{}
	}
	out := describeKeys(rules[i].Keys)
	if m := rules[i].Match; m != nil {
		out["match"] = *m
	}
	return out
}
