package sources

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/influxdata/line-protocol/v2/lineprotocol"
)

type tagRef struct{ k0, k1, v1 int } // key tagb[k0:k1], value tagb[k1:v1]

type fieldRef struct {
	k0, k1 int // key in fieldb
	v      float64
}

// influxFormat is the registration of the influx format (FormatInflux).
type influxFormat struct{}

func (influxFormat) Name() string { return "influx" }
func (influxFormat) Doc() string  { return "line protocol, every numeric field a series" }
func (influxFormat) Fields() bool { return true }
func (influxFormat) Decode(d *Decoder, dst []KeyedPoint, _ string, payload []byte, recv time.Time) ([]KeyedPoint, error) {
	return d.DecodeInflux(dst, payload, recv)
}

// DecodeInflux decodes an "influx" payload: InfluxDB line protocol, one
// entry a line, as Telegraf's NATS output sends it. Every numeric field
// (float, integer "i", unsigned "u") of every line becomes a point of the
// series
//
//	<measurement>[,<tag key>=<tag value>…] <field key>
//
// with tags sorted by key and the parts escaped as in line protocol (see
// the package documentation). Integers are converted to float64 (exact
// up to 2^53). A line's timestamp is read in units of InfluxPrecision
// (default nanoseconds); a line without one takes recv.
//
// With DecoderConfig.Fields, a field it does not keep is skipped before
// anything else is checked of it: no point, no refusal; it is counted in
// FieldFilter.Dropped, unless its line is refused for its syntax.
//
// Refusals are per line or per field, never for the whole payload unless
// it is too large or holds no line: a syntax error refuses its line
// (ReasonInvalidLineProtocol), a bad or out-of-window timestamp refuses
// every field of its line (ReasonBadTime, ReasonOutOfRangeTime, one error
// for the line), a string or boolean field is refused alone
// (ReasonUnsupportedFieldType, one error per field). ParseError.Line
// counts entries, skipping blank and comment lines; the parser's message,
// in ParseError.Err, gives the physical line and column.
func (d *Decoder) DecodeInflux(dst []KeyedPoint, payload []byte, recv time.Time) ([]KeyedPoint, error) {
	if pe := d.tooLarge(payload); pe != nil {
		return dst, pe
	}
	var errs errList
	dec := lineprotocol.NewDecoderWithBytes(payload)
	entry, start := 0, len(dst)
	for dec.Next() {
		entry++
		if len(dst)-start >= d.cfg.MaxPoints {
			errs = append(errs, d.tooManyPoints(entry))
			break
		}
		d.room = d.cfg.MaxPoints - (len(dst) - start)
		var pe *ParseError
		dst, errs, pe = d.influxLine(dst, errs, dec, entry, recv)
		if pe != nil {
			pe.Line = entry
			errs = append(errs, pe)
		}
		if d.room < 0 {
			if len(errs) == 0 || errs[len(errs)-1].Reason != ReasonTooManyPoints { // the line was refused whole after all
				errs = append(errs, d.tooManyPoints(entry+1))
			}
			break
		}
	}
	if entry == 0 {
		return dst, &ParseError{Reason: ReasonEmpty, Msg: "no line-protocol entry"}
	}
	return dst, errs.err()
}

// influxLine decodes the entry dec is at. A refusal of the whole line is
// returned as pe; refused fields are appended to errs.
func (d *Decoder) influxLine(dst []KeyedPoint, errs errList, dec *lineprotocol.Decoder, entry int, recv time.Time) ([]KeyedPoint, errList, *ParseError) {
	measEnd, prefix, pe := d.influxPrefix(dec)
	if pe != nil {
		return dst, errs, pe
	}
	nerr := len(errs)
	if errs, pe = d.influxFields(dec, errs, entry, prefix); pe != nil {
		return dst, errs[:nerr], pe
	}
	t, noTime, pe := d.influxTime(dec, recv)
	if pe != nil {
		return dst, errs[:nerr], pe
	}
	start := len(dst)
	if dst, errs, pe = d.influxPoints(dst, errs, entry, t, noTime, measEnd, prefix); pe != nil {
		return dst[:start], errs[:nerr], pe
	}
	return dst, errs, nil
}

