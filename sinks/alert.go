package sinks

import (
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/forecastd/forecastd/anomaly"
	"github.com/forecastd/forecastd/anomaly/threshold"
)

// The alert names of the events, Alertmanager's label alertname.
const (
	AlertNameThreshold = "ForecastThreshold"
	AlertNameAnomaly   = "ForecastAnomaly"
)

// Defaults of the bounds on an alert's labels and annotations.
const (
	DefaultMaxLabels      = 32
	DefaultMaxLabelLength = 512
)

// The labels an alert always has (kind, alertname, series) or may have;
// a source tag of one of these names is labelled "tag_<name>".
var alertLabelNames = []string{"alertname", "kind", "series", "direction", "threshold", "step", "measurement", "field", "model"}

// alertState is the latest state of one alert: an event's opening,
// updates and closing, by its identity (the series, its step, the kind
// of event and, for a threshold, the threshold). Its labels are those of
// the opening: a later record changes its annotations and its end only.
type alertState struct {
	id          string
	labels      map[string]string
	annotations map[string]string
	startsAt    time.Time
	// endsAt is the event's closing time; zero while open.
	endsAt time.Time
}

// open reports whether the event has not closed.
func (a *alertState) open() bool { return a.endsAt.IsZero() }

// fingerprint is a short hexadecimal hash of the alert's identity, the
// webhook's "fingerprint".
func (a *alertState) fingerprint() string {
	h := fnv.New64a()
	h.Write([]byte(a.id))
	return fmt.Sprintf("%016x", h.Sum64())
}

// alertBounds bound an alert's labels and annotations.
type alertBounds struct {
	maxLabels, maxLen int
}

// alertEvent is one event a record carries, before it becomes a state.
type alertEvent struct {
	id          string
	opens       bool // an opening: labels and startsAt are its own
	closes      bool
	at          time.Time
	labels      map[string]string
	annotations map[string]string
}

// alertEvents returns the threshold and anomaly events of r (none for
// most records: O(1) then, without allocation).
func alertEvents(r *Record, b alertBounds) []alertEvent {
	var evs []alertEvent
	switch r.Kind {
	case KindForecast:
		for i := range r.Forecast.Thresholds {
			o := &r.Forecast.Thresholds[i]
			if o.Event == threshold.None {
				continue
			}
			evs = append(evs, thresholdEvent(r, o, b))
		}
	case KindOutcome:
		if r.Outcome.Anomaly.Event != anomaly.None {
			evs = append(evs, anomalyEvent(r, b))
		}
	}
	return evs
}

// alertID is the identity of an event of r: its series, step, kind and
// name (a threshold's "above 95").
func alertID(r *Record, kind, name string) string {
	return r.Series + "\x00" + r.Step + "\x00" + kind + "\x00" + name
}

func thresholdEvent(r *Record, o *threshold.Observation, b alertBounds) alertEvent {
	name := string(threshold.AppendName(nil, o.Direction, o.Value))
	value := strings.TrimPrefix(name, o.Direction.String()+" ")
	ev := alertEvent{
		id:     alertID(r, "threshold", name),
		opens:  o.Event == threshold.Opened,
		closes: o.Event == threshold.Closed,
		at:     r.Forecast.Origin,
		labels: alertLabels(r, b, AlertNameThreshold, "threshold", o.Direction.String(), value),
	}
	ann := map[string]string{
		"forecast_time": r.Forecast.Origin.UTC().Format(time.RFC3339),
		"probability":   formatFloat(o.Probability),
		"yhat":          formatFloat(o.Forecast),
		"yhat_lower":    formatFloat(o.Lower),
		"yhat_upper":    formatFloat(o.Upper),
		"state":         o.Event.String(),
	}
	summary := fmt.Sprintf("%s: %s: no longer forecast to cross (probability %.2f)", r.Series, name, o.Probability)
	if o.Crossing {
		ann["eta"] = o.At.UTC().Format(time.RFC3339)
		ann["eta_seconds"] = formatFloat(o.ETA.Seconds())
		ann["horizon"] = strconv.Itoa(o.Step)
		summary = fmt.Sprintf("%s: %s in %s (probability %.2f)", r.Series, name, o.ETA.Round(time.Second), o.Probability)
	}
	ann["summary"] = summary
	ev.annotations = boundValues(ann, b.maxLen)
	return ev
}

func anomalyEvent(r *Record, b alertBounds) alertEvent {
	o := &r.Outcome
	a := &o.Anomaly
	ev := alertEvent{
		id:     alertID(r, "anomaly", ""),
		opens:  a.Event == anomaly.Opened,
		closes: a.Event == anomaly.Closed,
		at:     o.Time,
		labels: alertLabels(r, b, AlertNameAnomaly, "anomaly", a.Side.String(), ""),
	}
	reason := "deviation"
	switch {
	case a.Extreme:
		reason = "extreme"
	case a.Seasonal:
		reason = "seasonal"
	}
	ann := map[string]string{
		"time":       o.Time.UTC().Format(time.RFC3339),
		"y":          formatFloat(o.Actual),
		"yhat":       formatFloat(o.Forecast.Value),
		"yhat_lower": formatFloat(o.Forecast.Lower),
		"yhat_upper": formatFloat(o.Forecast.Upper),
		"score":      formatFloat(a.Score),
		"reason":     reason,
		"state":      a.Event.String(),
		"summary":    fmt.Sprintf("%s: %s %s the forecast (%s, score %s)", r.Series, formatFloat(o.Actual), a.Side, reason, formatFloat(a.Score)),
	}
	ev.annotations = boundValues(ann, b.maxLen)
	return ev
}

// alertLabels returns an event's labels: alertname, kind, series,
// direction, threshold (if any), step (if any), measurement and field (of
// line protocol), model, then the series' tags in order while fewer than
// b.maxLabels. Names are made valid Prometheus label names; values are
// bounded to b.maxLen bytes (a longer one is cut and ends with a hash of
// the whole, so that two values stay apart).
func alertLabels(r *Record, b alertBounds, alertname, kind, direction, thr string) map[string]string {
	l := make(map[string]string, 8+len(r.Tags))
	set := func(k, v string) {
		if v != "" && len(l) < b.maxLabels {
			l[k] = boundValue(v, b.maxLen)
		}
	}
	set("alertname", alertname)
	set("kind", kind)
	set("series", r.Series)
	set("direction", direction)
	set("threshold", thr)
	set("step", r.Step)
	set("measurement", r.Measurement)
	set("field", r.Field)
	set("model", r.Model)
	for _, t := range r.Tags {
		name := labelName(t.Key)
		for _, ok := l[name]; ok || isAlertLabel(name); _, ok = l[name] {
			name = "tag_" + name
		}
		set(name, t.Value)
	}
	return l
}

func isAlertLabel(name string) bool {
	for _, n := range alertLabelNames {
		if n == name {
			return true
		}
	}
	return false
}

// labelName returns s as a Prometheus label name, [a-zA-Z_][a-zA-Z0-9_]*
// not beginning with "__" (reserved): every other byte becomes '_', a
// leading digit or "__" is prefixed with "tag".
func labelName(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			b[i] = '_'
		}
	}
	if len(b) == 0 || b[0] >= '0' && b[0] <= '9' || strings.HasPrefix(string(b), "__") {
		b = append([]byte("tag_"), b...)
	}
	return string(b)
}

// boundValue returns v if it is at most max bytes of valid UTF-8, else
// its start, cut at a rune, followed by "~" and 16 hexadecimal digits of
// a hash of the whole.
func boundValue(v string, limit int) string {
	if len(v) <= limit && utf8.ValidString(v) {
		return v
	}
	v = strings.ToValidUTF8(v, "\uFFFD")
	if len(v) <= limit {
		return v
	}
	h := fnv.New64a()
	h.Write([]byte(v))
	suffix := fmt.Sprintf("~%016x", h.Sum64())
	cut := max(0, limit-len(suffix))
	for cut > 0 && !utf8.RuneStart(v[cut]) {
		cut--
	}
	return v[:cut] + suffix
}

func boundValues(m map[string]string, limit int) map[string]string {
	for k, v := range m {
		m[k] = boundValue(v, limit)
	}
	return m
}

// formatFloat formats v shortest, "NaN" when not a number.
func formatFloat(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
