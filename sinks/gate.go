package sinks

import (
	"math"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/forecastd/forecastd/anomaly"
	"github.com/forecastd/forecastd/anomaly/threshold"
	"github.com/forecastd/forecastd/pipeline"
)

// AbsErrorBuckets are the upper bounds of forecastd_forecast_abs_error, in
// the model's units: with scale fixed or warmup the range maps onto
// [−1, 1] and an error of 0.01 is half a percent of it; with scale none
// (the default) they are the series' own units, and a series of large
// values lands in +Inf.
var AbsErrorBuckets = []float64{
	0.001, 0.0025, 0.005,
	0.01, 0.025, 0.05,
	0.1, 0.25, 0.5,
	1, 2,
}

// AbsErrorCap bounds what forecastd_forecast_abs_error records of one
// error: a finite error above it is recorded as AbsErrorCap (in the +Inf
// bucket, as it would be), so that the histogram's sum stays finite
// whatever the data (2^53 errors at the cap sum to 9e21).
const AbsErrorCap = 1e6

// What forecastd_non_finite_total counts, by label "record".
const (
	NonFiniteForecast = "forecast" // a forecast not passed on: its value was not finite
	NonFiniteInterval = "interval" // a forecast passed on without its interval: a bound was not finite
	NonFiniteOutcome  = "outcome"  // an outcome not passed on: its forecast was not
)

// Gate is where a daemon's records enter the sinks, through the
// SeriesSinks sharing it: the one place that checks their numbers, and
// counts what they say for /metrics (it is a prometheus.Collector).
//
// The check belongs here, between the pipeline and every sink, rather than
// in each sink's encoder: a forecast whose value is NaN or infinite is
// held back (and its outcome), as no sink can deliver it and a
// redelivery would not change it; a forecast with a bound that is not
// finite goes on without its interval (Lower and Upper NaN, which every
// sink writes as no interval). Each is counted in
// forecastd_non_finite_total. Past the gate a record's value and bounds
// are finite or NaN; the sinks only encode NaN as absent.
//
// It also counts the anomaly events opened (forecastd_anomalies_total),
// the threshold events (forecastd_threshold_events_total) and each
// outcome's error in the model's units (forecastd_forecast_abs_error).
// Its methods are safe for concurrent use and do not allocate.
type Gate struct {
	absErr prometheus.Histogram

	nonFinite                         *prometheus.CounterVec
	nfForecast, nfInterval, nfOutcome prometheus.Counter

	anomalies            *prometheus.CounterVec
	anomAbove, anomBelow prometheus.Counter

	thresholds *prometheus.CounterVec
	thrEvents  [2][3]prometheus.Counter // [below][opened, updated, closed]
}

// NewGate returns a gate with its counters at zero.
func NewGate() *Gate {
	g := &Gate{
		absErr: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    MetricPrefix + "forecast_abs_error",
			Help:    "Absolute error |y - yhat| of each scored forecast, in the model's units, over every series together: the series' own units with [model] scale = \"none\" (the default), [-1, 1] for its range with fixed or warmup. Compare series by the InfluxDB field error, not by this.",
			Buckets: AbsErrorBuckets,
		}),
		nonFinite: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricPrefix + "non_finite_total",
			Help: "Records held back or changed by the sinks' guard because a number was not finite: forecast (not published), interval (published without its interval), outcome (not written: its forecast was not).",
		}, []string{"record"}),
		anomalies: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricPrefix + "anomalies_total",
			Help: "Anomaly events opened, by the side of the forecast the opening point fell on (above, below).",
		}, []string{"direction"}),
		thresholds: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricPrefix + "threshold_events_total",
			Help: "Threshold events, by the threshold's direction (above, below) and state (opened: a forecast crosses the threshold within the horizon at its probability; updated: the crossing time moved; closed).",
		}, []string{"direction", "state"}),
	}
	g.nfForecast = g.nonFinite.WithLabelValues(NonFiniteForecast)
	g.nfInterval = g.nonFinite.WithLabelValues(NonFiniteInterval)
	g.nfOutcome = g.nonFinite.WithLabelValues(NonFiniteOutcome)
	g.anomAbove = g.anomalies.WithLabelValues("above")
	g.anomBelow = g.anomalies.WithLabelValues("below")
	for i, d := range []string{"above", "below"} {
		for j, st := range []string{"opened", "updated", "closed"} {
			g.thrEvents[i][j] = g.thresholds.WithLabelValues(d, st)
		}
	}
	return g
}

