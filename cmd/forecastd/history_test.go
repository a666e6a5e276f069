package main

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/forecastd/forecastd/internal/testserver/influxtest"
	"github.com/forecastd/forecastd/runner"
	"github.com/forecastd/forecastd/sources"
)

// nabDir holds the NAB streams (README of that directory).
const nabDir = "/work/shared/data/nab"

// nabStream reads a NAB stream from testdata/history, which holds those the
// tests need, else from the corpus (nabDir), skipping the test if it is
// not on this machine (failing under CI=true).
func nabStream(t testing.TB, file string) *nabSeries {
	t.Helper()
	path := filepath.Join("../../testdata/history", filepath.Base(file))
	if _, err := os.Stat(path); err != nil {
		path = filepath.Join(nabDir, file)
	}
	if _, err := os.Stat(path); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("NAB stream required under CI=true: %v", err)
		}
		t.Skipf("skipping: %v", err)
	}
	data, err := sources.ReadCSV(path, "value", "", false)
	if err != nil {
		t.Fatal(err)
	}
	return &nabSeries{times: data.Times, values: data.Values}
}

// nabSeries is a NAB stream's times and values.
type nabSeries struct {
	times  []time.Time
	values []float64
}

// weeksBefore returns the whole number of weeks that moves t to at most
// now, and less than a week before it (weekly and daily phases kept).
func weeksBefore(t, now time.Time) time.Duration {
	const week = 7 * 24 * time.Hour
	return now.Sub(t) / week * week
}

// historyConfig is a daemon reading line protocol on "telegraf" at step
// 1h (the buckets' max), its [history] from influx's database.
func historyDaemonConfig(influxURL, db, extra string) string {
	return fmt.Sprintf(`
[nats]
servers = ["nats://127.0.0.1:0"]
embedded = true

[input]
subjects = ["telegraf"]
data_format = "influx"
max_past = "0s"

[model]
step = "1h"
aggregate = "max"
step_grace = "1000h"

[pipeline]
shards = 2

[output.nats]
subject_prefix = "fc"

[output.influxdb]
url = %q
bucket = %q
flush_interval = "100ms"

[history]
lookback = "14d"
%s
`, influxURL, db, extra)
}

// TestHistoryWarmStartEqualsBacktest: 14 days of a real NAB stream in
// InfluxDB as Telegraf writes it, the daemon started with [history] and
// fed the next day live through NATS: its forecasts, from the first live
// point's, are those `forecastd backtest --influx_url` makes over the 15
// days, bit for bit.
func TestHistoryWarmStartEqualsBacktest(t *testing.T) {
	influx := influxtest.Shared(t, influxtest.Options{})
	r := nabStream(t, "realKnownCause/machine_temperature_system_failure.csv")
	// The first hour-aligned point 14 days in starts the live day.
	split := 14 * 288
	for r.times[split].Minute() != 0 || r.times[split].Second() != 0 {
		split++
	}
	end := r.times[split].Add(24 * time.Hour)
	shift := weeksBefore(end, time.Now())
	const key = "nab,host=m1 value"
	var hist, live strings.Builder
	nLive := 0
	for i := split - 14*288; i < len(r.times) && r.times[i].Before(end); i++ {
		line := fmt.Sprintf("nab,host=m1 value=%v %d\n", r.values[i], r.times[i].Add(shift).UnixNano())
		hist.WriteString(line) // Telegraf writes the live day to InfluxDB too
		if i >= split {
			live.WriteString(line)
			nLive++
		}
	}
	influx.Write(t, hist.String())

	cfg := historyDaemonConfig(influx.URL, influx.Database, "")
	rd := startDaemon(t, cfg, &daemon{dropLogEvery: 20 * time.Millisecond})
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
	// 24 live buckets: the first's forecast from the past, and one at
	// each closed bucket (the last stays open).
	const want = 24
	waitFor(t, time.Minute, "the live day's forecasts", func() bool { return col.count(key) >= want })
	st := rd.d.runner.HistoryStats()
	if st.Warmed != 1 || st.Points != 14*24 {
		t.Fatalf("history %+v, want 1 series warmed with 336 hourly points", st)
	}
	// The log says so, in a line for every series warmed meanwhile.
	waitFor(t, time.Minute, "the warm start's log line", func() bool {
		return strings.Contains(rd.logs.String(), `level=INFO msg="warm start from history" component=history warmed=1 points=336`)
	})

	path := filepath.Join(t.TempDir(), "forecastd.toml")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "out.csv")
	mustCLI(t, "backtest", "--config", path, "--influx_url", influx.URL, "--series", key, "--lookback", "15d",
		"--end", end.Add(shift).Format(time.RFC3339), "--out", out)
	rows := readBtRows(t, out)
	byTime := map[string]btRow{}
	for _, row := range rows {
		byTime[row.label] = row
	}
	got := col.series(key)
	maxDelta := 0.0
	for i, f := range got {
		row, ok := byTime[f.Time.UTC().Format(time.RFC3339Nano)]
		if !ok {
			t.Fatalf("forecast %d for %v: no backtest row", i, f.Time)
		}
		if f.Yhat == nil {
			t.Fatalf("forecast %d for %v has no value", i, f.Time)
		}
		maxDelta = max(maxDelta, abs(*f.Yhat-row.yhat))
		if !sameValue(f.Lower, row.lower) || !sameValue(f.Upper, row.upper) {
			t.Errorf("forecast %d for %v: interval [%v, %v], backtest's [%v, %v]", i, f.Time, deref(f.Lower), deref(f.Upper), row.lower, row.upper)
		}
	}
	if maxDelta != 0 {
		t.Fatalf("max |Δ| between the daemon's and the backtest's forecasts: %v, want 0", maxDelta)
	}
	first := r.times[split].Add(shift).UTC()
	if !got[0].Time.Equal(first) {
		t.Fatalf("first forecast for %v, want the first live point's bucket %v", got[0].Time, first)
	}
	t.Logf("%d forecasts of the live day equal the backtest's (max |Δ| = 0)", len(got))
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

