package config

// The schema. Each key is one field: its `toml` tag is the key, its `doc`
// tag what the key does (the reference, docs/configuration.md, and the
// backtest's flags are generated from it), its `default` tag, when the
// default is a value, that value as TOML writes it, and its `arg` tag the
// name of the value in a flag's usage ("-dim B"). A key whose default is
// not one value ("10% of step") says so in its doc and has no `default`
// tag. A [model] key whose value goes into pipeline.Config as it is has a
// `pipeline` tag naming the field ("Anomaly.Threshold"); the others are
// mapped in ModelConfig.Pipeline. The model kinds' own keys (window, c, norma_*, sog_*, and
// any kind registered later) are documented where the kind is registered
// (pipeline.ModelKey.Usage).

// Config is forecastd's configuration file, one schema for every
// subcommand: `run` and `check-config` read all of it, `backtest` only
// [model]. Any key not in the schema is an error naming it.
type Config struct {
	NATS  NATSConfig   `toml:"nats" doc:"The NATS servers points are read from and forecasts published to."`
	Input InputConfig  `toml:"input" doc:"What is read, with Telegraf's names."`
	Model ModelConfig  `toml:"model" doc:"How every series is forecast, unless a [[rules]] entry says otherwise. Each key is also a flag of backtest and tune, of the same name (kind's is --model)."`
	Rules []RuleConfig `toml:"rules" doc:"Each entry sets [model] keys for the series whose key matches match; the first matching entry applies."`
	// Resolutions forecast series again at coarser steps, each by a
	// series of its own.
	Resolutions []RuleConfig   `toml:"resolutions" doc:"Each entry forecasts the series it matches (match, default every series) once more, at the coarser resolution step (required), with any [model] key over [model]."`
	Pipeline    PipelineConfig `toml:"pipeline" doc:"How the series are run."`
	Output      OutputConfig   `toml:"output" doc:"Where forecasts are written."`
	HTTP        HTTPConfig     `toml:"http" doc:"The HTTP endpoints: /metrics, /-/healthy and /-/ready."`
	State       StateConfig    `toml:"state" doc:"Where the models' state is kept across restarts."`
	// History, if present, warms new series from InfluxDB.
	History *HistoryConfig `toml:"history" doc:"If present, a new series without a checkpoint learns its past from InfluxDB before its first live point; url, token and bucket default to [output.influxdb]'s."`

	LogFormat string `toml:"log_format" doc:"log lines as \"text\" (key=value) or \"json\"" default:"\"text\""`
}

// NATSConfig is [nats]: the NATS servers points are read from and
// forecasts published to.
type NATSConfig struct {
	Servers  []string `toml:"servers" doc:"NATS URLs. With embedded, the first one's host and port are where the embedded server listens (port 0: a free port)." default:"[\"nats://127.0.0.1:4222\"]"`
	Embedded bool     `toml:"embedded" doc:"start a NATS server inside forecastd" default:"false"`

	// Credentials and TLS of every NATS connection forecastd makes
	// (internal/natsconn).
	Username           string `toml:"username" doc:"user name, with password; at most one of username, token, nkey_seed and credentials. The embedded server requires the same credentials."`
	Password           string `toml:"password" doc:"password of username"`
	Token              string `toml:"token" doc:"authentication token"`
	NKeySeed           string `toml:"nkey_seed" doc:"file holding an NKey seed"`
	Credentials        string `toml:"credentials" doc:"a .creds file (a user JWT and its NKey seed)"`
	Secure             bool   `toml:"secure" doc:"TLS, the server verified against the system's roots or tls_ca" default:"false"`
	TLSCA              string `toml:"tls_ca" doc:"PEM CA certificates the server's must chain to"`
	TLSCert            string `toml:"tls_cert" doc:"PEM client certificate, with tls_key"`
	TLSKey             string `toml:"tls_key" doc:"its PEM private key"`
	InsecureSkipVerify bool   `toml:"insecure_skip_verify" doc:"TLS without verifying the server: tests only" default:"false"`
}

