package sources

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/forecastd/forecastd/internal/config/schema"
	"github.com/forecastd/forecastd/internal/natsconn"
)

// InputConfig is [input]: what is read, with Telegraf's names. Its
// Decoder is the decoders' configuration; the NATS connection, the
// consumer ([input.jetstream], ConsumerConfig) and the delivery of points
// are the caller's. A registered format's own keys are keys of [input]
// too, held in Settings (see Configurable).
type InputConfig struct {
	Subjects   []string `toml:"subjects" doc:"subjects to read points from, NATS wildcards (* and >) allowed; required unless [input.jetstream]"`
	DataFormat Format   `toml:"data_format" doc:"payload format"`
	QueueGroup string   `toml:"queue_group" doc:"share the subjects among the instances of this queue group (core NATS); empty: every instance reads every point"`
	MaxPayload int      `toml:"max_payload" doc:"bytes a message may have; a larger one is refused and counted \"too_large\" (0: the default)"`
	FieldPass  []string `toml:"fieldpass" doc:"influx: only fields whose key matches one of these globs make series (empty: all)"`
	FieldDrop  []string `toml:"fielddrop" doc:"influx: fields whose key matches one of these globs make no series"`

	// Bounds of what a publisher sends (docs/operations.md, "Limits").
	MaxPast   schema.Duration `toml:"max_past" doc:"points older than this before receipt are refused (\"0s\": no bound)"`
	MaxFuture schema.Duration `toml:"max_future" doc:"points further ahead of receipt are refused, at most 24h"`
	MaxKeyLen int             `toml:"max_key_len" doc:"bytes of a series key at most; longer are refused (0: the default)"`
	MaxPoints int             `toml:"max_points" doc:"points of one message at most; the rest is refused (0: the default)"`

	// Settings are the registered formats' own settings, by format name
	// (Configurable.NewSettings); a format absent has its defaults.
	Settings map[string]any `toml:"-"`
}

// MaxMaxPayload is the largest max_payload: an embedded server's own
// limit must lie above it, and NATS allows at most 64 MiB.
const MaxMaxPayload = 32 << 20

// WithDefaults returns c with its defaults filled in.
func (c InputConfig) WithDefaults() InputConfig {
	if c.DataFormat == 0 {
		c.DataFormat = FormatJSON
	}
	if c.MaxPayload == 0 {
		c.MaxPayload = DefaultMaxPayload
	}
	if !c.MaxPast.IsSet() {
		c.MaxPast = schema.Dur(DefaultMaxPast)
	}
	if !c.MaxFuture.IsSet() {
		c.MaxFuture = schema.Dur(DefaultMaxFuture)
	}
	if c.MaxKeyLen == 0 {
		c.MaxKeyLen = DefaultMaxKeyLen
	}
	if c.MaxPoints == 0 {
		c.MaxPoints = DefaultMaxPoints
	}
	return c
}

// Validate returns every problem of c at once, each naming its key
// relative to [input] ("subjects[1]: …"); the caller checks that there
// are subjects (or a JetStream consumer).
func (c InputConfig) Validate() error {
	var e schema.Errors
	for i, s := range c.Subjects {
		if err := natsconn.CheckSubject(s, true); err != nil {
			e.Add(fmt.Sprintf("subjects[%d]", i), "invalid subject %q: %v", s, err)
		}
	}
	if c.QueueGroup != "" && strings.IndexFunc(c.QueueGroup, natsconn.IsSpaceOrControl) >= 0 {
		e.Add("queue_group", "invalid queue group %q: a space or control character", c.QueueGroup)
	}
	if c.MaxPayload < 0 || c.MaxPayload > MaxMaxPayload {
		e.Add("max_payload", "must be between 0 (the default, %d) and %d bytes, got %d", DefaultMaxPayload, MaxMaxPayload, c.MaxPayload)
	}
	e = append(e, c.fieldFilterErrors()...)
	for _, f := range Formats() {
		if v, ok := c.Settings[f.String()].(interface{ Validate() error }); ok {
			e = append(e, schema.Unjoin(v.Validate())...)
		}
	}
	return errors.Join(e...)
}

