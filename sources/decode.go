package sources

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/forecastd/forecastd/pipeline"
)

// TimeFormat is how a JSON number in "time" is read, the
// `json_time_format` config key. A JSON string in "time" is always
// RFC 3339, whatever the TimeFormat.
type TimeFormat uint8

// The Unix time units. The zero value is TimeUnix.
const (
	TimeUnix   TimeFormat = iota // seconds since the Unix epoch, may have a fraction
	TimeUnixMs                   // milliseconds
	TimeUnixUs                   // microseconds
	TimeUnixNs                   // nanoseconds
)

// ParseTimeFormat returns the TimeFormat named s: "unix" (or ""),
// "unix_ms", "unix_us" or "unix_ns".
func ParseTimeFormat(s string) (TimeFormat, error) {
	switch s {
	case "", "unix":
		return TimeUnix, nil
	case "unix_ms":
		return TimeUnixMs, nil
	case "unix_us":
		return TimeUnixUs, nil
	case "unix_ns":
		return TimeUnixNs, nil
	}
	return 0, fmt.Errorf("sources: unknown json_time_format %q (want unix, unix_ms, unix_us or unix_ns)", s)
}

// String returns the format's config name.
func (f TimeFormat) String() string {
	switch f {
	case TimeUnix:
		return "unix"
	case TimeUnixMs:
		return "unix_ms"
	case TimeUnixUs:
		return "unix_us"
	case TimeUnixNs:
		return "unix_ns"
	}
	return fmt.Sprintf("time_format(%d)", uint8(f))
}

// unit returns the number of nanoseconds in one unit of f and the number
// of decimal digits of a fraction of a unit that are whole nanoseconds.
func (f TimeFormat) unit() (ns int64, fracDigits int) {
	switch f {
	case TimeUnixMs:
		return 1e6, 6
	case TimeUnixUs:
		return 1e3, 3
	case TimeUnixNs:
		return 1, 0
	}
	return 1e9, 9
}

// Defaults of DecoderConfig, and the ceilings a config may not exceed.
const (
	DefaultMaxPayload = 1 << 20
	DefaultMaxPast    = 7 * 24 * time.Hour
	// DefaultMaxFuture is small, so that one point from a clock that is
	// ahead cannot make its series refuse the real points (as out of
	// order) for long: at most this long.
	DefaultMaxFuture = time.Minute
	MaxMaxFuture     = 24 * time.Hour
	DefaultMaxKeys   = 1 << 16
	// DefaultMaxKeyLen bounds a series key, in bytes; MaxMaxKeyLen is
	// its ceiling.
	DefaultMaxKeyLen = 1024
	MaxMaxKeyLen     = 1 << 16
	// DefaultMaxPoints bounds the points decoded from one payload (and so
	// the series one message can create); MaxMaxPoints is its ceiling.
	DefaultMaxPoints = 10_000
	MaxMaxPoints     = 1 << 20
	// DefaultMaxKeyBytes bounds the key cache of one Decoder, in bytes
	// (keys, their parts and a fixed overhead per entry).
	DefaultMaxKeyBytes = 8 << 20
)

// keyEntryOverhead is what a cached key costs beside its strings: the map
// slot, the entry and its string and slice headers, rounded up.
const keyEntryOverhead = 160

