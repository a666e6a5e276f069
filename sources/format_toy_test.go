package sources

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"
)

// toyCSV is a payload format registered by this file alone: lines of
// "time,value", the time in Unix seconds or empty (none), every line a
// point of the subject's series. It parses; the decoder's AppendPoint
// bounds and keys its points.
type toyCSV struct{}

var formatToyCSV = RegisterFormat(toyCSV{})

func (toyCSV) Name() string { return "toycsv" }
func (toyCSV) Doc() string  { return "time,value lines" }
func (toyCSV) Fields() bool { return false }

func (toyCSV) Decode(d *Decoder, dst []KeyedPoint, subject string, payload []byte, recv time.Time) ([]KeyedPoint, error) {
	var errs ParseErrors
	n := 0
	for line := range bytes.Lines(payload) {
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		n++
		var pe *ParseError
		dst, pe = toyLine(d, dst, subject, line, recv)
		if pe != nil {
			pe.Line = n
			errs = append(errs, pe)
			if pe.Reason == ReasonTooManyPoints {
				break
			}
		}
	}
	switch {
	case n == 0:
		return dst, &ParseError{Reason: ReasonEmpty, Msg: "no line"}
	case len(errs) == 0:
		return dst, nil
	case len(errs) == 1:
		return dst, errs[0]
	}
	return dst, errs
}

func toyLine(d *Decoder, dst []KeyedPoint, subject string, line []byte, recv time.Time) ([]KeyedPoint, *ParseError) {
	tb, vb, ok := bytes.Cut(line, []byte{','})
	if !ok {
		return dst, &ParseError{Reason: ReasonInvalidValue, Msg: fmt.Sprintf("%q: want time,value", Truncate(line))}
	}
	var t time.Time
	if len(tb) > 0 {
		sec, err := strconv.ParseInt(string(tb), 10, 64)
		if err != nil {
			return dst, &ParseError{Reason: ReasonBadTime, Msg: fmt.Sprintf("time %q is not Unix seconds", Truncate(tb))}
		}
		t = time.Unix(sec, 0)
	}
	v, pe := d.ParseValue(vb)
	if pe != nil {
		return dst, pe
	}
	return d.AppendPoint(dst, []byte(subject), t, v, recv)
}

