package main

import (
	"encoding"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
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
	NATS  NATSConfig   `toml:"nats"`
	Input InputConfig  `toml:"input"`
	Model ModelConfig  `toml:"model"`
	Rules []RuleConfig `toml:"rules"`
	// Resolutions forecast series again at coarser steps, each by a
	// series of its own: [[resolutions]] with match (default every
	// series), step (required) and any [model] key over [model].
	Resolutions []RuleConfig   `toml:"resolutions"`
	Pipeline    PipelineConfig `toml:"pipeline"`
	Output      OutputConfig   `toml:"output"`
	HTTP        HTTPConfig     `toml:"http"`
	State       StateConfig    `toml:"state"`
	// History, if present, warms new series from InfluxDB
	// (history_config.go).
	History *HistoryConfig `toml:"history"`

	LogFormat string `toml:"log_format"` // "text" (default) or "json" (logging.go)
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

	// Credentials and TLS of every NATS connection forecastd makes, with
	// Telegraf's names (internal/natsconn); the embedded server requires
	// the same credentials. At most one of username (with password),
	// token, nkey_seed (a seed file) and credentials (a .creds file).
	Username           string `toml:"username"`
	Password           string `toml:"password"`
	Token              string `toml:"token"`
	NKeySeed           string `toml:"nkey_seed"`
	Credentials        string `toml:"credentials"`
	Secure             bool   `toml:"secure"`               // TLS, the server verified against the system's roots or tls_ca
	TLSCA              string `toml:"tls_ca"`               // PEM CA certificates the server's must chain to
	TLSCert            string `toml:"tls_cert"`             // PEM client certificate, with tls_key
	TLSKey             string `toml:"tls_key"`              // its PEM private key
	InsecureSkipVerify bool   `toml:"insecure_skip_verify"` // TLS without verifying the server: tests only
}

// InputConfig is [input], with Telegraf's names.
type InputConfig struct {
	Subjects       []string         `toml:"subjects"`         // subjects to read, wildcards allowed
	DataFormat     DataFormat       `toml:"data_format"`      // json | influx | value (default json)
	JSONTimeFormat TimeFormat       `toml:"json_time_format"` // unix | unix_ms | unix_us | unix_ns (default unix)
	QueueGroup     string           `toml:"queue_group"`      // share core subscriptions among instances
	MaxPayload     int              `toml:"max_payload"`      // bytes a message may have; larger ones are refused, counted "too_large" (default 1048576)
	FieldPass      []string         `toml:"fieldpass"`        // influx: only fields whose key matches one of these globs make series (default all)
	FieldDrop      []string         `toml:"fielddrop"`        // influx: fields whose key matches one of these globs make no series
	JetStream      *JetStreamConfig `toml:"jetstream"`        // read a durable JetStream consumer instead

	// Bounds of what a publisher sends (README "Limits"), see limits.go.
	MaxPast              Duration `toml:"max_past"`               // points older than this before receipt are refused (default 168h; "0s" no bound)
	MaxFuture            Duration `toml:"max_future"`             // points further ahead of receipt are refused (default 1m, at most 24h)
	MaxKeyLen            int      `toml:"max_key_len"`            // bytes of a series key at most; longer are refused (default 1024)
	MaxPoints            int      `toml:"max_points"`             // points of one message at most; the rest is refused (default 10000)
	SeriesAcrossSubjects bool     `toml:"series_across_subjects"` // json: "series" is the key itself, not "<subject> <series>"
}

// JetStreamConfig is [input.jetstream]; its presence selects JetStream.
type JetStreamConfig struct {
	Stream        string   `toml:"stream"`          // stream name (required)
	Durable       string   `toml:"durable"`         // durable consumer name (required)
	AckWait       Duration `toml:"ack_wait"`        // redelivery after this long without an ack (default 30s)
	MaxDeliver    *int     `toml:"max_deliver"`     // deliveries of a message at most; -1 unlimited (default 5)
	NakDelay      Duration `toml:"nak_delay"`       // redelivery delay after a sink failure (default 5s)
	MaxAckPending int      `toml:"max_ack_pending"` // messages delivered and not yet acked at most (default 20000)

	// Partitions (see scale.go): the stream's subjects split by the
	// server's subject mapping, one consumer per partition held.
	Partitions       int    `toml:"partitions"`        // number of partitions; 0 = one consumer, no leases
	PartitionSubject string `toml:"partition_subject"` // a partition's filter subject, "{partition}" standing for its number
	MaxPartitions    int    `toml:"max_partitions"`    // partitions this instance holds at most (default all)
}

// RuleConfig is one [[rules]] entry: the [model] keys it sets override
// [model] for the series whose key matches Match.
type RuleConfig struct {
	Match *string `toml:"match"` // glob on the series key, Telegraf's: * (any run, '/' included) ? [...] {a,b} (internal/keyglob)
	ModelConfig
}

// PipelineConfig is [pipeline]: how the series are run.
type PipelineConfig struct {
	Shards          int      `toml:"shards"`           // goroutines the series are spread over (default GOMAXPROCS)
	QueueSize       int      `toml:"queue_size"`       // points queued per shard (default 4096)
	MaxSeries       int      `toml:"max_series"`       // series held at most (default 100 000; 0 means the default)
	IdleTTL         Duration `toml:"idle_ttl"`         // evict a series without points for this long (default 1h; "0s" never)
	ShutdownTimeout Duration `toml:"shutdown_timeout"` // deadline of a graceful stop (default 30s)
	MemoryBudget    ByteSize `toml:"memory_budget"`    // live heap the daemon keeps under by holding fewer series (default none)
	GCPercent       *int     `toml:"gc_percent"`       // the collector's GOGC unless the environment sets it (default 25)
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
	URL               string   `toml:"url"`
	Token             string   `toml:"token"`
	Organization      string   `toml:"organization"`
	Bucket            string   `toml:"bucket"`
	Measurement       string   `toml:"measurement"`
	MetricBatchSize   int      `toml:"metric_batch_size"`
	MetricBufferLimit int      `toml:"metric_buffer_limit"`
	FlushInterval     Duration `toml:"flush_interval"`
	Timeout           Duration `toml:"timeout"`
	CreateDatabase    bool     `toml:"create_database"`  // 1.x: create a missing database at start; false: refuse to start, naming the command
	LegacyTagNames    bool     `toml:"legacy_tag_names"` // tags series, measurement, field and an unpadded horizon, as before series_key, src_measurement, src_field
}