// DecoderConfig configures a Decoder. The zero value of every field but
// Format selects its documented default.
type DecoderConfig struct {
	// Format is the payload format, a registered one; required.
	Format Format
	// Settings are the format's own settings (Configurable.NewSettings;
	// *JSONSettings for json), nil for its defaults. Decode finds them
	// with Decoder.Settings.
	Settings any
	// InfluxPrecision is the unit of line-protocol timestamps: one of
	// time.Nanosecond (the default, when zero), time.Microsecond,
	// time.Millisecond, time.Second.
	InfluxPrecision time.Duration
	// MaxPayload is the largest payload accepted, in bytes; zero is
	// DefaultMaxPayload (1 MiB), negative is no limit.
	MaxPayload int
	// MaxPast and MaxFuture bound a point's time relative to the receive
	// time given to Decode: a point older than recv−MaxPast or newer than
	// recv+MaxFuture is refused (ReasonOutOfRangeTime). Zero selects
	// DefaultMaxPast (7 days) and DefaultMaxFuture (1 minute); negative
	// disables the bound. Config keys `max_past`, `max_future`.
	MaxPast, MaxFuture time.Duration
	// MaxKeys and MaxKeyBytes bound the decoder's cache of series keys
	// (which makes decoding of known series allocation-free), in entries
	// and in bytes; zero is DefaultMaxKeys, DefaultMaxKeyBytes. When
	// either would be exceeded the cache is emptied and refilled. Only
	// keys of accepted points are cached.
	MaxKeys, MaxKeyBytes int
	// MaxKeyLen bounds a series key in bytes (default DefaultMaxKeyLen):
	// a point whose key is longer is refused (ReasonKeyTooLong) and its
	// key never cached. Config key `max_key_len`.
	MaxKeyLen int
	// MaxPoints bounds the points one payload may yield (default
	// DefaultMaxPoints): the rest of a payload past it is refused
	// (ReasonTooManyPoints, one error), its first MaxPoints points kept.
	// Config key `max_points`.
	MaxPoints int
	// Fields, if not nil, selects the line-protocol fields that become
	// points (the `fieldpass` and `fielddrop` config keys) of a format
	// whose FormatKind.Fields is true; nil keeps every field. Several
	// decoders may share one.
	Fields *FieldFilter
	// OutputSubjectLen, if set, returns the length in bytes of the
	// longest subject a point's records are published on, given the
	// point's subject, measurement and field (sinks.SubjectLen); a point
	// for which it exceeds MaxOutputSubjectLen is refused
	// (ReasonSubjectTooLong), so that no input makes a publish the NATS
	// server refuses by closing the connection.
	OutputSubjectLen    func(subject, measurement, field string) int
	MaxOutputSubjectLen int
}

// Tag is one InfluxDB tag, unescaped; it is pipeline's, so that a
// point's tags reach runner.Origin without a copy.
type Tag = pipeline.Tag

// KeyedPoint is one decoded observation of one series. Time and Value are
// the fields of pipeline.Point: convert with
// pipeline.Point{Time: p.Time, Value: p.Value}.
type KeyedPoint struct {
	// Key is the series key: the "series" field, else the subject (json,
	// value); measurement, sorted tags and field (influx), see the
	// package documentation for its syntax.
	Key string
	// Time is the point's time; when the payload carried none, it is the
	// receive time given to Decode and NoTime is set.
	Time time.Time
	// Value is finite.
	Value float64
	// NoTime reports that the payload carried no time.
	NoTime bool
	// Measurement and Field are the line-protocol measurement and field
	// key, unescaped (influx, and any format whose FormatKind.Fields is
	// true).
	Measurement, Field string
	// Tags are the line's tags sorted by key, unescaped (as Measurement).
	// The slice is shared between points and calls and must not be
	// modified.
	Tags []Tag
}

// Decoder decodes payloads of one format into keyed points. Decoding is
// a function of the arguments and the config only: no wall clock, no I/O.
// A registered format's Decode builds its points with the Decoder's
// AppendPoint, ParseValue and KeepField, so that its points are bounded
// and keyed as the built-in formats' are.
// A Decoder caches series keys, so it is not safe for concurrent use;
// give each goroutine its own.
type Decoder struct {
	cfg       DecoderConfig
	kind      FormatKind // cfg.Format's
	start     int        // len(dst) when the payload being decoded began (AppendPoint)
	prec      time.Duration
	keys      map[string]*keyEntry
	keyBytes  int      // what keys holds, as keyEntry.size counts it
	newKey    bool     // set by jsonPoint: the point's key is not cached
	room      int      // points the payload being decoded may still yield (influx)
	scr       []byte   // key being built
	tagb      []byte   // unescaped tags of the current line
	tagr      []tagRef // offsets into tagb
	fields    []fieldRef
	fieldb    []byte
	keep      map[string]bool // cfg.Fields' decisions by field key
	keepBytes int             // what keep holds, as keepField counts it
}

