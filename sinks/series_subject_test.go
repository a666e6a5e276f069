package sinks

import (
	"bufio"
	"encoding/json"
	"fmt"
	"github.com/forecastd/forecastd/internal/config/schema"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/forecastd/forecastd/internal/testserver/influxtest"
	"github.com/forecastd/forecastd/pipeline"
	"github.com/forecastd/forecastd/sources"
)

// Line-protocol input: a forecast carries its series' measurement and
// field. In InfluxDB they are the tags measurement and field (Grafana can
// filter on them); on NATS a forecast is published on
// <prefix>.<subject>.<measurement>.<field>, each token made a valid
// subject token, so that a subscriber can follow one measurement or
// field. The series are those of the real Telegraf capture, decoded by the
// daemon's decoder; a forecast of JSON input keeps <prefix>.<subject>.
func TestSeriesMeasurementField(t *testing.T) {
	t.Parallel()
	ns := runNATS(t, server.Options{})
	isrv := influxtest.Shared(t, influxtest.Options{})

	// The first minute of the capture, and two made-up series whose
	// measurement and field are not valid subject tokens.
	dec, err := sources.NewDecoder(sources.DecoderConfig{Format: sources.FormatInflux})
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open("../testdata/telegraf/capture.lp")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	var pts []sources.KeyedPoint
	for sc.Scan() {
		pts, _ = dec.Decode(pts, "telegraf", sc.Bytes(), time.Time{})
		if len(pts) > 0 && pts[len(pts)-1].Time.Sub(pts[0].Time) >= time.Minute {
			break
		}
	}
	pts, err = dec.Decode(pts, "telegraf", []byte("disk.io,host=a read*bytes=1,>=2,x\\ y=3 1795384479000000000\n"), time.Time{})
	if err != nil {
		t.Fatal(err)
	}

	sub := connect(t, ns.ClientURL())
	all, err := sub.SubscribeSync("forecast.>")
	if err != nil {
		t.Fatal(err)
	}
	idle, err := sub.SubscribeSync("forecast.telegraf.cpu.usage_idle")
	if err != nil {
		t.Fatal(err)
	}
	if err := sub.Flush(); err != nil {
		t.Fatal(err)
	}
	natsSink := NewNATS(connect(t, ns.ClientURL(), NATSOptions(0)...), NATSConfig{})
	influxSink := newInflux(t, InfluxConfig{URL: isrv.URL, Bucket: isrv.Bucket, FlushInterval: schema.Dur(time.Hour)})
	out := Tee{natsSink, influxSink}

	// One SeriesSink per series, as the daemon makes them, and a forecast
	// per point.
	series := map[string]*SeriesSink{}
	wantSubject := map[string]string{} // series → subject
	for _, p := range pts {
		ss := series[p.Key]
		if ss == nil {
			ss = &SeriesSink{Model: "aosvr", Subject: "telegraf", Measurement: p.Measurement, Field: p.Field, Out: out}
			ss.Tags = p.Tags // one type: the source's tags are the records'
			series[p.Key] = ss
			wantSubject[p.Key] = "forecast.telegraf." + p.Measurement + "." + p.Field
		}
		fc := pipeline.Forecast{Origin: p.Time, Time: p.Time.Add(10 * time.Second), Value: p.Value, Lower: math.NaN(), Upper: math.NaN()}
		if err := ss.Forecast(p.Key, fc); err != nil {
			t.Fatal(err)
		}
	}
	for k, s := range map[string]string{
		"disk.io,host=a read*bytes": "forecast.telegraf.disk_io.read_bytes",
		"disk.io,host=a >":          "forecast.telegraf.disk_io._",
		`disk.io,host=a x\ y`:       "forecast.telegraf.disk_io.x_y",
	} {
		if _, ok := wantSubject[k]; !ok {
			t.Fatalf("series %q not decoded", k)
		}
		wantSubject[k] = s
	}
	jsonRec := forecastRec("metrics.demo", "metrics.demo", 0, true)
	if err := out.Write(jsonRec); err != nil {
		t.Fatal(err)
	}
	wantSubject[jsonRec.Series] = "forecast.metrics.demo"

	ctx := ctxTimeout(t, 10*time.Second)
	if err := natsSink.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := influxSink.Close(ctx); err != nil {
		t.Fatal(err)
	}
	n := len(pts) + 1
	if st := influxSink.Stats(); st.Written != uint64(n) {
		t.Fatalf("influx stats %+v, want %d written", st, n)
	}

	for i := range n {
		m, err := all.NextMsg(5 * time.Second)
		if err != nil {
			t.Fatalf("message %d of %d: %v", i+1, n, err)
		}
		var b struct{ Series string }
		if err := json.Unmarshal(m.Data, &b); err != nil {
			t.Fatal(err)
		}
		if w := wantSubject[b.Series]; m.Subject != w {
			t.Fatalf("forecast of %q on %q, want %q", b.Series, m.Subject, w)
		}
	}
	wantIdle := 0
	for _, p := range pts {
		if p.Measurement == "cpu" && p.Field == "usage_idle" {
			wantIdle++
		}
	}
	for i := range wantIdle {
		if _, err := idle.NextMsg(5 * time.Second); err != nil {
			t.Fatalf("usage_idle forecast %d of %d: %v", i+1, wantIdle, err)
		}
	}
	if m, err := idle.NextMsg(100 * time.Millisecond); err == nil {
		t.Fatalf("unexpected message on %s: %s", m.Subject, m.Data)
	}

	// InfluxDB: the tags src_measurement and src_field, as a Grafana query
	// filters, unquoted: neither is an InfluxQL keyword.
	q := isrv.Query(t, `SELECT count("yhat") FROM "forecast" WHERE src_measurement = 'cpu' AND src_field = 'usage_idle' GROUP BY "cpu"`)
	for _, cpu := range []string{"cpu-total", "cpu0", "cpu1"} {
		if !strings.Contains(q, fmt.Sprintf(`"tags":{"cpu":%q}`, cpu)) {
			t.Errorf("no usage_idle forecasts of %s in %s", cpu, q)
		}
	}
	if want := fmt.Sprintf(`,%d]]`, wantIdle/3); strings.Count(q, want) != 3 {
		t.Errorf("usage_idle forecasts per cpu: %s, want %d each", q, wantIdle/3)
	}
	q = isrv.Query(t, `SHOW TAG VALUES FROM "forecast" WITH KEY = src_field WHERE src_measurement = 'disk.io'`)
	var tv struct {
		Results []struct {
			Series []struct{ Values [][2]string }
		}
	}
	if err := json.Unmarshal([]byte(q), &tv); err != nil || len(tv.Results) != 1 || len(tv.Results[0].Series) != 1 {
		t.Fatalf("SHOW TAG VALUES: %s (%v)", q, err)
	}
	if got := fmt.Sprint(tv.Results[0].Series[0].Values); got != "[[src_field >] [src_field read*bytes] [src_field x y]]" {
		t.Errorf("fields of disk.io: %s", got)
	}
	q = isrv.Query(t, `SELECT count("yhat") FROM "forecast" WHERE series_key = 'metrics.demo' AND src_measurement = ''`)
	if !strings.Contains(q, `,1]]`) {
		t.Errorf("the JSON-input forecast has a measurement tag: %s", q)
	}
}