// influxSyntax is the refusal of a line the parser refused.
func influxSyntax(err error) *ParseError {
	r := ReasonInvalidLineProtocol
	if errors.Is(err, lineprotocol.ErrValueOutOfRange) {
		r = ReasonInvalidValue
	}
	return &ParseError{Reason: r, Err: err}
}

// influxPrefix reads the line's measurement and tags into the key prefix
// d.scr (escaped measurement and sorted tags, then a space, prefix bytes
// long), the unescaped measurement into d.fieldb (measEnd bytes) and the
// tags into d.tagb and d.tagr.
func (d *Decoder) influxPrefix(dec *lineprotocol.Decoder) (measEnd, prefix int, pe *ParseError) {
	m, err := dec.Measurement()
	if err != nil {
		return 0, 0, influxSyntax(err)
	}
	d.scr = appendEscaped(d.scr[:0], m, false)
	d.fieldb = append(d.fieldb[:0], m...) // unescaped measurement first
	measEnd = len(d.fieldb)
	d.tagb, d.tagr = d.tagb[:0], d.tagr[:0]
	for {
		k, v, err := dec.NextTag()
		if err != nil {
			return 0, 0, influxSyntax(err)
		}
		if k == nil {
			break
		}
		r := tagRef{k0: len(d.tagb)}
		d.tagb = append(d.tagb, k...)
		r.k1 = len(d.tagb)
		d.tagb = append(d.tagb, v...)
		r.v1 = len(d.tagb)
		// Insertion sort by key: lines have few tags, usually sorted.
		i := len(d.tagr)
		d.tagr = append(d.tagr, r)
		for ; i > 0 && string(d.tagb[d.tagr[i-1].k0:d.tagr[i-1].k1]) > string(k); i-- {
			d.tagr[i] = d.tagr[i-1]
		}
		d.tagr[i] = r
	}
	for _, r := range d.tagr {
		d.scr = append(d.scr, ',')
		d.scr = appendEscaped(d.scr, d.tagb[r.k0:r.k1], true)
		d.scr = append(d.scr, '=')
		d.scr = appendEscaped(d.scr, d.tagb[r.k1:r.v1], true)
	}
	d.scr = append(d.scr, ' ')
	return measEnd, len(d.scr), nil
}

// influxFields reads the line's numeric fields the filter keeps into
// d.fields (their keys into d.fieldb), appending the refusal of each
// field of another type to errs.
func (d *Decoder) influxFields(dec *lineprotocol.Decoder, errs errList, entry, prefix int) (errList, *ParseError) {
	d.fields = d.fields[:0]
	left := uint64(0) // fields left out by d.cfg.Fields
	for {
		k, v, err := dec.NextField()
		if err != nil {
			return errs, influxSyntax(err)
		}
		if k == nil {
			break
		}
		if d.cfg.Fields != nil && !d.keepField(k) {
			left++
			continue
		}
		f := fieldRef{k0: len(d.fieldb)}
		d.fieldb = append(d.fieldb, k...)
		f.k1 = len(d.fieldb)
		switch v.Kind() {
		case lineprotocol.Float:
			f.v = v.FloatV()
		case lineprotocol.Int:
			f.v = float64(v.IntV())
		case lineprotocol.Uint:
			f.v = float64(v.UintV())
		default:
			key := truncate(appendEscaped(d.scr[:prefix], k, true))
			errs = append(errs, &ParseError{Reason: ReasonUnsupportedFieldType, Line: entry, Series: key,
				Msg: fmt.Sprintf("field %q is a %s, not a number", truncate(k), kindName(v.Kind()))})
			continue
		}
		if math.IsNaN(f.v) || math.IsInf(f.v, 0) { // the parser refuses these; be sure
			key := truncate(appendEscaped(d.scr[:prefix], k, true))
			errs = append(errs, &ParseError{Reason: ReasonNonFinite, Line: entry, Series: key, Msg: fmt.Sprintf("field %q is not finite", truncate(k))})
			continue
		}
		d.fields = append(d.fields, f)
	}
	if left > 0 {
		d.cfg.Fields.dropped.Add(left)
	}
	return errs, nil
}