// Settings returns the format's own settings (DecoderConfig.Settings),
// nil for its defaults.
func (d *Decoder) Settings() any { return d.cfg.Settings }

// NewDecoder validates cfg and returns a Decoder.
func NewDecoder(cfg DecoderConfig) (*Decoder, error) {
	var errs []error
	kind := cfg.Format.Kind()
	switch {
	case cfg.Format == 0:
		errs = append(errs, errors.New("sources: data format is required"))
	case kind == nil:
		errs = append(errs, fmt.Errorf("sources: unknown data format %d", cfg.Format))
	}
	if v, ok := cfg.Settings.(interface{ Validate() error }); ok && kind != nil {
		if err := v.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("sources: %s: %w", kind.Name(), err))
		}
	}
	switch cfg.InfluxPrecision {
	case 0:
		cfg.InfluxPrecision = time.Nanosecond
	case time.Nanosecond, time.Microsecond, time.Millisecond, time.Second:
	default:
		errs = append(errs, fmt.Errorf("sources: influx precision %v: want 1ns, 1µs, 1ms or 1s", cfg.InfluxPrecision))
	}
	if cfg.MaxPayload == 0 {
		cfg.MaxPayload = DefaultMaxPayload
	}
	if cfg.MaxPast == 0 {
		cfg.MaxPast = DefaultMaxPast
	}
	if cfg.MaxFuture == 0 {
		cfg.MaxFuture = DefaultMaxFuture
	}
	if cfg.MaxKeys <= 0 {
		cfg.MaxKeys = DefaultMaxKeys
	}
	if cfg.MaxKeyBytes <= 0 {
		cfg.MaxKeyBytes = DefaultMaxKeyBytes
	}
	if cfg.MaxKeyLen <= 0 {
		cfg.MaxKeyLen = DefaultMaxKeyLen
	}
	if cfg.MaxPoints <= 0 {
		cfg.MaxPoints = DefaultMaxPoints
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return &Decoder{cfg: cfg, kind: kind, prec: cfg.InfluxPrecision, keys: make(map[string]*keyEntry)}, nil
}

// Config returns the decoder's config with defaults filled in.
func (d *Decoder) Config() DecoderConfig { return d.cfg }

// Decode appends the points of payload to dst and returns the extended
// slice, in the payload's order, with the Decode of the format's
// registration (FormatKind) once the payload is found no larger than
// MaxPayload (else ReasonTooLarge). subject is the NATS subject (the
// series key for json without "series", and for value); recv is the
// receive time, stamped on points without a time and the reference of
// the MaxPast/MaxFuture window (a zero recv disables the window).
//
// The error is nil, a *ParseError, or ParseErrors when several parts were
// refused; walk it with EachParseError. Parts are refused independently:
// an element of a JSON array, a line or a single string or boolean field
// of line protocol. If no point was decoded the error is never nil (an
// empty payload is ReasonEmpty), unless every field of a payload of a
// format with Fields was left out by DecoderConfig.Fields; either way "no
// points" means the payload can never be used (under JetStream: Term it).
//
// Decode does not retain payload. Once a series' key is cached, decoding
// its json and value payloads does not allocate, nor influx beyond the
// line-protocol parser's own two allocations per payload.
func (d *Decoder) Decode(dst []KeyedPoint, subject string, payload []byte, recv time.Time) ([]KeyedPoint, error) {
	if pe := d.tooLarge(payload); pe != nil {
		return dst, pe
	}
	n := len(dst)
	d.start = n
	dst, err := d.kind.Decode(d, dst, subject, payload, recv)
	if d.cfg.OutputSubjectLen != nil && len(dst) > n {
		dst, err = d.checkSubjects(dst, n, subject, err)
	}
	return dst, err
}