// InputConfig is [input], with Telegraf's names.
type InputConfig struct {
	Subjects       []string         `toml:"subjects" doc:"subjects to read points from, NATS wildcards (* and >) allowed; required unless [input.jetstream]"`
	DataFormat     DataFormat       `toml:"data_format" doc:"payload format" default:"\"json\""`
	JSONTimeFormat TimeFormat       `toml:"json_time_format" doc:"unit of a numeric JSON time: unix (seconds), unix_ms, unix_us or unix_ns; a string time is RFC 3339" default:"\"unix\""`
	QueueGroup     string           `toml:"queue_group" doc:"share the subjects among the instances of this queue group (core NATS); empty: every instance reads every point"`
	MaxPayload     int              `toml:"max_payload" doc:"bytes a message may have; a larger one is refused and counted \"too_large\" (0: the default)" default:"1048576"`
	FieldPass      []string         `toml:"fieldpass" doc:"influx: only fields whose key matches one of these globs make series (empty: all)"`
	FieldDrop      []string         `toml:"fielddrop" doc:"influx: fields whose key matches one of these globs make no series"`
	JetStream      *JetStreamConfig `toml:"jetstream" doc:"If present, points are read from a durable JetStream consumer instead of core NATS subscriptions."`

	// Bounds of what a publisher sends (README "Limits").
	MaxPast              Duration `toml:"max_past" doc:"points older than this before receipt are refused (\"0s\": no bound)" default:"\"168h\""`
	MaxFuture            Duration `toml:"max_future" doc:"points further ahead of receipt are refused, at most 24h" default:"\"1m\""`
	MaxKeyLen            int      `toml:"max_key_len" doc:"bytes of a series key at most; longer are refused (0: the default)" default:"1024"`
	MaxPoints            int      `toml:"max_points" doc:"points of one message at most; the rest is refused (0: the default)" default:"10000"`
	SeriesAcrossSubjects bool     `toml:"series_across_subjects" doc:"json: \"series\" is the series key itself, not \"<subject> <series>\"" default:"false"`
}

// JetStreamConfig is [input.jetstream]; its presence selects JetStream.
type JetStreamConfig struct {
	Stream        string   `toml:"stream" doc:"stream name (required)"`
	Durable       string   `toml:"durable" doc:"durable consumer name (required)"`
	AckWait       Duration `toml:"ack_wait" doc:"a message is delivered again after this long without an ack" default:"\"30s\""`
	MaxDeliver    *int     `toml:"max_deliver" doc:"deliveries of a message at most; -1 unlimited" default:"5"`
	NakDelay      Duration `toml:"nak_delay" doc:"redelivery delay after a sink failure" default:"\"5s\""`
	MaxAckPending int      `toml:"max_ack_pending" doc:"messages delivered and not yet acked at most (0: the default)" default:"20000"`

	// Partitions: the stream's subjects split by the server's subject
	// mapping, one consumer per partition held.
	Partitions       int    `toml:"partitions" doc:"number of partitions of the stream's subjects (the server's subject mapping), one consumer and one lease each; 0: one consumer, no leases" default:"0"`
	PartitionSubject string `toml:"partition_subject" doc:"a partition's filter subject, \"{partition}\" standing for its number"`
	MaxPartitions    int    `toml:"max_partitions" doc:"partitions this instance holds at most (0: all)" default:"0"`
}

// RuleConfig is one [[rules]] or [[resolutions]] entry: the [model] keys
// it sets override [model] for the series whose key matches Match.
type RuleConfig struct {
	Match *string `toml:"match" doc:"glob on the series key, Telegraf's: * (any run, '/' included), ?, [...], {a,b}"`
	ModelConfig
}

