package sinks

import (
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/klauspost/compress/snappy"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/forecastd/forecastd/anomaly/threshold"
)

// The metric names the Prometheus sink writes.
const (
	PromForecast     = "forecastd_forecast"       // ŷ at the target time
	PromLower        = "forecastd_forecast_lower" // the interval's bounds
	PromUpper        = "forecastd_forecast_upper"
	PromActual       = "forecastd_actual"        // y, at the target time of the forecast it closed
	PromAnomalyScore = "forecastd_anomaly_score" // the outcome's anomaly score
	PromETA          = "forecastd_threshold_eta_seconds"
	PromProbability  = "forecastd_threshold_probability"
)

// promOwnLabels is the most labels forecastd sets itself: __name__,
// series_key, model, step, src_measurement, src_field, and horizon or
// threshold.
const promOwnLabels = 7

// promEncoder turns a batch of records into one remote write 1.0
// WriteRequest (prometheus/prompb's types.proto: WriteRequest, TimeSeries,
// Label, Sample), snappy-compressed. It is owned by the sink's flushing
// goroutine and reuses its buffers from batch to batch.
//
// The protobuf is written with protowire rather than by importing
// github.com/prometheus/prometheus/prompb: that package is in the
// Prometheus server's module, whose requirements (Kubernetes, cloud
// SDKs, the TSDB) would all enter go.sum for four small messages.
type promEncoder struct {
	maxLabels, maxLen int
	atOrigin          bool // PromConfig.Timestamp "origin"
	horizon           int  // the record's (Record.horizon)

	labels []promLabel     // one record's labels, __name__ excluded
	key    []byte          // one series' encoded labels
	index  map[string]int  // encoded labels → series
	series []promSeries    // the batch's series, in first-seen order
	pool   [][]promSample  // sample slices reused across batches
	buf    []byte          // the WriteRequest
	out    []byte          // buf compressed
	names  map[string]bool // label names taken in one record
	// renamed caches the label names of input tag keys that promName
	// rewrites (a few per deployment), at most maxRenamed of them.
	renamed map[string]string
}

// maxRenamed bounds promEncoder.renamed.
const maxRenamed = 4096

type promLabel struct{ name, value string }

type promSeries struct {
	labels  string // the TimeSeries' encoded labels, the index's key
	samples []promSample
}

type promSample struct {
	t int64 // ms
	v float64
}

func newPromEncoder(maxLabels, maxLen int) *promEncoder {
	return &promEncoder{maxLabels: maxLabels, maxLen: maxLen, index: map[string]int{}, names: map[string]bool{},
		renamed: map[string]string{}}
}

// add adds the samples of r to the batch; false if it has none (no
// finite value).
func (e *promEncoder) add(r *Record) bool {
	samples := 0
	emit := func(name string, ms int64, v float64, withHorizon bool) {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return
		}
		e.sample(name, ms, v, withHorizon)
		samples++
	}
	e.recordLabels(r)
	e.horizon = r.horizon
	switch {
	case r.thr.dir != 0:
		ms := r.Forecast.Origin.UnixMilli()
		emit(PromETA, ms, r.thr.eta, false)
		emit(PromProbability, ms, r.thr.prob, false)
	case r.Kind == KindForecast:
		f := &r.Forecast
		ms := f.Time.UnixMilli()
		if e.atOrigin {
			ms = f.Origin.UnixMilli()
		}
		emit(PromForecast, ms, f.Value, true)
		if f.HasInterval() {
			emit(PromLower, ms, f.Lower, true)
			emit(PromUpper, ms, f.Upper, true)
		}
	case r.Kind == KindOutcome && r.horizon <= 1:
		o := &r.Outcome
		ms := o.Forecast.Time.UnixMilli()
		emit(PromActual, ms, o.Actual, false)
		emit(PromAnomalyScore, ms, o.Anomaly.Score, false)
	}
	return samples > 0
}

// recordLabels sets e.labels to r's labels but __name__ and horizon:
// forecastd's own, then the input tags (a reserved key renamed
// "tag_<key>", as in InfluxDB; a key sanitized to Prometheus' name
// syntax; one whose name is taken, or beyond MaxLabels, left out).
func (e *promEncoder) recordLabels(r *Record) {
	e.labels = e.labels[:0]
	clear(e.names)
	own := func(name, v string) {
		if v != "" {
			e.labels = append(e.labels, promLabel{name, e.value(v)})
			e.names[name] = true
		}
	}
	own(TagSeries, r.Series)
	own("model", r.Model)
	own(TagStep, r.Step)
	own(TagMeasurement, r.Measurement)
	own(TagField, r.Field)
	e.names[TagHorizon], e.names["threshold"] = true, true
	if r.thr.dir != 0 {
		own("threshold", threshold.Name(threshold.Direction(r.thr.dir), r.thr.value))
	}
	room := e.maxLabels - 2 - len(e.labels) // __name__, and horizon
	for _, tg := range r.Tags {
		if room <= 0 {
			break
		}
		if tg.Key == "" || tg.Value == "" {
			continue
		}
		name := e.labelName(inputTagKey(tg.Key, r.Tags))
		if e.names[name] {
			continue
		}
		e.names[name] = true
		e.labels = append(e.labels, promLabel{name, e.value(tg.Value)})
		room--
	}
}

