package lab

import (
	"errors"
	"flag"
	"fmt"
	"strings"

	"github.com/forecastd/forecastd/internal/config"
	"github.com/forecastd/forecastd/internal/keyglob"
	"github.com/forecastd/forecastd/pipeline"
	"github.com/forecastd/forecastd/runner"
)

// ConfigModels is the configuration file's [model] schema
// (internal/config): its keys as flags (config.AddModelFlags), merged
// over a file's [model] and [[rules]].
type ConfigModels struct{}

func (ConfigModels) AddFlags(fs *flag.FlagSet, skip ...string) ModelFlags {
	f := &modelFlags{}
	config.AddModelFlags(fs, &f.m, skip...)
	return f
}

// modelFlags are the [model] keys set on a command line.
type modelFlags struct{ m pipeline.Keys }

func (f *modelFlags) Config(file string) (pipeline.Config, error) {
	var mc pipeline.Keys
	var problems []error
	if file != "" {
		cfg, probs, err := config.Decode(file)
		if err != nil {
			return pipeline.Config{}, err
		}
		mc, problems = cfg.Model, probs
	}
	pc, err := config.Model(mc.Merge(f.m))
	if err != nil {
		problems = append(problems, err)
	}
	if err := errors.Join(problems...); err != nil {
		if file != "" {
			return pipeline.Config{}, fmt.Errorf("%s (with the flags): %w", file, err)
		}
		return pipeline.Config{}, err
	}
	return pc, nil
}

func (f *modelFlags) Rules(file string) ([]runner.Rule, error) {
	if file == "" {
		return nil, nil
	}
	cfg, probs, err := config.Decode(file)
	if err != nil {
		return nil, err
	}
	if err := errors.Join(probs...); err != nil {
		return nil, err
	}
	var rules []runner.Rule
	var errs []error
	for i, rc := range cfg.Rules {
		if rc.Match == nil || *rc.Match == "" {
			errs = append(errs, fmt.Errorf("rules[%d].match: required", i))
			continue
		}
		if _, err := keyglob.Compile(*rc.Match); err != nil {
			errs = append(errs, fmt.Errorf("rules[%d].match %q: %w", i, *rc.Match, err))
			continue
		}
		pc, err := config.Model(cfg.Model.Merge(rc.Keys).Merge(f.m))
		if err != nil {
			errs = append(errs, fmt.Errorf("rules[%d] (match %q): %w", i, *rc.Match, err))
			continue
		}
		rules = append(rules, runner.Rule{Match: *rc.Match, Config: pc})
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("%s (with the flags): %w", file, err)
	}
	return rules, nil
}

func (f *modelFlags) Influx(file string) (InfluxDefaults, error) {
	var d InfluxDefaults
	c, _, err := config.Decode(file)
	if err != nil {
		return d, err
	}
	if c.History != nil {
		h := c.HistorySource()
		d = InfluxDefaults{Measurement: h.Measurement, Field: h.Field, SeriesTag: h.SeriesTag, Token: h.Token}
		if h.Database != "" {
			d.Bucket = h.Database + strings.TrimSuffix("/"+h.RetentionPolicy, "/")
		}
	} else if oi := c.Output.Influx(); oi != nil {
		d = InfluxDefaults{Measurement: oi.Measurement, Token: oi.Token, Bucket: oi.Bucket}
		if oi.LegacyTagNames {
			d.SeriesTag = "series"
		}
	}
	return d, nil
}