// HTTPConfig is [http].
type HTTPConfig struct {
	Listen string `toml:"listen"` // address of /metrics, /-/healthy and /-/ready, e.g. "127.0.0.1:9470"; empty: no HTTP
}

// StateConfig is [state].
type StateConfig struct {
	Dir                string   `toml:"dir"`                 // where state is kept: model checkpoints, the embedded server's JetStream store
	CheckpointInterval Duration `toml:"checkpoint_interval"` // how often every changed series' state is saved (default 30s)
	KeepEvicted        *int     `toml:"keep_evicted"`        // states of series evicted at max_series kept for their return (default max_series)

	// store = "jetstream" (see scale.go): states and partition leases in
	// JetStream key-value buckets instead of dir.
	Store       string   `toml:"store"`        // "dir" (default) or "jetstream"
	Bucket      string   `toml:"bucket"`       // states' bucket (default forecastd-state)
	LeaseBucket string   `toml:"lease_bucket"` // leases' bucket (default forecastd-leases)
	LeaseTTL    Duration `toml:"lease_ttl"`    // a dead instance's partitions are taken over after this (default 4s)
	Replicas    int      `toml:"replicas"`     // both buckets' replicas (default 1; 3 on a 3-node cluster)
	Instance    string   `toml:"instance"`     // this instance's name in the leases (default host name and pid)
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
// pipeline.DefaultConfig (target change, seasons 1d and 7d, combined; RBF
// γ = 0.01, C = 3, ε = 0.6 in the running scale's units; B = 5, τ = 1;
// window 100). pipeline.PaperConfig is the AOSVR paper's setup.
//
// The flag of each key has the key's name, except kind, whose flag is
// --model.
type ModelConfig struct {
	Kind   *string `toml:"kind"`   // a registered kind: aosvr | sogsvr | norma (default aosvr)
	Dim    *int    `toml:"dim"`    // embedding dimension B (default 5)
	Delay  *int    `toml:"delay"`  // embedding delay τ in points (default 1)
	Window *int    `toml:"window"` // AOSVR forgetting window; 0 = no forgetting (default 100)

	Kernel *string  `toml:"kernel"` // rbf | poly | linear (default rbf)
	Gamma  *float64 `toml:"gamma"`  // rbf and poly γ (default 0.01)
	Degree *int     `toml:"degree"` // poly degree (default 3)
	Coef0  *float64 `toml:"coef0"`  // poly coef0 (default 0)

	C       *float64 `toml:"c"`       // AOSVR box C (default 3)
	Epsilon *float64 `toml:"epsilon"` // AOSVR tube ε (default 0.6)

	Scale          *string  `toml:"scale"`           // none | fixed:MIN,MAX | warmup:N (default none)
	Coverage       *float64 `toml:"coverage"`        // nominal interval coverage (default 0.9)
	IntervalWindow *int     `toml:"interval_window"` // residuals the intervals are calibrated on (default 200)
	IntervalAdapt  *float64 `toml:"interval_adapt"`  // adaptation rate γ of the interval level; 0 = plain split conformal (default 0.01)
	Interval       *string  `toml:"interval"`        // series spacing, a duration; "" or "0s" = median of recent spacings
	MaxGap         *float64 `toml:"max_gap"`         // restart the embedding after a gap of more intervals; 0 = never
	Horizon        *int     `toml:"horizon"`         // points ahead each forecast reaches, 1..336 (default 1)
	Step           *string  `toml:"step"`            // resolution: raw points aggregated into buckets of this duration ("" = raw)
	Aggregate      *string  `toml:"aggregate"`       // mean | min | max | last | sum | count | rate (default mean)
	StepGrace      *string  `toml:"step_grace"`      // how long past a bucket's end its late points are waited for (default 10% of step, at least 1s)

	Target  *string  `toml:"target"`  // change | level (default change)
	Seasons *string  `toml:"seasons"` // seasonal periods, comma-separated durations ("1d,7d" default; "" none)
	Combine *bool    `toml:"combine"` // combine the SVR with the simple rules (default true)
	Min     *float64 `toml:"min"`     // forecasts and bounds are clipped to at least this
	Max     *float64 `toml:"max"`     // … and at most this

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

	// Anomaly detection (see anomaly_config.go).
	AnomalyDirection    *string  `toml:"anomaly_direction"`       // both | above | below (default both)
	AnomalyThreshold    *float64 `toml:"anomaly_threshold"`       // score above which a point is outside (default 3)
	AnomalyMinDeviation *float64 `toml:"anomaly_min_deviation"`   // smallest |y − ŷ| that can be outside (default 0)
	AnomalyOpenK        *int     `toml:"anomaly_open_k"`          // an event opens when K of …
	AnomalyOpenN        *int     `toml:"anomaly_open_n"`          // … the last N points were outside (default 1 of 1)
	AnomalyCloseM       *int     `toml:"anomaly_close_m"`         // it closes after M points inside (default 10)
	AnomalyStepFloor    *float64 `toml:"anomaly_step_floor"`      // half-widths count as ≥ this × mean |Δy| (default 1; 0 none)
	AnomalySurprise     *float64 `toml:"anomaly_surprise"`        // an event opens only above this × the window's highest score (default 1.4; 0 off)
	AnomalySurpriseWin  *string  `toml:"anomaly_surprise_window"` // that window, a duration (default 25h)
	AnomalyExtremeQuiet *string  `toml:"anomaly_extreme_quiet"`   // a new high or low after this long without one opens an event (default 48h; "0s" off)
	AnomalySeasonal     *float64 `toml:"anomaly_seasonal"`        // … and a run of points this × the mean seasonal deviation from a day or a week before (default 6; 0 off)
	AnomalySeasonalRun  *int     `toml:"anomaly_seasonal_run"`    // … that many points in a row (default 8)
	LearnAnomalies      *bool    `toml:"learn_anomalies"`         // learn the points inside an open event (default true)

	// Thresholds (see threshold_config.go).
	ThresholdAbove       *float64 `toml:"threshold_above"`       // warn before the series reaches this value from below
	ThresholdBelow       *float64 `toml:"threshold_below"`       // warn before the series falls to this value
	ThresholdProbability *float64 `toml:"threshold_probability"` // probability of being beyond at which a step counts as crossed (default 0.49)
	ThresholdOpen        *int     `toml:"threshold_open"`        // forecasts in a row crossing within the horizon that open an event (default 2)
	ThresholdClose       *int     `toml:"threshold_close"`       // forecasts in a row not crossing that close it (default 3)

	// Params holds the keys of model kinds registered in pipeline that have
	// no field above (paramKeys), each of its key's type (string for a
	// kernel), so that a new kind needs no change here.
	Params map[string]any `toml:"-"`
}

// LoadConfig reads a config file strictly and returns every problem of
// it at once, as a *ConfigError: a value of the wrong type, an unknown key
// (with the nearest known one), an invalid value (Config.Validate), each
// with its line and key.
func LoadConfig(path string) (*Config, error) {
	cfg, f, err := decodeFile(path)
	if err != nil {
		return nil, err
	}
	if err := cfg.Validate(); err != nil {
		for _, e := range unjoin(err) {
			f.add(e)
		}
	}
	if err := f.err(); err != nil {
		return nil, err
	}
	return cfg, nil
}

// decodeConfig reads a config file without validating it. err is a file
// or syntax error; problems has one *ConfigProblem per value of the wrong
// type and per unknown key (a key under an unknown table is not reported
// again). What could be read is in cfg.
func decodeConfig(path string) (cfg *Config, problems []error, err error) {
	cfg, f, err := decodeFile(path)
	if err != nil {
		return nil, nil, err
	}
	if ce := f.err(); ce != nil {
		for _, p := range ce.(*ConfigError).Problems {
			problems = append(problems, p)
		}
	}
	return cfg, problems, nil
}

// ConfigError is every problem of a configuration file, in the order of
// their lines (those of no line last). Its text has a line per problem.
type ConfigError struct {
	Path     string
	Problems []*ConfigProblem
}

func (e *ConfigError) Error() string {
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = p.Error()
	}
	return strings.Join(lines, "\n")
}