// LimitErrors returns the problems of c's bounds: negative, or beyond
// their ceilings.
func (c InputConfig) LimitErrors() []error {
	var e schema.Errors
	if c.MaxPast.D < 0 {
		e.Add("max_past", "must not be negative, got %q (\"0s\": no bound)", c.MaxPast.Text)
	}
	if c.MaxFuture.IsSet() && (c.MaxFuture.D <= 0 || c.MaxFuture.D > MaxMaxFuture) {
		e.Add("max_future", "must be positive and at most %v, got %q", MaxMaxFuture, c.MaxFuture.Text)
	}
	if c.MaxKeyLen < 0 || c.MaxPoints < 0 {
		e.Table("max_key_len and max_points must not be negative, got %d and %d", c.MaxKeyLen, c.MaxPoints)
	}
	e.Ceiling("max_key_len", c.MaxKeyLen, MaxMaxKeyLen)
	e.Ceiling("max_points", c.MaxPoints, MaxMaxPoints)
	return e
}

// fieldFilterErrors returns the problems of fieldpass and fielddrop: an
// invalid glob, or either set with a data_format whose points are not
// fields (FormatKind.Fields: influx among the built-in formats).
func (c InputConfig) fieldFilterErrors() []error {
	if len(c.FieldPass) == 0 && len(c.FieldDrop) == 0 {
		return nil
	}
	var errs []error
	f := c.WithDefaults().DataFormat
	if k := f.Kind(); k == nil || !k.Fields() {
		var withFields []string
		for _, f := range Formats() {
			if f.Kind().Fields() {
				withFields = append(withFields, strconv.Quote(f.String()))
			}
		}
		for _, k := range []struct {
			key string
			set bool
		}{{"fieldpass", len(c.FieldPass) > 0}, {"fielddrop", len(c.FieldDrop) > 0}} {
			if k.set {
				errs = append(errs, fmt.Errorf("%s: applies to data_format = %s only (line-protocol fields), not %q", k.key, strings.Join(withFields, " or "), f))
			}
		}
	}
	if _, err := NewFieldFilter(c.FieldPass, c.FieldDrop); err != nil {
		errs = append(errs, schema.Unjoin(err)...)
	}
	return errs
}

// Decoder returns the decoders' configuration of c (validated): its
// format and that format's settings, max_payload, the field filter
// (whose globs are compiled here) and the bounds; max_past "0s" is no
// bound.
func (c InputConfig) Decoder() (DecoderConfig, error) {
	f := c.WithDefaults().DataFormat
	dc := DecoderConfig{Format: f, MaxPayload: c.MaxPayload, Settings: c.Settings[f.String()]}
	if len(c.FieldPass) > 0 || len(c.FieldDrop) > 0 {
		ff, err := NewFieldFilter(c.FieldPass, c.FieldDrop)
		if err != nil {
			return dc, fmt.Errorf("input: %w", err)
		}
		dc.Fields = ff
	}
	if c.MaxPast.IsSet() {
		if dc.MaxPast = c.MaxPast.D; dc.MaxPast == 0 {
			dc.MaxPast = -1
		}
	}
	dc.MaxFuture = c.MaxFuture.D
	dc.MaxKeyLen, dc.MaxPoints = c.MaxKeyLen, c.MaxPoints
	return dc, nil
}

// ConsumerConfig is [input.jetstream]'s durable consumer: its presence
// reads points from a JetStream consumer instead of core NATS
// subscriptions. JetStream makes the Source's configuration of it.
type ConsumerConfig struct {
	Stream        string          `toml:"stream" doc:"stream name (required)"`
	Durable       string          `toml:"durable" doc:"durable consumer name (required)"`
	AckWait       schema.Duration `toml:"ack_wait" doc:"a message is delivered again after this long without an ack"`
	MaxDeliver    *int            `toml:"max_deliver" doc:"deliveries of a message at most; -1 unlimited"`
	NakDelay      schema.Duration `toml:"nak_delay" doc:"redelivery delay after a sink failure"`
	MaxAckPending int             `toml:"max_ack_pending" doc:"messages delivered and not yet acked at most (0: the default)"`
}

// WithDefaults returns c with its defaults filled in.
func (c ConsumerConfig) WithDefaults() ConsumerConfig {
	if !c.AckWait.IsSet() {
		c.AckWait = schema.Dur(DefaultAckWait)
	}
	if c.MaxDeliver == nil {
		n := DefaultMaxDeliver
		c.MaxDeliver = &n
	}
	if !c.NakDelay.IsSet() {
		c.NakDelay = schema.Dur(DefaultNakDelay)
	}
	if c.MaxAckPending == 0 {
		c.MaxAckPending = DefaultMaxAckPending
	}
	return c
}