// TestRegisteredFormat: a format registered by a test file is parsed by
// name, and decodes through Decoder.Decode with the decoder's bounds
// (payload, points, key length, time window) and key cache; bad parts
// are refused as ParseErrors, the rest kept.
func TestRegisteredFormat(t *testing.T) {
	t.Parallel()
	f, err := ParseFormat("toycsv")
	if err != nil || f != formatToyCSV || f.String() != "toycsv" || f.Kind().Doc() != "time,value lines" {
		t.Fatalf("ParseFormat(toycsv) = %v, %v; registered %v", f, err, formatToyCSV)
	}
	if _, err := ParseFormat("xml"); err == nil || err.Error() != `sources: unknown data format "xml" (want json, influx, value, toycsv or toyfields)` {
		t.Errorf("unknown format error %v does not list the registered formats", err)
	}
	recv := time.Unix(1_700_000_600, 0)
	d := mustDecoder(t, DecoderConfig{Format: f})
	pts, err := d.Decode(nil, "sensors.t1", []byte("1700000000,1.5\n\n1700000060,2.5\n,3\n"), recv)
	if err != nil || len(pts) != 3 {
		t.Fatalf("Decode = %v, %v; want 3 points", pts, err)
	}
	for i, want := range []KeyedPoint{
		{Key: "sensors.t1", Time: time.Unix(1_700_000_000, 0), Value: 1.5},
		{Key: "sensors.t1", Time: time.Unix(1_700_000_060, 0), Value: 2.5},
		{Key: "sensors.t1", Time: recv, Value: 3, NoTime: true},
	} {
		if p := pts[i]; p.Key != want.Key || !p.Time.Equal(want.Time) || p.Value != want.Value || p.NoTime != want.NoTime {
			t.Errorf("point %d = %+v, want %+v", i, p, want)
		}
	}

	for _, tc := range []struct {
		name    string
		cfg     DecoderConfig
		subject string
		payload string
		points  int
		want    []Reason // by line, in order
		lines   []int
	}{
		{"bad value", DecoderConfig{}, "s", "1700000000,abc", 0, []Reason{ReasonInvalidValue}, []int{1}},
		{"no comma, then good", DecoderConfig{}, "s", "nope\n1700000000,1", 1, []Reason{ReasonInvalidValue}, []int{1}},
		{"bad time", DecoderConfig{}, "s", "1700000000,1\nnoon,2", 1, []Reason{ReasonBadTime}, []int{2}},
		{"non-finite", DecoderConfig{}, "s", "1700000000,1e999", 0, []Reason{ReasonNonFinite}, []int{1}},
		{"empty", DecoderConfig{}, "s", "\n \n", 0, []Reason{ReasonEmpty}, []int{0}},
		{"no subject", DecoderConfig{}, "", "1700000000,1", 0, []Reason{ReasonMissingSeries}, []int{1}},
		{"too large", DecoderConfig{MaxPayload: 8}, "s", "1700000000,1", 0, []Reason{ReasonTooLarge}, []int{0}},
		{"key too long", DecoderConfig{MaxKeyLen: 4}, "sensors", "1700000000,1", 0, []Reason{ReasonKeyTooLong}, []int{1}},
		{"out of window", DecoderConfig{}, "s", "1600000000,1\n1700000000,2", 1, []Reason{ReasonOutOfRangeTime}, []int{1}},
		{"too many points", DecoderConfig{MaxPoints: 2}, "s", "1700000000,1\n1700000001,2\n1700000002,3\n1700000003,4", 2, []Reason{ReasonTooManyPoints}, []int{3}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			cfg.Format = f
			pts, err := mustDecoder(t, cfg).Decode(nil, tc.subject, []byte(tc.payload), recv)
			var got []Reason
			var lines []int
			EachParseError(err, func(pe *ParseError) {
				got, lines = append(got, pe.Reason), append(lines, pe.Line)
			})
			if len(pts) != tc.points || fmt.Sprint(got) != fmt.Sprint(tc.want) || fmt.Sprint(lines) != fmt.Sprint(tc.lines) {
				t.Errorf("Decode = %d points, reasons %v at lines %v (%v); want %d points, %v at %v", len(pts), got, lines, err, tc.points, tc.want, tc.lines)
			}
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Errorf("error %v is not a *ParseError", err)
			}
		})
	}
}

// TestRegisteredFormatAllocs: a registered format that uses AppendPoint
// decodes a known series without allocating, as the built-in ones do:
// its key comes from the decoder's cache.
func TestRegisteredFormatAllocs(t *testing.T) {
	d := mustDecoder(t, DecoderConfig{Format: formatToyCSV})
	payload := []byte("1700000000,42.5\n")
	recv := time.Unix(1_700_000_000, 0)
	dst := make([]KeyedPoint, 0, 4)
	if _, err := d.Decode(dst, "sensors.t1", payload, recv); err != nil {
		t.Fatal(err)
	}
	allocs := testing.AllocsPerRun(100, func() {
		var err error
		if dst, err = d.Decode(dst[:0], "sensors.t1", payload, recv); err != nil || len(dst) != 1 {
			t.Fatalf("Decode = %v, %v", dst, err)
		}
	})
	if allocs != 0 {
		t.Errorf("Decode of a cached series allocates %v times, want 0", allocs)
	}
}

type namedFormat struct {
	toyCSV
	name string
}

func (f namedFormat) Name() string { return f.name }

// TestRegisterFormatPanics: a taken, empty or malformed name is a
// programmer error, as for model kinds and sinks; nothing is registered.
func TestRegisterFormatPanics(t *testing.T) {
	t.Parallel()
	before := len(Formats())
	for _, name := range []string{"json", "toycsv", "", "CSV", "1csv", "c-sv"} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Errorf("RegisterFormat(%q) did not panic", name)
				}
			}()
			RegisterFormat(namedFormat{name: name})
		})
	}
	if n := len(Formats()); n != before {
		t.Errorf("%d formats registered after refusals, want %d", n, before)
	}
}