// TestHistoryInfluxDown: with [history] pointing at no server, new series
// start cold, counted, and every series forecasts: nothing is held.
func TestHistoryInfluxDown(t *testing.T) {
	influx := influxtest.Shared(t, influxtest.Options{}) // the output: up
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := "http://" + l.Addr().String()
	l.Close()
	cfg := historyDaemonConfig(influx.URL, influx.Database, fmt.Sprintf("url = %q\ntimeout = \"2s\"\n", down))
	cfg = strings.Replace(cfg, "step = \"1h\"\naggregate = \"max\"\nstep_grace = \"1000h\"\n", "", 1)
	rd := startDaemon(t, cfg, nil)
	waitSubscribed(t, rd.d.embedded, "telegraf")
	nc := connectTest(t, rd.d.embedded.ClientURL())
	col := collect(t, nc, "fc.>")
	const series, points = 20, 30
	t0 := time.Now().Add(-time.Hour).Truncate(time.Second)
	for i := range points {
		var b strings.Builder
		for s := range series {
			fmt.Fprintf(&b, "m,host=h%d v=%v %d\n", s, float64(i%7)+float64(s), t0.Add(time.Duration(i)*time.Second).UnixNano())
		}
		if err := nc.Publish("telegraf", []byte(b.String())); err != nil {
			t.Fatal(err)
		}
	}
	for s := range series {
		key := fmt.Sprintf("m,host=h%d v", s)
		waitFor(t, time.Minute, "forecasts of "+key, func() bool { return col.count(key) >= points-5 })
	}
	st := rd.d.runner.HistoryStats()
	if st.Cold[runner.ColdFailed] != series || st.Warmed != 0 || st.Waiting != 0 {
		t.Fatalf("history %+v, want %d series cold (failed)", st, series)
	}
	hs := rd.d.history.Stats()
	if hs.Failures["unreachable"] != series {
		t.Fatalf("query failures %v, want %d unreachable", hs.Failures, series)
	}
	if rs := rd.d.runner.Stats(); rs.Processed != series*points {
		t.Fatalf("processed %d points, want %d", rs.Processed, series*points)
	}
	// /metrics says so.
	mfs, err := rd.d.metrics.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	found := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			name := mf.GetName()
			for _, l := range m.GetLabel() {
				name += "{" + l.GetName() + "=" + l.GetValue() + "}"
			}
			found[name] = m.GetCounter().GetValue()
		}
	}
	for name, want := range map[string]float64{
		"forecastd_history_query_failures_total{class=unreachable}": series,
		"forecastd_history_series_cold_total{reason=failed}":        series,
		"forecastd_history_series_warmed_total":                     0,
		"forecastd_history_queries_total":                           series,
	} {
		if got, ok := found[name]; !ok || got != want {
			t.Errorf("/metrics %s = %v (present %t), want %v", name, got, ok, want)
		}
	}
}