// Unwrap returns the problems, for errors.Is and errors.As.
func (e *ConfigError) Unwrap() []error {
	errs := make([]error, len(e.Problems))
	for i, p := range e.Problems {
		errs[i] = p
	}
	return errs
}

// ConfigProblem is one problem of a configuration file: "FILE:LINE: key:
// what is wrong" (no LINE when the key is absent, as a required one).
type ConfigProblem struct {
	Path string
	Line int // 0: not tied to a line
	Err  error
}

func (p *ConfigProblem) Error() string {
	msg := packagePrefix.ReplaceAllString(p.Err.Error(), "")
	if p.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", p.Path, p.Line, msg)
	}
	return fmt.Sprintf("%s: %s", p.Path, msg)
}

// packagePrefix is what the packages that check a value put before their
// message ("sources: unknown data format", "time: invalid duration").
var packagePrefix = regexp.MustCompile(`\b(?:sources|sinks|time): `)

func (p *ConfigProblem) Unwrap() error { return p.Err }

// keyError is a problem of one key, or of a value drawn from a few: its
// text is "table.key (note): msg", and at lists the keys it is about, most
// specific first, relative to table, for its line.
type keyError struct {
	table string // "model", "pipeline", `rules[2]`
	key   string // may be empty: then msg names the key ("dim must be …")
	note  string // `match "cpu.*"`
	msg   string
	at    []string
	err   error // what it wraps, for errors.Is
}

func (e *keyError) Error() string {
	s := e.table
	if e.key != "" {
		if s != "" {
			s += "."
		}
		s += e.key
	}
	if e.note != "" {
		s += " (" + e.note + ")"
	}
	if s == "" {
		return e.msg
	}
	return s + ": " + e.msg
}

func (e *keyError) Unwrap() error { return e.err }

// configFile collects the problems of one configuration file and places
// each on the line of its key.
type configFile struct {
	path     string
	lines    map[string]int // keyLines of the file
	problems []*ConfigProblem
}

// keyPath matches the key a plain validation error starts with
// ("input.subjects[1]: …", "output.influxdb.bucket: …").
var keyPath = regexp.MustCompile(`^[A-Za-z0-9_-]+(\[[0-9]+\])?(\.[A-Za-z0-9_-]+(\[[0-9]+\])?)*$`)

// add records err, on the line of the key it names.
func (f *configFile) add(err error) {
	var cands []string
	var ke *keyError
	if errors.As(err, &ke) {
		for _, k := range ke.at {
			cands = append(cands, join(ke.table, k))
			if strings.HasPrefix(ke.table, "rules[") { // a [model] key merged into the rule
				cands = append(cands, join("model", k))
			}
		}
		cands = append(cands, join(ke.table, ke.key), ke.table)
	} else if k, _, ok := strings.Cut(err.Error(), ": "); ok && keyPath.MatchString(k) {
		cands = append(cands, k)
	}
	f.problems = append(f.problems, &ConfigProblem{Path: f.path, Line: f.line(cands), Err: err})
}

