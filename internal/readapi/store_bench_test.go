package readapi

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"testing"

	"github.com/forecastd/forecastd/anomaly/threshold"
)

// benchStore holds n series of Telegraf-like keys, each with a 48-step
// path.
func benchStore(b *testing.B, n int) *Store {
	b.Helper()
	s := New(Config{MaxSeries: n})
	for i := range n {
		key := fmt.Sprintf("cpu,cpu=cpu%d,host=web%05d usage_user", i%8, i/8)
		if err := s.Write(forecast(key, "", i%1000, 48, threshold.None)); err != nil {
			b.Fatal(err)
		}
	}
	return s
}

// BenchmarkReadAPI: the answers of the read API at 100 000 series, each
// request served by the handler through encoding (no network).
func BenchmarkReadAPI(b *testing.B) {
	const n = 100000
	s := benchStore(b, n)
	h := handler(s)
	for _, c := range []struct{ name, path string }{
		{"list/all/limit=100", "/api/v1/series?limit=100"},
		{"list/all/limit=1000", "/api/v1/series?limit=1000"},
		{"list/prefix", "/api/v1/series?" + url.Values{"match": {"cpu,cpu=cpu3,host=web05*"}}.Encode()},
		{"list/scan-no-match", "/api/v1/series?" + url.Values{"match": {"*nothing*"}}.Encode()},
		{"get/48-steps", "/api/v1/series/" + url.PathEscape("cpu,cpu=cpu3,host=web06250 usage_user")},
	} {
		b.Run(c.name, func(b *testing.B) {
			req := httptest.NewRequest(http.MethodGet, c.path, nil)
			b.ReportAllocs()
			for b.Loop() {
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				if rec.Code != http.StatusOK {
					b.Fatalf("%d %.200s", rec.Code, rec.Body)
				}
			}
		})
	}
	// A page after a new series: the index merges it in first.
	b.Run("list/after-new-series", func(b *testing.B) {
		req := httptest.NewRequest(http.MethodGet, "/api/v1/series?limit=100", nil)
		i := 0
		b.ReportAllocs()
		for b.Loop() {
			i++
			if err := s.Write(forecast(fmt.Sprintf("new,host=%d x", i), "", 1, 48, threshold.None)); err != nil {
				b.Fatal(err)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
		}
	})
}

// BenchmarkStoreWrite: a forecast of a held series with a 48-step path,
// the cost the store adds to every forecast on the shards.
func BenchmarkStoreWrite(b *testing.B) {
	s := benchStore(b, 100000)
	r := forecast("cpu,cpu=cpu3,host=web06250 usage_user", "", 5, 48, threshold.None)
	b.ReportAllocs()
	for b.Loop() {
		if err := s.Write(r); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkIndexMerge: the page that merges the keys added since the
// last merge into the snapshot, at 100 000 keys (mergeAt's 6250 added):
// the slowest page's extra cost, once every 6250 new series.
func BenchmarkIndexMerge(b *testing.B) {
	const n = 100000
	base := make([]string, n)
	for i := range base {
		base[i] = fmt.Sprintf("cpu,cpu=cpu%d,host=web%05d usage_user", i%8, i/8)
	}
	slices.Sort(base)
	added := make([]string, mergeAt(n))
	for i := range added {
		added[i] = fmt.Sprintf("new,host=%05d x", (i*7919)%len(added))
	}
	held := func(string) bool { return true }
	b.ReportAllocs()
	for b.Loop() {
		x := index{sorted: base, added: slices.Clone(added)}
		if s, _ := x.keys(held); len(s) != n+len(added) {
			b.Fatal(len(s))
		}
	}
}
