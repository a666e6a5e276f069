package config

import (
	"errors"
	"fmt"
	"math"
	"net"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/forecastd/forecastd/internal/keyglob"
	"github.com/forecastd/forecastd/pipeline"
	"github.com/forecastd/forecastd/sinks"
	"github.com/forecastd/forecastd/sources"
)

// Validate returns nil if c can be run, or every problem at once, each
// error naming its key ("input.data_format: …").
func (c *Config) Validate() error {
	var errs []error
	bad := func(key string, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", key, fmt.Sprintf(format, args...)))
	}
	// Durations are parsed when the file is read (Duration); here only
	// their sign is checked.
	duration := func(key string, d Duration, allowZero bool) {
		if d.IsSet() && (d.D < 0 || d.D == 0 && !allowZero) {
			bad(key, "must be positive, got %q", d.Text)
		}
	}

	switch c.LogFormat {
	case "", "text", "json":
	default:
		bad("log_format", "want %q or %q, got %q", "text", "json", c.LogFormat)
	}
	for i, s := range c.NATS.Servers {
		if _, err := ServerAddr(s); err != nil {
			bad(fmt.Sprintf("nats.servers[%d]", i), "%v", err)
		}
	}
	errs = append(errs, natsAuthErrors(c.NATS)...)

	in := c.Input
	if len(in.Subjects) == 0 && in.JetStream == nil {
		bad("input.subjects", "at least one subject is required (or [input.jetstream])")
	}
	for i, s := range in.Subjects {
		if err := CheckSubject(s, true); err != nil {
			bad(fmt.Sprintf("input.subjects[%d]", i), "invalid subject %q: %v", s, err)
		}
	}
	if in.QueueGroup != "" && strings.IndexFunc(in.QueueGroup, IsSpaceOrControl) >= 0 {
		bad("input.queue_group", "invalid queue group %q: a space or control character", in.QueueGroup)
	}
	if in.MaxPayload < 0 || in.MaxPayload > MaxPayload {
		bad("input.max_payload", "must be between 0 (the default, %d) and %d bytes, got %d", sources.DefaultMaxPayload, MaxPayload, in.MaxPayload)
	}
	errs = append(errs, fieldFilterErrors(in)...)
	if js := in.JetStream; js != nil {
		for _, n := range []struct{ key, name string }{{"stream", js.Stream}, {"durable", js.Durable}} {
			switch {
			case n.name == "":
				bad("input.jetstream."+n.key, "required")
			case strings.ContainsAny(n.name, ".*>/\\") || strings.IndexFunc(n.name, IsSpaceOrControl) >= 0:
				bad("input.jetstream."+n.key, `invalid name %q: no '.', '*', '>', spaces, '/' or '\'`, n.name)
			}
		}
		duration("input.jetstream.ack_wait", js.AckWait, false)
		duration("input.jetstream.nak_delay", js.NakDelay, false)
		if js.MaxDeliver != nil && (*js.MaxDeliver == 0 || *js.MaxDeliver < -1) {
			bad("input.jetstream.max_deliver", "must be positive or -1 (unlimited), got %d", *js.MaxDeliver)
		}
		if js.MaxAckPending < 0 {
			bad("input.jetstream.max_ack_pending", "must not be negative, got %d", js.MaxAckPending)
		}
		if delay, n := js.NakDelay.Or(sources.DefaultNakDelay), redeliveries(js); delay > 0 && n > 0 && delay > math.MaxInt64/time.Duration(n) {
			// A series whose forecast a sink refused holds its newer
			// points for the redeliveries (redeliveryHold).
			bad("input.jetstream.nak_delay", "%s × max_deliver %d is longer than a duration holds (about 292 years): lower nak_delay or max_deliver", js.NakDelay.Text, n)
		}
		if c.NATS.Embedded && c.State.Dir == "" {
			bad("state.dir", "required with [nats] embedded = true and [input.jetstream]: the embedded server's JetStream store")
		}
	}

	_, _, err := c.PipelineRules()
	if err != nil {
		errs = append(errs, unjoin(err)...)
	}
	errs = append(errs, c.LimitErrors()...)

	p := c.Pipeline
	for _, v := range []struct {
		key string
		n   int
	}{{"pipeline.shards", p.Shards}, {"pipeline.queue_size", p.QueueSize}, {"pipeline.max_series", p.MaxSeries}} {
		if v.n < 0 {
			bad(v.key, "must not be negative, got %d", v.n)
		}
	}
	duration("pipeline.idle_ttl", p.IdleTTL, true)
	duration("pipeline.shutdown_timeout", p.ShutdownTimeout, false)

	if p := c.Output.NATS.SubjectPrefix; p != "" {
		if err := CheckSubject(p, false); err != nil {
			bad("output.nats.subject_prefix", "invalid subject prefix %q: %v", p, err)
		}
	}
	if ic := c.Output.InfluxDB; ic != nil {
		if ic.URL != "" {
			if u, err := url.Parse(ic.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				bad("output.influxdb.url", "want http(s)://HOST:PORT, got %q", ic.URL)
			}
		}
		duration("output.influxdb.flush_interval", ic.FlushInterval, false)
		duration("output.influxdb.timeout", ic.Timeout, false)
		sc := ic.Sink()
		if err := sc.Validate(); err != nil {
			for _, e := range unjoin(err) {
				errs = append(errs, fmt.Errorf("output.influxdb.%w", e))
			}
		}
	}

	errs = append(errs, historyErrors(c)...)

	duration("state.checkpoint_interval", c.State.CheckpointInterval, false)

	if c.HTTP.Listen != "" {
		if _, _, err := net.SplitHostPort(c.HTTP.Listen); err != nil {
			bad("http.listen", "%v", err)
		}
	}
	return errors.Join(errs...)
}

