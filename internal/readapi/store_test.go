package readapi

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/forecastd/forecastd/anomaly"
	"github.com/forecastd/forecastd/anomaly/threshold"
	"github.com/forecastd/forecastd/pipeline"
	"github.com/forecastd/forecastd/sinks"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var t0 = time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)

// forecast is a record of series at step with an h-step path from origin
// i hours after t0, and a threshold observation whose event is ev.
func forecast(series, step string, i, h int, ev threshold.Event) sinks.Record {
	origin := t0.Add(time.Duration(i) * time.Hour)
	f := pipeline.Forecast{Origin: origin, Time: origin.Add(time.Hour), Value: float64(i), Lower: float64(i) - 1, Upper: math.NaN()}
	for k := 1; k <= h; k++ {
		f.Path = append(f.Path, pipeline.Step{Horizon: k, Time: origin.Add(time.Duration(k) * time.Hour), Value: float64(i + k), Lower: float64(i + k - 1), Upper: float64(i + k + 1)})
	}
	if ev != threshold.None {
		o := threshold.Observation{Value: 95, Direction: threshold.Above, Probability: 0.5, Forecast: 95.5, Event: ev}
		if ev != threshold.Closed {
			o.Crossing, o.Step, o.At = true, 3, origin.Add(3*time.Hour)
		}
		f.Thresholds = []threshold.Observation{o}
	}
	return sinks.Record{Kind: sinks.KindForecast, Series: series, Model: "aosvr", Subject: "telegraf", Step: step,
		Tags: []pipeline.Tag{{Key: "host", Value: "web1"}}, Forecast: f}
}

func outcome(series string, i int, y float64, ev anomaly.Event) sinks.Record {
	at := t0.Add(time.Duration(i) * time.Hour)
	o := pipeline.Outcome{Forecast: pipeline.Forecast{Time: at, Value: float64(i)}, Time: at, Actual: y,
		Anomaly: anomaly.Observation{Score: 4, Side: anomaly.Above, Event: ev}}
	return sinks.Record{Kind: sinks.KindOutcome, Series: series, Model: "aosvr", Subject: "telegraf", Outcome: o}
}

func write(t *testing.T, s *Store, rs ...sinks.Record) {
	t.Helper()
	for _, r := range rs {
		if err := s.Write(r); err != nil {
			t.Fatal(err)
		}
	}
}

func get(t *testing.T, h http.Handler, path string, code int, v any) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	if rec.Code != code {
		t.Fatalf("GET %s: %d %.300s, want %d", path, rec.Code, rec.Body, code)
	}
	if v != nil {
		if err := json.Unmarshal(rec.Body.Bytes(), v); err != nil {
			t.Fatalf("GET %s: %v: %.300s", path, err, rec.Body)
		}
	}
}

func handler(s *Store) http.Handler {
	mux := http.NewServeMux()
	s.Routes(mux)
	return mux
}

// TestSeriesDetail: the latest forecast with its path and band, the
// model's record, and the open events, per resolution; a threshold event
// closed and an anomaly closed are no longer listed; the path is a copy.
func TestSeriesDetail(t *testing.T) {
	s := New(Config{})
	key := "disk,host=web1,path=/var used_percent"
	r := forecast(key, "1h", 1, 3, threshold.Opened)
	write(t, s, r, forecast(key, "", 1, 0, threshold.None), outcome(key, 2, 5, anomaly.Opened))
	r.Forecast.Path[0].Value = -1 // the series reuses its path
	write(t, s, forecast(key, "1h", 2, 3, threshold.Updated))
	var got Series
	get(t, handler(s), "/api/v1/series/"+url.PathEscape(key), http.StatusOK, &got)
	if got.Key != key || len(got.Resolutions) != 2 || got.Resolutions[0].Step != "" || got.Resolutions[1].Step != "1h" {
		t.Fatalf("got %+v", got)
	}
	raw, hourly := got.Resolutions[0], got.Resolutions[1]
	if len(hourly.Forecast.Path) != 3 || hourly.Forecast.Path[2].Yhat != 5 || hourly.Forecast.Path[0].Yhat != 3 || hourly.Forecast.Yhat != 2 ||
		!math.IsNaN(float64(hourly.Forecast.Upper)) && hourly.Forecast.Upper != 0 || hourly.Tags["host"] != "web1" {
		t.Errorf("hourly forecast %+v", hourly)
	}
	if len(hourly.Events) != 1 || hourly.Events[0].Kind != "threshold" || time.Time(hourly.Events[0].Opened) != t0.Add(time.Hour) || hourly.Events[0].ETA == nil {
		t.Errorf("hourly events %+v: want the threshold event opened at the first forecast", hourly.Events)
	}
	if raw.Model.Outcomes != 1 || raw.Model.MAE != 3 || raw.Model.Last == nil || len(raw.Events) != 1 || raw.Events[0].Kind != "anomaly" {
		t.Errorf("raw %+v", raw)
	}
	write(t, s, forecast(key, "1h", 3, 3, threshold.Closed), outcome(key, 3, 3, anomaly.Closed))
	get(t, handler(s), "/api/v1/series/"+url.PathEscape(key), http.StatusOK, &got)
	if n := len(got.Resolutions[0].Events) + len(got.Resolutions[1].Events); n != 0 {
		t.Errorf("%d events open after their closing: %+v", n, got)
	}
	var e map[string]string
	get(t, handler(s), "/api/v1/series/nope", http.StatusNotFound, &e)
	if !strings.Contains(e["error"], "nope") {
		t.Errorf("404 body %v", e)
	}
}

