package main

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/forecastd/forecastd/embedding"
	"github.com/forecastd/forecastd/pipeline"
	"github.com/forecastd/forecastd/svr"
)

// Config is forecastd's configuration file, one schema for every
// subcommand: `run` and `check-config` read all of it, `backtest` only
// [model]. Any key not in the schema is an error naming it.
type Config struct {
	NATS     NATSConfig     `toml:"nats"`
	Input    InputConfig    `toml:"input"`
	Model    ModelConfig    `toml:"model"`
	Rules    []RuleConfig   `toml:"rules"`
	Pipeline PipelineConfig `toml:"pipeline"`
	Output   OutputConfig   `toml:"output"`
	HTTP     HTTPConfig     `toml:"http"`
	State    StateConfig    `toml:"state"`
}

// NATSConfig is [nats]: the NATS servers points are read from and
// forecasts published to.
type NATSConfig struct {
	// Servers are NATS URLs (default ["nats://127.0.0.1:4222"]). With
	// Embedded, the first one's host and port are where the embedded
	// server listens (port 0: a free port).
	Servers []string `toml:"servers"`
	// Embedded starts a NATS server inside forecastd.
	Embedded bool `toml:"embedded"`
}

// InputConfig is [input], with Telegraf's names.
type InputConfig struct {
	Subjects       []string         `toml:"subjects"`         // subjects to read, wildcards allowed
	DataFormat     string           `toml:"data_format"`      // json | influx | value (default json)
	JSONTimeFormat string           `toml:"json_time_format"` // unix | unix_ms | unix_us | unix_ns (default unix)
	QueueGroup     string           `toml:"queue_group"`      // share core subscriptions among instances
	MaxPayload     int              `toml:"max_payload"`      // bytes a message may have; larger ones are refused, counted "too_large" (default 1048576)
	JetStream      *JetStreamConfig `toml:"jetstream"`        // read a durable JetStream consumer instead
}

// JetStreamConfig is [input.jetstream]; its presence selects JetStream.
type JetStreamConfig struct {
	Stream        string `toml:"stream"`          // stream name (required)
	Durable       string `toml:"durable"`         // durable consumer name (required)
	AckWait       string `toml:"ack_wait"`        // redelivery after this long without an ack (default 30s)
	MaxDeliver    *int   `toml:"max_deliver"`     // deliveries of a message at most; -1 unlimited (default 5)
	NakDelay      string `toml:"nak_delay"`       // redelivery delay after a sink failure (default 5s)
	MaxAckPending int    `toml:"max_ack_pending"` // messages delivered and not yet acked at most (default 20000)
}

// RuleConfig is one [[rules]] entry: the [model] keys it sets override
// [model] for the series whose key matches Match.
type RuleConfig struct {
	Match *string `toml:"match"` // glob on the series key: * ? [...] (path.Match)
	ModelConfig
}

// PipelineConfig is [pipeline]: how the series are run.
type PipelineConfig struct {
	Shards          int    `toml:"shards"`           // goroutines the series are spread over (default GOMAXPROCS)
	QueueSize       int    `toml:"queue_size"`       // points queued per shard (default 4096)
	MaxSeries       int    `toml:"max_series"`       // series held at most; 0 = no bound
	IdleTTL         string `toml:"idle_ttl"`         // evict a series without points for this long (default 1h; "0s" never)
	ShutdownTimeout string `toml:"shutdown_timeout"` // deadline of a graceful stop (default 30s)
}

// OutputConfig is [output.*].
type OutputConfig struct {
	NATS     NATSOutputConfig `toml:"nats"`
	InfluxDB *InfluxDBConfig  `toml:"influxdb"` // absent: no InfluxDB output
}

// NATSOutputConfig is [output.nats]; forecasts are always published.
type NATSOutputConfig struct {
	SubjectPrefix string `toml:"subject_prefix"` // default "forecast"
}

// InfluxDBConfig is [output.influxdb], with Telegraf's names
// (outputs.influxdb_v2).
type InfluxDBConfig struct {
	URL               string `toml:"url"`
	Token             string `toml:"token"`
	Organization      string `toml:"organization"`
	Bucket            string `toml:"bucket"`
	Measurement       string `toml:"measurement"`
	MetricBatchSize   int    `toml:"metric_batch_size"`
	MetricBufferLimit int    `toml:"metric_buffer_limit"`
	FlushInterval     string `toml:"flush_interval"`
	Timeout           string `toml:"timeout"`
}

