package sinks

import (
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/forecastd/forecastd/anomaly"
	"github.com/forecastd/forecastd/anomaly/threshold"
)

// lineEncoder writes records as InfluxDB line protocol into a buffer it
// reuses, byte for byte as influxdb-client-go's WritePoint encodes the
// write.Point of the same tags and fields (github.com/influxdata/
// line-protocol's Encoder: tags and fields sorted by key, a tag whose
// escaped key or value is empty left out, floats in the shortest 'f'
// form, nanosecond timestamps), without a Point, a map or an interface
// per record. It is owned by the sink's flushing goroutine.
type lineEncoder struct {
	measurement string
	names       tagNames

	tags   []lineTag
	fields []lineField
}

type lineTag struct{ key, value string }

type lineField struct {
	key   string
	f     float64
	s     string
	isStr bool
}

// tag sets tag k to v, as write.Point.AddTag does (a key set again keeps
// its place and takes the new value).
func (e *lineEncoder) tag(k, v string) {
	for i := range e.tags {
		if e.tags[i].key == k {
			e.tags[i].value = v
			return
		}
	}
	e.tags = append(e.tags, lineTag{k, v})
}

// field sets the float field k to v, if v is finite: line protocol has no
// encoding of NaN or an infinity, and NaN is how a record says a value is
// absent (no interval, no anomaly score).
func (e *lineEncoder) field(k string, v float64) {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return
	}
	e.fields = append(e.fields, lineField{key: k, f: v})
}

// line appends the line of r to b (its fields and tags as [Influx]
// documents), or returns b and false if r has no finite number to write.
func (e *lineEncoder) line(b []byte, r *Record) ([]byte, bool) {
	e.tags, e.fields = e.tags[:0], e.fields[:0]
	if r.thr.dir != 0 {
		return e.thresholdLine(b, r)
	}
	var t int64
	switch r.Kind {
	case KindForecast:
		f := &r.Forecast
		t = f.Time.UnixNano()
		e.field("yhat", f.Value)
		if f.HasInterval() {
			e.field("yhat_lower", f.Lower)
			e.field("yhat_upper", f.Upper)
		}
	case KindOutcome:
		o := &r.Outcome
		t = o.Forecast.Time.UnixNano()
		e.field("y", o.Actual)
		e.field("error", o.Actual-o.Forecast.Value)
		e.field("anomaly_score", o.Anomaly.Score) // NaN (no interval): absent
		if o.Anomaly.Event == anomaly.Opened {
			e.field("anomaly", 1) // an event opened here: the dashboard's annotations
			reason := "deviation"
			switch {
			case o.Anomaly.Extreme:
				reason = "extreme"
			case o.Anomaly.Seasonal:
				reason = "seasonal"
			}
			e.fields = append(e.fields, lineField{key: "anomaly_reason", s: reason, isStr: true})
		}
	}
	if len(e.fields) == 0 { // anomaly_reason comes with the number anomaly
		return b, false
	}
	e.tag(e.names.series, tagText(r.Series))
	e.tag("model", tagText(r.Model))
	if r.Measurement != "" {
		e.tag(e.names.measurement, tagText(r.Measurement))
	}
	if r.Field != "" {
		e.tag(e.names.field, tagText(r.Field))
	}
	if r.horizon > 0 {
		e.tag(TagHorizon, e.names.horizonText(r.horizon))
	}
	if r.Step != "" {
		e.tag(TagStep, tagText(r.Step))
	}
	for _, tg := range r.Tags {
		if tg.Key == "" || tg.Value == "" {
			continue
		}
		e.tag(tagText(inputTagKey(tg.Key, r.Tags)), tagText(tg.Value))
	}
	return e.encode(b, t), true
}

