package main

import (
	"context"
	"encoding/json"
	"github.com/forecastd/forecastd/internal/config/schema"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/forecastd/forecastd/anomaly"
	"github.com/forecastd/forecastd/internal/testserver/influxtest"
	"github.com/forecastd/forecastd/pipeline"
	"github.com/forecastd/forecastd/sinks"
)

// allValue is a variable set to All: Grafana puts its allValue in the
// query as it is.
type allValue string

// grafanaEscape escapes a variable's value as Grafana's InfluxDB data
// source does for a single value (influxRegularEscape, @grafana/data's
// escapeRegex): the regexp metacharacters and '/', which would end the
// /…/ of InfluxQL's regex literal.
func grafanaEscape(v string) string {
	return strings.ReplaceAll(regexp.QuoteMeta(v), "/", `\/`)
}

var grafanaVarRE = regexp.MustCompile(`\$\{(\w+)(?::(\w+))?\}|\$(\w+)`)

// grafanaQuery returns query q of the dashboard with its variables
// substituted as Grafana would: ${name:raw} raw, $name regex-escaped (a
// string) or as it is (an allValue), $timeFilter and $__interval from
// vars or, by default, the last two hours and 10s; forecast_measurement
// defaults to forecast. A variable not in vars is left as it is.
func grafanaQuery(q string, vars map[string]any) string {
	v := map[string]any{"forecast_measurement": "forecast", "timeFilter": allValue("time >= now() - 2h"), "__interval": allValue("10s")}
	for k, x := range vars {
		v[k] = x
	}
	return grafanaVarRE.ReplaceAllStringFunc(q, func(m string) string {
		sm := grafanaVarRE.FindStringSubmatch(m)
		name, raw := sm[3], false
		if name == "" {
			name, raw = sm[1], sm[2] == "raw"
		}
		switch x := v[name].(type) {
		case allValue:
			return string(x)
		case string:
			if raw {
				return x
			}
			return grafanaEscape(x)
		}
		return m
	})
}

// dashboardVariable is a variable of grafana/forecastd.json.
type dashboardVariable struct {
	Name, Type, Query, AllValue string
	IncludeAll                  bool
}

func dashboardVariables(t *testing.T) []dashboardVariable {
	t.Helper()
	b, err := os.ReadFile("../../grafana/forecastd.json")
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Templating struct{ List []dashboardVariable }
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	return d.Templating.List
}

