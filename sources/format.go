package sources

import (
	"fmt"
	"math"
	"regexp"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// Format is a payload format, the `data_format` config key: the index of
// a registered [FormatKind]. The zero Format is none.
type Format uint8

// The built-in payload formats, registered in this order.
const (
	// FormatJSON: {"time": …, "value": …, "series": "optional"}, or a
	// JSON array of such objects.
	FormatJSON Format = iota + 1
	// FormatInflux: InfluxDB line protocol, as Telegraf's NATS output
	// sends it.
	FormatInflux
	// FormatValue: a bare number, e.g. "42.5".
	FormatValue
)

// FormatKind is the registration of one payload format: what a Decoder
// needs to decode it and what the configuration says of it. Adding a
// format is implementing this in one file and calling [RegisterFormat];
// nothing else switches on a format. The built-in formats are in json.go,
// influx.go and value.go, registered in the table below.
type FormatKind interface {
	// Name is the format's value of `data_format`: lower case, unique.
	Name() string
	// Doc describes the format in a few words, for the configuration
	// reference: "line protocol, every numeric field a series".
	Doc() string
	// Fields reports whether the format's points are fields of a
	// measurement, as line protocol's: KeyedPoint's Measurement, Field
	// and Tags are set, DecoderConfig.Fields (`fieldpass`, `fielddrop`)
	// applies, and warm start reads a series' past from its own
	// measurement and field.
	Fields() bool
	// Decode appends the points of payload, which is at most MaxPayload
	// bytes long, to dst and returns the extended slice; see
	// [Decoder.Decode] for its contract. It builds its points with
	// [Decoder.AppendPoint] (AppendField for fields of a measurement),
	// which apply the decoder's bounds, time window and key cache, and
	// reports every refusal as a *ParseError or ParseErrors, with the
	// existing Reasons. It must not retain payload, nor block.
	Decode(d *Decoder, dst []KeyedPoint, subject string, payload []byte, recv time.Time) ([]KeyedPoint, error)
}

var formats = struct {
	sync.RWMutex
	kinds []FormatKind // by Format; kinds[0] is nil
}{kinds: []FormatKind{FormatJSON: jsonFormat{}, FormatInflux: influxFormat{}, FormatValue: valueFormat{}}}

var formatName = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)

// RegisterFormat adds a payload format and returns its Format. Call it
// from an init function (or a test) before a configuration is read. It
// panics on a bad or taken name, or past 255 formats: a programmer
// error.
func RegisterFormat(k FormatKind) Format {
	formats.Lock()
	defer formats.Unlock()
	name := k.Name()
	if !formatName.MatchString(name) {
		panic(fmt.Sprintf("sources: RegisterFormat: bad name %q", name))
	}
	for _, o := range formats.kinds[1:] {
		if o.Name() == name {
			panic(fmt.Sprintf("sources: RegisterFormat: format %q registered twice", name))
		}
	}
	if len(formats.kinds) > math.MaxUint8 {
		panic(fmt.Sprintf("sources: RegisterFormat %s: too many formats", name))
	}
	formats.kinds = append(formats.kinds, k)
	return Format(len(formats.kinds) - 1)
}

// Formats returns the registered formats, in order (the built-in ones
// first: json, influx, value).
func Formats() []Format {
	formats.RLock()
	defer formats.RUnlock()
	fs := make([]Format, len(formats.kinds)-1)
	for i := range fs {
		fs[i] = Format(i + 1)
	}
	return fs
}

// Kind returns f's registration, or nil if f is not registered.
func (f Format) Kind() FormatKind {
	formats.RLock()
	defer formats.RUnlock()
	if f == 0 || int(f) >= len(formats.kinds) {
		return nil
	}
	return formats.kinds[f]
}

// ParseFormat returns the registered Format named s.
func ParseFormat(s string) (Format, error) {
	formats.RLock()
	defer formats.RUnlock()
	names := make([]string, 0, len(formats.kinds)-1)
	for i, k := range formats.kinds[1:] {
		if k.Name() == s {
			return Format(i + 1), nil
		}
		names = append(names, k.Name())
	}
	return 0, fmt.Errorf("sources: unknown data format %q (want %s)", s, orList(names))
}

// String returns the format's config name.
func (f Format) String() string {
	if k := f.Kind(); k != nil {
		return k.Name()
	}
	return fmt.Sprintf("format(%d)", uint8(f))
}