// influxTime reads the line's timestamp, in the decoder's precision: recv
// (noTime) when the line has none.
func (d *Decoder) influxTime(dec *lineprotocol.Decoder, recv time.Time) (t time.Time, noTime bool, pe *ParseError) {
	tb, err := dec.TimeBytes()
	if err != nil {
		return t, false, influxSyntax(err)
	}
	if tb == nil {
		return recv, true, nil
	}
	n, err := strconv.ParseInt(string(tb), 10, 64)
	p := int64(d.prec)
	if err != nil || n > math.MaxInt64/p || n < math.MinInt64/p {
		return t, false, &ParseError{Reason: ReasonBadTime,
			Msg: fmt.Sprintf("timestamp %s is not representable in %v units", truncate(tb), d.prec)}
	}
	t = time.Unix(0, n*p)
	if pe := d.checkTime(t, recv); pe != nil {
		return t, false, pe
	}
	return t, false, nil
}

// influxPoints appends a point per field of d.fields, keyed by the prefix
// and the field's key; a field whose key is refused is refused alone.
func (d *Decoder) influxPoints(dst []KeyedPoint, errs errList, entry int, t time.Time, noTime bool, measEnd, prefix int) ([]KeyedPoint, errList, *ParseError) {
	var tags []Tag // shared by the line's new entries
	for i, f := range d.fields {
		if i == d.room {
			errs = append(errs, d.tooManyPoints(entry))
			d.room = -1 // the rest of the payload is refused
			break
		}
		d.scr = appendEscaped(d.scr[:prefix], d.fieldb[f.k0:f.k1], true)
		if pe := d.keyTooLong(d.scr, len(d.scr)); pe != nil {
			// Refused alone, like a field of an unsupported type.
			pe.Line = entry
			errs = append(errs, pe)
			continue
		}
		e := d.lookup(d.scr)
		if e == nil {
			if !utf8.Valid(d.scr) {
				return dst, errs, &ParseError{Reason: ReasonInvalidLineProtocol, Msg: "measurement, tag or field key is not valid UTF-8"}
			}
			if pe := invalidKey(d.scr); pe != nil {
				// Refused alone: the suffix is the field's.
				pe.Line = entry
				errs = append(errs, pe)
				continue
			}
			if tags == nil && len(d.tagr) > 0 {
				tags = make([]Tag, len(d.tagr))
				for i, r := range d.tagr {
					tags[i] = Tag{Key: string(d.tagb[r.k0:r.k1]), Value: string(d.tagb[r.k1:r.v1])}
				}
			}
			e = &keyEntry{key: string(d.scr), measurement: string(d.fieldb[:measEnd]),
				field: string(d.fieldb[f.k0:f.k1]), tags: tags}
			d.store(e)
		}
		dst = append(dst, KeyedPoint{Key: e.key, Time: t, NoTime: noTime, Value: f.v,
			Measurement: e.measurement, Field: e.field, Tags: e.tags})
	}
	return dst, errs, nil
}

// keepField returns d.cfg.Fields' decision on field key k, cached (the
// cache, bounded by MaxKeys and MaxKeyBytes like the key cache, is emptied
// when full; a key longer than MaxKeyLen is not cached).
func (d *Decoder) keepField(k []byte) bool {
	if keep, ok := d.keep[string(k)]; ok {
		return keep
	}
	keep := d.cfg.Fields.Keep(string(k))
	if len(k) > d.cfg.MaxKeyLen {
		return keep // never cached: such a field makes no series
	}
	if d.keep == nil || len(d.keep) >= d.cfg.MaxKeys || d.keepBytes+len(k)+keyEntryOverhead > d.cfg.MaxKeyBytes {
		d.keep, d.keepBytes = make(map[string]bool), 0
	}
	d.keep[string(k)] = keep
	d.keepBytes += len(k) + keyEntryOverhead
	return keep
}

// appendEscaped appends b escaped as line protocol does: ',' and ' ' for
// a measurement, and '=' too for tag keys, tag values and field keys.
func appendEscaped(dst, b []byte, eq bool) []byte {
	for _, c := range b {
		if c == ',' || c == ' ' || (eq && c == '=') {
			dst = append(dst, '\\')
		}
		dst = append(dst, c)
	}
	return dst
}

func kindName(k lineprotocol.ValueKind) string {
	switch k {
	case lineprotocol.String:
		return "string"
	case lineprotocol.Bool:
		return "boolean"
	}
	return k.String()
}
