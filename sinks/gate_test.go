package sinks

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"

	"github.com/forecastd/forecastd/anomaly"
	"github.com/forecastd/forecastd/anomaly/threshold"
	"github.com/forecastd/forecastd/pipeline"
)

// gather returns the metric families of cs, gathered as /metrics does.
func gather(t *testing.T, cs ...prometheus.Collector) map[string]*dto.MetricFamily {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(cs...)
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]*dto.MetricFamily{}
	for _, f := range fams {
		m[f.GetName()] = f
	}
	return m
}

// metric returns the sample of family name whose labels include labels
// ("k=v"), failing t if there is none.
func metric(t *testing.T, fams map[string]*dto.MetricFamily, name string, labels ...string) *dto.Metric {
	t.Helper()
	for _, m := range fams[name].GetMetric() {
		var have []string
		for _, l := range m.GetLabel() {
			have = append(have, l.GetName()+"="+l.GetValue())
		}
		ok := true
		for _, l := range labels {
			ok = ok && slices.Contains(have, l)
		}
		if ok {
			return m
		}
	}
	t.Fatalf("no sample %s%v", name, labels)
	return nil
}

func metricValue(t *testing.T, fams map[string]*dto.MetricFamily, name string, labels ...string) float64 {
	t.Helper()
	m := metric(t, fams, name, labels...)
	switch {
	case m.Counter != nil:
		return m.GetCounter().GetValue()
	case m.Gauge != nil:
		return m.GetGauge().GetValue()
	}
	t.Fatalf("%s%v is neither a counter nor a gauge", name, labels)
	return 0
}

// rec records what reaches it, and refuses outcomes with err.
type rec struct {
	forecasts []pipeline.Forecast
	outcomes  int
	err       error
}

func (r *rec) Write(x Record) error {
	if x.Kind == KindForecast {
		r.forecasts = append(r.forecasts, x.Forecast)
		return nil
	}
	r.outcomes++
	return r.err
}

// The gate: a forecast whose value is not finite is not passed on, nor
// its outcome; a bound that is not finite takes the interval off; each is
// counted; errors too large for the histogram's sum are capped, so that it
// stays finite.
func TestGateNonFinite(t *testing.T) {
	t.Parallel()
	g := NewGate()
	next := &rec{}
	s := &SeriesSink{Model: "aosvr", Subject: "a", Gate: g, Out: next}
	nan, inf := math.NaN(), math.Inf(1)
	for _, f := range []pipeline.Forecast{
		{Value: inf, Lower: nan, Upper: nan},
		{Value: nan, Lower: 1, Upper: 2},
		{Value: 1, Lower: -inf, Upper: 1.17e308}, // half an interval
		{Value: 1, Lower: 0, Upper: inf},
		{Value: 1, Lower: 0, Upper: 2},
	} {
		if err := s.Forecast("a", f); err != nil {
			t.Fatal(err)
		}
	}
	if len(next.forecasts) != 3 {
		t.Fatalf("%d forecasts passed on, want 3: %+v", len(next.forecasts), next.forecasts)
	}
	for i, f := range next.forecasts[:2] {
		if f.HasInterval() || !math.IsNaN(f.Upper) {
			t.Errorf("forecast %d passed on with bounds %v %v, want none", i, f.Lower, f.Upper)
		}
	}
	if f := next.forecasts[2]; f.Lower != 0 || f.Upper != 2 {
		t.Errorf("a finite interval changed: %+v", f)
	}
	for _, o := range []pipeline.Outcome{
		{Forecast: pipeline.Forecast{Value: inf, Scaled: inf}, Actual: 1, ActualScaled: 1},
		{Forecast: pipeline.Forecast{Value: 1, Scaled: -1e308}, Actual: 1, ActualScaled: 1e308},
		{Forecast: pipeline.Forecast{Value: 1, Scaled: -1e308}, Actual: 1, ActualScaled: 1e308},
	} {
		if err := s.Outcome("a", o); err != nil {
			t.Fatal(err)
		}
	}
	if next.outcomes != 2 {
		t.Errorf("%d outcomes passed on, want 2", next.outcomes)
	}
	fams := gather(t, g)
	for r, want := range map[string]float64{NonFiniteForecast: 2, NonFiniteInterval: 2, NonFiniteOutcome: 1} {
		if v := metricValue(t, fams, "forecastd_non_finite_total", "record="+r); v != want {
			t.Errorf("non_finite_total{record=%s} = %v, want %v", r, v, want)
		}
	}
	if f, i, o := g.NonFinite(); f != 2 || i != 2 || o != 1 {
		t.Errorf("NonFinite() = %d, %d, %d; want 2, 2, 1", f, i, o)
	}
	// The outcomes' errors, 1e308 − (−1e308), overflow to +Inf and are
	// ignored; finite errors beyond the cap are recorded at the cap, so
	// two of them do not overflow the sum.
	g.ObserveAbsError(1.7e308)
	g.ObserveAbsError(-1.7e308)
	h := metric(t, gather(t, g), "forecastd_forecast_abs_error").GetHistogram()
	if sum := h.GetSampleSum(); h.GetSampleCount() != 2 || sum != 2*AbsErrorCap {
		t.Errorf("abs error: count %d sum %v, want 2 and %v", h.GetSampleCount(), sum, 2*AbsErrorCap)
	}
	// Without a gate, the check is the same, uncounted.
	s.Gate, next.forecasts = nil, nil
	if err := s.Forecast("a", pipeline.Forecast{Value: nan}); err != nil || len(next.forecasts) != 0 {
		t.Errorf("a NaN forecast passed on without a gate (err %v)", err)
	}
}

