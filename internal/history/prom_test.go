package history

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/forecastd/forecastd/internal/testserver/influxtest"
	"github.com/forecastd/forecastd/internal/testserver/promtest"
	"github.com/forecastd/forecastd/pipeline"
	"github.com/forecastd/forecastd/runner"
)

// TestPromEqualsInflux: the same points written to a real InfluxDB and to
// a real Prometheus and VictoriaMetrics (as Telegraf names them there,
// <measurement>_<field>{tags}) are read back by warm start the same:
// raw, and at a step under each aggregate, points on the buckets' edges
// included; the times exactly, the values to the last bits of a sum
// (the servers add in different orders; VictoriaMetrics keeps 12
// significant digits or more).
func TestPromEqualsInflux(t *testing.T) {
	influx := influxtest.Start(t, influxtest.Options{})
	t0 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	var b strings.Builder
	var samples []promtest.Sample
	for i := range 600 { // 3 days at 7 min, a point on every hour's edge
		at := t0.Add(time.Duration(i) * 7 * time.Minute)
		v := 100 + 10*math.Sin(float64(i)/9) + float64(i%5)/3
		if i%11 == 0 { // a counter reset, for rate
			v = 1
		}
		fmt.Fprintf(&b, "disk,host=a,path=/ used=%s %d\n", fmtFloat(v), at.UnixNano())
		samples = append(samples, promtest.Sample{T: at.UnixMilli(), V: v})
	}
	influx.Write(t, b.String())
	ih, err := New(Config{URL: influx.URL, Database: influx.Database, Lookback: 7 * 24 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	origin := runner.Origin{Measurement: "disk", Field: "used", Tags: []pipeline.Tag{{Key: "host", Value: "a"}, {Key: "path", Value: "/"}}}
	for _, k := range promtest.Kinds {
		t.Run(k.Name, func(t *testing.T) {
			srv := promtest.Start(t, k)
			srv.Write(t, map[string]string{"__name__": "disk_used", "host": "a", "path": "/"}, samples)
			srv.Write(t, map[string]string{"__name__": "disk_used", "host": "b", "path": "/"}, samples[:3]) // not ours
			srv.Flush(t)
			ph, err := NewProm(PromConfig{URL: srv.URL, Lookback: 7 * 24 * time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			until := t0.Add(70 * time.Hour)
			for _, c := range []struct {
				step time.Duration
				agg  pipeline.Aggregate
			}{{0, 0}, {time.Hour, pipeline.AggMean}, {time.Hour, pipeline.AggMax}, {time.Hour, pipeline.AggMin},
				{time.Hour, pipeline.AggLast}, {time.Hour, pipeline.AggSum}, {time.Hour, pipeline.AggCount}, {30 * time.Minute, pipeline.AggMean}} {
				req := runner.HistoryRequest{Origin: origin, Config: pipeline.Config{Step: c.step, Aggregate: c.agg}, Until: until}
				want, err := ih.Load(context.Background(), req)
				if err != nil {
					t.Fatal(err)
				}
				var got []pipeline.Point
				deadline := time.Now().Add(time.Minute)
				for { // VictoriaMetrics: searchable a moment after the flush
					if got, err = ph.Load(context.Background(), req); err != nil {
						t.Fatalf("step %v %v: %v", c.step, c.agg, err)
					}
					if len(got) >= len(want) || time.Now().After(deadline) {
						break
					}
					time.Sleep(200 * time.Millisecond)
				}
				comparePoints(t, fmt.Sprintf("step %v agg %d", c.step, c.agg), got, want)
			}
		})
	}
}

func fmtFloat(v float64) string { return fmt.Sprint(v) }

// comparePoints fails t unless got and want have the same times and
// values within 1e-11 relative.
func comparePoints(t *testing.T, what string, got, want []pipeline.Point) {
	t.Helper()
	if len(want) < 10 {
		t.Fatalf("%s: InfluxDB returned %d points", what, len(want))
	}
	if len(got) != len(want) {
		t.Fatalf("%s: %d points, InfluxDB %d (first %v / %v, last %v / %v)", what, len(got), len(want),
			got[0], want[0], got[len(got)-1], want[len(want)-1])
	}
	for i := range want {
		g, w := got[i], want[i]
		if !g.Time.Equal(w.Time) || math.Abs(g.Value-w.Value) > 1e-11*math.Max(1, math.Abs(w.Value)) {
			t.Fatalf("%s: point %d: %v, InfluxDB %v", what, i, g, w)
		}
	}
}

// TestPromSelector: the default template selects a line-protocol series
// by Telegraf's name and its tags, a pulled series by its own metric, and
// another by forecastd's own actuals.
func TestPromSelector(t *testing.T) {
	p, err := NewProm(PromConfig{URL: "http://127.0.0.1:9"})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		r    Request
		want string
	}{
		{Request{Origin: runner.Origin{Measurement: "net-io", Field: "bytes.in", Tags: []pipeline.Tag{{Key: "host", Value: `a"b`}, {Key: "if.name", Value: "eth0"}}}},
			`net_io_bytes_in{host="a\"b",if_name="eth0"}`},
		{Request{Key: "cpu.load"}, `forecastd_actual{series_key="cpu.load",step=""}`},
		// A series pulled by [[input.promql]]: its metric, no field.
		{Request{Key: `node_load1{job="n"}`, Origin: runner.Origin{Subject: "promql", Measurement: "node_load1", Tags: []pipeline.Tag{{Key: "job", Value: "n"}}}},
			`node_load1{job="n"}`},
	} {
		if got, err := p.Selector(c.r); err != nil || got != c.want {
			t.Errorf("Selector(%+v) = %q, %v; want %q", c.r, got, err, c.want)
		}
	}
	if _, err := NewProm(PromConfig{URL: "http://127.0.0.1:9", Query: "{{.Nope"}); err == nil {
		t.Fatal("a bad template: no error")
	}
}

// TestSecondsToMillis: the API's times are read exactly.
func TestSecondsToMillis(t *testing.T) {
	for in, want := range map[string]int64{"1714564810": 1714564810000, "1714564810.5": 1714564810500,
		"1714564810.123": 1714564810123, "1714564810.1230": 1714564810123, "-1.5": -1500, "0": 0} {
		if got, ok := secondsToMillis(in); !ok || got != want {
			t.Errorf("%s: %d %v, want %d", in, got, ok, want)
		}
	}
	for _, in := range []string{"1e9", "1.2345", "", ".5", "99999999999999999"} {
		if _, ok := secondsToMillis(in); ok {
			t.Errorf("%s: read", in)
		}
	}
}

// FuzzPromDecode: whatever a server sends, promDecodeStream returns
// points in time order, at most the cap, or an error with its class; it
// never panics. A body encoding/json reads as one matrix series it reads
// the same.
func FuzzPromDecode(f *testing.F) {
	f.Add([]byte(`{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"__name__":"m","host":"a"},"values":[[1700000000,"1.5"],[1700000060.5,"2"],[1700000120,"NaN"],[1700000180,"+Inf"]]}]}}`))
	f.Add([]byte(`{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1700000000.001,"3"]}]}}`))
	f.Add([]byte(`{"status":"error","errorType":"bad_data","error":"parse error"}`))
	f.Add([]byte(`{"status":"success","data":{"result":[{"values":[[1,"1"]]},{"values":[[2,"2"]]}]}}`))
	f.Add([]byte(`{"status":"success","data":{"result":[{"values":[[3,"1"],[1,2],["x","y"],[1e3,"4"],null]}]},"warnings":["w"]}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, body []byte) {
		const maxBytes = 1 << 20
		pts, class, err := promDecodeStream(bytes.NewReader(body), maxBytes, 4)
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
		// The reference reads keys exactly, as Prometheus writes them
		// and the decoder reads them (exactMembers).
		top, ok := exactMembers(body)
		if !ok {
			return
		}
		var status string
		data, ok := exactMembers(top["data"])
		var results []json.RawMessage
		if !ok || json.Unmarshal(top["status"], &status) != nil || status != "success" ||
			json.Unmarshal(data["result"], &results) != nil || len(results) != 1 {
			return
		}
		r, ok := exactMembers(results[0])
		if !ok {
			return
		}
		if v, has := r["value"]; has && string(v) != "null" {
			return
		}
		var values [][2]any
		if raw, has := r["values"]; has && json.Unmarshal(raw, &values) != nil || len(values) > 4 {
			return
		}
		var want []pipeline.Point
		for _, v := range values {
			sec, ok1 := v[0].(float64)
			s, ok2 := v[1].(string)
			var val float64
			_, err := fmt.Sscanf(s, "%g", &val)
			if !ok1 || !ok2 || err != nil || sec != math.Trunc(sec) || math.Abs(sec) > 1e12 || !validNumber(s) {
				return // a shape or number the reference reads otherwise
			}
			want = append(want, pipeline.Point{Time: time.UnixMilli(int64(sec) * 1000).UTC(), Value: val})
		}
		if len(want) != len(pts) {
			t.Fatalf("%d points, encoding/json %d: %s", len(pts), len(want), body)
		}
	})
}
