package runner

import (
	"errors"
	"fmt"
	"time"

	"github.com/forecastd/forecastd/internal/keyglob"
	"github.com/forecastd/forecastd/pipeline"
)

type ruleSet struct {
	def         pipeline.Config
	rules       []Rule
	globs       []keyglob.Glob // rules[i].Match compiled
	resolutions []Rule         // the Resolution rules
	resGlobs    []keyglob.Glob // their matches compiled
}

func newRuleSet(def pipeline.Config, rules []Rule) (*ruleSet, error) {
	var errs []error
	if err := def.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("default: %w", err))
	}
	rs := &ruleSet{def: def}
	steps := map[time.Duration]bool{}
	for i, ru := range rules {
		g, err := keyglob.Compile(ru.Match)
		if err != nil {
			errs = append(errs, fmt.Errorf("%w: rules[%d].match %q: %v", pipeline.ErrBadConfig, i, ru.Match, err))
		}
		if err := ru.Config.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("rules[%d] (match %q): %w", i, ru.Match, err))
		}
		if !ru.Resolution {
			rs.rules, rs.globs = append(rs.rules, ru), append(rs.globs, g)
			continue
		}
		if ru.Config.Step <= 0 {
			errs = append(errs, fmt.Errorf("%w: resolution %d (match %q): step must be set", pipeline.ErrBadConfig, len(rs.resolutions), ru.Match))
		} else if steps[ru.Config.Step] {
			errs = append(errs, fmt.Errorf("%w: resolution %d (match %q): step %v twice", pipeline.ErrBadConfig, len(rs.resolutions), ru.Match, ru.Config.Step))
		}
		steps[ru.Config.Step] = true
		rs.resolutions, rs.resGlobs = append(rs.resolutions, ru), append(rs.resGlobs, g)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return rs, nil
}

// resolution returns the configuration of the series that forecasts key
// at the k-th resolution rule, nil if the rule does not match key.
func (rs *ruleSet) resolution(k int, key string) *pipeline.Config {
	if rs.resGlobs[k].Match(key) {
		return &rs.resolutions[k].Config
	}
	return nil
}

// config returns the configuration of a new series key, shared by every
// series the rule set made with it: read only.
func (rs *ruleSet) config(key string) *pipeline.Config {
	for i := range rs.rules {
		if rs.globs[i].Match(key) {
			return &rs.rules[i].Config
		}
	}
	return &rs.def
}

// SetRules replaces the default configuration and the rules for series
// created from now on; existing series keep theirs. On an invalid
// configuration it returns every problem and changes nothing.
func (r *Runner) SetRules(def pipeline.Config, rules []Rule) error {
	rs, err := newRuleSet(def, rules)
	if err != nil {
		return err
	}
	r.rules.Store(rs)
	return nil
}

// ConfigFor returns the configuration a new series named key would get now.
func (r *Runner) ConfigFor(key string) pipeline.Config { return *r.rules.Load().config(key) }

// SetSeriesLimit bounds the series held to n (each shard to its share, at
// least 1), below MaxSeries; n ≤ 0 removes the bound. Lowered, each shard
// evicts its least recently used series down to its share at once, as it
// would at MaxSeries (checkpointed first, with an EvictionSaver); raised,
// new series are let in again. A memory budget sets it (forecastd run's
// [pipeline] memory_budget).
func (r *Runner) SetSeriesLimit(n int) {
	if n < 0 {
		n = 0
	}
	old := r.limit.Swap(int64(n))
	if n > 0 && (old == 0 || int64(n) < old) {
		for _, sh := range r.shards {
			select {
			case sh.shrink <- struct{}{}:
			default:
			}
		}
	}
}