// toyFields is a registered format whose points are fields of a
// measurement: lines of "field,time,value", the subject the measurement,
// tagged src=toy. Its fields pass DecoderConfig.Fields (KeepField) and
// its points carry their origin (AppendField).
type toyFields struct{}

var formatToyFields = RegisterFormat(toyFields{})

func (toyFields) Name() string { return "toyfields" }
func (toyFields) Doc() string  { return "field,time,value lines, the subject the measurement" }
func (toyFields) Fields() bool { return true }

var toyTags = []Tag{{Key: "src", Value: "toy"}}

func (toyFields) Decode(d *Decoder, dst []KeyedPoint, subject string, payload []byte, recv time.Time) ([]KeyedPoint, error) {
	var errs ParseErrors
	var kb [64]byte // the key of a short field, on the stack
	key := kb[:0]
	for line := range bytes.Lines(payload) {
		field, rest, _ := bytes.Cut(bytes.TrimSpace(line), []byte{','})
		if !d.KeepField(field) {
			continue
		}
		tb, vb, _ := bytes.Cut(rest, []byte{','})
		sec, err := strconv.ParseInt(string(tb), 10, 64)
		if err != nil {
			errs = append(errs, &ParseError{Reason: ReasonBadTime, Msg: fmt.Sprintf("time %q is not Unix seconds", Truncate(tb))})
			continue
		}
		v, pe := d.ParseValue(vb)
		if pe == nil {
			key = append(append(append(key[:0], subject...), ' '), field...)
			dst, pe = d.AppendField(dst, key, func() (string, string, []Tag) { return subject, string(field), toyTags }, time.Unix(sec, 0), v, recv)
		}
		if pe != nil {
			errs = append(errs, pe)
		}
	}
	if len(errs) == 0 {
		return dst, nil
	}
	return dst, errs
}

// TestRegisteredFieldsFormat: a registered format whose points are
// fields: DecoderConfig.Fields selects them through KeepField (what it
// leaves out counted, not refused), AppendField gives its points their
// measurement, field and tags from the key cache, allocation-free for a
// known series.
func TestRegisteredFieldsFormat(t *testing.T) {
	ff, err := NewFieldFilter([]string{"us*"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	d := mustDecoder(t, DecoderConfig{Format: formatToyFields, Fields: ff})
	recv := time.Unix(1_700_000_600, 0)
	pts, err := d.Decode(nil, "m", []byte("usage,1700000000,1\nidle,1700000000,2\nuser,1700000001,3\nusage,soon,4\n"), recv)
	var pe *ParseError
	if len(pts) != 2 || !errors.As(err, &pe) || pe.Reason != ReasonBadTime || ff.Dropped() != 1 {
		t.Fatalf("Decode = %v, %v, %d dropped; want 2 points, a bad_time refusal, 1 dropped", pts, err, ff.Dropped())
	}
	for i, want := range []KeyedPoint{
		{Key: "m usage", Value: 1, Measurement: "m", Field: "usage", Tags: toyTags},
		{Key: "m user", Value: 3, Measurement: "m", Field: "user", Tags: toyTags},
	} {
		if p := pts[i]; p.Key != want.Key || p.Value != want.Value || p.Measurement != want.Measurement || p.Field != want.Field || fmt.Sprint(p.Tags) != fmt.Sprint(want.Tags) {
			t.Errorf("point %d = %+v, want %+v", i, p, want)
		}
	}
	payload := []byte("usage,1700000002,5\n")
	dst := make([]KeyedPoint, 0, 4)
	allocs := testing.AllocsPerRun(100, func() {
		if dst, err = d.Decode(dst[:0], "m", payload, recv); err != nil || len(dst) != 1 || dst[0].Field != "usage" {
			t.Fatalf("Decode = %v, %v", dst, err)
		}
	})
	if allocs != 0 {
		t.Errorf("Decode of a cached field allocates %v times, want 0", allocs)
	}
}