// line returns the line of the first of keys defined in the file, else of
// the nearest table above the first; 0 if none is.
func (f *configFile) line(keys []string) int {
	for _, k := range keys {
		if l := f.lines[k]; k != "" && l > 0 {
			return l
		}
	}
	if len(keys) == 0 {
		return 0
	}
	for k := keys[0]; k != ""; {
		if l := f.lines[k]; l > 0 {
			return l
		}
		if i := strings.LastIndexAny(k, ".["); i >= 0 {
			k = k[:i]
		} else {
			k = ""
		}
	}
	return 0
}

// err returns the problems as a *ConfigError in the order of their lines,
// or nil.
func (f *configFile) err() error {
	if len(f.problems) == 0 {
		return nil
	}
	ps := slices.Clone(f.problems)
	slices.SortStableFunc(ps, func(a, b *ConfigProblem) int {
		switch {
		case a.Line == b.Line:
			return 0
		case a.Line == 0:
			return 1
		case b.Line == 0:
			return -1
		}
		return a.Line - b.Line
	})
	return &ConfigError{Path: f.path, Problems: ps}
}

func join(table, key string) string {
	switch {
	case key == "":
		return table
	case table == "":
		return key
	}
	return table + "." + key
}

// decodeFile reads a config file into a Config, key by key, so that a
// value of the wrong type does not stop the reading of the others: every
// such value and every unknown key is a problem in f. err is a file or
// TOML syntax error, after which nothing can be read.
func decodeFile(path string) (*Config, *configFile, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	f := &configFile{path: path, lines: keyLines(string(b))}
	var root map[string]toml.Primitive
	md, err := toml.Decode(string(b), &root)
	if err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			return nil, nil, &ConfigError{Path: path, Problems: []*ConfigProblem{{Path: path, Line: pe.Position.Line, Err: errors.New(pe.Message)}}}
		}
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	cfg := new(Config)
	d := &tomlDecoder{md: &md, f: f}
	d.table(root, reflect.ValueOf(cfg).Elem(), "")
	return cfg, f, nil
}

// tomlDecoder decodes a file's tables into the schema's structs one key at
// a time.
type tomlDecoder struct {
	md *toml.MetaData
	f  *configFile
}

// table decodes the keys of a TOML table into the struct rv; path is the
// table's ("" at the top, "input.jetstream", "rules[1]").
func (d *tomlDecoder) table(keys map[string]toml.Primitive, rv reflect.Value, path string) {
	fields := schemaFields(rv.Type())
	for _, key := range slices.Sorted(maps.Keys(keys)) {
		at := join(path, tomlKeyPart(key))
		index, ok := fields[key]
		if mc := modelConfigOf(rv); !ok && mc != nil {
			if mk, isParam := paramKey(key); isParam {
				d.param(keys[key], mc, mk, at)
				continue
			}
		}
		if !ok {
			d.f.add(&keyError{msg: unknownKey(rv.Type(), path, key), at: []string{at}})
			continue
		}
		d.value(keys[key], rv.FieldByIndex(index), at)
	}
}

// modelConfigOf returns the ModelConfig the struct rv is or embeds, or nil.
func modelConfigOf(rv reflect.Value) *ModelConfig {
	if rv.Type() == reflect.TypeFor[ModelConfig]() {
		return rv.Addr().Interface().(*ModelConfig)
	}
	if f := rv.FieldByName("ModelConfig"); f.IsValid() && f.Type() == reflect.TypeFor[ModelConfig]() {
		return f.Addr().Interface().(*ModelConfig)
	}
	return nil
}

// paramKey returns the registration of a model kind's key that has no
// ModelConfig field (a key of ModelConfig.Params).
func paramKey(key string) (pipeline.ModelKey, bool) {
	if slices.Contains(modelKeys(), key) {
		return pipeline.ModelKey{}, false
	}
	_, mk, ok := pipeline.KeyKind(key)
	return mk, ok
}

// paramKeys returns the model kinds' keys that have no ModelConfig field.
func paramKeys() []pipeline.ModelKey {
	var out []pipeline.ModelKey
	for _, mk := range pipeline.ModelKeys() {
		if _, ok := paramKey(mk.Key); ok {
			out = append(out, mk)
		}
	}
	return out
}

// paramValue returns a new value of the Go type of a key of type t.
func paramValue(t pipeline.KeyType) any {
	switch t {
	case pipeline.KeyInt:
		return new(int)
	case pipeline.KeyFloat:
		return new(float64)
	case pipeline.KeyBool:
		return new(bool)
	}
	return new(string)
}

// param decodes the value of the kind's key mk into mc.Params.
func (d *tomlDecoder) param(prim toml.Primitive, mc *ModelConfig, mk pipeline.ModelKey, path string) {
	v := paramValue(mk.Type)
	if err := d.md.PrimitiveDecode(prim, v); err != nil {
		d.f.add(&keyError{key: path, msg: d.typeMismatch(prim, reflect.TypeOf(v), path, err), at: []string{path}})
		return
	}
	if mc.Params == nil {
		mc.Params = map[string]any{}
	}
	mc.Params[mk.Key] = reflect.ValueOf(v).Elem().Interface()
}

