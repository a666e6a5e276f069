package sinks

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"testing"
	"time"

	"github.com/forecastd/forecastd/anomaly"
	"github.com/forecastd/forecastd/anomaly/threshold"
	"github.com/forecastd/forecastd/internal/config/schema"
	"github.com/forecastd/forecastd/internal/testserver/promtest"
	"github.com/forecastd/forecastd/pipeline"
)

// promWant is a sample the sink should have written: its metric, the
// labels that tell it apart, its time (ms) and value.
type promWant struct {
	metric, series, horizon, threshold string
	t                                  int64
}

// promBatch returns the records of n series, k forecasts and outcomes
// each from t0 a minute apart (every tenth series with a path of 3
// steps, every hundredth with a threshold), and the samples a remote
// write receiver should hold of them.
func promBatch(n, k int, t0 time.Time) ([]Record, map[promWant]float64) {
	var recs []Record
	want := map[promWant]float64{}
	for s := range n {
		key := fmt.Sprintf("s%04d", s)
		tags := []Tag{{Key: "dc.name", Value: "eu-1"}, {Key: "host", Value: "h" + strconv.Itoa(s)}}
		for i := range k {
			at := t0.Add(time.Duration(i) * time.Minute)
			f := pipeline.Forecast{Origin: at.Add(-time.Minute), Time: at, Value: float64(s) + float64(i)/3,
				Lower: math.NaN(), Upper: math.NaN(), Scaled: 0.5}
			if i > 0 {
				f.Lower, f.Upper = f.Value-1.25, f.Value+1.5
			}
			base := promWant{series: key, t: at.UnixMilli()}
			if s%10 == 0 {
				for h := 1; h <= 3; h++ {
					st := pipeline.Step{Horizon: h, Time: at.Add(time.Duration(h-1) * time.Minute),
						Value: f.Value + float64(h), Lower: math.NaN(), Upper: math.NaN()}
					f.Path = append(f.Path, st)
					want[promWant{PromForecast, key, strconv.Itoa(h), "", st.Time.UnixMilli()}] = st.Value
				}
			} else {
				w := base
				w.metric = PromForecast
				want[w] = f.Value
				if f.HasInterval() {
					w.metric = PromLower
					want[w] = f.Lower
					w.metric = PromUpper
					want[w] = f.Upper
				}
			}
			if s%100 == 0 {
				f.Thresholds = []threshold.Observation{{Value: 0, Direction: threshold.Below, Crossing: true,
					ETA: time.Duration(i+1) * time.Minute, Probability: 0.75, Event: threshold.Opened}}
				want[promWant{PromETA, key, "", "below 0", f.Origin.UnixMilli()}] = float64((i + 1) * 60)
				want[promWant{PromProbability, key, "", "below 0", f.Origin.UnixMilli()}] = 0.75
			}
			recs = append(recs, Record{Kind: KindForecast, Series: key, Model: "aosvr", Tags: tags, Forecast: f})
			o := pipeline.Outcome{Forecast: f, Time: at, Actual: float64(s) - float64(i)/7,
				Anomaly: anomaly.Observation{Score: float64(i) / 10}}
			o.Forecast.Path, o.Forecast.Thresholds = nil, nil
			if !f.HasInterval() {
				o.Anomaly.Score = math.NaN()
			}
			recs = append(recs, Record{Kind: KindOutcome, Series: key, Model: "aosvr", Tags: tags, Outcome: o})
			w := base
			w.metric = PromActual
			want[w] = o.Actual
			if f.HasInterval() {
				w.metric = PromAnomalyScore
				want[w] = o.Anomaly.Score
			}
		}
	}
	return recs, want
}