// HTTPConfig is [http].
type HTTPConfig struct {
	Listen string `toml:"listen"` // address of /metrics, /-/healthy and /-/ready, e.g. "127.0.0.1:9470"; empty: no HTTP
}

// StateConfig is [state].
type StateConfig struct {
	Dir                string `toml:"dir"`                 // where state is kept: model checkpoints, the embedded server's JetStream store
	CheckpointInterval string `toml:"checkpoint_interval"` // how often every changed series' state is saved (default 30s)
}

// Defaults of the daemon's tables.
const (
	defaultServer          = "nats://127.0.0.1:4222"
	defaultShutdownTimeout = 30 * time.Second
)

// ModelConfig is the [model] table, also the model part of a [[rules]]
// entry and of the backtest's flags. Every field is a pointer so that an
// absent key is told from a zero: layers merge ([model] ← rule ← flags) with
// Merge, and Pipeline fills what is still absent with the defaults of
// pipeline.DefaultConfig (the AOSVR paper's: RBF γ = 1, C = 10, ε = 0.1,
// B = 5, τ = 1; window 200).
//
// The flag of each key has the key's name, except kind, whose flag is
// --model.
type ModelConfig struct {
	Kind   *string `toml:"kind"`   // aosvr | sogsvr | norma (default aosvr)
	Dim    *int    `toml:"dim"`    // embedding dimension B (default 5)
	Delay  *int    `toml:"delay"`  // embedding delay τ in points (default 1)
	Window *int    `toml:"window"` // AOSVR forgetting window; 0 = no forgetting (default 200)

	Kernel *string  `toml:"kernel"` // rbf | poly | linear (default rbf)
	Gamma  *float64 `toml:"gamma"`  // rbf and poly γ (default 1)
	Degree *int     `toml:"degree"` // poly degree (default 3)
	Coef0  *float64 `toml:"coef0"`  // poly coef0 (default 0)

	C       *float64 `toml:"c"`       // AOSVR box C (default 10)
	Epsilon *float64 `toml:"epsilon"` // AOSVR tube ε (default 0.1)

	Scale          *string  `toml:"scale"`           // none | fixed:MIN,MAX | warmup:N (default warmup:100)
	Coverage       *float64 `toml:"coverage"`        // nominal interval coverage (default 0.9)
	IntervalWindow *int     `toml:"interval_window"` // residuals the intervals are calibrated on (default 200)
	IntervalAdapt  *float64 `toml:"interval_adapt"`  // adaptation rate γ of the interval level; 0 = plain split conformal (default 0.01)
	Interval       *string  `toml:"interval"`        // series spacing, a duration; "" or "0s" = median of recent spacings
	MaxGap         *float64 `toml:"max_gap"`         // restart the embedding after a gap of more intervals; 0 = never

	NORMAKernel   *string  `toml:"norma_kernel"`       // NORMA's kernel if not `kernel` (same gamma, degree, coef0)
	NORMALoss     *string  `toml:"norma_loss"`         // squared | epsilon | huber
	NORMAEta      *float64 `toml:"norma_eta"`          // learning rate η
	NORMASchedule *string  `toml:"norma_eta_schedule"` // constant | inv_sqrt
	NORMALambda   *float64 `toml:"norma_lambda"`       // regularisation λ
	NORMAC        *float64 `toml:"norma_c"`            // loss weight C
	NORMANu       *float64 `toml:"norma_nu"`           // ν of the ν-trick
	NORMATau      *int     `toml:"norma_tau"`          // kernel terms kept

	SOGLambda  *float64 `toml:"sog_lambda"`   // λ of k̄ = k + λ²
	SOGNu      *float64 `toml:"sog_nu"`       // ALD threshold ν
	SOGRidge   *float64 `toml:"sog_ridge"`    // ALD ridge γ
	SOGC       *float64 `toml:"sog_c"`        // box C̃
	SOGEpsilon *float64 `toml:"sog_epsilon"`  // tube ε
	SOGMaxDict *int     `toml:"sog_max_dict"` // dictionary cap
	SOGOnFull  *string  `toml:"sog_on_full"`  // replace | project
	SOGForget  *float64 `toml:"sog_forget"`   // forgetting factor ρ
	SOGSteps   *int     `toml:"sog_steps"`    // line-search steps per sample
}

