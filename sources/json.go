package sources

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"time"
	"unicode/utf8"
)

// maxJSONDepth bounds the nesting of ignored JSON values.
const maxJSONDepth = 64

// jsonFormat is the registration of the json format (FormatJSON).
type jsonFormat struct{}

func (jsonFormat) Name() string { return "json" }
func (jsonFormat) Doc() string {
	return `an object {"time": …, "value": …, "series": …} or an array of them`
}
func (jsonFormat) Fields() bool { return false }

// NewSettings makes json's own settings, keys of [input].
func (jsonFormat) NewSettings() any { return new(JSONSettings) }

// JSONSettings are the json format's own settings (DecoderConfig.Settings).
// The zero value is the default.
type JSONSettings struct {
	// TimeFormat is the unit of a numeric "time".
	TimeFormat TimeFormat `toml:"json_time_format" doc:"unit of a numeric JSON time: unix (seconds), unix_ms, unix_us or unix_ns; a string time is RFC 3339"`
	// SeriesAcrossSubjects: "series" is the series key itself, so that
	// a payload on any subject may name any series. False (the
	// default): the key is the subject, a space and "series", so that a
	// publisher on one subject cannot write into another subject's
	// series (a NATS subject holds no space).
	SeriesAcrossSubjects bool `toml:"series_across_subjects" doc:"\"series\" is the series key itself, not \"<subject> <series>\""`
}

// WithDefaults returns s, whose zero value is the default.
func (s JSONSettings) WithDefaults() JSONSettings { return s }

// Validate reports an unknown time format.
func (s *JSONSettings) Validate() error {
	if s.TimeFormat > TimeUnixNs {
		return fmt.Errorf("json_time_format: unknown json time format %d", s.TimeFormat)
	}
	return nil
}

// jsonSettings returns d's json settings: DecoderConfig.Settings, or the
// defaults.
func (d *Decoder) jsonSettings() *JSONSettings {
	if s, ok := d.cfg.Settings.(*JSONSettings); ok && s != nil {
		return s
	}
	return &defaultJSONSettings
}

var defaultJSONSettings JSONSettings // read only
func (jsonFormat) Decode(d *Decoder, dst []KeyedPoint, subject string, payload []byte, recv time.Time) ([]KeyedPoint, error) {
	return d.DecodeJSON(dst, subject, payload, recv)
}

// DecodeJSON decodes a "json" payload: an object
//
//	{"time": …, "value": …, "series": "optional"}
//
// or an array of such objects, appending one point per object to dst.
// "value" must be a JSON number; "time" is an RFC 3339 string or a number
// in the unit of json_time_format (JSONSettings) (integers exactly, fractions to the
// nanosecond), and when absent or null the point takes recv; "series",
// when present and not null, is the series key instead of subject. Other
// members are ignored; duplicate members: the last wins. A malformed
// payload is refused whole (ReasonInvalidJSON); in an array, an element
// with a bad value or time is refused alone. See Decode for the rest.
func (d *Decoder) DecodeJSON(dst []KeyedPoint, subject string, payload []byte, recv time.Time) ([]KeyedPoint, error) {
	if pe := d.tooLarge(payload); pe != nil {
		return dst, pe
	}
	set := d.jsonSettings()
	s := jsonScanner{b: payload}
	s.ws()
	if s.i == len(s.b) {
		return dst, &ParseError{Reason: ReasonEmpty, Msg: "empty payload"}
	}
	// Validate the whole payload first, so that a malformed payload is
	// refused whole and nothing is half-decoded.
	if err := s.skipValue(0); err == nil {
		s.ws()
		if s.i != len(s.b) {
			return dst, s.errorf("unexpected %q after the top-level value", s.b[s.i])
		}
	} else {
		return dst, err
	}
	s.i = 0
	s.ws()
	switch s.b[s.i] {
	case '{':
		p, pe := d.jsonObject(&s, set, subject, recv)
		if pe != nil {
			return dst, pe
		}
		return append(dst, p), nil
	case '[':
		s.i++
		var errs errList
		n, start := 0, len(dst)
		for {
			s.ws()
			if s.b[s.i] == ']' {
				break
			}
			n++
			if len(dst)-start == d.cfg.MaxPoints {
				errs = append(errs, d.tooManyPoints(n))
				break
			}
			if s.b[s.i] != '{' {
				errs = append(errs, &ParseError{Reason: ReasonInvalidJSON, Line: n, Msg: "array element is not an object"})
				_ = s.skipValue(0)
			} else if p, pe := d.jsonObject(&s, set, subject, recv); pe != nil {
				pe.Line = n
				errs = append(errs, pe)
			} else {
				dst = append(dst, p)
			}
			s.ws()
			if s.b[s.i] == ',' {
				s.i++
			}
		}
		if n == 0 {
			return dst, &ParseError{Reason: ReasonEmpty, Msg: "empty array"}
		}
		return dst, errs.err()
	}
	return dst, &ParseError{Reason: ReasonInvalidJSON, Msg: "want an object or an array of objects"}
}