// PipelineConfig is [pipeline]: how the series are run.
type PipelineConfig struct {
	Shards          int      `toml:"shards" doc:"goroutines the series are spread over (0: GOMAXPROCS)" default:"0"`
	QueueSize       int      `toml:"queue_size" doc:"points queued per shard, in each of its two queues: the points of the series it holds, served first, and those that create series (0: the default)" default:"4096"`
	MaxSeries       int      `toml:"max_series" doc:"series held at most (0: the default)" default:"100000"`
	IdleTTL         Duration `toml:"idle_ttl" doc:"a series without points for this long is evicted (\"0s\": never)" default:"\"1h\""`
	ShutdownTimeout Duration `toml:"shutdown_timeout" doc:"deadline of a graceful stop" default:"\"30s\""`
	MemoryBudget    ByteSize `toml:"memory_budget" doc:"live heap the daemon keeps under by holding fewer series, like \"512MiB\" (default: none)"`
	GCPercent       *int     `toml:"gc_percent" doc:"the collector's GOGC unless the environment sets it" default:"20"`
}

// OutputConfig is [output.*].
type OutputConfig struct {
	NATS     NATSOutputConfig `toml:"nats" doc:"Forecasts are always published to NATS."`
	InfluxDB *InfluxDBConfig  `toml:"influxdb" doc:"If present, forecasts are also written to InfluxDB, with Telegraf's names (outputs.influxdb_v2)."`
}

// NATSOutputConfig is [output.nats]; forecasts are always published.
type NATSOutputConfig struct {
	SubjectPrefix string `toml:"subject_prefix" doc:"subjects forecasts are published on begin with this" default:"\"forecast\""`
}

// InfluxDBConfig is [output.influxdb], with Telegraf's names
// (outputs.influxdb_v2).
type InfluxDBConfig struct {
	URL               string   `toml:"url" doc:"InfluxDB's URL, http(s)://HOST:PORT"`
	Token             string   `toml:"token" doc:"a token for 2.x/3.x, \"user:password\" for 1.x"`
	Organization      string   `toml:"organization" doc:"organization (2.x)"`
	Bucket            string   `toml:"bucket" doc:"bucket, or \"database/retention-policy\" for 1.x"`
	Measurement       string   `toml:"measurement" doc:"measurement of the forecasts" default:"\"forecast\""`
	MetricBatchSize   int      `toml:"metric_batch_size" doc:"points written per request (0: the default)" default:"1000"`
	MetricBufferLimit int      `toml:"metric_buffer_limit" doc:"points held while InfluxDB cannot be written (0: the default)" default:"10000"`
	FlushInterval     Duration `toml:"flush_interval" doc:"a partial batch is written after this long" default:"\"10s\""`
	Timeout           Duration `toml:"timeout" doc:"of one write" default:"\"5s\""`
	CreateDatabase    bool     `toml:"create_database" doc:"1.x: create a missing database at start; false: refuse to start, naming the command" default:"false"`
	LegacyTagNames    bool     `toml:"legacy_tag_names" doc:"tags series, measurement, field and an unpadded horizon, as before series_key, src_measurement, src_field" default:"false"`
}

// HTTPConfig is [http].
type HTTPConfig struct {
	Listen string `toml:"listen" doc:"address of /metrics, /-/healthy and /-/ready, like \"127.0.0.1:9470\"; empty: no HTTP"`
}