// Describe implements prometheus.Collector.
func (g *Gate) Describe(ch chan<- *prometheus.Desc) {
	g.absErr.Describe(ch)
	g.nonFinite.Describe(ch)
	g.anomalies.Describe(ch)
	g.thresholds.Describe(ch)
}

// Collect implements prometheus.Collector.
func (g *Gate) Collect(ch chan<- prometheus.Metric) {
	g.absErr.Collect(ch)
	g.nonFinite.Collect(ch)
	g.anomalies.Collect(ch)
	g.thresholds.Collect(ch)
}

// NonFinite returns what forecastd_non_finite_total counts: forecasts
// held back, intervals taken off, outcomes held back.
func (g *Gate) NonFinite() (forecasts, intervals, outcomes uint64) {
	return counterValue(g.nfForecast), counterValue(g.nfInterval), counterValue(g.nfOutcome)
}

// forecast checks f, taking off an interval that is not finite, and
// reports whether it goes on; g may be nil (no counts).
func (g *Gate) forecast(f *pipeline.Forecast) bool {
	if !finite(f.Value) {
		if g != nil {
			g.nfForecast.Inc()
		}
		return false
	}
	if f.HasInterval() && !(finite(f.Lower) && finite(f.Upper)) {
		if g != nil {
			g.nfInterval.Inc()
		}
		f.Lower, f.Upper = math.NaN(), math.NaN()
	}
	if g != nil {
		g.observeThresholds(f.Thresholds)
	}
	return true
}

// outcome reports whether o goes on: not if its forecast was held back.
// It records o's error whether or not a sink then accepts it: the error
// measures the model, not the delivery.
func (g *Gate) outcome(o *pipeline.Outcome) bool {
	if !finite(o.Forecast.Value) {
		if g != nil {
			g.nfOutcome.Inc()
		}
		return false
	}
	if g != nil {
		g.ObserveAbsError(o.ActualScaled - o.Forecast.Scaled)
		g.observeAnomaly(o.Anomaly)
	}
	return true
}

// ObserveAbsError records |e| in forecastd_forecast_abs_error, at most
// AbsErrorCap; a NaN or infinite e is ignored, as it would poison the
// histogram's sum. A binary search of the buckets and two atomic
// additions.
func (g *Gate) ObserveAbsError(e float64) {
	if !finite(e) {
		return
	}
	g.absErr.Observe(min(math.Abs(e), AbsErrorCap))
}

// observeAnomaly counts an opened event in forecastd_anomalies_total.
func (g *Gate) observeAnomaly(a anomaly.Observation) {
	if a.Event != anomaly.Opened {
		return
	}
	if a.Side == anomaly.Below {
		g.anomBelow.Inc()
	} else {
		g.anomAbove.Inc()
	}
}

// observeThresholds counts the threshold events of a forecast in
// forecastd_threshold_events_total.
func (g *Gate) observeThresholds(os []threshold.Observation) {
	for i := range os {
		o := &os[i]
		if o.Event == threshold.None || o.Event > threshold.Closed {
			continue
		}
		d := 0
		if o.Direction == threshold.Below {
			d = 1
		}
		g.thrEvents[d][o.Event-threshold.Opened].Inc()
	}
}

var _ prometheus.Collector = (*Gate)(nil)

// counterValue reads c, for a caller that reports it outside /metrics.
func counterValue(c prometheus.Counter) uint64 {
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		return 0
	}
	return uint64(m.GetCounter().GetValue())
}