// jsonObject decodes the valid object at s.i, leaving s after it, and
// caches its key if it is new and the point accepted.
func (d *Decoder) jsonObject(s *jsonScanner, set *JSONSettings, subject string, recv time.Time) (KeyedPoint, *ParseError) {
	d.newKey = false
	p, pe := d.jsonPoint(s, set, subject, recv)
	if pe == nil && d.newKey {
		d.store(&keyEntry{key: p.Key})
	}
	return p, pe
}

// jsonMembers are the members of one object the json format reads, raw.
type jsonMembers struct {
	time, value, series []byte
	seriesEsc           bool // series holds an escape
}

// members reads the object at s.i, which is valid, leaving s after it.
// Of duplicate members the last wins.
func (s *jsonScanner) members() jsonMembers {
	var m jsonMembers
	s.i++ // '{'
	for {
		s.ws()
		if s.b[s.i] == '}' {
			s.i++
			return m
		}
		key, _, _ := s.str()
		s.ws()
		s.i++ // ':'
		s.ws()
		start := s.i
		var esc bool
		if s.b[s.i] == '"' && string(key) == "series" {
			_, esc, _ = s.str()
		} else {
			_ = s.skipValue(0)
		}
		raw := s.b[start:s.i]
		switch string(key) {
		case "time":
			m.time = raw
		case "value":
			m.value = raw
		case "series":
			m.series, m.seriesEsc = raw, esc
		}
		s.ws()
		if s.b[s.i] == ',' {
			s.i++
		}
	}
}

// jsonPoint is jsonObject but for the caching; it sets d.newKey when the
// point's key is not cached.
func (d *Decoder) jsonPoint(s *jsonScanner, set *JSONSettings, subject string, recv time.Time) (KeyedPoint, *ParseError) {
	m := s.members()
	var p KeyedPoint
	// Series first, so that later errors can name it. A key not cached
	// is cached only once its point is accepted (newKey).
	key, newKey, pe := d.jsonKey(m, set.SeriesAcrossSubjects, subject)
	if pe != nil {
		return p, pe
	}
	p.Key = key
	d.newKey = newKey

	switch {
	case len(m.value) == 0 || string(m.value) == "null":
		return p, &ParseError{Reason: ReasonMissingValue, Series: p.Key, Msg: `no "value"`}
	case !isJSONNumberStart(m.value[0]):
		return p, &ParseError{Reason: ReasonInvalidValue, Series: p.Key, Msg: fmt.Sprintf(`"value" is %s, not a number`, jsonKind(m.value))}
	}
	v, pe := parseValue(m.value)
	if pe != nil {
		pe.Series = p.Key
		return p, pe
	}
	p.Value = v

	if len(m.time) == 0 || string(m.time) == "null" {
		p.Time, p.NoTime = recv, true
		return p, nil
	}
	if p.Time, pe = jsonTime(m.time, set.TimeFormat); pe != nil {
		pe.Series = p.Key
		return p, pe
	}
	if pe := d.checkTime(p.Time, recv); pe != nil {
		pe.Series = p.Key
		return p, pe
	}
	return p, nil
}