// value returns v as a label value: valid UTF-8, at most maxLen bytes.
func (e *promEncoder) value(v string) string {
	if !utf8.ValidString(v) {
		v = strings.ToValidUTF8(v, "\uFFFD")
	}
	if len(v) > e.maxLen {
		cut := e.maxLen
		for cut > 0 && !utf8.RuneStart(v[cut]) {
			cut--
		}
		v = v[:cut]
	}
	return v
}

// labelName is promName through the cache of renamed keys.
func (e *promEncoder) labelName(k string) string {
	if n, ok := e.renamed[k]; ok {
		return n
	}
	n := promName(k)
	if n != k {
		if len(e.renamed) >= maxRenamed {
			clear(e.renamed)
		}
		e.renamed[k] = n
	}
	return n
}

// promName returns k as a Prometheus label name, [a-zA-Z_][a-zA-Z0-9_]*:
// every other byte replaced by '_', and '_' before a leading digit.
// Keys beginning "__" are Prometheus' own: inputTagKey has renamed them.
func promName(k string) string {
	ok := true
	for i := 0; i < len(k); i++ {
		if c := k[i]; !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9') {
			ok = false
			break
		}
	}
	if ok {
		return k
	}
	b := make([]byte, 0, len(k)+1)
	if k[0] >= '0' && k[0] <= '9' {
		b = append(b, '_')
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			c = '_'
		}
		b = append(b, c)
	}
	return string(b)
}

// sample adds one sample of metric name at ms to its series: e.labels,
// __name__, and the record's horizon if withHorizon.
func (e *promEncoder) sample(name string, ms int64, v float64, withHorizon bool) {
	e.labels = append(e.labels, promLabel{"__name__", name})
	if withHorizon && e.horizon > 0 {
		e.labels = append(e.labels, promLabel{TagHorizon, strconv.Itoa(e.horizon)})
	}
	slices.SortFunc(e.labels, func(a, b promLabel) int { return strings.Compare(a.name, b.name) })
	e.key = e.key[:0]
	for _, l := range e.labels {
		e.key = protowire.AppendTag(e.key, 1, protowire.BytesType)
		e.key = protowire.AppendVarint(e.key, uint64(2+len(l.name)+protowire.SizeVarint(uint64(len(l.name)))+len(l.value)+protowire.SizeVarint(uint64(len(l.value)))))
		e.key = protowire.AppendTag(e.key, 1, protowire.BytesType)
		e.key = protowire.AppendString(e.key, l.name)
		e.key = protowire.AppendTag(e.key, 2, protowire.BytesType)
		e.key = protowire.AppendString(e.key, l.value)
	}
	// Restore e.labels' order for the record's next sample: drop what
	// this one added, wherever sorting put it.
	e.labels = slices.DeleteFunc(e.labels, func(l promLabel) bool {
		return l.name == "__name__" || l.name == TagHorizon && withHorizon && e.horizon > 0
	})
	i, ok := e.index[string(e.key)]
	if !ok {
		i = len(e.series)
		var s []promSample
		if k := len(e.pool); k > 0 {
			s, e.pool = e.pool[k-1][:0], e.pool[:k-1]
		}
		e.series = append(e.series, promSeries{labels: string(e.key), samples: s})
		e.index[e.series[i].labels] = i
	}
	e.series[i].samples = append(e.series[i].samples, promSample{ms, v})
}

// encode returns the batch's WriteRequest, snappy-compressed, each
// series' samples in time order (of samples at one time, the last
// added), and empties the batch. The slice is valid until the next
// encode.
func (e *promEncoder) encode() []byte {
	e.buf = e.buf[:0]
	for i := range e.series {
		s := &e.series[i]
		slices.SortStableFunc(s.samples, func(a, b promSample) int { return cmpInt64(a.t, b.t) })
		s.samples = lastAtEachTime(s.samples)
		size := len(s.labels)
		for _, p := range s.samples {
			size += 2 + sampleSize(p)
		}
		e.buf = protowire.AppendTag(e.buf, 1, protowire.BytesType)
		e.buf = protowire.AppendVarint(e.buf, uint64(size))
		e.buf = append(e.buf, s.labels...)
		for _, p := range s.samples {
			e.buf = protowire.AppendTag(e.buf, 2, protowire.BytesType)
			e.buf = protowire.AppendVarint(e.buf, uint64(sampleSize(p)))
			e.buf = protowire.AppendTag(e.buf, 1, protowire.Fixed64Type)
			e.buf = protowire.AppendFixed64(e.buf, math.Float64bits(p.v))
			e.buf = protowire.AppendTag(e.buf, 2, protowire.VarintType)
			e.buf = protowire.AppendVarint(e.buf, uint64(p.t))
		}
		e.pool = append(e.pool, s.samples)
	}
	clear(e.series)
	e.series = e.series[:0]
	clear(e.index)
	e.out = snappy.Encode(e.out[:cap(e.out)], e.buf)
	return e.out
}

// sampleSize is the bytes of a Sample message's fields.
func sampleSize(p promSample) int { return 1 + 8 + 1 + protowire.SizeVarint(uint64(p.t)) }

func cmpInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// lastAtEachTime keeps, of the samples sorted by time, the last of each
// time: a receiver refuses two values at one time of a series.
func lastAtEachTime(s []promSample) []promSample {
	out := s[:0]
	for i, p := range s {
		if i+1 < len(s) && s[i+1].t == p.t {
			continue
		}
		out = append(out, p)
	}
	return out
}