// value decodes one key's value into fv: a table, an array of tables, or a
// leaf value, whose wrong type is a problem that leaves fv zero.
func (d *tomlDecoder) value(prim toml.Primitive, fv reflect.Value, path string) {
	if tu, ok := fv.Addr().Interface().(encoding.TextUnmarshaler); ok {
		// A typed value (Duration, DataFormat, …), parsed once, here;
		// the file must write it as a string.
		var text string
		if err := d.md.PrimitiveDecode(prim, &text); err != nil {
			d.f.add(&keyError{key: path, msg: d.typeMismatch(prim, reflect.TypeFor[string](), path, err), at: []string{path}})
			return
		}
		if err := tu.UnmarshalText([]byte(text)); err != nil {
			fv.SetZero()
			d.f.add(&keyError{key: path, msg: err.Error(), at: []string{path}, err: err})
		}
		return
	}
	t := fv.Type()
	var sub map[string]toml.Primitive
	switch {
	case t.Kind() == reflect.Struct:
		if d.decode(prim, &sub, path, "a table") {
			d.table(sub, fv, path)
		}
		return
	case t.Kind() == reflect.Pointer && t.Elem().Kind() == reflect.Struct:
		if d.decode(prim, &sub, path, "a table") {
			n := reflect.New(t.Elem())
			d.table(sub, n.Elem(), path)
			fv.Set(n)
		}
		return
	case t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Struct:
		var elems []map[string]toml.Primitive
		if d.decode(prim, &elems, path, "an array of tables, [[…]]") {
			s := reflect.MakeSlice(t, len(elems), len(elems))
			for i, e := range elems {
				d.table(e, s.Index(i), fmt.Sprintf("%s[%d]", path, i))
			}
			fv.Set(s)
		}
		return
	}
	if err := d.md.PrimitiveDecode(prim, fv.Addr().Interface()); err != nil {
		fv.SetZero()
		d.f.add(&keyError{key: path, msg: d.typeMismatch(prim, t, path, err), at: []string{path}})
	}
}

// decode decodes prim into v (a table or an array of tables), reporting a
// value that is not one.
func (d *tomlDecoder) decode(prim toml.Primitive, v any, path, want string) bool {
	if err := d.md.PrimitiveDecode(prim, v); err != nil {
		d.f.add(&keyError{key: path, msg: "want " + want + ", got " + d.describe(prim), at: []string{path}})
		return false
	}
	return true
}

// durationKeys are the keys whose value is a duration string.
var durationKeys = []string{"ack_wait", "nak_delay", "idle_ttl", "shutdown_timeout", "flush_interval", "timeout", "checkpoint_interval", "interval"}

// typeMismatch says what a key wants and what it got.
func (d *tomlDecoder) typeMismatch(prim toml.Primitive, t reflect.Type, path string, err error) string {
	got := d.describe(prim)
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	var want string
	switch t.Kind() {
	case reflect.String:
		key := path[strings.LastIndex(path, ".")+1:]
		if slices.Contains(durationKeys, key) {
			return `durations are strings, like "30s" or "1h"; got ` + got
		}
		want = "a string"
	case reflect.Int:
		want = "an integer"
	case reflect.Float64:
		want = "a number"
	case reflect.Bool:
		want = "true or false"
	case reflect.Slice:
		want = `a list of strings, like ["a", "b"]`
	default:
		want = t.String()
	}
	if strings.Contains(err.Error(), "incompatible types") || strings.Contains(err.Error(), "type mismatch") {
		return "want " + want + ", got " + got
	}
	// Out of range and the like: toml's message without its prefix.
	msg := err.Error()
	if i := strings.Index(msg, "): "); strings.HasPrefix(msg, "toml: ") && i >= 0 {
		msg = msg[i+3:]
	}
	return fmt.Sprintf("want %s: %s", want, strings.TrimPrefix(msg, "toml: "))
}

// describe names a TOML value's type, with the value if it is short.
func (d *tomlDecoder) describe(prim toml.Primitive) string {
	var v any
	if err := d.md.PrimitiveDecode(prim, &v); err != nil {
		return "another type"
	}
	switch v := v.(type) {
	case string:
		if len(v) > 40 {
			return "a string"
		}
		return fmt.Sprintf("the string %q", v)
	case int64:
		return fmt.Sprintf("the integer %d", v)
	case float64:
		return fmt.Sprintf("the number %v", v)
	case bool:
		return fmt.Sprintf("%v", v)
	case []any:
		return "an array"
	case []map[string]any:
		return "an array of tables"
	case map[string]any:
		return "a table"
	case time.Time:
		return "a date"
	}
	return fmt.Sprintf("%T", v)
}

// schemaFields maps the TOML keys of a struct type to their fields'
// indexes, those of an embedded struct (RuleConfig's ModelConfig) included.
func schemaFields(t reflect.Type) map[string][]int {
	out := map[string][]int{}
	for _, f := range reflect.VisibleFields(t) {
		if key := f.Tag.Get("toml"); key != "" && key != "-" {
			out[key] = f.Index
		}
	}
	return out
}

// unknownKey says that key, in the table at path of type t, is unknown,
// with the nearest key of the table if one is close (an edit distance of
// at most a third of its length, and 2), else the table the key belongs in
// if it is one of another table.
func unknownKey(t reflect.Type, path, key string) string {
	msg := fmt.Sprintf("unknown key %q", join(path, tomlKeyPart(key)))
	best, bestD := "", 3
	for k := range schemaFields(t) {
		if d := editDistance(key, k); d < bestD && d <= max(1, len(key)/3) {
			best, bestD = k, d
		}
	}
	if best != "" {
		return fmt.Sprintf("%s (did you mean %q?)", msg, best)
	}
	if table := schemaTableOf(reflect.TypeFor[Config](), "", key); table != "" && table != path {
		return fmt.Sprintf("%s (it belongs in [%s])", msg, table)
	}
	return msg
}

// isTable reports whether the schema type t is a table: a struct that is
// not a typed value (Duration, DataFormat, …).
func isTable(t reflect.Type) bool {
	return t.Kind() == reflect.Struct && !reflect.PointerTo(t).Implements(reflect.TypeFor[encoding.TextUnmarshaler]())
}