// The error is the scaled one, recorded whether or not the sink accepts
// the outcome (it measures the model), and the sink's error is returned.
func TestGateAbsError(t *testing.T) {
	t.Parallel()
	g := NewGate()
	refused := errors.New("refused")
	s := &SeriesSink{Gate: g, Out: &rec{err: refused}}
	for _, e := range []float64{-0.3, 0.002, math.NaN(), math.Inf(1), math.Inf(-1)} {
		g.ObserveAbsError(e)
	}
	o := pipeline.Outcome{Forecast: pipeline.Forecast{Scaled: 0.5, Value: 100}, Actual: 90, ActualScaled: 0.45}
	if err := s.Outcome("a", o); !errors.Is(err, refused) {
		t.Errorf("Outcome: %v, want the sink's error", err)
	}
	h := metric(t, gather(t, g), "forecastd_forecast_abs_error").GetHistogram()
	if h.GetSampleCount() != 3 || math.Abs(h.GetSampleSum()-0.352) > 1e-12 {
		t.Errorf("abs error: count %d sum %v, want 3 and 0.352 (NaN and Inf ignored, |−0.3|, the scaled 0.05)", h.GetSampleCount(), h.GetSampleSum())
	}
	var bounds []float64
	for _, b := range h.GetBucket() {
		bounds = append(bounds, b.GetUpperBound())
		if b.GetUpperBound() == 0.0025 && b.GetCumulativeCount() != 1 || b.GetUpperBound() == 0.05 && b.GetCumulativeCount() != 2 {
			t.Errorf("bucket le=%g has %d", b.GetUpperBound(), b.GetCumulativeCount())
		}
	}
	if fmt.Sprint(bounds) != fmt.Sprint(AbsErrorBuckets) {
		t.Errorf("buckets %v, want %v", bounds, AbsErrorBuckets)
	}
}

// forecastd_anomalies_total counts the events opened, by direction;
// outcomes that do not open an event (none, closed) are not counted.
func TestGateAnomalies(t *testing.T) {
	t.Parallel()
	g := NewGate()
	s := &SeriesSink{Gate: g, Out: &rec{}}
	f := pipeline.Forecast{Value: 10, Lower: 9, Upper: 11}
	for _, a := range []anomaly.Observation{
		{Score: 5, Side: anomaly.Above, Event: anomaly.Opened},
		{Score: 5, Side: anomaly.Above, Outside: true},
		{Score: 0.1, Side: anomaly.Below, Event: anomaly.Closed},
		{Score: 3, Side: anomaly.Below, Event: anomaly.Opened},
		{Score: 9, Side: anomaly.Above, Event: anomaly.Opened},
	} {
		if err := s.Outcome("a", pipeline.Outcome{Forecast: f, Actual: 12, Anomaly: a}); err != nil {
			t.Fatal(err)
		}
	}
	fams := gather(t, g)
	for dir, want := range map[string]float64{"above": 2, "below": 1} {
		if v := metricValue(t, fams, "forecastd_anomalies_total", "direction="+dir); v != want {
			t.Errorf("anomalies_total{direction=%s} = %v, want %v", dir, v, want)
		}
	}
}

// forecastd_threshold_events_total counts the threshold events of the
// forecasts, by direction and state; observations without an event are
// not counted.
func TestGateThresholdEvents(t *testing.T) {
	t.Parallel()
	g := NewGate()
	s := &SeriesSink{Gate: g, Out: &rec{}}
	for _, evs := range [][]threshold.Event{
		{threshold.Opened, threshold.None},
		{threshold.Updated, threshold.Opened},
		{threshold.None, threshold.None},
		{threshold.Closed, threshold.Updated},
	} {
		f := pipeline.Forecast{Value: 10, Lower: 9, Upper: 11, Thresholds: []threshold.Observation{
			{Direction: threshold.Above, Event: evs[0]}, {Direction: threshold.Below, Event: evs[1]}}}
		if err := s.Forecast("a", f); err != nil {
			t.Fatal(err)
		}
	}
	fams := gather(t, g)
	for labels, want := range map[string]float64{
		"direction=above,state=opened": 1, "direction=above,state=updated": 1, "direction=above,state=closed": 1,
		"direction=below,state=opened": 1, "direction=below,state=updated": 1, "direction=below,state=closed": 0,
	} {
		if v := metricValue(t, fams, "forecastd_threshold_events_total", strings.Split(labels, ",")...); v != want {
			t.Errorf("threshold_events_total{%s} = %v, want %v", labels, v, want)
		}
	}
}

// The series' path into the sinks allocates nothing per record.
func TestGateDoesNotAllocate(t *testing.T) {
	s := &SeriesSink{Model: "aosvr", Subject: "a", Gate: NewGate(), Out: Tee{&rec{}}}
	f := pipeline.Forecast{Value: 1, Lower: 0, Upper: 2, Scaled: 0.1}
	o := pipeline.Outcome{Forecast: f, ActualScaled: 0.2}
	if n := testing.AllocsPerRun(1000, func() {
		_ = s.Outcome("a", o)
	}); n != 0 {
		t.Errorf("%v allocations per outcome, want 0", n)
	}
}

func TestGateLint(t *testing.T) {
	problems, err := testutil.CollectAndLint(NewGate())
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("%s: %s", p.Metric, p.Text)
	}
}