// jsonKey returns the series key of an object: its "series", after the
// subject and a space unless across (SeriesAcrossSubjects), or the subject
// when it has none; isNew when the key is not cached.
func (d *Decoder) jsonKey(m jsonMembers, across bool, subject string) (key string, isNew bool, pe *ParseError) {
	switch {
	case len(m.series) == 0 || string(m.series) == "null":
		if subject == "" {
			return "", false, &ParseError{Reason: ReasonMissingSeries, Msg: `no "series" and no subject`}
		}
		if pe := d.keyTooLong([]byte(subject), len(subject)); pe != nil {
			return "", false, pe
		}
		if pe := invalidKey(subject); pe != nil {
			return "", false, pe
		}
		return subject, false, nil
	case m.series[0] != '"':
		return "", false, &ParseError{Reason: ReasonInvalidJSON, Msg: fmt.Sprintf(`"series" is %s, not a string`, jsonKind(m.series))}
	}
	name := m.series[1 : len(m.series)-1]
	if len(name) == 0 {
		return "", false, &ParseError{Reason: ReasonMissingSeries, Msg: `empty "series"`}
	}
	// The key: the subject, a space and the name, unless the name is the
	// key across subjects (or there is no subject).
	d.scr = d.scr[:0]
	if !across && subject != "" {
		d.scr = append(append(d.scr, subject...), ' ')
	}
	if pe := d.keyTooLong(append(d.scr, name[:min(len(name), maxQuoted+1)]...), len(d.scr)+len(name)); pe != nil {
		return "", false, pe // checked on the raw length first: no unescaping of a huge name
	}
	if m.seriesEsc {
		var str string
		if err := json.Unmarshal(m.series, &str); err != nil {
			return "", false, &ParseError{Reason: ReasonInvalidJSON, Msg: `bad "series" string`, Err: err}
		}
		d.scr = append(d.scr, str...)
	} else {
		d.scr = append(d.scr, name...)
	}
	if e := d.lookup(d.scr); e != nil {
		return e.key, false, nil
	}
	if !utf8.Valid(d.scr) {
		return "", false, &ParseError{Reason: ReasonInvalidJSON, Msg: `"series" is not valid UTF-8`}
	}
	if pe := invalidKey(d.scr); pe != nil {
		return "", false, pe
	}
	return string(d.scr), true, nil
}

// jsonTime reads an object's "time": an RFC 3339 string, or a number in
// units of tf.
func jsonTime(raw []byte, tf TimeFormat) (time.Time, *ParseError) {
	switch {
	case raw[0] == '"':
		var t time.Time
		if err := t.UnmarshalText(raw[1 : len(raw)-1]); err != nil {
			return t, &ParseError{Reason: ReasonBadTime, Msg: fmt.Sprintf(`"time" %s is not RFC 3339`, truncate(raw))}
		}
		return t, nil
	case isJSONNumberStart(raw[0]):
		t, ok := unixTime(raw, tf)
		if !ok {
			return t, &ParseError{Reason: ReasonBadTime, Msg: fmt.Sprintf(`"time" %s is not a representable Unix time in %s`, truncate(raw), tf)}
		}
		return t, nil
	}
	return time.Time{}, &ParseError{Reason: ReasonBadTime, Msg: fmt.Sprintf(`"time" is %s, not a string or number`, jsonKind(raw))}
}

// unixTime converts the JSON number b, in units of f, to a time. Plain
// decimals are converted exactly (truncated to the nanosecond); numbers
// with an exponent go through float64. It fails when the time does not
// fit int64 nanoseconds (years 1678 to 2262).
func unixTime(b []byte, f TimeFormat) (time.Time, bool) {
	unit, fracDigits := f.unit()
	intPart, frac := b, []byte(nil)
	for i, c := range b {
		switch c {
		case 'e', 'E':
			x, err := strconv.ParseFloat(string(b), 64)
			ns := x * float64(unit)
			if err != nil || math.IsNaN(ns) || ns >= math.MaxInt64 || ns <= math.MinInt64 {
				return time.Time{}, false
			}
			return time.Unix(0, int64(ns)), true
		case '.':
			intPart, frac = b[:i], b[i+1:]
		}
	}
	n, err := strconv.ParseInt(string(intPart), 10, 64)
	if err != nil {
		return time.Time{}, false
	}
	neg := len(intPart) > 0 && intPart[0] == '-'
	var fns int64
	for i := 0; i < fracDigits; i++ {
		fns *= 10
		if i < len(frac) {
			fns += int64(frac[i] - '0')
		}
	}
	if n > math.MaxInt64/unit || n < math.MinInt64/unit {
		return time.Time{}, false
	}
	ns := n * unit
	if neg {
		if ns < math.MinInt64+fns {
			return time.Time{}, false
		}
		ns -= fns
	} else {
		if ns > math.MaxInt64-fns {
			return time.Time{}, false
		}
		ns += fns
	}
	return time.Unix(0, ns), true
}

func isJSONNumberStart(c byte) bool { return c == '-' || (c >= '0' && c <= '9') }