// TestDashboardVariables runs the dashboard's variable, panel and
// annotation queries against a real InfluxDB holding forecasts and
// outcomes of Telegraf series on two hosts (keys with '/', spaces, quotes,
// and two keys that an unescaped '.' would confuse) and of a JSON series
// without host or measurement tags, written under a measurement of its
// own (the forecast_measurement variable), substituting each variable as
// Grafana does: a value regex-escaped, or the variable's allValue for
// All. The host variable lists the hosts, measurement those of the host
// chosen, series those of both; All lists everything, the JSON series
// included. Every panel's query of a series answers with that series'
// values and no other's.
func TestDashboardVariables(t *testing.T) {
	influx := influxtest.Shared(t, influxtest.Options{})
	const meas = "fc.test"
	s, err := sinks.NewInflux(sinks.InfluxConfig{URL: influx.URL, Bucket: influx.Bucket, Measurement: meas, FlushInterval: schema.Dur(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	type ser struct{ key, host, meas, field string }
	all := []ser{
		{"disk,host=web 1,path=/var/lib used_percent", "web 1", "disk", "used_percent"},
		{"disk,host=web 1,path=/var/lib used.percent", "web 1", "disk", "used.percent"},
		{`cpu,cpu=cpu0,host=web 1 usage_"idle"`, "web 1", "cpu", `usage_"idle"`},
		{"cpu,cpu=cpu0,host=db's usage_idle", "db's", "cpu", "usage_idle"},
		{"metrics.demo", "", "", ""},
	}
	t0 := time.Now().Add(-time.Hour).Truncate(time.Second)
	yhat := func(i int) float64 { return float64(10*i + 1) }
	for i, x := range all {
		f := pipeline.Forecast{Origin: t0, Time: t0.Add(time.Second), Value: yhat(i), Lower: yhat(i) - 1, Upper: yhat(i) + 1}
		r := sinks.Record{Kind: sinks.KindForecast, Series: x.key, Model: "aosvr", Measurement: x.meas, Field: x.field, Forecast: f}
		if x.host != "" {
			r.Tags = []sinks.Tag{{Key: "host", Value: x.host}}
		}
		o := r
		o.Kind = sinks.KindOutcome
		o.Outcome = pipeline.Outcome{Forecast: f, Time: f.Time, Actual: yhat(i) + 2, Anomaly: anomaly.Observation{Score: 2, Event: anomaly.Opened}}
		if err := s.Write(r); err != nil {
			t.Fatal(err)
		}
		if err := s.Write(o); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}

	queries := map[string]string{}
	for _, v := range dashboardVariables(t) {
		if v.Type != "query" || v.Name == "datasource" {
			continue
		}
		queries[v.Name] = v.Query
		switch {
		case v.Name == "step": // All is the raw points' forecasts, untagged
			if !v.IncludeAll || v.AllValue != "(?:)" {
				t.Errorf("variable step: want All, as (?:), the empty step")
			}
		case v.Name != "series" && (!v.IncludeAll || v.AllValue != ".*"):
			t.Errorf("variable %s: want All, as .*", v.Name)
		}
	}
	fm := map[string]any{"forecast_measurement": meas}
	values := func(name string, vars map[string]any) []string {
		t.Helper()
		q, ok := queries[name]
		if !ok {
			t.Fatalf("no variable %s", name)
		}
		vars["forecast_measurement"] = meas
		_, vals := influxSeries(t, influx, grafanaQuery(q, vars))
		var out []string
		for _, v := range vals {
			out = append(out, v[1].(string))
		}
		slices.Sort(out)
		return out
	}
	check := func(what string, got []string, want ...string) {
		t.Helper()
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("%s: %q, want %q", what, got, want)
		}
	}
	check("hosts", values("host", fm), "db's", "web 1")
	check("measurements of All", values("measurement", map[string]any{"host": allValue(".*")}), "cpu", "disk")
	check("measurements of web 1", values("measurement", map[string]any{"host": "web 1"}), "cpu", "disk")
	check("series of All, All", values("series", map[string]any{"host": allValue(".*"), "measurement": allValue(".*")}),
		all[0].key, all[1].key, all[2].key, all[3].key, all[4].key)
	check("series of web 1, cpu", values("series", map[string]any{"host": "web 1", "measurement": "cpu"}), all[2].key)
	check("series of All, disk", values("series", map[string]any{"host": allValue(".*"), "measurement": "disk"}), all[0].key, all[1].key)
	for _, x := range all {
		check("steps of "+x.key, values("step", map[string]any{"series": x.key}))
	}

	// Every panel and annotation answers for each series, with its own values.
	panels := dashboardPanels(t)
	for i, x := range all {
		vars := map[string]any{"forecast_measurement": meas, "series": x.key, "step": allValue("(?:)")}
		for _, p := range panels {
			for _, q := range p.Targets {
				if thresholdQuery(q.Query) {
					continue // no thresholds here: TestDashboardThresholds
				}
				cols, vals := influxSeries(t, influx, grafanaQuery(q.Query, vars))
				if len(vals) != 1 {
					t.Fatalf("panel %q, series %s: %d rows, want 1:\n%s", p.Title, x.key, len(vals), grafanaQuery(q.Query, vars))
				}
				for c, col := range cols {
					want := map[string]float64{"forecast": yhat(i), "actual": yhat(i) + 2, "lower": yhat(i) - 1, "upper": yhat(i) + 1,
						"mean error": 2, "absolute error": 2, "MAE": 2, "RMSE": 2, "step MAE": 2, "anomaly score": 2}
					if w, ok := want[col]; ok && vals[0][c] != w {
						t.Errorf("panel %q, series %s: %s = %v, want %v", p.Title, x.key, col, vals[0][c], w)
					}
				}
			}
		}
		for _, q := range dashboardAnnotations(t) {
			if thresholdQuery(q) {
				continue
			}
			if _, vals := influxSeries(t, influx, grafanaQuery(q, vars)); len(vals) != 1 || vals[0][3] != yhat(i)+2 {
				t.Errorf("annotation, series %s: %v, want the one event at y = %v", x.key, vals, yhat(i)+2)
			}
		}
	}
}

// TestDashboardMeasurementVariable: no query of the dashboard names the
// measurement forecastd writes to; each takes it from the variable
// forecast_measurement, whose default is the sink's.
func TestDashboardMeasurementVariable(t *testing.T) {
	var qs []string
	for _, v := range dashboardVariables(t) {
		if v.Name == "forecast_measurement" {
			if v.Type != "textbox" || v.Query != sinks.DefaultMeasurement {
				t.Errorf("variable forecast_measurement: %s %q, want a textbox of default %q", v.Type, v.Query, sinks.DefaultMeasurement)
			}
			continue
		}
		if v.Type == "query" && v.Name != "datasource" {
			qs = append(qs, v.Query)
		}
	}
	for _, p := range dashboardPanels(t) {
		for _, q := range p.Targets {
			qs = append(qs, q.Query)
		}
	}
	qs = append(qs, dashboardAnnotations(t)...)
	from := regexp.MustCompile(`FROM\s+("[^"]*"|\w+)`)
	for _, q := range qs {
		for _, m := range from.FindAllStringSubmatch(q, -1) {
			if m[1] != `"${forecast_measurement:raw}"` {
				t.Errorf("query reads FROM %s, not the measurement variable: %s", m[1], q)
			}
		}
	}
	if len(qs) < 10 {
		t.Errorf("%d queries found", len(qs))
	}
}