// checkSubjects refuses the points from dst[from:] whose output subject
// is longer than MaxOutputSubjectLen, appending their errors to err.
func (d *Decoder) checkSubjects(dst []KeyedPoint, from int, subject string, err error) ([]KeyedPoint, error) {
	kept := dst[:from]
	var refused ParseErrors
	for _, p := range dst[from:] {
		if n := d.cfg.OutputSubjectLen(subject, p.Measurement, p.Field); n > d.cfg.MaxOutputSubjectLen {
			refused = append(refused, &ParseError{Reason: ReasonSubjectTooLong, Series: p.Key,
				Msg: fmt.Sprintf("its forecasts' subject would be %d bytes, over the limit of %d (the subject starts %q)", n, d.cfg.MaxOutputSubjectLen, truncate([]byte(subject)))})
			continue
		}
		kept = append(kept, p)
	}
	if len(refused) == 0 {
		return dst, err
	}
	clear(dst[len(kept):]) // no stale keys or tags held past the slice's length
	var all ParseErrors
	EachParseError(err, func(pe *ParseError) { all = append(all, pe) })
	all = append(all, refused...)
	if len(all) == 1 {
		return kept, all[0]
	}
	return kept, all
}

func (d *Decoder) tooLarge(payload []byte) *ParseError {
	if d.cfg.MaxPayload > 0 && len(payload) > d.cfg.MaxPayload {
		return &ParseError{Reason: ReasonTooLarge, Msg: fmt.Sprintf("payload of %d bytes exceeds the limit of %d", len(payload), d.cfg.MaxPayload)}
	}
	return nil
}

// checkTime returns nil if t is within pipeline.MinTime to MaxTime, the
// times the pipeline and the sinks can compute with (ReasonBadTime), and
// within the window around recv (ReasonOutOfRangeTime).
func (d *Decoder) checkTime(t, recv time.Time) *ParseError {
	if !pipeline.InTimeRange(t) {
		return badClockTime(t)
	}
	if recv.IsZero() {
		return nil
	}
	if d.cfg.MaxPast > 0 && t.Before(recv.Add(-d.cfg.MaxPast)) {
		return &ParseError{Reason: ReasonOutOfRangeTime, Msg: fmt.Sprintf("time %s is more than %v before the receive time %s", t.UTC().Format(time.RFC3339Nano), d.cfg.MaxPast, recv.UTC().Format(time.RFC3339Nano))}
	}
	if d.cfg.MaxFuture > 0 && t.After(recv.Add(d.cfg.MaxFuture)) {
		return &ParseError{Reason: ReasonOutOfRangeTime, Msg: fmt.Sprintf("time %s is more than %v after the receive time %s", t.UTC().Format(time.RFC3339Nano), d.cfg.MaxFuture, recv.UTC().Format(time.RFC3339Nano))}
	}
	return nil
}

// badClockTime returns the refusal of t, outside pipeline.MinTime to
// MaxTime.
func badClockTime(t time.Time) *ParseError {
	return &ParseError{Reason: ReasonBadTime, Msg: fmt.Sprintf("time %s is outside the times forecastd computes with, %s to %s: send the time in UTC, in the unit json_time_format or the line protocol's precision says",
		t.UTC().Format(time.RFC3339Nano), pipeline.MinTime.Format(time.DateOnly), pipeline.MaxTime.Format(time.DateOnly))}
}

// invalidKey returns the refusal of a series key pipeline.CheckKey
// refuses (ReasonInvalidKey), else nil.
func invalidKey[K ~string | ~[]byte](key K) *ParseError {
	if err := pipeline.CheckKey(key); err != nil {
		return &ParseError{Reason: ReasonInvalidKey, Msg: err.Error()}
	}
	return nil
}

