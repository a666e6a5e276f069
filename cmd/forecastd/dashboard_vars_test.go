package main

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/forecastd/forecastd/internal/influxtest"
	"github.com/forecastd/forecastd/pipeline"
	"github.com/forecastd/forecastd/sinks"
)

// TestDashboardVariables runs the dashboard's variable queries against a
// real InfluxDB holding forecasts of Telegraf series on two hosts (keys
// with '/', spaces and quotes) and of a JSON series without host or
// measurement tags, substituting each variable as Grafana does: a value
// regex-quoted, or the variable's allValue for All. The host variable
// lists the hosts, measurement those of the host chosen, series those of
// both; All lists everything, the JSON series included.
func TestDashboardVariables(t *testing.T) {
	influx := influxtest.Shared(t, influxtest.Options{})
	s, err := sinks.NewInflux(sinks.InfluxConfig{URL: influx.URL, Bucket: influx.Bucket, FlushInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	type ser struct{ key, host, meas, field string }
	all := []ser{
		{"disk,host=web 1,path=/var/lib used_percent", "web 1", "disk", "used_percent"},
		{`cpu,cpu=cpu0,host=web 1 usage_"idle"`, "web 1", "cpu", `usage_"idle"`},
		{"cpu,cpu=cpu0,host=db's usage_idle", "db's", "cpu", "usage_idle"},
		{"metrics.demo", "", "", ""},
	}
	t0 := time.Now().Add(-time.Hour).Truncate(time.Second)
	for _, x := range all {
		r := sinks.Record{Kind: sinks.KindForecast, Series: x.key, Model: "aosvr", Measurement: x.meas, Field: x.field,
			Forecast: pipeline.Forecast{Origin: t0, Time: t0.Add(time.Second), Value: 1, Lower: math.NaN(), Upper: math.NaN()}}
		if x.host != "" {
			r.Tags = []sinks.Tag{{Key: "host", Value: x.host}}
		}
		if err := s.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}

	b, err := os.ReadFile("../../grafana/forecastd.json")
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Templating struct {
			List []struct {
				Name, Query, AllValue string
				IncludeAll            bool
			}
		}
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	queries := map[string]string{}
	for _, v := range d.Templating.List {
		if v.Query != "" && v.Name != "datasource" {
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
	}
	values := func(name string, vars map[string]string) []string {
		t.Helper()
		q, ok := queries[name]
		if !ok {
			t.Fatalf("no variable %s", name)
		}
		for k, v := range vars {
			if v != ".*" {
				v = strings.ReplaceAll(regexp.QuoteMeta(v), "/", `\/`)
			}
			q = strings.ReplaceAll(q, "$"+k, v)
		}
		_, vals := influxSeries(t, influx, q)
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
	check("hosts", values("host", nil), "db's", "web 1")
	check("measurements of All", values("measurement", map[string]string{"host": ".*"}), "cpu", "disk")
	check("measurements of web 1", values("measurement", map[string]string{"host": "web 1"}), "cpu", "disk")
	check("series of All, All", values("series", map[string]string{"host": ".*", "measurement": ".*"}),
		all[0].key, all[1].key, all[2].key, all[3].key)
	check("series of web 1, cpu", values("series", map[string]string{"host": "web 1", "measurement": "cpu"}), all[1].key)
	check("series of All, disk", values("series", map[string]string{"host": ".*", "measurement": "disk"}), all[0].key)
}
