package config

import (
	"time"

	"github.com/forecastd/forecastd/internal/config/schema"
	"github.com/forecastd/forecastd/internal/history"
	"github.com/forecastd/forecastd/internal/memory"
	"github.com/forecastd/forecastd/internal/natsconn"
	"github.com/forecastd/forecastd/internal/partition"
	_ "github.com/forecastd/forecastd/internal/readapi" // the sink kind of [output.api]
	"github.com/forecastd/forecastd/internal/statestore"
	"github.com/forecastd/forecastd/internal/telemetry"
	"github.com/forecastd/forecastd/pipeline"
	"github.com/forecastd/forecastd/runner"
	"github.com/forecastd/forecastd/sources"
	"github.com/forecastd/forecastd/sources/promql"
)

// The file. Each table is the struct of the component that uses it (see
// package schema for the tags); a table several components share embeds
// each one's. The tables' docs are here, the keys' with their
// components.

// Config is forecastd's configuration file, one schema for every
// subcommand: `run` and `check-config` read all of it, `backtest` only
// [model]. Any key not in the schema is an error naming it.
type Config struct {
	NATS  natsconn.Config `toml:"nats" doc:"The NATS servers points are read from and forecasts published to."`
	Input InputConfig     `toml:"input" doc:"What is read, with Telegraf's names."`
	Model pipeline.Keys   `toml:"model" doc:"How every series is forecast, unless a [[rules]] entry says otherwise. Each key is also a flag of backtest and tune, of the same name (kind's is --model)."`
	Rules []RuleConfig    `toml:"rules" doc:"Each entry sets [model] keys for the series whose key matches match; the first matching entry applies."`
	// Resolutions forecast series again at coarser steps, each by a
	// series of its own.
	Resolutions []RuleConfig         `toml:"resolutions" doc:"Each entry forecasts the series it matches (match, default every series) once more, at the coarser resolution step (required), with any [model] key over [model]."`
	Pipeline    PipelineConfig       `toml:"pipeline" doc:"How the series are run."`
	Output      Outputs              `toml:"output" doc:"Where forecasts are written, a table per output."`
	HTTP        telemetry.HTTPConfig `toml:"http" doc:"The HTTP endpoints: /metrics, /-/healthy and /-/ready."`
	State       StateConfig          `toml:"state" doc:"Where the models' state is kept across restarts."`
	// History, if present, warms new series from InfluxDB.
	History *history.WarmStart `toml:"history" doc:"If present, a new series without a checkpoint learns its past from InfluxDB before its first live point; url, token and bucket default to [output.influxdb]'s."`

	// The daemon's own keys (cmd/forecastd).
	LogFormat string `toml:"log_format" doc:"log lines as \"text\" (key=value) or \"json\""`
}

// WithDefaults returns c with its own keys' defaults filled in (each
// table has its own).
func (c Config) WithDefaults() Config {
	if c.LogFormat == "" {
		c.LogFormat = "text"
	}
	return c
}

// InputConfig is [input]: the source's keys (and its formats'), and the
// consumer of [input.jetstream].
type InputConfig struct {
	sources.InputConfig
	JetStream *JetStreamConfig `toml:"jetstream" doc:"If present, points are read from a durable JetStream consumer instead of core NATS subscriptions."`
	PromQL    []promql.Config  `toml:"promql" doc:"Each entry pulls series from Prometheus or VictoriaMetrics: its PromQL queries evaluated every step, each series of their answers a series of forecastd, beside (or instead of) those read from NATS."`
}

// JetStreamConfig is [input.jetstream]: the consumer, and the partitions
// of the stream's subjects.
type JetStreamConfig struct {
	sources.ConsumerConfig
	partition.PartitionKeys
}

// RuleConfig is one [[rules]] or [[resolutions]] entry: the [model] keys
// it sets override [model] for the series whose key matches Match.
type RuleConfig struct {
	Match *string `toml:"match" doc:"glob on the series key, Telegraf's: * (any run, '/' included), ?, [...], {a,b}"`
	pipeline.Keys
}

// PipelineConfig is [pipeline]: the runner's keys, the daemon's deadline
// of a graceful stop, and its memory.
type PipelineConfig struct {
	runner.RunnerKeys
	ShutdownTimeout schema.Duration `toml:"shutdown_timeout" doc:"deadline of a graceful stop"`
	memory.Config
	pipeline.CacheKeys
}

// DefaultShutdownTimeout is [pipeline] shutdown_timeout's default.
const DefaultShutdownTimeout = 30 * time.Second

// WithDefaults returns c with its defaults filled in.
func (c PipelineConfig) WithDefaults() PipelineConfig {
	c.RunnerKeys = c.RunnerKeys.WithDefaults()
	c.Config = c.Config.WithDefaults()
	c.CacheKeys = c.CacheKeys.WithDefaults()
	if !c.ShutdownTimeout.IsSet() {
		c.ShutdownTimeout = schema.Dur(DefaultShutdownTimeout)
	}
	return c
}

// StateConfig is [state]: the checkpoints' keys, and where the states and
// leases of partitions are kept.
type StateConfig struct {
	statestore.Config
	partition.StoreConfig
}

// WithDefaults returns c with its defaults filled in.
func (c StateConfig) WithDefaults() StateConfig {
	c.Config = c.Config.WithDefaults()
	c.StoreConfig = c.StoreConfig.WithDefaults()
	return c
}

// Outputs is [output]: a table per registered kind of sink that has
// settings (sinks.Configurable), by kind name, each the value its
// NewConfig made; a kind whose table is absent is not in the map.
type Outputs map[string]any