// jsonKind names the kind of the valid JSON value raw.
func jsonKind(raw []byte) string {
	switch raw[0] {
	case '"':
		return "a string"
	case '{':
		return "an object"
	case '[':
		return "an array"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

// jsonScanner is a strict RFC 8259 scanner that validates without
// allocating.
type jsonScanner struct {
	b []byte
	i int
}

func (s *jsonScanner) errorf(format string, args ...any) *ParseError {
	return &ParseError{Reason: ReasonInvalidJSON, Msg: fmt.Sprintf("offset %d: ", s.i) + fmt.Sprintf(format, args...)}
}

func (s *jsonScanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

func (s *jsonScanner) eof() *ParseError { return s.errorf("unexpected end of input") }

// skipValue validates and skips the value at s.i.
func (s *jsonScanner) skipValue(depth int) *ParseError {
	if s.i >= len(s.b) {
		return s.eof()
	}
	switch c := s.b[s.i]; c {
	case '{':
		return s.skipObject(depth)
	case '[':
		return s.skipArray(depth)
	case '"':
		_, _, err := s.str()
		return err
	case 't':
		return s.lit("true")
	case 'f':
		return s.lit("false")
	case 'n':
		return s.lit("null")
	default:
		if isJSONNumberStart(c) {
			return s.number()
		}
		return s.errorf("unexpected %q", c)
	}
}

// skipObject skips the object at s.i, at nesting depth.
func (s *jsonScanner) skipObject(depth int) *ParseError {
	if depth >= maxJSONDepth {
		return s.errorf("nesting deeper than %d", maxJSONDepth)
	}
	s.i++
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == '}' {
		s.i++
		return nil
	}
	for {
		s.ws()
		if s.i >= len(s.b) {
			return s.eof()
		}
		if s.b[s.i] != '"' {
			return s.errorf("want a member name, found %q", s.b[s.i])
		}
		if _, _, err := s.str(); err != nil {
			return err
		}
		s.ws()
		if s.i >= len(s.b) {
			return s.eof()
		}
		if s.b[s.i] != ':' {
			return s.errorf("want ':', found %q", s.b[s.i])
		}
		s.i++
		s.ws()
		if err := s.skipValue(depth + 1); err != nil {
			return err
		}
		if end, err := s.next('}'); end || err != nil {
			return err
		}
	}
}

// skipArray skips the array at s.i, at nesting depth.
func (s *jsonScanner) skipArray(depth int) *ParseError {
	if depth >= maxJSONDepth {
		return s.errorf("nesting deeper than %d", maxJSONDepth)
	}
	s.i++
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == ']' {
		s.i++
		return nil
	}
	for {
		s.ws()
		if err := s.skipValue(depth + 1); err != nil {
			return err
		}
		if end, err := s.next(']'); end || err != nil {
			return err
		}
	}
}

// next reads what follows a member or an element: ',' (end false) or
// the closing byte (end true).
func (s *jsonScanner) next(closing byte) (end bool, err *ParseError) {
	s.ws()
	if s.i >= len(s.b) {
		return false, s.eof()
	}
	switch s.b[s.i] {
	case ',':
		s.i++
		return false, nil
	case closing:
		s.i++
		return true, nil
	}
	return false, s.errorf("want ',' or '%c', found %q", closing, s.b[s.i])
}

func (s *jsonScanner) lit(want string) *ParseError {
	if len(s.b)-s.i < len(want) || string(s.b[s.i:s.i+len(want)]) != want {
		return s.errorf("invalid literal, want %s", want)
	}
	s.i += len(want)
	return nil
}

// str validates and skips the string at s.i, returning its raw contents
// (without quotes) and whether it holds escapes.
func (s *jsonScanner) str() (raw []byte, escaped bool, err *ParseError) {
	s.i++ // opening quote
	start := s.i
	for s.i < len(s.b) {
		c := s.b[s.i]
		switch {
		case c == '"':
			raw = s.b[start:s.i]
			s.i++
			return raw, escaped, nil
		case c == '\\':
			escaped = true
			if s.i+1 >= len(s.b) {
				return nil, false, s.eof()
			}
			switch s.b[s.i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				s.i += 2
			case 'u':
				if len(s.b)-s.i < 6 {
					return nil, false, s.eof()
				}
				for _, h := range s.b[s.i+2 : s.i+6] {
					if !isHex(h) {
						return nil, false, s.errorf("invalid \\u escape")
					}
				}
				s.i += 6
			default:
				return nil, false, s.errorf("invalid escape \\%c", s.b[s.i+1])
			}
		case c < 0x20:
			return nil, false, s.errorf("control character %q in string", c)
		default:
			s.i++
		}
	}
	return nil, false, s.eof()
}

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

// number validates and skips the JSON number at s.i.
func (s *jsonScanner) number() *ParseError {
	b, i := s.b, s.i
	if i < len(b) && b[i] == '-' {
		i++
	}
	digits := func() int {
		n := 0
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
			n++
		}
		return n
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case digits() == 0:
		s.i = i
		return s.errorf("invalid number")
	}
	if i < len(b) && b[i] == '.' {
		i++
		if digits() == 0 {
			s.i = i
			return s.errorf("invalid number: no digit after '.'")
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if digits() == 0 {
			s.i = i
			return s.errorf("invalid number: no digit in exponent")
		}
	}
	s.i = i
	return nil
}