// thresholdLine is line for a threshold observation's record (see
// thresholdRecord): at the forecast's origin, with the forecast's tags
// (no horizon) and the tag threshold ("below 0"); the fields eta_seconds
// (the time from the origin to the first step whose probability of being
// beyond reaches the threshold's; absent when none does),
// threshold_probability (that step's, or the closest step's) and, on a
// forecast that opened, updated or closed the threshold's event,
// threshold_state ("opened", …). No line when it has no finite field (no
// step calibrated yet).
func (e *lineEncoder) thresholdLine(b []byte, r *Record) ([]byte, bool) {
	o := &r.thr
	e.field("eta_seconds", o.eta)
	e.field("threshold_probability", o.prob)
	if len(e.fields) == 0 {
		return b, false
	}
	if ev := threshold.Event(o.event); ev != threshold.None {
		e.fields = append(e.fields, lineField{key: "threshold_state", s: ev.String(), isStr: true})
	}
	e.tag(e.names.series, tagText(r.Series))
	e.tag("model", tagText(r.Model))
	e.tag("threshold", threshold.Name(threshold.Direction(o.dir), o.value))
	if r.Measurement != "" {
		e.tag(e.names.measurement, tagText(r.Measurement))
	}
	if r.Field != "" {
		e.tag(e.names.field, tagText(r.Field))
	}
	if r.Step != "" {
		e.tag(TagStep, tagText(r.Step))
	}
	for _, tg := range r.Tags {
		if tg.Key == "" || tg.Value == "" {
			continue
		}
		k := inputTagKey(tg.Key, r.Tags)
		if k == "threshold" { // this point's own tag
			k = "tag_threshold"
		}
		e.tag(tagText(k), tagText(tg.Value))
	}
	return e.encode(b, r.Forecast.Origin.UnixNano()), true
}

// encode appends the line of e's tags and fields at time t (ns).
func (e *lineEncoder) encode(b []byte, t int64) []byte {
	slices.SortFunc(e.tags, func(x, y lineTag) int { return strings.Compare(x.key, y.key) })
	slices.SortFunc(e.fields, func(x, y lineField) int { return strings.Compare(x.key, y.key) })
	b = appendEscaped(b, e.measurement, nameEscapes)
	for _, tg := range e.tags {
		if tg.key == "" || tg.value == "" { // escaping never empties a string
			continue
		}
		b = append(b, ',')
		b = appendEscaped(b, tg.key, keyEscapes)
		b = append(b, '=')
		b = appendEscaped(b, tg.value, keyEscapes)
	}
	b = append(b, ' ')
	for i, f := range e.fields {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendEscaped(b, f.key, keyEscapes)
		b = append(b, '=')
		if f.isStr {
			b = append(b, '"')
			b = appendEscaped(b, f.s, stringFieldEscapes)
			b = append(b, '"')
		} else {
			b = strconv.AppendFloat(b, f.f, 'f', -1, 64)
		}
	}
	b = append(b, ' ')
	b = strconv.AppendInt(b, t, 10)
	return append(b, '\n')
}

// The bytes line protocol escapes with a backslash, as
// github.com/influxdata/line-protocol does: in a measurement, in a tag key
// or value or a field key, in a string field's value.
var (
	nameEscapes        = newEscapeSet("\t\n\f\r ,")
	keyEscapes         = newEscapeSet("\t\n\f\r ,=")
	stringFieldEscapes = newEscapeSet("\t\n\f\r\\\"")
)

// escapeSet is a set of bytes, indexed by byte.
type escapeSet *[256]bool

func newEscapeSet(bs string) escapeSet {
	var set [256]bool
	for i := 0; i < len(bs); i++ {
		set[bs[i]] = true
	}
	return &set
}

// appendEscaped appends s with each byte of set escaped: a backslash
// before it, and \t, \n, \f, \r written as such.
func appendEscaped(b []byte, s string, set escapeSet) []byte {
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !set[c] {
			continue
		}
		b = append(b, s[start:i]...)
		start = i + 1
		switch c {
		case '\t':
			b = append(b, '\\', 't')
		case '\n':
			b = append(b, '\\', 'n')
		case '\f':
			b = append(b, '\\', 'f')
		case '\r':
			b = append(b, '\\', 'r')
		default:
			b = append(b, '\\', c)
		}
	}
	return append(b, s[start:]...)
}