// parseValue parses a decimal float (JSON number or bare number text).
// A result that overflows float64 or is NaN/Inf is ReasonNonFinite.
func parseValue(b []byte) (float64, *ParseError) {
	v, err := strconv.ParseFloat(string(b), 64)
	if err != nil {
		var ne *strconv.NumError
		if !(errors.As(err, &ne) && ne.Err == strconv.ErrRange) {
			return 0, &ParseError{Reason: ReasonInvalidValue, Msg: fmt.Sprintf("%q is not a number", truncate(b))}
		}
		// Range errors: overflow gives ±Inf (refused below), underflow a
		// finite value that is kept.
	}
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, &ParseError{Reason: ReasonNonFinite, Msg: fmt.Sprintf("value %q is not finite", truncate(b))}
	}
	return v, nil
}

// maxQuoted is the length at which truncate cuts a value for an error
// message or a log line.
const maxQuoted = 64

// truncate shortens b for an error message: at most maxQuoted bytes, cut
// at a UTF-8 boundary, then "…" and b's length, so that a message stays
// short whatever a publisher sent.
func truncate(b []byte) string { return cut(b, maxQuoted) }

// cut returns b if it is at most max bytes long, else its first max
// bytes or fewer (at a UTF-8 boundary), "…" and its length.
func cut[T string | []byte](b T, max int) string {
	if len(b) <= max {
		return string(b)
	}
	n := max
	for n > 0 && !utf8.RuneStart(b[n]) {
		n--
	}
	return string(b[:n]) + "…(" + strconv.Itoa(len(b)) + " bytes)"
}

// keyTooLong returns the refusal of a key of n bytes, whose start is b,
// if n exceeds MaxKeyLen, else nil.
func (d *Decoder) keyTooLong(b []byte, n int) *ParseError {
	if n <= d.cfg.MaxKeyLen {
		return nil
	}
	return &ParseError{Reason: ReasonKeyTooLong, Msg: fmt.Sprintf("series key of %d bytes exceeds the limit of %d (it starts %q)", n, d.cfg.MaxKeyLen, truncate(b[:min(len(b), maxQuoted+1)]))}
}

// tooManyPoints returns the refusal of the rest of a payload once it has
// yielded MaxPoints points.
func (d *Decoder) tooManyPoints(line int) *ParseError {
	return &ParseError{Reason: ReasonTooManyPoints, Line: line, Msg: fmt.Sprintf("the payload yields more than %d points; the rest of it is refused", d.cfg.MaxPoints)}
}

// keyEntry is a cached series key with its parts.
type keyEntry struct {
	key                string
	measurement, field string
	tags               []Tag
}

// size is what e costs the cache, in bytes (its tags are shared by the
// entries of one line, and counted in each: an over-estimate).
func (e *keyEntry) size() int {
	n := keyEntryOverhead + len(e.key) + len(e.measurement) + len(e.field)
	for _, t := range e.tags {
		n += 32 + len(t.Key) + len(t.Value)
	}
	return n
}

// lookup returns the cached entry for the key in b, or nil.
func (d *Decoder) lookup(b []byte) *keyEntry {
	return d.keys[string(b)]
}

// store caches e, the key of an accepted point, emptying the cache first
// if it would exceed MaxKeys entries or MaxKeyBytes bytes.
func (d *Decoder) store(e *keyEntry) {
	n := e.size()
	if len(d.keys) >= d.cfg.MaxKeys || d.keyBytes+n > d.cfg.MaxKeyBytes {
		clear(d.keys)
		d.keyBytes = 0
	}
	d.keys[e.key] = e
	d.keyBytes += n
}

// CacheBytes returns what the decoder's key cache holds, in bytes as
// MaxKeyBytes counts them.
func (d *Decoder) CacheBytes() int { return d.keyBytes }