// Sink returns [output.influxdb] as the sink's config.
func (ic *InfluxDBConfig) Sink() sinks.InfluxConfig {
	return sinks.InfluxConfig{
		URL:               ic.URL,
		Token:             ic.Token,
		Organization:      ic.Organization,
		Bucket:            ic.Bucket,
		Measurement:       ic.Measurement,
		MetricBatchSize:   ic.MetricBatchSize,
		MetricBufferLimit: ic.MetricBufferLimit,
		FlushInterval:     ic.FlushInterval.D,
		Timeout:           ic.Timeout.D,
		CreateDatabase:    ic.CreateDatabase,
		LegacyTagNames:    ic.LegacyTagNames,
	}
}

// PipelineRules returns the configuration of a series no rule matches
// ([model]) and the rules ([model] ← [[rules]] entry), or every problem.
// A rule's errors are prefixed with "rules[i] (match …)"; when [model] is
// itself invalid, a rule is checked on the defaults, so that [model]'s
// problems are not repeated for every rule.
func (c *Config) PipelineRules() (pipeline.Config, []pipeline.Rule, error) {
	var errs []error
	def, err := c.Model.Pipeline()
	modelOK := err == nil
	if err != nil {
		errs = append(errs, unjoin(err)...)
	}
	var rules []pipeline.Rule
	for i, rc := range c.Rules {
		name := fmt.Sprintf("rules[%d]", i)
		if rc.Match == nil || *rc.Match == "" {
			errs = append(errs, fmt.Errorf("%s.match: required", name))
			continue
		}
		if _, err := keyglob.Compile(*rc.Match); err != nil {
			errs = append(errs, fmt.Errorf("%s.match: %v", name, err))
		}
		base := c.Model
		if !modelOK {
			base = ModelConfig{}
		}
		cfg, err := base.Merge(rc.ModelConfig).Pipeline()
		if err != nil {
			errs = append(errs, entryErrors(name, *rc.Match, err)...)
			continue
		}
		rules = append(rules, pipeline.Rule{Match: *rc.Match, Config: cfg})
	}
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
		base := c.Model
		if !modelOK {
			base = ModelConfig{}
		}
		cfg, err := base.Merge(rc.ModelConfig).Pipeline()
		if err != nil {
			errs = append(errs, entryErrors(name, match, err)...)
			continue
		}
		if j, ok := steps[cfg.Step]; ok {
			errs = append(errs, fmt.Errorf("%s.step: %s, as resolutions[%d]'s: each resolution has its own", name, *rc.Step, j))
			continue
		}
		steps[cfg.Step] = i
		rules = append(rules, pipeline.Rule{Match: match, Config: cfg, Resolution: true})
	}
	if err := errors.Join(errs...); err != nil {
		return pipeline.Config{}, nil, err
	}
	return def, rules, nil
}