// TestSeriesPages: pages of a glob follow each other with their cursor,
// every matching series once, in key order; limit is bounded.
func TestSeriesPages(t *testing.T) {
	s := New(Config{MaxLimit: 50})
	for i := range 250 {
		write(t, s, forecast(fmt.Sprintf("cpu,host=h%03d usage", i), "", i, 0, threshold.None))
		write(t, s, forecast(fmt.Sprintf("mem,host=h%03d used", i), "", i, 0, threshold.None))
	}
	h := handler(s)
	for _, c := range []struct {
		match string
		want  int
	}{{"cpu,*", 250}, {"*", 500}, {"*h00? used", 10}, {"mem,host=h1*", 100}, {"none*", 0}} {
		var all []string
		after := ""
		for pages := 0; ; pages++ {
			var p SeriesPage
			get(t, h, "/api/v1/series?"+url.Values{"match": {c.match}, "limit": {"40"}, "after": {after}}.Encode(), http.StatusOK, &p)
			for _, sm := range p.Series {
				all = append(all, sm.Key)
			}
			if p.Next == "" {
				break
			}
			after = p.Next
			if pages > 100 {
				t.Fatal("pages without end")
			}
		}
		if len(all) != c.want {
			t.Errorf("match %q: %d series, want %d", c.match, len(all), c.want)
		}
		for i := 1; i < len(all); i++ {
			if all[i] <= all[i-1] {
				t.Errorf("match %q: %q after %q", c.match, all[i], all[i-1])
			}
		}
	}
	for _, bad := range []string{"limit=0", "limit=51", "limit=x", "match=%7Ba", "after=%21%21"} {
		get(t, h, "/api/v1/series?"+bad, http.StatusBadRequest, nil)
	}
}

// TestStoreBounded: beyond max_series a new series evicts one of the
// least recently written; the pages, read while series come and go
// (keys merged into the index and read beside it), list every series
// held once, in order.
func TestStoreBounded(t *testing.T) {
	s := New(Config{MaxSeries: 2048}) // 32 a part
	h := handler(s)
	for i := range 6000 {
		write(t, s, forecast(fmt.Sprintf("s%05d", (i*7919)%10000), "", i, 0, threshold.None))
		if i%500 != 0 {
			continue
		}
		var keys []string
		after := ""
		for {
			var p SeriesPage
			get(t, h, "/api/v1/series?limit=1000&after="+after, http.StatusOK, &p)
			for _, sm := range p.Series {
				keys = append(keys, sm.Key)
			}
			if after = p.Next; after == "" {
				break
			}
		}
		if len(keys) != s.Len() || !slices.IsSorted(keys) || len(slices.Compact(slices.Clone(keys))) != len(keys) {
			t.Fatalf("after %d writes: pages of %d series (sorted %t), %d held", i+1, len(keys), slices.IsSorted(keys), s.Len())
		}
	}
	if n := s.Len(); n > 2048 || n < 1024 {
		t.Fatalf("%d series held, want at most 2048", n)
	}
	if s.evicted.Load() != uint64(6000-s.Len()) {
		t.Errorf("evicted %d, held %d", s.evicted.Load(), s.Len())
	}
}

// TestKeyJSON: keys with quotes, backslashes, control characters and
// invalid UTF-8 read back from a page as encoding/json would write them.
func TestKeyJSON(t *testing.T) {
	s := New(Config{})
	keys := []string{`a"b`, `c\d`, "e\x01f", "ü ß", "g\xffh", "i\u2028j"}
	for _, k := range keys {
		write(t, s, forecast(k, "", 1, 0, threshold.None))
	}
	var p SeriesPage
	get(t, handler(s), "/api/v1/series", http.StatusOK, &p)
	var got []string
	for _, sm := range p.Series {
		got = append(got, sm.Key)
	}
	var want []string
	for _, k := range keys {
		want = append(want, strings.ToValidUTF8(k, "\uFFFD"))
	}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("keys %q, want %q", got, want)
	}
}

// TestConcurrent: shards writing while pages and series are read (run
// under the race detector by scripts/test).
func TestConcurrent(t *testing.T) {
	s := New(Config{MaxSeries: 512})
	h := handler(s)
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := range 3000 {
				r := forecast(fmt.Sprintf("s%d-%04d", w, i%700), "", i, 12, threshold.Opened)
				if err := s.Write(r); err != nil {
					t.Error(err)
					return
				}
				if err := s.Write(outcome(r.Series, i, 1, anomaly.Opened)); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Go(func() {
		for range 200 {
			var p SeriesPage
			get(t, h, "/api/v1/series?limit=50&match=s1*", http.StatusOK, &p)
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/api/v1/series/s2-0007", nil))
			if rec.Code != http.StatusOK && rec.Code != http.StatusNotFound {
				t.Errorf("GET a series: %d", rec.Code)
			}
		}
	})
	wg.Wait()
}