// StateConfig is [state].
type StateConfig struct {
	Dir                string   `toml:"dir" doc:"where state is kept: model checkpoints, the embedded server's JetStream store (empty: none kept)"`
	CheckpointInterval Duration `toml:"checkpoint_interval" doc:"how often every changed series' state is saved" default:"\"30s\""`
	KeepEvicted        *int     `toml:"keep_evicted" doc:"states of series evicted at max_series kept for their return (default: max_series)"`

	// store = "jetstream": states and partition leases in JetStream
	// key-value buckets instead of dir.
	Store       string   `toml:"store" doc:"\"dir\", or \"jetstream\": states and partition leases in JetStream key-value buckets" default:"\"dir\""`
	Bucket      string   `toml:"bucket" doc:"the states' bucket" default:"\"forecastd-state\""`
	LeaseBucket string   `toml:"lease_bucket" doc:"the leases' bucket" default:"\"forecastd-leases\""`
	LeaseTTL    Duration `toml:"lease_ttl" doc:"a dead instance's partitions are taken over after this" default:"\"4s\""`
	Replicas    int      `toml:"replicas" doc:"both buckets' replicas (3 on a 3-node cluster; 0: the default)" default:"1"`
	Instance    string   `toml:"instance" doc:"this instance's name in the leases (default: host name and pid)"`
}