// orList writes names as a list for a message: "a", "a or b", "a, b or
// c".
func orList(names []string) string {
	if len(names) <= 1 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// AppendPoint appends the point of series key, value v and time t (the
// zero time: none, the point takes recv and NoTime) to dst, as every
// format's points are: refused, with dst unchanged, if the payload has
// already yielded MaxPoints points (ReasonTooManyPoints; stop then, the
// rest of the payload is refused), if key is empty (ReasonMissingSeries),
// longer than MaxKeyLen (ReasonKeyTooLong), not valid UTF-8
// (ReasonInvalidValue) or one pipeline.CheckKey refuses
// (ReasonInvalidKey), if v is not finite (ReasonNonFinite), if t lies
// outside pipeline.MinTime to MaxTime (ReasonBadTime) or the
// MaxPast/MaxFuture window around recv (ReasonOutOfRangeTime). A refusal
// names the series, or the key's start. The key is taken from the
// decoder's cache (no allocation), and an accepted point's key is
// cached. key is not retained. For a format's Decode, during a call of
// [Decoder.Decode].
func (d *Decoder) AppendPoint(dst []KeyedPoint, key []byte, t time.Time, v float64, recv time.Time) ([]KeyedPoint, *ParseError) {
	return d.appendPoint(dst, key, nil, t, v, recv)
}

// AppendField is AppendPoint for a format whose points are fields of a
// measurement (FormatKind.Fields): the point carries the measurement,
// field and tags that origin returns, cached with its key, so that
// origin is called only for a key the cache does not hold. The tags,
// sorted by key, are shared by the points of the key and must not be
// modified after.
func (d *Decoder) AppendField(dst []KeyedPoint, key []byte, origin func() (measurement, field string, tags []Tag), t time.Time, v float64, recv time.Time) ([]KeyedPoint, *ParseError) {
	return d.appendPoint(dst, key, origin, t, v, recv)
}

func (d *Decoder) appendPoint(dst []KeyedPoint, key []byte, origin func() (string, string, []Tag), t time.Time, v float64, recv time.Time) ([]KeyedPoint, *ParseError) {
	if len(dst)-d.start >= d.cfg.MaxPoints {
		return dst, d.tooManyPoints(0)
	}
	if len(key) == 0 {
		return dst, &ParseError{Reason: ReasonMissingSeries, Msg: "empty series key"}
	}
	if pe := d.keyTooLong(key, len(key)); pe != nil {
		return dst, pe
	}
	e := d.lookup(key)
	var ks string
	if e != nil {
		ks = e.key
	} else {
		if !utf8.Valid(key) {
			return dst, &ParseError{Reason: ReasonInvalidValue, Msg: fmt.Sprintf("series key %q is not valid UTF-8", truncate(key))}
		}
		if pe := invalidKey(key); pe != nil {
			return dst, pe
		}
		ks = string(key)
	}
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return dst, &ParseError{Reason: ReasonNonFinite, Series: ks, Msg: fmt.Sprintf("value %v is not finite", v)}
	}
	noTime := t.IsZero()
	if noTime {
		t = recv
	} else if pe := d.checkTime(t, recv); pe != nil {
		pe.Series = ks
		return dst, pe
	}
	if e == nil {
		e = &keyEntry{key: ks}
		if origin != nil {
			e.measurement, e.field, e.tags = origin()
		}
		d.store(e)
	}
	return append(dst, KeyedPoint{Key: e.key, Time: t, NoTime: noTime, Value: v,
		Measurement: e.measurement, Field: e.field, Tags: e.tags}), nil
}

// ParseValue parses b, a decimal number in the syntax of
// strconv.ParseFloat, as the json and value formats read theirs: a value
// that is not a number is refused (ReasonInvalidValue), and so is one that
// is not finite (ReasonNonFinite). For a format's Decode.
func (d *Decoder) ParseValue(b []byte) (float64, *ParseError) { return parseValue(b) }

// KeepField reports whether DecoderConfig.Fields keeps the field of key
// k (always, without a filter), caching the decision as the influx format
// does, and counts a field left out in FieldFilter.Dropped. For the
// Decode of a format whose Fields is true.
func (d *Decoder) KeepField(k []byte) bool {
	if d.cfg.Fields == nil {
		return true
	}
	if d.keepField(k) {
		return true
	}
	d.cfg.Fields.dropped.Add(1)
	return false
}

// Truncate returns b as a message quotes a value of the payload: at most
// 64 bytes, cut at a UTF-8 boundary, then "…" and its length.
func Truncate(b []byte) string { return truncate(b) }

// Configurable is a FormatKind with settings of its own: keys of [input]
// beside its own, read whatever data_format names (json's
// json_time_format and series_across_subjects are; see JSONSettings).
// The decoder of the format is given them in DecoderConfig.Settings.
type Configurable interface {
	FormatKind
	// NewSettings returns a new, zero settings value: a pointer to a
	// struct whose fields are the keys (`toml` and `doc` tags, each key
	// unique among [input]'s), their zero values the defaults. With a
	// method Validate() error it is checked with the configuration, each
	// error naming its key; with WithDefaults, the reference shows the
	// defaults it fills in.
	NewSettings() any
}
