package history

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/forecastd/forecastd/internal/testserver/influxtest"
	"github.com/forecastd/forecastd/pipeline"
	"github.com/forecastd/forecastd/runner"
)

// TestReadInflux reads, from a real InfluxDB 1.8, a line-protocol series'
// raw points and its server-side buckets, only those of its exact tag set,
// in time order, capped at MaxPoints; and forecastd's own actuals by key.
func TestReadInflux(t *testing.T) {
	srv := influxtest.Start(t, influxtest.Options{Auth: true})
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var b strings.Builder
	for i := range 120 { // 2 h at 1 min
		ns := t0.Add(time.Duration(i) * time.Minute).UnixNano()
		fmt.Fprintf(&b, "disk,host=a,path=/ used=%di %d\n", i, ns)
		fmt.Fprintf(&b, "disk,host=a,path=/,extra=x used=%di %d\n", 1000+i, ns) // another series: not ours
		fmt.Fprintf(&b, "disk,host=a,path=/ label=\"s\" %d\n", ns+1)            // a string field: not ours
		fmt.Fprintf(&b, "forecast,series_key=k,model=aosvr y=%d %d\n", 2*i, ns)
		fmt.Fprintf(&b, "forecast,series_key=k,model=aosvr,step=1h y=-1 %d\n", ns) // a resolution's: not ours
		fmt.Fprintf(&b, "mine,name=k temp=%d %d\n", 3*i, ns)                       // a configured measurement without step or horizon tags
	}
	srv.Write(t, b.String())
	h, err := New(Config{URL: srv.URL, Token: srv.Token, Database: srv.Database, Lookback: 24 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	origin := runner.Origin{Measurement: "disk", Field: "used", Tags: []pipeline.Tag{{Key: "host", Value: "a"}, {Key: "path", Value: "/"}}}
	end := t0.Add(2 * time.Hour)
	raw, err := h.Read(context.Background(), Request{Origin: origin, Start: t0, End: end.Add(-time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	if len(raw) != 119 || raw[0].Value != 0 || raw[118].Value != 118 || !raw[5].Time.Equal(t0.Add(5*time.Minute)) {
		t.Fatalf("raw: %d points, first %v, last %v", len(raw), raw[0], raw[len(raw)-1])
	}
	agg, err := h.Load(context.Background(), runner.HistoryRequest{Origin: origin, Config: pipeline.Config{Step: time.Hour, Aggregate: pipeline.AggMax}, Until: end})
	if err != nil {
		t.Fatal(err)
	}
	if len(agg) != 2 || agg[0].Value != 59 || agg[1].Value != 119 || !agg[1].Time.Equal(t0.Add(time.Hour)) {
		t.Fatalf("hourly max: %v", agg)
	}
	own, err := h.Read(context.Background(), Request{Key: "k", Step: time.Hour, Aggregate: pipeline.AggMean, Start: t0, End: end})
	if err != nil {
		t.Fatal(err)
	}
	if len(own) != 2 || own[0].Value != 59 || own[1].Value != 179 {
		t.Fatalf("forecastd's own y, hourly mean: %v", own)
	}
	cust, _ := New(Config{URL: srv.URL, Token: srv.Token, Database: srv.Database, Measurement: "mine", Field: "temp", SeriesTag: "name"})
	if got, err := cust.Read(context.Background(), Request{Key: "k", Start: t0, End: end}); err != nil || len(got) != 120 || got[119].Value != 357 {
		t.Fatalf("a configured measurement, field and series tag: %d points, %v", len(got), err)
	}
	capped, _ := New(Config{URL: srv.URL, Token: srv.Token, Database: srv.Database, MaxPoints: 10})
	last, err := capped.Read(context.Background(), Request{Origin: origin, Start: t0, End: end})
	if err != nil || len(last) != 10 || last[0].Value != 110 || last[9].Value != 119 {
		t.Fatalf("capped at 10: %v, %v", last, err)
	}
	small, _ := New(Config{URL: srv.URL, Token: srv.Token, Database: srv.Database, MaxBytes: 100})
	if _, err := small.Read(context.Background(), Request{Origin: origin, Start: t0, End: end}); err == nil || small.Stats().Failures[FailTooLarge] != 1 {
		t.Fatalf("a response over max_bytes: %v, stats %+v", err, small.Stats())
	}
	noAuth, _ := New(Config{URL: srv.URL, Database: srv.Database})
	if _, err := noAuth.Read(context.Background(), Request{Origin: origin, Start: t0, End: end}); err == nil || noAuth.Stats().Failures[FailStatus] != 1 {
		t.Fatalf("without credentials: %v, stats %+v", err, noAuth.Stats())
	}
}

// TestReadDown: a server that is not there is a failure of class
// unreachable, returned at once.
func TestReadDown(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	h, err := New(Config{URL: "http://" + addr, Database: "db"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = h.Read(context.Background(), Request{Key: "k", Start: time.Unix(0, 0), End: time.Unix(100, 0)})
	if err == nil || h.Stats().Failures[FailUnreachable] != 1 {
		t.Fatalf("down: %v, %+v", err, h.Stats())
	}
	if _, err := New(Config{URL: "nats://x", Database: ""}); err == nil || !strings.Contains(err.Error(), "url") || !strings.Contains(err.Error(), "database") {
		t.Fatalf("bad config: %v", err)
	}
}

// TestReadBoundsDecodeMemory: answers under max_bytes that cost much
// more to decode whole than their size (a row of many numbers, many
// empty rows, many series each with tags, long strings, deep nesting)
// are read from a hand-written server with a bounded memory: what a Read
// allocates, garbage included, stays under the points it keeps and the
// decoder's bound (DecodeMemory), far below the body's size.
func TestReadBoundsDecodeMemory(t *testing.T) {
	const size = 8 << 20
	fill := func(head, unit, sep, tail string) []byte {
		var b bytes.Buffer
		b.WriteString(head)
		for b.Len() < size-len(tail)-len(unit)-len(sep) {
			if b.Len() > len(head) {
				b.WriteString(sep)
			}
			b.WriteString(unit)
		}
		b.WriteString(tail)
		return b.Bytes()
	}
	bodies := map[string][]byte{
		"a row of numbers":  fill(`{"results":[{"series":[{"tags":{"host":"a"},"values":[[1700000000000000000,`, "1", ",", `]]}]}]}`),
		"empty rows":        fill(`{"results":[{"series":[{"tags":{"host":"a"},"values":[`, "[]", ",", `]}]}]}`),
		"rows of points":    fill(`{"results":[{"series":[{"tags":{"host":"a"},"values":[`, "[1,2]", ",", `]}]}]}`),
		"series with tags":  fill(`{"results":[{"series":[`, `{"tags":{"host":"a","b":"c"},"values":[[1,2]]}`, ",", `]}]}`),
		"a long string":     fill(`{"results":[{"series":[{"name":"`, "x", "", `"}]}]}`),
		"nested":            fill(`{"results":[{"series":[{"columns":`, "[", "", ``),
		"many small values": fill(`{"results":[{"series":[{"columns":[`, `"c"`, ",", `]}]}]}`),
		"many tags":         fill(`{"results":[{"series":[{"tags":{`, `"k":"v"`, ",", `}}]}]}`),
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write(bodies[r.URL.Query().Get("db")])
	}))
	defer srv.Close()
	const maxPoints = 1000
	// What the client and the server's handler allocate beside the
	// decoder, generously.
	const overhead = 1 << 20
	for name, body := range bodies {
		h, err := New(Config{URL: srv.URL, Database: name, MaxPoints: maxPoints, MaxBytes: size})
		if err != nil {
			t.Fatal(err)
		}
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		pts, err := h.Read(context.Background(), Request{Key: "k", Start: time.Unix(0, 0), End: time.Unix(2e9, 0)})
		runtime.ReadMemStats(&after)
		allocated := after.TotalAlloc - before.TotalAlloc
		bound := uint64(DecodeMemory + 2*maxPoints*PointBytes + overhead)
		t.Logf("%s: %d bytes, %d points, %v; %d bytes allocated", name, len(body), len(pts), err, allocated)
		if allocated > bound {
			t.Errorf("%s: decoding %d bytes allocated %d bytes, over %d", name, len(body), allocated, bound)
		}
	}
}

// FuzzDecode: whatever a server sends, decodeStream returns points in
// time order, at most the cap, or an error with its class; it never
// panics. What encoding/json reads whole (decodeReference, the decoder
// before streaming) it reads the same, unless a bound refuses it.
func FuzzDecode(f *testing.F) {
	f.Add([]byte(`{"results":[{"statement_id":0,"series":[{"name":"m","tags":{"host":"a"},"columns":["time","mean"],"values":[[1700000000000000000,1.5],[1699999999000000000,2],[1,null],[2,"x"],[3]]}]}]}`))
	f.Add([]byte(`{"results":[{"error":"database not found: db"}]}`))
	f.Add([]byte(`{"error":"bad"}`))
	f.Add([]byte(`{"results":[{"series":[{"values":[[1e400,1e400],[-1,-1]]}]}]}`))
	f.Add([]byte(`{"results":[{"series":[{"values":[[5,"6.5"],["7",8]],"tags":{"host":"a"}},{"tags":{"host":"b"},"values":[[1,1]]}]}]}`))
	f.Add([]byte(`{"Results":[{"SERIES":[{"t\u0061gs":{"host":"a","x":null},"values":[[1,2,[3]],[2,{}]]}]}],"results":null} `))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, body []byte) {
		const maxBytes = 1 << 20
		want := map[string]string{"host": "a"}
		pts, class, err := decodeStream(bytes.NewReader(body), maxBytes, want, 4)
		if err != nil {
			if class == "" {
				t.Fatalf("error %v without a class", err)
			}
		} else {
			if len(pts) > 4 {
				t.Fatalf("%d points, cap 4", len(pts))
			}
			for i := 1; i < len(pts); i++ {
				if pts[i].Time.Before(pts[i-1].Time) {
					t.Fatalf("points out of order: %v", pts)
				}
			}
		}
		if len(body) > maxBytes {
			return
		}
		ref, refClass, refErr := decodeReference(body, want, 4)
		switch {
		case refErr != nil || class == FailTooLarge:
		case err != nil:
			t.Fatalf("encoding/json reads %d points, decodeStream fails (%s): %v", len(ref), class, err)
		case !slices.EqualFunc(pts, ref, func(a, b pipeline.Point) bool {
			return a.Time.Equal(b.Time) && (a.Value == b.Value || math.IsNaN(a.Value) && math.IsNaN(b.Value))
		}):
			t.Fatalf("points %v, encoding/json's %v", pts, ref)
		}
		if refErr != nil && err == nil && refClass == FailQuery {
			t.Fatalf("encoding/json reads a query error %v, decodeStream %d points", refErr, len(pts))
		}
	})
}

// decodeReference is the decoder before decodeStream: the whole body
// unmarshalled by encoding/json, then the points taken.
func decodeReference(body []byte, want map[string]string, maxPoints int) ([]pipeline.Point, string, error) {
	var r struct {
		Results []struct {
			Series []struct {
				Tags   map[string]string `json:"tags"`
				Values [][]json.Number   `json:"values"`
			} `json:"series"`
			Error string `json:"error"`
		} `json:"results"`
		Error string `json:"error"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, FailDecode, err
	}
	if r.Error != "" {
		return nil, FailQuery, errors.New(r.Error)
	}
	var pts []pipeline.Point
	for _, res := range r.Results {
		if res.Error != "" {
			return nil, FailQuery, errors.New(res.Error)
		}
		for _, s := range res.Series {
			if !sameTags(s.Tags, want) {
				continue
			}
			for _, row := range s.Values {
				if len(pts) >= maxPoints {
					break
				}
				if len(row) < 2 {
					continue
				}
				ns, err1 := row[0].Int64()
				val, err2 := row[1].Float64()
				if err1 != nil || err2 != nil {
					continue
				}
				pts = append(pts, pipeline.Point{Time: time.Unix(0, ns).UTC(), Value: val})
			}
		}
	}
	slices.SortStableFunc(pts, func(a, b pipeline.Point) int { return a.Time.Compare(b.Time) })
	return pts, "", nil
}
