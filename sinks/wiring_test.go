package sinks

import (
	"github.com/forecastd/forecastd/internal/config/schema"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/forecastd/forecastd/internal/testserver/influxtest"
	"github.com/forecastd/forecastd/pipeline"
)

// kinds counts the records of each kind it is given.
type kinds struct {
	mu sync.Mutex
	n  map[RecordKind]int
}

func (k *kinds) Write(r Record) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.n[r.Kind]++
	return nil
}

// The wiring the package documents: a real pipeline.Series emitting
// through a SeriesSink into a Tee of both sinks, against real servers.
func TestSeriesSinkWiring(t *testing.T) {
	t.Parallel()
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
	// Bucket: the database alone, for its default retention policy.
	influxSink := newInflux(t, InfluxConfig{URL: isrv.URL, Bucket: isrv.Database, FlushInterval: schema.Dur(100 * time.Millisecond)})
	count := &kinds{n: map[RecordKind]int{}}

	cfg := pipeline.DefaultConfig()
	cfg.Window = 50
	series, err := pipeline.New("temp", cfg)
	if err != nil {
		t.Fatal(err)
	}
	ss := &SeriesSink{Model: cfg.Kind.String(), Subject: "sensors.temp", Out: Tee{natsSink, influxSink, count}}
	const n = 200
	for i := range n {
		p := pipeline.Point{Time: t0.Add(time.Duration(i) * 10 * time.Second), Value: math.Sin(float64(i) / 5)}
		if err := series.Process(p, ss); err != nil {
			t.Fatal(err)
		}
	}
	ctx := ctxTimeout(t, 10*time.Second)
	if err := natsSink.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := influxSink.Close(ctx); err != nil {
		t.Fatal(err)
	}

	forecasts, outcomes := count.n[KindForecast], count.n[KindOutcome]
	if st := series.Stats(); uint64(forecasts) != st.Forecasts || forecasts < 50 || outcomes != forecasts-1 {
		t.Fatalf("%d forecasts and %d outcomes emitted, series stats %+v", forecasts, outcomes, st)
	}
	for i := range forecasts {
		m, err := msgs.NextMsg(5 * time.Second)
		if err != nil {
			t.Fatalf("forecast %d of %d on NATS: %v", i+1, forecasts, err)
		}
		if m.Subject != "forecast.sensors.temp" || m.Header.Get(nats.MsgIdHdr) == "" {
			t.Fatalf("message on %s, headers %v", m.Subject, m.Header)
		}
	}
	if st := influxSink.Stats(); st.Written != uint64(forecasts+outcomes) {
		t.Fatalf("influx stats %+v, want %d written", st, forecasts+outcomes)
	}
	var ys, yhats int
	for _, r := range queryAll(t, isrv, "forecast") {
		switch r.Field {
		case "y":
			ys++
		case "yhat":
			yhats++
		}
		if r.Tags["model"] != "aosvr" || r.Tags[TagSeries] != "temp" {
			t.Fatalf("tags %v", r.Tags)
		}
	}
	if yhats != forecasts || ys != outcomes {
		t.Fatalf("InfluxDB holds %d yhat and %d y, want %d and %d", yhats, ys, forecasts, outcomes)
	}
}

func TestSeriesSinkDoesNotAllocate(t *testing.T) {
	count := &kinds{n: map[RecordKind]int{KindForecast: 0, KindOutcome: 0}}
	ss := &SeriesSink{Model: "norma", Subject: "in", Tags: []Tag{{Key: "host", Value: "a"}}, Out: Tee{count}}
	f := forecastRec("s", "in", 0, true).Forecast
	o := pipeline.Outcome{Forecast: f, Time: f.Time, Actual: 1}
	if a := testing.AllocsPerRun(100, func() {
		_ = ss.Forecast("s", f)
		_ = ss.Outcome("s", o)
	}); a != 0 {
		t.Errorf("%v allocations per forecast and outcome", a)
	}
}
