package sources

import "time"

// valueFormat is the registration of the value format (FormatValue).
type valueFormat struct{}

func (valueFormat) Name() string { return "value" }
func (valueFormat) Doc() string  { return "a bare number, the subject its series" }
func (valueFormat) Fields() bool { return false }
func (valueFormat) Decode(d *Decoder, dst []KeyedPoint, subject string, payload []byte, recv time.Time) ([]KeyedPoint, error) {
	return d.DecodeValue(dst, subject, payload, recv)
}

// DecodeValue decodes a "value" payload: a bare number such as "42.5" or
// "-1e3\n", surrounded by optional ASCII white space, in the syntax of
// strconv.ParseFloat. The series key is subject and the time is recv
// (NoTime is set). See Decode for the rest.
func (d *Decoder) DecodeValue(dst []KeyedPoint, subject string, payload []byte, recv time.Time) ([]KeyedPoint, error) {
	if pe := d.tooLarge(payload); pe != nil {
		return dst, pe
	}
	b := payload
	for len(b) > 0 && isSpace(b[0]) {
		b = b[1:]
	}
	for len(b) > 0 && isSpace(b[len(b)-1]) {
		b = b[:len(b)-1]
	}
	if len(b) == 0 {
		return dst, &ParseError{Reason: ReasonEmpty, Series: subject, Msg: "empty payload"}
	}
	if subject == "" {
		return dst, &ParseError{Reason: ReasonMissingSeries, Msg: "no subject"}
	}
	if pe := d.keyTooLong([]byte(subject), len(subject)); pe != nil {
		return dst, pe
	}
	if pe := invalidKey(subject); pe != nil {
		return dst, pe
	}
	v, pe := parseValue(b)
	if pe != nil {
		pe.Series = subject
		return dst, pe
	}
	return append(dst, KeyedPoint{Key: subject, Time: recv, NoTime: true, Value: v}), nil
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }
