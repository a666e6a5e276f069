package readapi

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/forecastd/forecastd/internal/keyglob"
)

// Bounds of a page of GET /api/v1/series.
const (
	// DefaultLimit is the series of a page when limit is not given.
	DefaultLimit = 100
	// maxScan bounds the keys one page looks at: a glob that matches
	// few keys returns fewer than limit, and a cursor to go on from.
	maxScan = 20000
)

// Routes adds the API's endpoints to mux.
func (s *Store) Routes(mux *http.ServeMux) {
	mux.HandleFunc("GET /api/v1/series", s.list)
	mux.HandleFunc("GET /api/v1/series/{key...}", s.get)
}

// jfloat is a float64 written as JSON null when not finite.
type jfloat float64

func (f jfloat) MarshalJSON() ([]byte, error) {
	v := float64(f)
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return []byte("null"), nil
	}
	return strconv.AppendFloat(nil, v, 'g', -1, 64), nil
}

// UnmarshalJSON reads null as NaN.
func (f *jfloat) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*f = jfloat(math.NaN())
		return nil
	}
	return json.Unmarshal(b, (*float64)(f))
}

// jtime is a time written in RFC 3339 (UTC), or null when zero.
type jtime time.Time

// UnmarshalJSON reads null as the zero time.
func (t *jtime) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*t = jtime{}
		return nil
	}
	return json.Unmarshal(b, (*time.Time)(t))
}

func (t jtime) MarshalJSON() ([]byte, error) {
	if time.Time(t).IsZero() {
		return []byte("null"), nil
	}
	return []byte(`"` + time.Time(t).UTC().Format(time.RFC3339Nano) + `"`), nil
}

// SeriesPage is the answer of GET /api/v1/series.
type SeriesPage struct {
	Series []SeriesSummary `json:"series"`
	// Next is the cursor of the next page (after=Next), empty after the
	// last.
	Next string `json:"next,omitempty"`
}

// SeriesSummary is a series of a page: each of its resolutions' latest
// forecast, and its open events.
type SeriesSummary struct {
	Key         string              `json:"key"`
	Resolutions []ResolutionSummary `json:"resolutions"`
}

// ResolutionSummary is the latest one-step forecast of a series at one
// step ("" for its own spacing).
type ResolutionSummary struct {
	Step       string `json:"step"`
	Model      string `json:"model"`
	Origin     jtime  `json:"origin"`
	Time       jtime  `json:"time"`
	Yhat       jfloat `json:"yhat"`
	Lower      jfloat `json:"yhat_lower"`
	Upper      jfloat `json:"yhat_upper"`
	OpenEvents int    `json:"open_events"`
}

func (s *Store) list(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	match := q.Get("match")
	if match == "" {
		match = "*"
	}
	g, err := keyglob.Compile(match)
	if err != nil {
		writeError(w, http.StatusBadRequest, "match: "+err.Error())
		return
	}
	limit := DefaultLimit
	if v := q.Get("limit"); v != "" {
		if limit, err = strconv.Atoi(v); err != nil || limit < 1 || limit > s.maxPage {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("limit: want 1 to %d, got %q", s.maxPage, v))
			return
		}
	}
	after := ""
	if v := q.Get("after"); v != "" {
		b, err := base64.RawURLEncoding.DecodeString(v)
		if err != nil {
			writeError(w, http.StatusBadRequest, "after: not a cursor of this API")
			return
		}
		after = string(b)
	}
	bp := bufPool.Get().(*[]byte)
	*bp = s.page((*bp)[:0], g.Match, literalPrefix(match), after, limit)
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(*bp)
	if cap(*bp) <= 1<<20 {
		bufPool.Put(bp)
	}
}

// bufPool holds the buffers pages are written in.
var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, 16<<10); return &b }}

// page appends to b the JSON of up to limit series after the key after
// whose keys start with prefix and match (a SeriesPage), looking at most
// at maxScan keys.
func (s *Store) page(b []byte, match func(string) bool, prefix, after string, limit int) []byte {
	sorted, added := s.idx.keys(func(k string) bool { return s.lookup(k) != nil })
	c := keyCursor{a: sorted, b: added}
	c.seek(max(after, prefix))
	b = append(b, `{"series":[`...)
	n, scanned, last := 0, 0, ""
	for n < limit && scanned < maxScan {
		k, ok := c.next()
		if !ok || !strings.HasPrefix(k, prefix) {
			return append(b, "]}\n"...) // past the keys that can match
		}
		if k == after {
			continue
		}
		scanned++
		last = k
		if !match(k) {
			continue
		}
		if e := s.lookup(k); e != nil {
			if n > 0 {
				b = append(b, ',')
			}
			b = e.appendSummary(b)
			n++
		}
	}
	b = append(b, ']')
	if k, ok := c.peek(); ok && strings.HasPrefix(k, prefix) {
		b = append(b, `,"next":"`...)
		b = base64.RawURLEncoding.AppendEncode(b, []byte(last))
		b = append(b, '"')
	}
	return append(b, "}\n"...)
}

// keyCursor reads two sorted slices of keys as one, each key once.
type keyCursor struct {
	a, b []string
	i, j int
	last string
	any  bool
}

// seek moves c to the first key ≥ k.
func (c *keyCursor) seek(k string) {
	c.i, c.j = sort.SearchStrings(c.a, k), sort.SearchStrings(c.b, k)
}

func (c *keyCursor) next() (string, bool) {
	for {
		var k string
		switch {
		case c.i < len(c.a) && (c.j >= len(c.b) || c.a[c.i] <= c.b[c.j]):
			k, c.i = c.a[c.i], c.i+1
		case c.j < len(c.b):
			k, c.j = c.b[c.j], c.j+1
		default:
			return "", false
		}
		if c.any && k == c.last {
			continue
		}
		c.any, c.last = true, k
		return k, true
	}
}

// peek returns the next key without moving c.
func (c *keyCursor) peek() (string, bool) {
	cc := *c
	return cc.next()
}

// literalPrefix is the start of a glob before its first special
// character: every key it matches starts with it.
func literalPrefix(glob string) string {
	if i := strings.IndexAny(glob, `*?[{\`); i >= 0 {
		return glob[:i]
	}
	return glob
}

// appendSummary appends the entry's SeriesSummary as JSON, under its
// lock, without allocating.
func (e *entry) appendSummary(b []byte) []byte {
	e.mu.Lock()
	defer e.mu.Unlock()
	b = append(b, `{"key":`...)
	b = appendString(b, e.key)
	b = append(b, `,"resolutions":[`...)
	for i := range e.resols {
		res := &e.resols[i]
		if i > 0 {
			b = append(b, ',')
		}
		n := len(res.thresholds)
		if res.anomaly.open {
			n++
		}
		b = append(b, `{"step":`...)
		b = appendString(b, res.step)
		b = append(b, `,"model":`...)
		b = appendString(b, res.model)
		b = append(b, `,"origin":`...)
		b = appendTime(b, res.origin)
		b = append(b, `,"time":`...)
		b = appendTime(b, res.time)
		b = append(b, `,"yhat":`...)
		b = appendFloat(b, res.value)
		b = append(b, `,"yhat_lower":`...)
		b = appendFloat(b, res.lower)
		b = append(b, `,"yhat_upper":`...)
		b = appendFloat(b, res.upper)
		b = append(b, `,"open_events":`...)
		b = strconv.AppendInt(b, int64(n), 10)
		b = append(b, '}')
	}
	return append(b, "]}"...)
}

func appendFloat(b []byte, v float64) []byte {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return append(b, "null"...)
	}
	return strconv.AppendFloat(b, v, 'g', -1, 64)
}

func appendTime(b []byte, t time.Time) []byte {
	if t.IsZero() {
		return append(b, "null"...)
	}
	b = append(b, '"')
	b = t.UTC().AppendFormat(b, time.RFC3339Nano)
	return append(b, '"')
}

// appendString appends s as a JSON string: quotes, backslashes and
// control characters escaped, invalid UTF-8 as U+FFFD.
func appendString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case c < 0x20:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			default:
				b = append(b, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, `\ufffd`...)
		} else {
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return append(b, '"')
}

// Series is the answer of GET /api/v1/series/{key}.
type Series struct {
	Key         string       `json:"key"`
	Resolutions []Resolution `json:"resolutions"`
}

// Resolution is the latest of a series at one step: its forecast path
// with its band, a summary of its model's record, its open events.
type Resolution struct {
	Step     string            `json:"step"`
	Subject  string            `json:"subject"`
	Tags     map[string]string `json:"tags,omitempty"`
	Forecast Forecast          `json:"forecast"`
	Model    ModelSummary      `json:"model"`
	Events   []Event           `json:"events"`
}

// Forecast is the latest forecast: step 1, and the path of every step.
type Forecast struct {
	Origin jtime  `json:"origin"`
	Time   jtime  `json:"time"`
	Yhat   jfloat `json:"yhat"`
	Lower  jfloat `json:"yhat_lower"`
	Upper  jfloat `json:"yhat_upper"`
	Path   []Step `json:"path"`
}

// Step is one step of a forecast's path.
type Step struct {
	Horizon int    `json:"horizon"`
	Time    jtime  `json:"time"`
	Yhat    jfloat `json:"yhat"`
	Lower   jfloat `json:"yhat_lower"`
	Upper   jfloat `json:"yhat_upper"`
}

// ModelSummary is how the series' model has done since the store first
// saw the series.
type ModelSummary struct {
	Kind      string      `json:"kind"`
	Forecasts uint64      `json:"forecasts"`
	Outcomes  uint64      `json:"outcomes"`
	MAE       jfloat      `json:"mae"`
	Last      *LastResult `json:"last_outcome"`
}

// LastResult is the latest point that closed a forecast.
type LastResult struct {
	Time         jtime  `json:"time"`
	Y            jfloat `json:"y"`
	Yhat         jfloat `json:"yhat"`
	AnomalyScore jfloat `json:"anomaly_score"`
}

// Event is an open event of the series.
type Event struct {
	Kind        string  `json:"kind"` // threshold, anomaly
	Direction   string  `json:"direction"`
	Opened      jtime   `json:"opened"`
	Threshold   *jfloat `json:"threshold,omitempty"`
	ETA         *jtime  `json:"eta,omitempty"`
	Probability *jfloat `json:"probability,omitempty"`
	Yhat        *jfloat `json:"yhat,omitempty"`
	Score       *jfloat `json:"score,omitempty"`
	Reason      string  `json:"reason,omitempty"`
}

func (s *Store) get(w http.ResponseWriter, r *http.Request) {
	key := r.PathValue("key")
	e := s.lookup(key)
	if e == nil {
		writeError(w, http.StatusNotFound, fmt.Sprintf("no series %q", key))
		return
	}
	writeJSON(w, e.detail())
}

// detail copies the entry out under its lock, then builds the answer.
func (e *entry) detail() Series {
	e.mu.Lock()
	resols := slices.Clone(e.resols)
	for i := range resols {
		resols[i].path = slices.Clone(resols[i].path)
		resols[i].thresholds = slices.Clone(resols[i].thresholds)
	}
	e.mu.Unlock()
	out := Series{Key: e.key, Resolutions: make([]Resolution, len(resols))}
	for i := range resols {
		out.Resolutions[i] = resols[i].detail()
	}
	return out
}

func (res *resolution) detail() Resolution {
	d := Resolution{Step: res.step, Subject: res.subject, Events: []Event{},
		Forecast: Forecast{Origin: jtime(res.origin), Time: jtime(res.time), Yhat: jfloat(res.value),
			Lower: jfloat(res.lower), Upper: jfloat(res.upper), Path: make([]Step, len(res.path))},
		Model: ModelSummary{Kind: res.model, Forecasts: res.forecasts, Outcomes: res.outcomes, MAE: jfloat(math.NaN())}}
	if len(res.tags) > 0 {
		d.Tags = make(map[string]string, len(res.tags))
		for _, t := range res.tags {
			d.Tags[t.Key] = t.Value
		}
	}
	for i, st := range res.path {
		d.Forecast.Path[i] = Step{Horizon: st.Horizon, Time: jtime(st.Time), Yhat: jfloat(st.Value), Lower: jfloat(st.Lower), Upper: jfloat(st.Upper)}
	}
	if res.outcomes > 0 {
		d.Model.MAE = jfloat(res.absErr / float64(res.outcomes))
	}
	if l := res.last; l.set {
		d.Model.Last = &LastResult{Time: jtime(l.time), Y: jfloat(l.actual), Yhat: jfloat(l.forecast), AnomalyScore: jfloat(l.score)}
	}
	ptr := func(v float64) *jfloat { f := jfloat(v); return &f }
	for _, t := range res.thresholds {
		ev := Event{Kind: "threshold", Direction: t.dir.String(), Opened: jtime(t.opened), Threshold: ptr(t.value),
			Probability: ptr(t.prob), Yhat: ptr(t.forecast)}
		if t.crossing {
			eta := jtime(t.at)
			ev.ETA = &eta
		}
		d.Events = append(d.Events, ev)
	}
	if a := res.anomaly; a.open {
		reason := "deviation"
		switch {
		case a.extreme:
			reason = "extreme"
		case a.seasonal:
			reason = "seasonal"
		}
		d.Events = append(d.Events, Event{Kind: "anomaly", Direction: a.side.String(), Opened: jtime(a.opened), Score: ptr(a.score), Reason: reason})
	}
	return d
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": msg})
}