// ModelConfig is the [model] table, also the model part of a [[rules]]
// entry and of the backtest's flags. Every field is a pointer so that an
// absent key is told from a zero: layers merge ([model] ← rule ← flags) with
// Merge, and Pipeline fills what is still absent with the defaults of
// pipeline.DefaultConfig; a `default` tag states that default, and a test
// checks that setting it changes nothing. pipeline.PaperConfig is the
// AOSVR paper's setup.
//
// The flag of each key has the key's name, except kind, whose flag is
// --model. A field without a `doc` tag is a model kind's own key,
// documented by the kind (pipeline.ModelKey.Usage); a kind registered
// later has no field, its keys being held in Params.
type ModelConfig struct {
	Kind   *string `toml:"kind" arg:"KIND" doc:"model KIND, a registered kind" default:"\"aosvr\""`
	Dim    *int    `toml:"dim" pipeline:"Dim" arg:"B" doc:"embedding dimension B" default:"5"`
	Delay  *int    `toml:"delay" pipeline:"Delay" arg:"TAU" doc:"embedding delay TAU in points" default:"1"`
	Window *int    `toml:"window"`

	Kernel *string  `toml:"kernel" arg:"KERNEL" doc:"KERNEL: rbf, poly or linear" default:"\"rbf\""`
	Gamma  *float64 `toml:"gamma" arg:"G" doc:"kernel gamma G of rbf and poly (the paper's 1)" default:"0.01"`
	Degree *int     `toml:"degree" arg:"D" doc:"poly kernel degree D" default:"3"`
	Coef0  *float64 `toml:"coef0" arg:"C0" doc:"poly kernel C0" default:"0"`

	C       *float64 `toml:"c"`
	Epsilon *float64 `toml:"epsilon"`

	Scale          *string  `toml:"scale" arg:"SPEC" doc:"SPEC none, fixed:MIN,MAX or warmup:N: maps values into [-1, 1]" default:"\"none\""`
	Coverage       *float64 `toml:"coverage" pipeline:"Coverage" arg:"COVERAGE" doc:"nominal COVERAGE of the prediction intervals, in (0, 1)" default:"0.9"`
	IntervalWindow *int     `toml:"interval_window" pipeline:"IntervalWindow" arg:"N" doc:"the last N residuals the intervals are calibrated on" default:"200"`
	IntervalAdapt  *float64 `toml:"interval_adapt" pipeline:"IntervalAdapt" arg:"RATE" doc:"adaptation RATE of the intervals' quantile level; 0 = plain split conformal" default:"0.01"`
	Interval       *string  `toml:"interval" arg:"DURATION" doc:"series spacing DURATION that dates forecasts; \"\" or \"0s\": the median of recent spacings" default:"\"\""`
	MaxGap         *float64 `toml:"max_gap" pipeline:"MaxGap" arg:"K" doc:"restart the embedding after a gap of more than K intervals; 0 = never" default:"0"`
	Horizon        *int     `toml:"horizon" pipeline:"Horizon" arg:"H" doc:"forecast the next H points, each step with its own interval, 1..336; H × step (or interval) at most 100 years" default:"1"`
	Step           *string  `toml:"step" arg:"DURATION" doc:"forecast at the resolution DURATION: raw points aggregated into epoch-aligned buckets; \"\" = raw" default:"\"\""`
	Aggregate      *string  `toml:"aggregate" arg:"AGG" doc:"how a bucket's points make one: AGG mean, min, max, last, sum, count or rate" default:"\"mean\""`
	StepGrace      *string  `toml:"step_grace" arg:"DURATION" doc:"wait DURATION past a bucket's end, and after the series' last point, for its late points (default: 10% of step, at least 1s)"`

	Target  *string  `toml:"target" arg:"change" doc:"what the model learns: change (the next change, in units of the series' running variability) or level (the paper's)" default:"\"change\""`
	Seasons *string  `toml:"seasons" arg:"PERIODS" doc:"seasonal PERIODS whose lags the model sees, comma-separated durations (1d, 7d, 12h); \"\" for none" default:"\"1d,7d\""`
	Combine *bool    `toml:"combine" pipeline:"Combine" doc:"combine the SVR with persistence, exponential smoothing and seasonal naive by their recent errors" default:"true"`
	Min     *float64 `toml:"min" pipeline:"Min" arg:"MIN" doc:"physical lower bound MIN: forecasts and intervals are clipped to it (e.g. 0 for percentages and counters)"`
	Max     *float64 `toml:"max" pipeline:"Max" arg:"MAX" doc:"physical upper bound MAX (e.g. 100 for percentages)"`

	NORMAKernel   *string  `toml:"norma_kernel"`
	NORMALoss     *string  `toml:"norma_loss"`
	NORMAEta      *float64 `toml:"norma_eta"`
	NORMASchedule *string  `toml:"norma_eta_schedule"`
	NORMALambda   *float64 `toml:"norma_lambda"`
	NORMAC        *float64 `toml:"norma_c"`
	NORMANu       *float64 `toml:"norma_nu"`
	NORMATau      *int     `toml:"norma_tau"`

	SOGLambda  *float64 `toml:"sog_lambda"`
	SOGNu      *float64 `toml:"sog_nu"`
	SOGRidge   *float64 `toml:"sog_ridge"`
	SOGC       *float64 `toml:"sog_c"`
	SOGEpsilon *float64 `toml:"sog_epsilon"`
	SOGMaxDict *int     `toml:"sog_max_dict"`
	SOGOnFull  *string  `toml:"sog_on_full"`
	SOGForget  *float64 `toml:"sog_forget"`
	SOGSteps   *int     `toml:"sog_steps"`

	// Anomaly detection (anomaly.go).
	AnomalyDirection    *string  `toml:"anomaly_direction" arg:"SIDE" doc:"anomalies counted on SIDE: both, above or below the forecast" default:"\"both\""`
	AnomalyThreshold    *float64 `toml:"anomaly_threshold" pipeline:"Anomaly.Threshold" arg:"SCORE" doc:"anomaly SCORE above which a point is outside (1 = on the interval's bound)" default:"3"`
	AnomalyMinDeviation *float64 `toml:"anomaly_min_deviation" pipeline:"Anomaly.MinDeviation" arg:"D" doc:"smallest absolute deviation D from the forecast that can count as outside" default:"0"`
	AnomalyOpenK        *int     `toml:"anomaly_open_k" pipeline:"Anomaly.K" arg:"K" doc:"an anomaly event opens on a point outside when K of the last anomaly_open_n points were outside, one of them a surprise (anomaly_surprise); alone, it sets anomaly_open_n to K too" default:"2"`
	AnomalyOpenN        *int     `toml:"anomaly_open_n" pipeline:"Anomaly.N" arg:"N" doc:"the debounce window N of anomaly_open_k, at most 64" default:"2"`
	AnomalyCloseM       *int     `toml:"anomaly_close_m" pipeline:"Anomaly.M" arg:"M" doc:"an anomaly event closes after M points in a row inside" default:"10"`
	AnomalyStepFloor    *float64 `toml:"anomaly_step_floor" pipeline:"Anomaly.StepFloor" arg:"F" doc:"each half-width of the interval counts as at least F times the series' mean absolute change between points when deciding whether a point is outside; 0 no floor" default:"1"`
	AnomalySurprise     *float64 `toml:"anomaly_surprise" pipeline:"Anomaly.Surprise" arg:"C" doc:"an anomaly event opens only when one of the anomaly_open_k points outside scored above C times the highest score of the anomaly_surprise_window before it; 0 off" default:"1.4"`
	AnomalySurpriseWin  *string  `toml:"anomaly_surprise_window" pipeline:"Anomaly.SurpriseWindow" arg:"DURATION" doc:"the DURATION of anomaly_surprise, 24s to 8784h; the default, a day and a bit, compares a deviation the series makes every day with yesterday's" default:"\"25h\""`
	AnomalyExtremeQuiet *string  `toml:"anomaly_extreme_quiet" pipeline:"Anomaly.ExtremeQuiet" arg:"DURATION" doc:"an anomaly event also opens on a new all-time high or low of the series after DURATION without one, whatever its score; \"0s\" off" default:"\"48h\""`
	AnomalyExtremeMarg  *float64 `toml:"anomaly_extreme_margin" pipeline:"Anomaly.ExtremeMargin" arg:"F" doc:"a new all-time high or low opens an event only if beyond the last by more than F times the series' mean absolute change between points; 0 any" default:"0.1"`
	AnomalySeasonal     *float64 `toml:"anomaly_seasonal" pipeline:"Anomaly.Seasonal" arg:"K" doc:"an anomaly event also opens when anomaly_seasonal_run points in a row, on one side, differ from the series' value a day or a week before (the closer) by more than K times the mean such difference, and no event opened in the previous anomaly_surprise_window; 0 off" default:"6"`
	AnomalySeasonalRun  *int     `toml:"anomaly_seasonal_run" pipeline:"Anomaly.SeasonalRun" arg:"N" doc:"the N points in a row of anomaly_seasonal, 1 to 1000" default:"8"`
	LearnAnomalies      *bool    `toml:"learn_anomalies" pipeline:"LearnAnomalies" doc:"learn the points inside an open anomaly event; false keeps them out of the model and the intervals for up to interval_window points" default:"true"`

	// Thresholds (threshold.go).
	ThresholdAbove       *float64 `toml:"threshold_above" arg:"VALUE" doc:"warn before the series reaches VALUE from below: threshold events when a forecast's path crosses it within the horizon (needs target change)"`
	ThresholdBelow       *float64 `toml:"threshold_below" arg:"VALUE" doc:"warn before the series falls to VALUE (needs target change)"`
	ThresholdProbability *float64 `toml:"threshold_probability" arg:"P" doc:"the probability P of being beyond the threshold, under the steps' calibrated residuals, at which a step counts as crossed, in (0, 1); the default is about where the path itself crosses" default:"0.49"`
	ThresholdOpen        *int     `toml:"threshold_open" arg:"N" doc:"a threshold event opens after N forecasts in a row cross within the horizon, and is updated after N in a row find its crossing materially moved" default:"2"`
	ThresholdClose       *int     `toml:"threshold_close" arg:"N" doc:"a threshold event closes after N forecasts in a row do not" default:"3"`
	ThresholdWithin      *string  `toml:"threshold_within" arg:"DURATION" doc:"a forecast counts as crossing for the threshold's event only if its ETA is within this duration, e.g. 4h (\"\": the whole horizon)" default:"\"\""`

	// Params holds the keys of model kinds registered in pipeline that have
	// no field above (paramKeys), each of its key's type (string for a
	// kernel), so that a new kind needs no change here.
	Params map[string]any `toml:"-"`
}
