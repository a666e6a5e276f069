package main

import (
	"flag"
	"time"

	"github.com/forecastd/forecastd/internal/config"
	"github.com/forecastd/forecastd/sinks"
)

// Config is the configuration file as the daemon runs it: the schema of
// internal/config, with the daemon's own derivations as methods (the
// memory estimate of memory.go, the checkpoint limits of state.go).
type Config struct{ config.Config }

// The schema's tables and values, by the names the daemon's files use.
type (
	ModelConfig      = config.ModelConfig
	RuleConfig       = config.RuleConfig
	NATSConfig       = config.NATSConfig
	InputConfig      = config.InputConfig
	JetStreamConfig  = config.JetStreamConfig
	PipelineConfig   = config.PipelineConfig
	OutputConfig     = config.OutputConfig
	NATSOutputConfig = config.NATSOutputConfig
	InfluxDBConfig   = config.InfluxDBConfig
	HTTPConfig       = config.HTTPConfig
	StateConfig      = config.StateConfig
	HistoryConfig    = config.HistoryConfig
	Duration         = config.Duration
	ByteSize         = config.ByteSize
	ConfigError      = config.Error
	ConfigProblem    = config.Problem
)

// LoadConfig reads a config file (config.Load) and checks, besides what
// the schema checks, what the daemon can hold: its memory (memory.go) and
// the partitions and state store (scale.go).
func LoadConfig(path string) (*Config, error) {
	c, err := config.Load(path, daemonErrors)
	if err != nil {
		return nil, err
	}
	return &Config{*c}, nil
}

// daemonErrors is the daemon's config.Check.
func daemonErrors(c *config.Config) []error {
	d := &Config{*c}
	errs := scaleErrors(d)
	if def, rules, err := c.PipelineRules(); err == nil && len(c.LimitErrors()) == 0 {
		// The products of keys within their ceilings.
		errs = append(errs, d.memoryErrors(d.memoryNeed(def, rules))...)
	}
	return errs
}

// decodeConfig reads a config file without validating it (config.Decode).
func decodeConfig(path string) (*Config, []error, error) {
	c, problems, err := config.Decode(path)
	if err != nil {
		return nil, nil, err
	}
	return &Config{*c}, problems, nil
}

// changes lists what differs between two configurations (config.Changes).
func changes(old, cur *Config) (changed, needRestart []string) {
	return config.Changes(&old.Config, &cur.Config)
}

// addModelFlags declares the flags of the [model] keys (config.AddModelFlags).
func addModelFlags(fs *flag.FlagSet, m *ModelConfig, skip ...string) {
	config.AddModelFlags(fs, m, skip...)
}

func influxConfig(ic *InfluxDBConfig) sinks.InfluxConfig { return ic.Sink() }
func checkSubject(s string, wildcards bool) error        { return config.CheckSubject(s, wildcards) }
func isSpaceOrControl(r rune) bool                       { return config.IsSpaceOrControl(r) }
func serverAddr(s string) (string, error)                { return config.ServerAddr(s) }
func parseDuration(s string) (time.Duration, error)      { return config.ParseDuration(s) }

const (
	defaultServer          = config.DefaultServer
	defaultShutdownTimeout = config.DefaultShutdownTimeout
)