// TestHistoryOwnActuals: a json series' past is forecastd's own actuals
// (field y of its output): a daemon that ran the series before wrote
// them; a second daemon, with no checkpoint and [history], learns them
// before its first live point, and forecasts as `forecastd backtest
// --influx_url --series_format json` does over the actuals in InfluxDB.
func TestHistoryOwnActuals(t *testing.T) {
	influx := influxtest.Shared(t, influxtest.Options{})
	r := nabStream(t, "realKnownCause/ec2_request_latency_system_failure.csv")
	const nPast, nLive = 300, 40
	t0 := time.Now().Add(-(nPast + nLive + 60) * time.Minute).Truncate(time.Minute)
	at := func(i int) time.Time { return t0.Add(time.Duration(i) * time.Minute) }
	base := fmt.Sprintf(`
[nats]
servers = ["nats://127.0.0.1:0"]
embedded = true

[input]
subjects = ["metrics.>"]
max_past = "0s"

[output.nats]
subject_prefix = "fc"

[output.influxdb]
url = %q
bucket = %q
flush_interval = "100ms"
`, influx.URL, influx.Database)
	feed := func(cfg string, from, to int) *runningDaemon {
		rd := startDaemon(t, cfg, nil)
		waitSubscribed(t, rd.d.embedded, "metrics.>")
		nc := connectTest(t, rd.d.embedded.ClientURL())
		for i := from; i < to; i++ {
			if err := nc.Publish("metrics.lat", []byte(fmt.Sprintf(`{"time":%d,"value":%v}`, at(i).Unix(), r.values[i]))); err != nil {
				t.Fatal(err)
			}
		}
		waitFor(t, time.Minute, "the points processed", func() bool { return rd.d.runner.Stats().Processed >= uint64(to-from) })
		return rd
	}
	first := feed(base, 0, nPast)
	if _, err := first.stop(t); err != nil {
		t.Fatal(err)
	}
	cfg := base + "\n[history]\nlookback = \"1d\"\n"
	second := startDaemon(t, cfg, nil)
	waitSubscribed(t, second.d.embedded, "metrics.>")
	nc := connectTest(t, second.d.embedded.ClientURL())
	col := collect(t, nc, "fc.>")
	for i := nPast; i < nPast+nLive; i++ {
		if err := nc.Publish("metrics.lat", []byte(fmt.Sprintf(`{"time":%d,"value":%v}`, at(i).Unix(), r.values[i]))); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(time.Minute) // catches a hang only
	for col.count("metrics.lat") < nLive+1 {
		if time.Now().After(deadline) {
			t.Logf("%s", influx.Query(t, "SHOW SERIES"))
			t.Logf("%s", influx.Query(t, "SELECT count(*) FROM forecast GROUP BY *"))
			t.Fatalf("%d forecasts of %d; history %+v, runner %+v\n%s", col.count("metrics.lat"), nLive+1, second.d.runner.HistoryStats(), second.d.runner.Stats(), second.logs)
		}
		time.Sleep(5 * time.Millisecond)
	}
	st := second.d.runner.HistoryStats()
	if st.Warmed != 1 || st.Points < nPast-10 {
		t.Fatalf("history %+v, want the series warmed from about %d actuals", st, nPast)
	}
	if _, err := second.stop(t); err != nil { // flushes the live actuals
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "forecastd.toml")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "out.csv")
	mustCLI(t, "backtest", "--config", path, "--influx_url", influx.URL, "--series", "metrics.lat", "--series_format", "json",
		"--lookback", "2d", "--end", at(nPast+nLive).Format(time.RFC3339), "--out", out)
	byTime := map[string]btRow{}
	for _, row := range readBtRows(t, out) {
		byTime[row.label] = row
	}
	got := col.series("metrics.lat")
	for i, f := range got[:nLive] {
		row, ok := byTime[f.Time.UTC().Format(time.RFC3339Nano)]
		if !ok || f.Yhat == nil || *f.Yhat != row.yhat {
			t.Fatalf("forecast %d for %v: %v, backtest's %+v (found %t)", i, f.Time, deref(f.Yhat), row, ok)
		}
	}
	if !got[0].Time.Equal(at(nPast)) {
		t.Fatalf("first forecast for %v, want the first live point's time %v", got[0].Time, at(nPast))
	}
}

