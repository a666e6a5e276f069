package sources

import (
	"errors"
	"fmt"
)

// Reason classifies why a payload, or part of one, was refused. Its String
// form is the label of the `parse_errors_total{reason}` metric; the set is
// closed ([Reasons] lists it) so a metric can be initialised at zero for
// every reason.
type Reason uint8

// The reasons a decoder refuses input.
const (
	// ReasonInvalidJSON: the payload (or an element of a JSON array) is
	// not well-formed JSON, or is not a JSON object.
	ReasonInvalidJSON Reason = iota + 1
	// ReasonInvalidLineProtocol: a line is not valid InfluxDB line
	// protocol (the whole line is refused, other lines are kept).
	ReasonInvalidLineProtocol
	// ReasonInvalidValue: the value is not a number (a JSON string, bool
	// or object for "value"; text that is not a number for the "value"
	// format; an integer field out of range in line protocol).
	ReasonInvalidValue
	// ReasonMissingValue: a JSON object has no "value", or it is null.
	ReasonMissingValue
	// ReasonNonFinite: the value is NaN or ±Inf, or overflows float64.
	ReasonNonFinite
	// ReasonBadTime: the time cannot be parsed (not RFC 3339, not a
	// number, not representable as a time).
	ReasonBadTime
	// ReasonOutOfRangeTime: the time is further in the past or future of
	// the receive time than the configured window allows.
	ReasonOutOfRangeTime
	// ReasonUnsupportedFieldType: a line-protocol field is a string or a
	// boolean; that field is refused, the line's numeric fields are kept.
	ReasonUnsupportedFieldType
	// ReasonTooLarge: the payload exceeds DecoderConfig.MaxPayload.
	ReasonTooLarge
	// ReasonEmpty: the payload holds no point at all (empty, only
	// whitespace or comments, an empty JSON array).
	ReasonEmpty
	// ReasonMissingSeries: no series key: an empty subject and no
	// "series" field (json, value), or an empty "series" string.
	ReasonMissingSeries
	// ReasonKeyTooLong: the series key is longer than
	// DecoderConfig.MaxKeyLen.
	ReasonKeyTooLong
	// ReasonTooManyPoints: the payload yields more points than
	// DecoderConfig.MaxPoints; the rest of it is refused.
	ReasonTooManyPoints
	// ReasonSubjectTooLong: the subject the point's forecast would be
	// published on is longer than DecoderConfig.MaxOutputSubjectLen.
	ReasonSubjectTooLong
	// ReasonInvalidKey: the series key is one no series may have
	// (pipeline.CheckKey): it holds a control character, ends in a
	// backslash, or ends in '@' and a duration, as the series that
	// [[resolutions]] add are named.
	ReasonInvalidKey

	reasonEnd
)

var reasonNames = [...]string{
	ReasonInvalidJSON:          "invalid_json",
	ReasonInvalidLineProtocol:  "invalid_line_protocol",
	ReasonInvalidValue:         "invalid_value",
	ReasonMissingValue:         "missing_value",
	ReasonNonFinite:            "non_finite",
	ReasonBadTime:              "bad_time",
	ReasonOutOfRangeTime:       "out_of_range_time",
	ReasonUnsupportedFieldType: "unsupported_field_type",
	ReasonTooLarge:             "too_large",
	ReasonEmpty:                "empty",
	ReasonMissingSeries:        "missing_series",
	ReasonKeyTooLong:           "key_too_long",
	ReasonTooManyPoints:        "too_many_points",
	ReasonSubjectTooLong:       "subject_too_long",
	ReasonInvalidKey:           "invalid_key",
}

// String returns the reason's metric label, e.g. "non_finite".
func (r Reason) String() string {
	if r > 0 && r < reasonEnd {
		return reasonNames[r]
	}
	return fmt.Sprintf("reason(%d)", uint8(r))
}

// Reasons returns every Reason, in a fixed order.
func Reasons() []Reason {
	rs := make([]Reason, 0, reasonEnd-1)
	for r := Reason(1); r < reasonEnd; r++ {
		rs = append(rs, r)
	}
	return rs
}

// ParseError is a refusal of a payload or of part of it (one element of a
// JSON array, one line or one field of line protocol). It names the reason
// and what was wrong.
type ParseError struct {
	// Reason classifies the error.
	Reason Reason
	// Line is the 1-based line of line protocol, or the 1-based element
	// of a JSON array; 0 when the error concerns the whole payload.
	Line int
	// Series is the series key the error concerns, when known (a refused
	// line-protocol field, a JSON object with a valid "series").
	Series string
	// Msg says what was wrong, e.g. `field "status" is a string`.
	Msg string
	// Err is the underlying error, if any (from strconv, time or the
	// line-protocol parser).
	Err error
}