// LoadConfig reads a config file strictly: an unknown key is an error
// naming it, and every problem is reported at once (errors.Join), each
// naming its key (Config.Validate).
func LoadConfig(path string) (*Config, error) {
	cfg, problems, err := decodeConfig(path)
	if err != nil {
		return nil, err
	}
	if err := cfg.Validate(); err != nil {
		problems = append(problems, unjoin(err)...)
	}
	if err := errors.Join(problems...); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return cfg, nil
}

// decodeConfig reads a config file without validating [model]. err is a
// file or syntax error; problems has one error per unknown key (a key under
// an unknown table is not reported again).
func decodeConfig(path string) (cfg *Config, problems []error, err error) {
	cfg = new(Config)
	md, err := toml.DecodeFile(path, cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	var reported []toml.Key
	for _, key := range md.Undecoded() {
		if slices.ContainsFunc(reported, func(r toml.Key) bool {
			return len(r) < len(key) && slices.Equal(r, key[:len(r)])
		}) {
			continue
		}
		reported = append(reported, key)
		problems = append(problems, fmt.Errorf("unknown key %q", key.String()))
	}
	return cfg, problems, nil
}

// Merge returns m with every key set in over replacing m's.
func (m ModelConfig) Merge(over ModelConfig) ModelConfig {
	dst := reflect.ValueOf(&m).Elem()
	src := reflect.ValueOf(over)
	for i := range src.NumField() {
		if f := src.Field(i); !f.IsNil() {
			dst.Field(i).Set(f)
		}
	}
	return m
}

// modelKeys returns the config key of each ModelConfig field, in order.
func modelKeys() []string {
	t := reflect.TypeFor[ModelConfig]()
	keys := make([]string, t.NumField())
	for i := range keys {
		keys[i] = t.Field(i).Tag.Get("toml")
	}
	return keys
}

// Pipeline returns the pipeline configuration m describes, defaults filled
// in, or every problem at once, each error naming its key ("model.KEY").
func (m ModelConfig) Pipeline() (pipeline.Config, error) {
	cfg := pipeline.DefaultConfig()
	var errs []error
	bad := func(key string, err error) { errs = append(errs, fmt.Errorf("model.%s: %w", key, err)) }

	if m.Kind != nil {
		if k, err := pipeline.ParseKind(*m.Kind); err != nil {
			bad("kind", err)
		} else {
			cfg.Kind = k
		}
	}
	setInt(&cfg.Dim, m.Dim)
	setInt(&cfg.Delay, m.Delay)
	setInt(&cfg.Window, m.Window)
	setFloat(&cfg.C, m.C)
	setFloat(&cfg.Epsilon, m.Epsilon)
	setFloat(&cfg.Coverage, m.Coverage)
	setInt(&cfg.IntervalWindow, m.IntervalWindow)
	setFloat(&cfg.MaxGap, m.MaxGap)
	setFloat(&cfg.IntervalAdapt, m.IntervalAdapt)

	gamma, degree, coef0 := pipeline.DefaultGamma, 3, 0.0
	setFloat(&gamma, m.Gamma)
	setInt(&degree, m.Degree)
	setFloat(&coef0, m.Coef0)
	kernel := func(key string, name *string) svr.Kernel {
		n := "rbf"
		if name != nil {
			n = *name
		}
		var k svr.Kernel
		switch n {
		case "rbf":
			k = svr.RBF{Gamma: gamma}
		case "poly":
			k = svr.Poly{Gamma: gamma, Degree: degree, Coef0: coef0}
		case "linear":
			k = svr.Linear{}
		default:
			bad(key, fmt.Errorf("unknown kernel %q: want rbf, poly or linear", n))
			return nil
		}
		if err := k.Validate(); err != nil {
			bad(key, err)
			return nil
		}
		return k
	}
	if k := kernel("kernel", m.Kernel); k != nil {
		cfg.Kernel = k
	} else {
		cfg.Kernel = svr.RBF{Gamma: pipeline.DefaultGamma} // reported above
	}
	if m.NORMAKernel != nil {
		cfg.NORMA.Kernel = kernel("norma_kernel", m.NORMAKernel)
	}

	if m.Scale != nil {
		if s, err := embedding.ParseScale(*m.Scale); err != nil {
			bad("scale", err)
		} else {
			cfg.Scale = s
		}
	}
	if m.Interval != nil && *m.Interval != "" {
		if d, err := time.ParseDuration(*m.Interval); err != nil {
			bad("interval", err)
		} else {
			cfg.Interval = d
		}
	}

	if m.NORMALoss != nil {
		if l, err := svr.ParseNORMALoss(*m.NORMALoss); err != nil {
			bad("norma_loss", err)
		} else {
			cfg.NORMA.Loss = l
		}
	}
	if m.NORMASchedule != nil {
		if s, err := svr.ParseNORMASchedule(*m.NORMASchedule); err != nil {
			bad("norma_eta_schedule", err)
		} else {
			cfg.NORMA.Schedule = s
		}
	}
	setFloat(&cfg.NORMA.Eta, m.NORMAEta)
	setFloat(&cfg.NORMA.Lambda, m.NORMALambda)
	setFloat(&cfg.NORMA.C, m.NORMAC)
	setFloat(&cfg.NORMA.Nu, m.NORMANu)
	setInt(&cfg.NORMA.Tau, m.NORMATau)

	if m.SOGOnFull != nil {
		if p, err := svr.ParseSOGFullPolicy(*m.SOGOnFull); err != nil {
			bad("sog_on_full", err)
		} else {
			cfg.SOG.OnFull = p
		}
	}
	setFloat(&cfg.SOG.Lambda, m.SOGLambda)
	setFloat(&cfg.SOG.Nu, m.SOGNu)
	setFloat(&cfg.SOG.Ridge, m.SOGRidge)
	setFloat(&cfg.SOG.C, m.SOGC)
	setFloat(&cfg.SOG.Epsilon, m.SOGEpsilon)
	setInt(&cfg.SOG.MaxDict, m.SOGMaxDict)
	setFloat(&cfg.SOG.Forget, m.SOGForget)
	setInt(&cfg.SOG.Steps, m.SOGSteps)

	// Numeric ranges: the pipeline's and the models' own checks, each
	// naming its key; a value that failed to parse above kept its default
	// and is not reported twice.
	if err := cfg.Validate(); err != nil {
		for _, e := range unjoin(err) {
			errs = append(errs, fmt.Errorf("model: %w", e))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return pipeline.Config{}, err
	}
	return cfg, nil
}

func setInt(dst *int, v *int) {
	if v != nil {
		*dst = *v
	}
}

func setFloat(dst *float64, v *float64) {
	if v != nil {
		*dst = *v
	}
}

// unjoin flattens a tree of joined errors into its leaves.
func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, unjoin(e)...)
		}
		return out
	}
	return []error{err}
}

// modelFlag is a flag.Value setting one ModelConfig field (a *int, *float64
// or *string), so that the flags of the [model] keys are declared once, from
// the struct, and Merge tells which were given.
type modelFlag struct {
	field reflect.Value // the pointer field
}

func (f modelFlag) String() string {
	if !f.field.IsValid() || f.field.IsNil() {
		return ""
	}
	return fmt.Sprint(f.field.Elem().Interface())
}

func (f modelFlag) Set(s string) error {
	var v any
	switch f.field.Type().Elem().Kind() {
	case reflect.Int:
		n, err := strconv.Atoi(s)
		if err != nil {
			return fmt.Errorf("not an integer: %q", s)
		}
		v = n
	case reflect.Float64:
		x, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsNaN(x) {
			return fmt.Errorf("not a number: %q", s)
		}
		v = x
	default:
		v = s
	}
	p := reflect.New(f.field.Type().Elem())
	p.Elem().Set(reflect.ValueOf(v))
	f.field.Set(p)
	return nil
}
