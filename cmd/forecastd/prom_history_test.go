package main

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/forecastd/forecastd/internal/testserver/influxtest"
	"github.com/forecastd/forecastd/internal/testserver/promtest"
)

// TestHistoryPrometheusEqualsInflux: 14 days of a real NAB stream stored
// in InfluxDB as Telegraf writes it, and in a real Prometheus and
// VictoriaMetrics as Telegraf's Prometheus outputs name it
// (nab_value{host="m1"}); a daemon warmed from each ([history] source)
// and fed the next day live through NATS publishes the same forecasts:
// bit for bit from Prometheus, within VictoriaMetrics' 12 significant
// digits of a stored value from it.
func TestHistoryPrometheusEqualsInflux(t *testing.T) {
	influx := influxtest.Shared(t, influxtest.Options{})
	r := nabStream(t, "realKnownCause/machine_temperature_system_failure.csv")
	split := 14 * 288
	for r.times[split].Minute() != 0 || r.times[split].Second() != 0 {
		split++
	}
	end := r.times[split].Add(24 * time.Hour)
	shift := weeksBefore(end, time.Now())
	var hist, live strings.Builder
	var samples []promtest.Sample
	for i := split - 14*288; i < len(r.times) && r.times[i].Before(end); i++ {
		at := r.times[i].Add(shift)
		line := fmt.Sprintf("nab,host=m1 value=%v %d\n", r.values[i], at.UnixNano())
		hist.WriteString(line)
		samples = append(samples, promtest.Sample{T: at.UnixMilli(), V: r.values[i]})
		if i >= split {
			live.WriteString(line)
		}
	}
	influx.Write(t, hist.String())
	run := func(extra string) []published {
		t.Helper()
		rd := startDaemon(t, historyDaemonConfig(influx.URL, influx.Database, extra), nil)
		waitSubscribed(t, rd.d.embedded, "telegraf")
		nc := connectTest(t, rd.d.embedded.ClientURL())
		col := collect(t, nc, "fc.>")
		for _, line := range strings.SplitAfter(live.String(), "\n") {
			if line != "" {
				if err := nc.Publish("telegraf", []byte(line)); err != nil {
					t.Fatal(err)
				}
			}
		}
		const key, want = "nab,host=m1 value", 24
		waitFor(t, time.Minute, "the live day's forecasts", func() bool { return col.count(key) >= want })
		if st := rd.d.runner.HistoryStats(); st.Warmed != 1 || st.Points != 14*24 {
			t.Fatalf("history %+v (%v), want 1 series warmed with 336 hourly points\n%s", st, rd.d.history.Stats().Failures, rd.logs)
		}
		if _, err := rd.stop(t); err != nil {
			t.Fatal(err)
		}
		return col.series(key)
	}
	base := run("")
	for _, k := range promtest.Kinds {
		t.Run(k.Name, func(t *testing.T) {
			srv := promtest.Start(t, k)
			srv.Write(t, map[string]string{"__name__": "nab_value", "host": "m1"}, samples)
			srv.Write(t, map[string]string{"__name__": "nab_value", "host": "m2"}, samples[:10]) // not ours
			srv.Flush(t)
			got := run(fmt.Sprintf("source = \"prometheus\"\nurl = %q\n", srv.URL))
			tol := 0.0
			if k == promtest.VictoriaMetrics {
				tol = 1e-9
			}
			if len(got) != len(base) {
				t.Fatalf("%d forecasts, warmed from InfluxDB %d", len(got), len(base))
			}
			for i, f := range got {
				b := base[i]
				if !f.Time.Equal(b.Time) || !within(f.Yhat, b.Yhat, tol) || !within(f.Lower, b.Lower, tol) || !within(f.Upper, b.Upper, tol) {
					t.Fatalf("forecast %d for %v: %v [%v, %v]; warmed from InfluxDB: %v for %v [%v, %v]", i, f.Time,
						deref(f.Yhat), deref(f.Lower), deref(f.Upper), deref(b.Yhat), b.Time, deref(b.Lower), deref(b.Upper))
				}
			}
		})
	}
}

// within reports whether a and b are both absent, or within tol relative.
func within(a, b *float64, tol float64) bool {
	if a == nil || b == nil {
		return a == b
	}
	return math.Abs(*a-*b) <= tol*math.Max(1, math.Abs(*b))
}