// CheckSubject returns why s is not a NATS subject, nil if it is: tokens
// separated by '.', none empty, without spaces or control characters; with
// wildcards, a token may be '*', and the last '>'; without, neither
// (nats-server's server.IsValidSubject and IsValidLiteralSubject, which
// let spaces through in a literal subject that a publish then refuses).
func CheckSubject(s string, wildcards bool) error {
	if s == "" {
		return errors.New("empty")
	}
	tokens := strings.Split(s, ".")
	for i, t := range tokens {
		switch {
		case t == "":
			return errors.New(`an empty token (a leading or trailing ".", or "..")`)
		case strings.IndexFunc(t, IsSpaceOrControl) >= 0:
			return errors.New("a space or control character")
		case (t == "*" || t == ">") && !wildcards:
			return errors.New("no wildcards (* or >)")
		case t == ">" && i != len(tokens)-1:
			return errors.New(`">" must be the last token`)
		}
	}
	return nil
}

// IsSpaceOrControl reports whether r is a space or a control character,
// which no NATS name may hold.
func IsSpaceOrControl(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }

// ServerAddr returns the host:port of a NATS URL ("nats://h:p", "h:p").
func ServerAddr(s string) (string, error) {
	if !strings.Contains(s, "://") {
		s = "nats://" + s
	}
	u, err := url.Parse(s)
	if err != nil {
		return "", err
	}
	if u.Scheme != "nats" && u.Scheme != "tls" && u.Scheme != "ws" && u.Scheme != "wss" {
		return "", fmt.Errorf("unsupported scheme %q", u.Scheme)
	}
	if u.Hostname() == "" {
		return "", fmt.Errorf("no host in %q", s)
	}
	port := u.Port()
	if port == "" {
		port = "4222"
	}
	return net.JoinHostPort(u.Hostname(), port), nil
}

// Changes lists what differs between two configurations, one line per
// changed key ("model.dim: 5 → 7", "rules: 1 → 2 entries",
// "rules[0].match: "a*" → "b*""), and the tables whose change needs a
// restart.
func Changes(old, cur *Config) (changed, needRestart []string) {
	describe := func(m ModelConfig) map[string]string {
		out := map[string]string{}
		v := reflect.ValueOf(m)
		for i, key := range modelKeys() {
			if f := v.Field(i); !f.IsNil() {
				out[key] = fmt.Sprintf("%v", f.Elem().Interface())
			}
		}
		for k, p := range m.Params {
			out[k] = fmt.Sprintf("%v", p)
		}
		return out
	}
	diff := func(prefix string, a, b map[string]string) {
		keys := map[string]bool{}
		for k := range a {
			keys[k] = true
		}
		for k := range b {
			keys[k] = true
		}
		sorted := make([]string, 0, len(keys))
		for k := range keys {
			sorted = append(sorted, k)
		}
		slices.Sort(sorted)
		for _, k := range sorted {
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
	diff("model.", describe(old.Model), describe(cur.Model))
	if len(old.Rules) != len(cur.Rules) {
		changed = append(changed, fmt.Sprintf("rules: %d → %d entries", len(old.Rules), len(cur.Rules)))
	}
	for i := range max(len(old.Rules), len(cur.Rules)) {
		a, b := map[string]string{}, map[string]string{}
		if i < len(old.Rules) {
			a = describe(old.Rules[i].ModelConfig)
			if m := old.Rules[i].Match; m != nil {
				a["match"] = *m
			}
		}
		if i < len(cur.Rules) {
			b = describe(cur.Rules[i].ModelConfig)
			if m := cur.Rules[i].Match; m != nil {
				b["match"] = *m
			}
		}
		diff(fmt.Sprintf("rules[%d].", i), a, b)
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

// entryErrors are the errors of the [model] keys of a [[rules]] or
// [[resolutions]] entry, each named by the entry (its table and match).
func entryErrors(name, match string, err error) []error {
	var out []error
	for _, e := range unjoin(err) {
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