// TestPromRemoteWriteReal: the records of 1 000 series written by remote
// write to a real Prometheus and a real VictoriaMetrics, read back by
// PromQL (their raw samples, a range selector at /api/v1/query), are
// the values written, with their labels.
func TestPromRemoteWriteReal(t *testing.T) {
	for _, k := range promtest.Kinds {
		t.Run(k.Name, func(t *testing.T) {
			t.Parallel()
			srv := promtest.Start(t, k)
			t0 := time.Now().Add(-30 * time.Minute).Truncate(time.Minute)
			recs, want := promBatch(1000, 5, t0)
			s, err := NewProm(PromConfig{URL: srv.WriteURL, FlushInterval: schema.Dur(100 * time.Millisecond)})
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range recs {
				if err := s.Write(r); err != nil {
					t.Fatal(err)
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			if err := s.Close(ctx); err != nil {
				t.Fatal(err)
			}
			if st := s.Stats(); st.Rejected+st.Dropped+st.WriteErrors != 0 || st.Buffered != 0 {
				t.Fatalf("stats %+v", st)
			}
			srv.Flush(t)
			checkPromSamples(t, srv, t0, want)
		})
	}
}

// checkPromSamples waits until srv holds as many forecastd samples as
// want, then compares them: VictoriaMetrics keeps 12 significant digits
// or more of a float64 (its decimal mantissa), Prometheus every bit.
func checkPromSamples(t *testing.T, srv *promtest.Server, t0 time.Time, want map[promWant]float64) {
	t.Helper()
	q := `{__name__=~"forecastd_.+"}[2h]`
	at := t0.Add(time.Hour)
	var got []promtest.Sample
	deadline := time.Now().Add(2 * time.Minute)
	for {
		got = srv.Query(t, q, at)
		if len(got) >= len(want) || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if len(got) != len(want) {
		t.Fatalf("%s: %d samples, want %d", srv.Kind.Name, len(got), len(want))
	}
	tol := 0.0
	if srv.Kind == promtest.VictoriaMetrics {
		tol = 1e-12
	}
	for _, g := range got {
		if g.Labels["model"] != "aosvr" || g.Labels["dc_name"] != "eu-1" || g.Labels["host"] == "" {
			t.Fatalf("labels %v", g.Labels)
		}
		w := promWant{g.Labels["__name__"], g.Labels["series_key"], g.Labels["horizon"], g.Labels["threshold"], g.T}
		v, ok := want[w]
		if !ok {
			t.Fatalf("unexpected sample %+v", g)
		}
		if d := math.Abs(g.V - v); d > tol*math.Max(1, math.Abs(v)) {
			t.Fatalf("%+v: got %v, want %v", w, g.V, v)
		}
	}
}

// TestPromTimestampOrigin: forecasts an hour ahead of a real Prometheus'
// clock are refused at their target time (its receiver takes samples at
// most 10 minutes ahead) and stored at their origin with timestamp
// "origin", as the README says.
func TestPromTimestampOrigin(t *testing.T) {
	srv := promtest.Start(t, promtest.Prometheus)
	origin := time.Now().Truncate(time.Second)
	write := func(stamp string) PromStats {
		t.Helper()
		s, err := NewProm(PromConfig{URL: srv.WriteURL, Timestamp: stamp, FlushInterval: schema.Dur(100 * time.Millisecond)})
		if err != nil {
			t.Fatal(err)
		}
		f := pipeline.Forecast{Origin: origin, Time: origin.Add(time.Hour), Value: 42, Lower: 40, Upper: 44}
		if err := s.Write(Record{Kind: KindForecast, Series: "ahead-" + stamp, Model: "aosvr", Forecast: f}); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		s.Close(ctx)
		return s.Stats()
	}
	if st := write(PromTimestampTarget); st.Rejected != 1 || st.Written != 0 {
		t.Fatalf("an hour ahead at the target time: %+v, want refused", st)
	}
	if st := write(PromTimestampOrigin); st.Written != 1 || st.Rejected != 0 {
		t.Fatalf("at the origin: %+v, want written", st)
	}
	got := srv.Query(t, `forecastd_forecast{series_key="ahead-origin"}[1h]`, origin.Add(time.Second))
	if len(got) != 1 || got[0].V != 42 || got[0].T != origin.UnixMilli() {
		t.Fatalf("at the origin: %v", got)
	}
}