// Validate returns every problem of c at once, each naming its key
// relative to [input.jetstream].
func (c ConsumerConfig) Validate() error {
	var e schema.Errors
	for _, n := range []struct{ key, name string }{{"stream", c.Stream}, {"durable", c.Durable}} {
		switch {
		case n.name == "":
			e.Add(n.key, "required")
		case strings.ContainsAny(n.name, ".*>/\\") || strings.IndexFunc(n.name, natsconn.IsSpaceOrControl) >= 0:
			e.Add(n.key, `invalid name %q: no '.', '*', '>', spaces, '/' or '\'`, n.name)
		}
	}
	if msg := c.AckWait.Positive(false); msg != "" {
		e.Add("ack_wait", "%s", msg)
	}
	if msg := c.NakDelay.Positive(false); msg != "" {
		e.Add("nak_delay", "%s", msg)
	}
	if c.MaxDeliver != nil && (*c.MaxDeliver == 0 || *c.MaxDeliver < -1) {
		e.Add("max_deliver", "must be positive or -1 (unlimited), got %d", *c.MaxDeliver)
	}
	if c.MaxAckPending < 0 {
		e.Add("max_ack_pending", "must not be negative, got %d", c.MaxAckPending)
	}
	if delay, n := c.NakDelay.Or(DefaultNakDelay), c.redeliveries(); delay > 0 && n > 0 && delay > math.MaxInt64/time.Duration(n) {
		// A series whose forecast a sink refused holds its newer
		// points for the redeliveries (RedeliveryHold).
		e.Add("nak_delay", "%s × max_deliver %d is longer than a duration holds (about 292 years): lower nak_delay or max_deliver", c.NakDelay.Text, n)
	}
	return errors.Join(e...)
}

// JetStream returns the Source's configuration of the consumer named
// durable; the caller adds the checkpoints' position.
func (c ConsumerConfig) JetStream(durable string) *JetStreamConfig {
	jc := &JetStreamConfig{
		Stream:        c.Stream,
		Durable:       durable,
		AckWait:       c.AckWait.Or(DefaultAckWait),
		NakDelay:      c.NakDelay.D,
		MaxAckPending: c.MaxAckPending,
	}
	if c.MaxDeliver != nil {
		jc.MaxDeliver = *c.MaxDeliver
	}
	// One back-off step, the ack wait: nats-server dates a NAK's delay
	// from AckWait but, with a BackOff list, expires the n-th delivery
	// after BackOff[n−1], so with the default (AckWait doubling) a second
	// NAK with nak_delay would be redelivered only after ~AckWait.
	jc.BackOff = []time.Duration{jc.AckWait}
	return jc
}

// RedeliveryHold is how long a series whose forecast a sink refused
// holds its newer points for the refused one's redelivery: as long as
// the server keeps redelivering it (nak_delay × max_deliver, ten
// deliveries when unlimited).
func (c ConsumerConfig) RedeliveryHold() time.Duration {
	return c.NakDelay.Or(DefaultNakDelay) * time.Duration(c.redeliveries())
}

// redeliveries is how many times a refused message is delivered again:
// max_deliver, ten when unlimited.
func (c ConsumerConfig) redeliveries() int {
	n := DefaultMaxDeliver
	if c.MaxDeliver != nil {
		n = *c.MaxDeliver
	}
	if n <= 0 {
		n = 10
	}
	return n
}

// UnmarshalText parses a registered format's name (ParseFormat), for
// `data_format`.
func (f *Format) UnmarshalText(b []byte) error {
	v, err := ParseFormat(string(b))
	if err != nil {
		return err
	}
	*f = v
	return nil
}

// MarshalText returns the format's name.
func (f Format) MarshalText() ([]byte, error) { return []byte(f.String()), nil }

// UnmarshalText parses a time format (ParseTimeFormat).
func (f *TimeFormat) UnmarshalText(b []byte) error {
	v, err := ParseTimeFormat(string(b))
	if err != nil {
		return err
	}
	*f = v
	return nil
}

// MarshalText returns the time format's name.
func (f TimeFormat) MarshalText() ([]byte, error) { return []byte(f.String()), nil }
