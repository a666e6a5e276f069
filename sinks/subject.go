package sinks

import "errors"

// ErrSubjectTooLong is returned by [NATS.Write] for a record whose subject
// is longer than MaxSubjectLen: it is not sent.
var ErrSubjectTooLong = errors.New("subject too long")

// appendSubject appends the subject r's forecast is published on:
// prefix.<r.Subject>, followed for line-protocol input (r.Measurement or
// r.Field set) by .<measurement>.<field>, each made a subject token by
// appendToken.
func appendSubject(b []byte, prefix string, r *Record) []byte {
	b = append(append(append(b, prefix...), '.'), r.Subject...)
	if r.Measurement == "" && r.Field == "" {
		return b
	}
	b = appendToken(append(b, '.'), r.Measurement)
	return appendToken(append(b, '.'), r.Field)
}

// appendToken appends s as one NATS subject token: '.', '*', '>', space
// and control characters (which separate tokens, are wildcards, or are
// not allowed) become '_', as does an empty s. Other bytes, UTF-8
// included, are kept.
func appendToken(b []byte, s string) []byte {
	if s == "" {
		return append(b, '_')
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c == 0x7f || c == '.' || c == '*' || c == '>' {
			c = '_'
		}
		b = append(b, c)
	}
	return b
}

// MaxSubjectLen bounds the subjects [NATS] publishes on, in bytes.
// nats-server closes a client's connection, for good, on a protocol line
// longer than its max_control_line (4096 bytes by default), and the line
// of a publish holds, beside the subject, "HPUB ", the header and total
// sizes and CRLF: 4000 leaves room for them.
const MaxSubjectLen = 4000

// Infixes are what a [NATS] sink puts after its prefix in the subjects it
// publishes a series' records on, <prefix><infix>.<subject>[…]: the
// forecasts (none), the anomaly events and the threshold events.
// SubjectLen counts the longest.
const (
	infixAnomaly   = ".anomaly"
	infixThreshold = ".threshold"
)

var subjectInfixes = [...]string{"", infixAnomaly, infixThreshold}

// SubjectLen returns the length of the longest subject a [NATS] sink with
// prefix (DefaultSubjectPrefix if empty) publishes a series' records on,
// for points arriving on subject with measurement and field (both empty
// for json and value input): <prefix><infix>.<subject>[.<measurement>.<field>]
// with the longest infix, that of the threshold events.
func SubjectLen(prefix, subject, measurement, field string) int {
	if prefix == "" {
		prefix = DefaultSubjectPrefix
	}
	infix := 0
	for _, s := range subjectInfixes {
		infix = max(infix, len(s))
	}
	n := len(prefix) + infix + 1 + len(subject)
	if measurement == "" && field == "" {
		return n
	}
	return n + 2 + max(len(measurement), 1) + max(len(field), 1)
}