// schemaTableOf returns the first table of the schema t (at path) that has
// key, "" if none.
func schemaTableOf(t reflect.Type, path, key string) string {
	var subs []reflect.StructField
	for _, f := range reflect.VisibleFields(t) {
		name := f.Tag.Get("toml")
		if name == "" {
			continue
		}
		ft := f.Type
		if ft.Kind() == reflect.Pointer || ft.Kind() == reflect.Slice {
			ft = ft.Elem()
		}
		if isTable(ft) {
			subs = append(subs, f)
			continue
		}
		if name == key && path != "" {
			return path
		}
	}
	for _, f := range subs {
		ft := f.Type
		if ft.Kind() == reflect.Pointer || ft.Kind() == reflect.Slice {
			ft = ft.Elem()
		}
		sub := join(path, f.Tag.Get("toml"))
		if f.Type.Kind() == reflect.Slice {
			sub = "[" + sub + "]"
		}
		if table := schemaTableOf(ft, sub, key); table != "" {
			return table
		}
	}
	return ""
}

// editDistance is the Levenshtein distance of a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// tomlKeyPart writes one part of a key as TOML would: bare if it can be.
func tomlKeyPart(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-')
	}) < 0 {
		return s
	}
	return strconv.Quote(s)
}

// keyLines maps each key and table header of a TOML document, which must
// be valid, to the line it is on: "model.dim", "input.jetstream",
// "rules[1]" and "rules[1].match" (arrays of tables numbered from 0), a
// part that is not bare quoted (`input."a b"`).
func keyLines(src string) map[string]int {
	s := &tomlScanner{src: src, line: 1}
	out := map[string]int{}
	set := func(k string, line int) {
		if _, ok := out[k]; !ok {
			out[k] = line
		}
	}
	table := ""
	count := map[string]int{}
	for {
		s.skipBlank()
		if s.i >= len(s.src) {
			return out
		}
		line := s.line
		if s.src[s.i] == '[' {
			array := strings.HasPrefix(s.src[s.i:], "[[")
			s.i += 1 + b2i(array)
			name := s.key()
			s.skipUntilEOL()           // "]" or "]]" and a comment
			for i := range len(name) { // the tables it implies: [a.b] defines a
				if name[i] == '.' {
					set(name[:i], line)
				}
			}
			if array {
				table = fmt.Sprintf("%s[%d]", name, count[name])
				count[name]++
			} else {
				table = name
			}
			set(table, line)
			continue
		}
		k := join(table, s.key())
		for i := len(table) + 1; i < len(k); i++ { // a.b = 1 defines a
			if k[i] == '.' {
				set(k[:i], line)
			}
		}
		set(k, line)
		s.value()
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// tomlScanner finds keys and skips values in a valid TOML document.
type tomlScanner struct {
	src  string
	i    int
	line int
}

// skipBlank skips spaces, newlines and comments.
func (s *tomlScanner) skipBlank() {
	for s.i < len(s.src) {
		switch s.src[s.i] {
		case '\n':
			s.line++
		case ' ', '\t', '\r':
		case '#':
			for s.i < len(s.src) && s.src[s.i] != '\n' {
				s.i++
			}
			continue
		default:
			return
		}
		s.i++
	}
}

// skipUntilEOL skips to the end of the line (not past its newline).
func (s *tomlScanner) skipUntilEOL() {
	for s.i < len(s.src) && s.src[s.i] != '\n' {
		s.i++
	}
}

// key reads a dotted key up to '=' (skipped) or ']', parts quoted as
// tomlKeyPart writes them.
func (s *tomlScanner) key() string {
	var parts []string
	for s.i < len(s.src) {
		for s.i < len(s.src) && (s.src[s.i] == ' ' || s.src[s.i] == '\t') {
			s.i++
		}
		if s.i >= len(s.src) {
			break
		}
		switch c := s.src[s.i]; c {
		case '"', '\'':
			j := s.i + 1
			var b strings.Builder
			for j < len(s.src) && s.src[j] != c {
				if c == '"' && s.src[j] == '\\' && j+1 < len(s.src) {
					j++
				}
				b.WriteByte(s.src[j])
				j++
			}
			parts = append(parts, tomlKeyPart(b.String()))
			s.i = j + 1
		case '.':
			s.i++
		case '=':
			s.i++
			return strings.Join(parts, ".")
		case ']', '\n':
			return strings.Join(parts, ".")
		default:
			j := s.i
			for j < len(s.src) && strings.IndexByte(" \t.=]\n", s.src[j]) < 0 {
				j++
			}
			parts = append(parts, s.src[s.i:j])
			s.i = j
		}
	}
	return strings.Join(parts, ".")
}

// value skips a value, which may span lines (arrays, multi-line strings),
// and the rest of its line.
func (s *tomlScanner) value() {
	depth := 0
	for s.i < len(s.src) {
		c := s.src[s.i]
		switch {
		case c == '\n':
			if depth == 0 {
				return
			}
			s.line++
		case c == '#':
			s.skipUntilEOL()
			continue
		case c == '[' || c == '{':
			depth++
		case c == ']' || c == '}':
			depth--
		case c == '"' || c == '\'':
			s.str(c)
			continue
		}
		s.i++
	}
}

// str skips a string beginning at s.i with quote q, of one or three.
func (s *tomlScanner) str(q byte) {
	triple := strings.Repeat(string(q), 3)
	if strings.HasPrefix(s.src[s.i:], triple) {
		s.i += 3
		for s.i < len(s.src) && !strings.HasPrefix(s.src[s.i:], triple) {
			if s.src[s.i] == '\n' {
				s.line++
			}
			if q == '"' && s.src[s.i] == '\\' {
				s.i++
				if s.i < len(s.src) && s.src[s.i] == '\n' {
					s.line++
				}
			}
			s.i++
		}
		s.i += 3
		for s.i < len(s.src) && s.src[s.i] == q { // up to two quotes end the content
			s.i++
		}
		return
	}
	s.i++
	for s.i < len(s.src) && s.src[s.i] != q && s.src[s.i] != '\n' {
		if q == '"' && s.src[s.i] == '\\' {
			s.i++
		}
		s.i++
	}
	s.i++
}

// Merge returns m with every key set in over replacing m's.
func (m ModelConfig) Merge(over ModelConfig) ModelConfig {
	dst := reflect.ValueOf(&m).Elem()
	src := reflect.ValueOf(over)
	for i := range len(modelKeys()) {
		if f := src.Field(i); !f.IsNil() {
			dst.Field(i).Set(f)
		}
	}
	if len(over.Params) > 0 {
		p := maps.Clone(m.Params)
		if p == nil {
			p = map[string]any{}
		}
		maps.Copy(p, over.Params)
		m.Params = p
	}
	return m
}

// modelKeys returns the config key of each ModelConfig field, in order
// (Params, last, is not one).
func modelKeys() []string {
	t := reflect.TypeFor[ModelConfig]()
	keys := make([]string, 0, t.NumField())
	for i := range t.NumField() {
		if k := t.Field(i).Tag.Get("toml"); k != "-" {
			keys = append(keys, k)
		}
	}
	return keys
}

// Pipeline returns the pipeline configuration m describes, defaults filled
// in, or every problem at once, each error naming its key ("model.KEY").
func (m ModelConfig) Pipeline() (pipeline.Config, error) {
	cfg := pipeline.DefaultConfig()
	var errs []error
	bad := func(key string, err error) { errs = append(errs, modelError(key, err)) }

	if m.Kind != nil {
		if k, err := pipeline.ParseKind(*m.Kind); err != nil {
			bad("kind", err)
		} else {
			cfg.Kind = k
		}
	}
	setInt(&cfg.Dim, m.Dim)
	setInt(&cfg.Delay, m.Delay)
	setFloat(&cfg.Coverage, m.Coverage)
	setInt(&cfg.IntervalWindow, m.IntervalWindow)
	setFloat(&cfg.MaxGap, m.MaxGap)
	setFloat(&cfg.IntervalAdapt, m.IntervalAdapt)
	setInt(&cfg.Horizon, m.Horizon)

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

	if m.Scale != nil {
		if s, err := embedding.ParseScale(*m.Scale); err != nil {
			bad("scale", err)
		} else {
			cfg.Scale = s
		}
	}
	if m.Target != nil {
		if t, err := pipeline.ParseTarget(*m.Target); err != nil {
			bad("target", err)
		} else {
			cfg.Target = t
		}
	}
	if m.Seasons != nil {
		if s, err := parseSeasons(*m.Seasons); err != nil {
			bad("seasons", err)
		} else {
			cfg.Seasons = s
		}
	}
	if m.Combine != nil {
		cfg.Combine = *m.Combine
	}
	setFloat(&cfg.Min, m.Min)
	setFloat(&cfg.Max, m.Max)
	if m.Interval != nil && *m.Interval != "" {
		if d, err := parseDuration(*m.Interval); err != nil {
			bad("interval", err)
		} else {
			cfg.Interval = d
		}
	}
	for _, d := range []struct {
		key string
		v   *string
		dst *time.Duration
	}{{"step", m.Step, &cfg.Step}, {"step_grace", m.StepGrace, &cfg.StepGrace}} {
		if d.v == nil || *d.v == "" {
			continue
		}
		if x, err := parseSeasons(*d.v); err != nil || len(x) != 1 {
			bad(d.key, fmt.Errorf("%q: want one duration like 5m, 1h or 1d", *d.v))
		} else {
			*d.dst = x[0]
		}
	}
	if m.Aggregate != nil {
		if a, err := pipeline.ParseAggregate(*m.Aggregate); err != nil {
			bad("aggregate", err)
		} else {
			cfg.Aggregate = a
		}
	}

	// The model kinds' own keys (window, c, epsilon, norma_*, sog_*), each
	// decoded by the kind that registered it (pipeline.ModelKind.Set).
	mv := reflect.ValueOf(m)
	for i, key := range modelKeys() {
		f := mv.Field(i)
		_, mk, ok := pipeline.KeyKind(key)
		if !ok || f.IsNil() {
			continue
		}
		v := f.Elem().Interface()
		if mk.Type == pipeline.KeyKernel {
			k := kernel(key, f.Interface().(*string))
			if k == nil {
				continue // reported
			}
			v = k
		}
		if err := pipeline.SetModelKey(&cfg, key, v); err != nil {
			bad(key, err)
		}
	}
	for _, mk := range paramKeys() {
		v, ok := m.Params[mk.Key]
		if !ok {
			continue
		}
		if mk.Type == pipeline.KeyKernel {
			name, _ := v.(string)
			k := kernel(mk.Key, &name)
			if k == nil {
				continue // reported
			}
			v = k
		}
		if err := pipeline.SetModelKey(&cfg, mk.Key, v); err != nil {
			bad(mk.Key, err)
		}
	}

	m.anomalyPipeline(&cfg, bad)
	m.thresholdPipeline(&cfg, bad)

	// Numeric ranges: the pipeline's and the models' own checks, each
	// naming its key; a value that failed to parse above kept its default
	// and is not reported twice.
	if err := cfg.Validate(); err != nil {
		for _, e := range unjoin(err) {
			errs = append(errs, modelError("", e))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return pipeline.Config{}, err
	}
	return cfg, nil
}

// internalName is the packages' prefixes ("svr: bad configuration: "),
// which a person writing the file has no use for. (The model kinds name
// their settings by config key: pipeline maps svr's field names.)
var internalName = regexp.MustCompile(`\b(?:pipeline|svr|embedding|window): bad configuration: |\bthreshold: bad config: `)

var word = regexp.MustCompile(`[a-z0-9_]+`)

// modelError is a problem of the [model] key (or, key "", of the keys its
// message begins with: "dim must be at least 1"), told without the
// packages' internal names; at lists the model keys the message names.
func modelError(key string, err error) *keyError {
	msg := internalName.ReplaceAllString(err.Error(), "")
	if key != "" {
		msg = strings.TrimPrefix(msg, key+" ")
		msg = strings.TrimPrefix(msg, key+": ")
	}
	var at []string
	for _, w := range word.FindAllString(msg, -1) {
		_, isParam := paramKey(w)
		if (slices.Contains(modelKeys(), w) || isParam) && !slices.Contains(at, w) && w != key {
			at = append(at, w)
		}
	}
	if key != "" && key != "kernel" && key != "norma_kernel" {
		at = append([]string{key}, at...) // a kernel's fault is in its parameter's line
	}
	return &keyError{table: "model", key: key, msg: msg, at: at, err: err}
}

// parseSeasons reads a comma-separated list of durations: Go's ("36h",
// "90m") or a whole number of days or weeks ("1d", "7d", "2w"); "" or
// "none" is no seasonal period.
func parseSeasons(s string) ([]time.Duration, error) {
	s = strings.TrimSpace(s)
	if s == "" || s == "none" {
		return []time.Duration{}, nil
	}
	var out []time.Duration
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		var d time.Duration
		if n, ok := strings.CutSuffix(f, "d"); ok {
			k, err := strconv.Atoi(n)
			if err != nil || k <= 0 {
				return nil, fmt.Errorf("%q: want a positive whole number of days, like 1d", f)
			}
			d = time.Duration(k) * 24 * time.Hour
		} else if n, ok := strings.CutSuffix(f, "w"); ok {
			k, err := strconv.Atoi(n)
			if err != nil || k <= 0 {
				return nil, fmt.Errorf("%q: want a positive whole number of weeks, like 1w", f)
			}
			d = time.Duration(k) * 7 * 24 * time.Hour
		} else {
			var err error
			if d, err = time.ParseDuration(f); err != nil {
				return nil, fmt.Errorf("%q: want a duration like 1d, 7d or 12h", f)
			}
		}
		if d <= 0 {
			return nil, fmt.Errorf("%q: a period must be positive", f)
		}
		out = append(out, d)
	}
	return out, nil
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

// commonFlagUsage documents the flag of each common [model] key; the
// model kinds document their own (pipeline.ModelKey.Usage).
var commonFlagUsage = map[string]string{
	"dim":             "embedding dimension `B` (default 5)",
	"delay":           "embedding delay `TAU` in points (default 1)",
	"kernel":          "`KERNEL`: rbf, poly or linear (default rbf)",
	"gamma":           "kernel gamma `G` (default 0.01; the paper's 1)",
	"degree":          "poly kernel degree `D` (default 3)",
	"coef0":           "poly kernel `C0` (default 0)",
	"scale":           "`SPEC` none|fixed:MIN,MAX|warmup:N, maps values into [-1, 1] (default none)",
	"target":          "what the model learns: `change` (the next change, in units of the series' running variability) or level (the paper's) (default change)",
	"seasons":         "seasonal `PERIODS` whose lags the model sees, comma-separated (1d, 7d, 12h); \"\" for none (default 1d,7d)",
	"combine":         "combine the SVR with persistence, exponential smoothing and seasonal naive by their recent errors (default true)",
	"min":             "physical lower bound `MIN`: forecasts and intervals are clipped to it (e.g. 0 for percentages and counters)",
	"max":             "physical upper bound `MAX` (e.g. 100 for percentages)",
	"coverage":        "nominal `COVERAGE` of the prediction intervals, in (0, 1) (default 0.9)",
	"interval_window": "the last `N` residuals the intervals are calibrated on (default 200)",
	"interval_adapt":  "adaptation `RATE` of the intervals' quantile level; 0 = plain split conformal (default 0.01)",
	"interval":        "series spacing `DURATION` that dates forecasts (default: median spacing)",
	"max_gap":         "restart the embedding after a gap of more than `K` intervals (default 0: never)",
	"horizon":         "forecast the next `H` points, each step with its own interval, 1..336 (default 1)",
	"step":            "forecast at the resolution `DURATION`: raw points aggregated into epoch-aligned buckets (default: raw)",
	"aggregate":       "how a bucket's points make one: `AGG` mean, min, max, last, sum, count or rate (default mean)",
	"step_grace":      "wait `DURATION` past a bucket's end for its late points (default 10% of step, at least 1s)",
}

// modelFlagUsage documents the flag of the [model] key: kind's lists the
// registered kinds.
func modelFlagUsage(key string) string {
	if key == "kind" {
		return "model `KIND`: " + strings.Join(pipeline.KindNames(), ", ") + " (default " + pipeline.DefaultConfig().Kind.String() + ")"
	}
	if _, mk, ok := pipeline.KeyKind(key); ok {
		return mk.Usage
	}
	return commonFlagUsage[key]
}

// paramFlag is a flag.Value setting one key of ModelConfig.Params.
type paramFlag struct {
	m  *ModelConfig
	mk pipeline.ModelKey
}

func (f paramFlag) String() string {
	if f.m == nil || f.m.Params == nil {
		return ""
	}
	if v, ok := f.m.Params[f.mk.Key]; ok {
		return fmt.Sprint(v)
	}
	return ""
}

func (f paramFlag) IsBoolFlag() bool { return f.mk.Type == pipeline.KeyBool }

func (f paramFlag) Set(s string) error {
	p := reflect.New(reflect.TypeOf(paramValue(f.mk.Type))) // **T: its Elem is settable
	if err := (modelFlag{field: p.Elem()}).Set(s); err != nil {
		return err
	}
	if f.m.Params == nil {
		f.m.Params = map[string]any{}
	}
	f.m.Params[f.mk.Key] = p.Elem().Elem().Interface()
	return nil
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

// IsBoolFlag lets a boolean key's flag stand alone (--combine) or take a
// value (--combine=false).
func (f modelFlag) IsBoolFlag() bool {
	return f.field.IsValid() && f.field.Type().Elem().Kind() == reflect.Bool
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
	case reflect.Bool:
		x, err := strconv.ParseBool(s)
		if err != nil {
			return fmt.Errorf("not true or false: %q", s)
		}
		v = x
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
