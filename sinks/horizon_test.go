package sinks

import (
	"encoding/json"
	"fmt"
	"github.com/forecastd/forecastd/internal/config/schema"
	"math"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/forecastd/forecastd/internal/testserver/influxtest"
	"github.com/forecastd/forecastd/pipeline"
)

// recorder keeps a deep copy of every record it is given.
type recorder struct {
	mu   sync.Mutex
	recs []Record
}

func (r *recorder) Write(x Record) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	x.Forecast.Path = slices.Clone(x.Forecast.Path)
	x.Outcome.Path = slices.Clone(x.Outcome.Path)
	r.recs = append(r.recs, x)
	return nil
}

type pathBody struct {
	body
	Path []struct {
		Horizon   int       `json:"horizon"`
		Time      time.Time `json:"time"`
		Yhat      *float64  `json:"yhat"`
		YhatLower *float64  `json:"yhat_lower"`
		YhatUpper *float64  `json:"yhat_upper"`
	} `json:"path"`
}

// TestHorizonOutputs: a real series forecasting 4 steps ahead, through a
// SeriesSink into both sinks against real servers. NATS: one message per
// forecast, its 1-step fields as with H = 1 and its path the forecast's.
// InfluxDB: a point per step at the step's target time tagged horizon=h
// with the step's yhat and bounds, and on it, once its actual arrived, y and
// error = y − the step's yhat; nothing else.
func TestHorizonOutputs(t *testing.T) {
	t.Parallel()
	const H = 4
	ns := runNATS(t, server.Options{})
	isrv := influxtest.Shared(t, influxtest.Options{})
	sub := connect(t, ns.ClientURL())
	msgs, err := sub.SubscribeSync("forecast.sensors.>")
	if err != nil {
		t.Fatal(err)
	}
	if err := sub.Flush(); err != nil {
		t.Fatal(err)
	}
	natsSink := NewNATS(connect(t, ns.ClientURL(), NATSOptions(0)...), NATSConfig{})
	influxSink := newInflux(t, InfluxConfig{URL: isrv.URL, Bucket: isrv.Database, FlushInterval: schema.Dur(100 * time.Millisecond), MetricBatchSize: 50})
	rec := &recorder{}

	cfg := pipeline.DefaultConfig()
	cfg.Window, cfg.Horizon = 50, H
	series, err := pipeline.New("temp", cfg)
	if err != nil {
		t.Fatal(err)
	}
	ss := &SeriesSink{Model: cfg.Kind.String(), Subject: "sensors.temp", Out: Tee{rec, natsSink, influxSink}}
	const n = 120
	for i := range n {
		p := pipeline.Point{Time: t0.Add(time.Duration(i) * 10 * time.Second), Value: math.Sin(float64(i)/5) + 0.1*math.Cos(float64(i)*1.7)}
		if err := series.Process(p, ss); err != nil {
			t.Fatal(err)
		}
	}
	if err := natsSink.Close(ctxTimeout(t, 10*time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := influxSink.Close(ctxTimeout(t, 20*time.Second)); err != nil {
		t.Fatal(err)
	}

	type key struct {
		h     string
		time  time.Time
		field string
	}
	want := map[key]float64{}
	var forecasts []Record
	steps := 0
	for _, r := range rec.recs {
		switch r.Kind {
		case KindForecast:
			forecasts = append(forecasts, r)
			if len(r.Forecast.Path) != H {
				t.Fatalf("forecast with a path of %d steps", len(r.Forecast.Path))
			}
			for _, st := range r.Forecast.Path {
				h := fmt.Sprintf("%03d", st.Horizon) // padded: sorts as a number
				want[key{h, st.Time, "yhat"}] = st.Value
				if st.HasInterval() {
					want[key{h, st.Time, "yhat_lower"}] = st.Lower
					want[key{h, st.Time, "yhat_upper"}] = st.Upper
				}
				steps++
			}
		case KindOutcome:
			for _, st := range r.Outcome.Path {
				h := fmt.Sprintf("%03d", st.Horizon) // padded: sorts as a number
				want[key{h, st.Time, "y"}] = r.Outcome.Actual
				want[key{h, st.Time, "error"}] = r.Outcome.Actual - st.Value
				if sc := r.Outcome.Anomaly.Score; st.Horizon == 1 && !math.IsNaN(sc) {
					want[key{h, st.Time, "anomaly_score"}] = sc // step 1's only
				}
				steps++
			}
		}
	}
	if len(forecasts) < n-10 {
		t.Fatalf("%d forecasts of %d points", len(forecasts), n)
	}

	// NATS: the forecasts in order, each with its path.
	for i, r := range forecasts {
		m, err := msgs.NextMsg(5 * time.Second)
		if err != nil {
			t.Fatalf("message %d of %d: %v", i, len(forecasts), err)
		}
		var b pathBody
		if err := json.Unmarshal(m.Data, &b); err != nil {
			t.Fatalf("%s: %v", m.Data, err)
		}
		f := r.Forecast
		if b.Horizon != 1 || !b.Time.Equal(f.Time) || !b.Origin.Equal(f.Origin) || b.Yhat == nil || *b.Yhat != f.Value {
			t.Fatalf("message %d: 1-step fields %s, forecast %+v", i, m.Data, f)
		}
		if len(b.Path) != H {
			t.Fatalf("message %d: path of %d steps: %s", i, len(b.Path), m.Data)
		}
		for k, st := range f.Path {
			g := b.Path[k]
			if g.Horizon != st.Horizon || !g.Time.Equal(st.Time) || g.Yhat == nil || *g.Yhat != st.Value ||
				(g.YhatLower == nil) != !st.HasInterval() || (g.YhatLower != nil && (*g.YhatLower != st.Lower || *g.YhatUpper != st.Upper)) {
				t.Fatalf("message %d step %d: %s, want %+v", i, k+1, m.Data, st)
			}
		}
	}

	// InfluxDB: every step's fields on its own point, and nothing else.
	if st := influxSink.Stats(); st.Written != uint64(steps) || st.Dropped+st.Invalid+st.Rejected != 0 {
		t.Fatalf("influx stats %+v, want %d records written (one per step)", st, steps)
	}
	got := map[key]float64{}
	for _, r := range queryAll(t, isrv, "forecast") {
		k := key{r.Tags["horizon"], r.Time, r.Field}
		if _, dup := got[k]; dup {
			t.Errorf("duplicate %v", k)
		}
		got[k] = r.Value
	}
	for k, v := range want {
		if g, ok := got[k]; !ok || math.Abs(g-v) > 1e-12*(1+math.Abs(v)) {
			t.Errorf("%v = %v (present %v), want %v", k, g, ok, v)
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d values in InfluxDB, want %d", len(got), len(want))
	}
}

// TestStepsKeepNothingOfTheSeries: a record expanded into steps holds no
// path (the series' buffers), the steps' values and its horizon; a record
// without a path passes as it is.
func TestStepsKeepNothingOfTheSeries(t *testing.T) {
	r := forecastRec("s", "in", 0, true)
	var got []Record
	r.steps(func(q Record) { got = append(got, q) })
	if len(got) != 1 || got[0].horizon != 0 || got[0].Forecast.Value != r.Forecast.Value {
		t.Fatalf("no path: %+v", got)
	}
	path := []pipeline.Step{{Horizon: 1, Time: t0, Value: 1, Lower: 0, Upper: 2}, {Horizon: 2, Time: t0.Add(time.Second), Value: 5, Lower: math.NaN(), Upper: math.NaN()}}
	r.Forecast.Path = path
	got = got[:0]
	r.steps(func(q Record) { got = append(got, q) })
	if len(got) != 2 || got[1].horizon != 2 || got[1].Forecast.Value != 5 || got[1].Forecast.HasInterval() || !got[1].Forecast.Time.Equal(path[1].Time) {
		t.Fatalf("path: %+v", got)
	}
	for _, q := range got {
		if q.Forecast.Path != nil || q.Outcome.Path != nil {
			t.Fatalf("a step record keeps the path: %+v", q)
		}
	}
	o := Record{Kind: KindOutcome, Outcome: pipeline.Outcome{Actual: 3, Path: path[1:]}}
	got = got[:0]
	o.steps(func(q Record) { got = append(got, q) })
	if len(got) != 1 || got[0].horizon != 2 || got[0].Outcome.Forecast.Value != 5 || !got[0].Outcome.Forecast.Time.Equal(path[1].Time) {
		t.Fatalf("outcome path: %+v", got)
	}
}