// TestBacktestInfluxFlags: backtest's --influx_url flags refuse what
// cannot work, naming the flag, before any query.
func TestBacktestInfluxFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--series", "cpu usage"}, "--series needs --influx_url"},
		{[]string{"--influx_url", "http://127.0.0.1:1", "x.csv"}, "no FILE or DIR"},
		{[]string{"--influx_url", "http://127.0.0.1:1"}, "--influx_url needs --series KEY"},
		{[]string{"--influx_url", "http://127.0.0.1:1", "--series", "k", "--series_format", "csv"}, `--series_format "csv"`},
		{[]string{"--influx_url", "http://127.0.0.1:1", "--series", "k", "--lookback", "soon"}, "lookback"},
		{[]string{"--influx_url", "http://127.0.0.1:1", "--series", "k", "--end", "yesterday"}, `--end "yesterday"`},
	} {
		_, errOut, code := cli(t, append([]string{"backtest"}, tc.args...)...)
		if code != 2 || !strings.Contains(errOut, tc.want) {
			t.Errorf("backtest %q: exit %d, stderr %q, want 2 and %q", tc.args, code, errOut, tc.want)
		}
	}
	// Down: the query's failure, exit 1, naming the server (the dashed
	// spellings set the same flags).
	_, errOut, code := cli(t, "backtest", "--influx-url", "http://127.0.0.1:1", "--influx-bucket", "db", "--series", "m f", "--lookback", "1d")
	if code != 1 || !strings.Contains(errOut, "127.0.0.1:1") {
		t.Errorf("InfluxDB down: exit %d, stderr %q", code, errOut)
	}
}

// TestHistoryManySeries: 200 new series arrive at once; their pasts are
// read from a real InfluxDB through a proxy that counts the queries in
// flight: never more than [history] concurrency, every series warmed, no
// point lost.
func TestHistoryManySeries(t *testing.T) {
	influx := influxtest.Shared(t, influxtest.Options{})
	target, err := url.Parse(influx.URL)
	if err != nil {
		t.Fatal(err)
	}
	var inFlight, most atomic.Int64
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/query" {
			n := inFlight.Add(1)
			defer inFlight.Add(-1)
			for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
			}
		}
		httputil.NewSingleHostReverseProxy(target).ServeHTTP(w, r)
	}))
	defer proxy.Close()

	const series, past, live = 200, 60, 5
	t0 := time.Now().Add(-2 * time.Hour).Truncate(time.Minute)
	var b strings.Builder
	for s := range series {
		for i := range past {
			fmt.Fprintf(&b, "m,host=h%d v=%v %d\n", s, float64(i%13)+float64(s), t0.Add(time.Duration(i)*time.Minute).UnixNano())
		}
	}
	influx.Write(t, b.String())

	cfg := historyDaemonConfig(influx.URL, influx.Database, fmt.Sprintf("url = %q\nconcurrency = 2\n", proxy.URL))
	cfg = strings.Replace(cfg, "step = \"1h\"\naggregate = \"max\"\nstep_grace = \"1000h\"\n", "", 1)
	rd := startDaemon(t, cfg, nil)
	waitSubscribed(t, rd.d.embedded, "telegraf")
	nc := connectTest(t, rd.d.embedded.ClientURL())
	for i := past; i < past+live; i++ {
		b.Reset()
		for s := range series {
			fmt.Fprintf(&b, "m,host=h%d v=%v %d\n", s, float64(i%13)+float64(s), t0.Add(time.Duration(i)*time.Minute).UnixNano())
		}
		if err := nc.Publish("telegraf", []byte(b.String())); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, 2*time.Minute, "every live point processed", func() bool { return rd.d.runner.Stats().Processed >= series*live })
	st, rs := rd.d.runner.HistoryStats(), rd.d.runner.Stats()
	if st.Warmed != series || st.Points != series*past || rs.Processed != series*live ||
		rs.DroppedQueueFull+rs.DroppedShutdown+rs.OutOfOrder != 0 {
		t.Fatalf("history %+v (query failures %v); processed %d, dropped %d/%d, out of order %d; want %d series warmed from %d points each, %d points processed\n%s",
			st, rd.d.history.Stats().Failures, rs.Processed, rs.DroppedQueueFull, rs.DroppedShutdown, rs.OutOfOrder, series, past, series*live, rd.logs)
	}
	if m := most.Load(); m > 2 || m < 1 {
		t.Fatalf("%d queries in flight at most, want 1 or 2 (concurrency 2)", m)
	}
}