// Error returns e.g. `sources: non_finite: line 3: cpu usage: value is +Inf`.
func (e *ParseError) Error() string {
	s := "sources: " + e.Reason.String()
	if e.Line > 0 {
		s += fmt.Sprintf(": line %d", e.Line)
	}
	if e.Series != "" {
		s += fmt.Sprintf(": series %q", truncate([]byte(e.Series)))
	}
	if e.Msg != "" {
		s += ": " + e.Msg
	}
	if e.Err != nil {
		// The line-protocol parser quotes what it could not read,
		// whole: cut it as a value is.
		s += ": " + cut(e.Err.Error(), 4*maxQuoted)
	}
	return s
}

// Unwrap returns the underlying error.
func (e *ParseError) Unwrap() error { return e.Err }

// Is reports whether target is the sentinel of e's reason, so that
// errors.Is(err, ErrNonFinite) works on any ParseError tree.
func (e *ParseError) Is(target error) bool {
	s, ok := target.(*reasonSentinel)
	return ok && s.r == e.Reason
}

type reasonSentinel struct{ r Reason }

func (s *reasonSentinel) Error() string { return "sources: " + s.r.String() }

// Sentinels, one per Reason, for errors.Is.
var (
	ErrInvalidJSON          error = &reasonSentinel{ReasonInvalidJSON}
	ErrInvalidLineProtocol  error = &reasonSentinel{ReasonInvalidLineProtocol}
	ErrInvalidValue         error = &reasonSentinel{ReasonInvalidValue}
	ErrMissingValue         error = &reasonSentinel{ReasonMissingValue}
	ErrNonFinite            error = &reasonSentinel{ReasonNonFinite}
	ErrBadTime              error = &reasonSentinel{ReasonBadTime}
	ErrOutOfRangeTime       error = &reasonSentinel{ReasonOutOfRangeTime}
	ErrUnsupportedFieldType error = &reasonSentinel{ReasonUnsupportedFieldType}
	ErrTooLarge             error = &reasonSentinel{ReasonTooLarge}
	ErrEmpty                error = &reasonSentinel{ReasonEmpty}
	ErrMissingSeries        error = &reasonSentinel{ReasonMissingSeries}
	ErrKeyTooLong           error = &reasonSentinel{ReasonKeyTooLong}
	ErrTooManyPoints        error = &reasonSentinel{ReasonTooManyPoints}
	ErrSubjectTooLong       error = &reasonSentinel{ReasonSubjectTooLong}
	ErrInvalidKey           error = &reasonSentinel{ReasonInvalidKey}
)

// ParseErrors is the error a decoder returns when it refused more than one
// part of a payload (several lines or fields). Its order is the payload's.
type ParseErrors []*ParseError

// maxListed is how many errors ParseErrors.Error lists.
const maxListed = 5

// Error joins the messages of the first few errors, one a line, then
// says how many more there are: its length is bounded whatever the
// payload (a 1 MiB array of bad points makes a short log line).
func (es ParseErrors) Error() string {
	var b []byte
	for i, e := range es {
		if i == maxListed {
			b = append(b, fmt.Sprintf("\n… and %d more", len(es)-maxListed)...)
			break
		}
		if i > 0 {
			b = append(b, '\n')
		}
		b = append(b, e.Error()...)
	}
	return string(b)
}

// Unwrap returns the errors, for errors.Is and errors.As.
func (es ParseErrors) Unwrap() []error {
	out := make([]error, len(es))
	for i, e := range es {
		out[i] = e
	}
	return out
}

// EachParseError calls fn for every *ParseError in err's tree (err itself,
// a ParseErrors list, or errors wrapping them), in order. Use it to count
// parse errors by reason: one call per refused payload, element, line or
// field.
func EachParseError(err error, fn func(*ParseError)) {
	switch e := err.(type) {
	case nil:
		return
	case *ParseError:
		fn(e)
		return
	case ParseErrors:
		for _, pe := range e {
			fn(pe)
		}
		return
	case interface{ Unwrap() []error }:
		for _, x := range e.Unwrap() {
			EachParseError(x, fn)
		}
		return
	}
	if u := errors.Unwrap(err); u != nil {
		EachParseError(u, fn)
	}
}

// errList accumulates the parse errors of one payload.
type errList []*ParseError

func (l errList) err() error {
	switch len(l) {
	case 0:
		return nil
	case 1:
		return l[0]
	}
	return ParseErrors(l)
}
