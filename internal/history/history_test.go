package history

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/forecastd/forecastd/internal/influxtest"
	"github.com/forecastd/forecastd/pipeline"
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
	origin := pipeline.Origin{Measurement: "disk", Field: "used", Tags: []pipeline.Tag{{Key: "host", Value: "a"}, {Key: "path", Value: "/"}}}
	end := t0.Add(2 * time.Hour)
	raw, err := h.Read(context.Background(), Request{Origin: origin, Start: t0, End: end.Add(-time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	if len(raw) != 119 || raw[0].Value != 0 || raw[118].Value != 118 || !raw[5].Time.Equal(t0.Add(5*time.Minute)) {
		t.Fatalf("raw: %d points, first %v, last %v", len(raw), raw[0], raw[len(raw)-1])
	}
	agg, err := h.Load(context.Background(), pipeline.HistoryRequest{Origin: origin, Config: pipeline.Config{Step: time.Hour, Aggregate: pipeline.AggMax}, Until: end})
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

// FuzzDecode: whatever a server sends, decode returns points in time
// order, at most the cap, or an error with its class; it never panics.
func FuzzDecode(f *testing.F) {
	f.Add([]byte(`{"results":[{"statement_id":0,"series":[{"name":"m","tags":{"host":"a"},"columns":["time","mean"],"values":[[1700000000000000000,1.5],[1699999999000000000,2],[1,null],[2,"x"],[3]]}]}]}`))
	f.Add([]byte(`{"results":[{"error":"database not found: db"}]}`))
	f.Add([]byte(`{"error":"bad"}`))
	f.Add([]byte(`{"results":[{"series":[{"values":[[1e400,1e400],[-1,-1]]}]}]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		pts, class, err := decode(body, map[string]string{"host": "a"}, 4)
		if err != nil {
			if class == "" {
				t.Fatalf("error %v without a class", err)
			}
			return
		}
		if len(pts) > 4 {
			t.Fatalf("%d points, cap 4", len(pts))
		}
		for i := 1; i < len(pts); i++ {
			if pts[i].Time.Before(pts[i-1].Time) {
				t.Fatalf("points out of order: %v", pts)
			}
		}
	})
}
