package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/forecastd/forecastd/internal/testserver/influxtest"
	"github.com/forecastd/forecastd/lab/dataset"
)

// TestReplayEndToEnd replays a CSV file and two files of line protocol,
// timed two years ago (points the NATS input would refuse as too old),
// through `forecastd replay` into a real influxd and an in-process
// nats-server: it exits 0 once everything is written, and every forecast
// on NATS and in InfluxDB, at its recorded time, equals what `forecastd
// backtest` computes on the same file (bit for bit), with the series'
// model from [[rules]] and its line-protocol tags.
func TestReplayEndToEnd(t *testing.T) {
	influx := influxtest.Shared(t, influxtest.Options{})
	ns := startNATS(t, false)
	nc := connectTest(t, ns.ClientURL())
	col := collect(t, nc, "fc.>")

	const n = 400
	dir := t.TempDir()
	t0 := time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC).Unix()
	times := make([]int64, n)
	for i := range times {
		times[i] = t0 + 60*int64(i)
	}
	laser := dataset.MustLoad("santafe_laser_a").Values[:n]
	market := dataset.MustLoad("market_price_daily").Values[:n]
	sensor := dataset.MustLoad("sensor_temperature_15min").Values[:n]

	var c, l1, l2 strings.Builder
	c.WriteString("time,value\n")
	l1.WriteString("# laser, as Telegraf's outputs.file writes it\n")
	for i := range n {
		fmt.Fprintf(&c, "%d,%s\n", times[i], strconv.FormatFloat(sensor[i], 'g', -1, 64))
		fmt.Fprintf(&l1, "laser,host=h1 value=%s %d\n", strconv.FormatFloat(laser[i], 'g', -1, 64), times[i]*1e9)
		fmt.Fprintf(&l2, "market,host=h2 value=%s %d\n", strconv.FormatFloat(market[i], 'g', -1, 64), times[i]*1e9)
	}
	csvFile, lp1, lp2 := filepath.Join(dir, "sensor.csv"), filepath.Join(dir, "laser.lp"), filepath.Join(dir, "market.lp")
	for f, b := range map[string]string{csvFile: c.String(), lp1: l1.String(), lp2: l2.String()} {
		if err := os.WriteFile(f, []byte(b), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cfgPath := filepath.Join(dir, "forecastd.toml")
	cfg := fmt.Sprintf(`
[nats]
servers = [%q]

[input]
subjects = ["live.>"]

[[rules]]
match = "market,*"
kind = "norma"

[pipeline]
shards = 2

[output.nats]
subject_prefix = "fc"

[output.influxdb]
url = %q
bucket = %q
measurement = "fc_replay"
flush_interval = "100ms"
metric_batch_size = 200
metric_buffer_limit = 1000

[state]
dir = %q
`, ns.ClientURL(), influx.URL, influx.Database, filepath.Join(dir, "state"))
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}

	out := mustCLI(t, "replay", "-config", cfgPath, "-series", "sensor", csvFile, lp1, lp2)
	t.Logf("forecastd replay:\n%s", out)
	const first = 5 // the default model forecasts from the sixth point
	if !strings.Contains(out, fmt.Sprintf("replayed %d points", 3*n)) || !strings.Contains(out, "into 3 series") ||
		!strings.Contains(out, fmt.Sprintf("%d forecasts", 3*(n-first))) || !strings.Contains(out, "0 dropped, 0 rejected") {
		t.Fatalf("summary:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(dir, "state")); err == nil {
		t.Fatal("the replay created [state] dir: it must not touch the daemon's state")
	}

	for _, s := range []struct {
		e2eSeries
		file  string
		flags []string
	}{
		{e2eSeries{key: "sensor", subject: "replay", model: "aosvr"}, csvFile, nil},
		{e2eSeries{key: "laser,host=h1 value", subject: "replay", model: "aosvr", tags: map[string]string{"host": "h1", "src_measurement": "laser", "src_field": "value"}}, lp1, nil},
		{e2eSeries{key: "market,host=h2 value", subject: "replay", model: "norma", tags: map[string]string{"host": "h2", "src_measurement": "market", "src_field": "value"}}, lp2,
			// backtest of one file applies --config's [model] but not its
			// [[rules]] (only --bench does): name the rule's model.
			[]string{"--model", "norma"}},
	} {
		want := n - first
		waitFor(t, time.Minute, fmt.Sprintf("%d forecasts of %s on NATS", want, s.key), func() bool { return col.count(s.key) >= want })
		got := col.series(s.key)
		if len(got) != want {
			t.Fatalf("%s: %d forecasts on NATS, want %d", s.key, len(got), want)
		}
		rows := fileRows(t, s.file, append([]string{"--config", cfgPath}, s.flags...)...)
		if len(rows) != want-1 {
			t.Fatalf("%s: backtest scored %d points, want %d", s.key, len(rows), want-1)
		}
		subject := "fc.replay"
		if s.tags != nil {
			subject += "." + s.tags["src_measurement"] + "." + s.tags["src_field"]
		}
		for i, p := range got {
			if p.Subject != subject || p.Model != s.model {
				t.Fatalf("%s: forecast on %q by %q, want %q by %q", s.key, p.Subject, p.Model, subject, s.model)
			}
			if o := time.Unix(times[first+i], 0); !p.Origin.Equal(o) || p.Time.Sub(p.Origin) != time.Minute {
				t.Fatalf("%s: forecast %d from %v for %v, want from %v a minute later (the recorded times)", s.key, i, p.Origin, p.Time, o)
			}
			if i == len(rows) {
				break // the forecast of the point after the last
			}
			r := rows[i]
			if r.label != strconv.FormatInt(p.Time.Unix(), 10) && r.label != strconv.FormatInt(p.Time.UnixNano(), 10) {
				t.Fatalf("%s: backtest row %d is for %s, forecast for %v", s.key, i, r.label, p.Time)
			}
			if !sameValue(p.Yhat, r.yhat) || !sameValue(p.Lower, r.lower) || !sameValue(p.Upper, r.upper) {
				t.Fatalf("%s: forecast %d (for %v) is %v [%v, %v]; backtest %v [%v, %v]", s.key, i, p.Time,
					deref(p.Yhat), deref(p.Lower), deref(p.Upper), r.yhat, r.lower, r.upper)
			}
		}
		checkInflux(t, influx, "fc_replay", s.e2eSeries, got, rows)
		t.Logf("%s (%s): %d forecasts on NATS and in InfluxDB, equal to the backtest's", s.key, s.model, len(got))
	}
}

// fileRows runs `forecastd backtest --out` on file and returns its rows.
func fileRows(t *testing.T, file string, flags ...string) []btRow {
	t.Helper()
	out := filepath.Join(t.TempDir(), "out.csv")
	mustCLI(t, append(append([]string{"backtest", "--out", out}, flags...), file)...)
	return readBtRows(t, out)
}

// TestReplayUsage: mistakes on the command line are named, exit 2.
func TestReplayUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"replay"}, "no FILE to replay"},
		{[]string{"replay", "--format", "xml", "a.lp"}, `--format "xml"`},
		{[]string{"replay", "--subject", "a..b", "a.lp"}, `--subject "a..b"`},
		{[]string{"replay", "--series", "s", "a.lp"}, "--series: names the series of one CSV file"},
	} {
		_, errOut, code := cli(t, tc.args...)
		if code != 2 || !strings.Contains(errOut, tc.want) {
			t.Errorf("forecastd %s: exit %d, %q; want 2 and %q", strings.Join(tc.args, " "), code, errOut, tc.want)
		}
	}
	// A CSV file without a time column cannot be replayed at its times.
	dir := t.TempDir()
	cfg := filepath.Join(dir, "c.toml")
	if err := os.WriteFile(cfg, []byte("[input]\nsubjects = [\"x\"]\n[nats]\nembedded = true\nservers = [\"nats://127.0.0.1:0\"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(dir, "v.csv")
	if err := os.WriteFile(f, []byte("value\n1\n2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, errOut, code := cli(t, "replay", "-config", cfg, f); code != 1 || !strings.Contains(errOut, "no time column") {
		t.Errorf("a CSV file without times: exit %d, %q", code, errOut)
	}
}

// TestReplayStdin replays JSON payloads from standard input ("-", in
// [input] data_format): two series by their "series" field, and a point
// without a time, which is refused, counted, and does not stop the rest.
func TestReplayStdin(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "c.toml")
	if err := os.WriteFile(cfg, []byte("[nats]\nembedded = true\n\n[input]\nsubjects = [\"x\"]\ndata_format = \"json\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for i := range 25 {
		for _, s := range []string{"a", "b"} {
			fmt.Fprintf(&b, `{"series": %q, "time": %d, "value": %d}`+"\n", s, 1700000000+i, i*i%7)
		}
		if i == 12 {
			b.WriteString(`{"series": "a", "value": 3}` + "\n")
		}
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		w.WriteString(b.String())
		w.Close()
	}()
	stdin := os.Stdin
	os.Stdin = r
	defer func() { os.Stdin = stdin; r.Close() }()
	out := mustCLI(t, "replay", "-config", cfg, "-")
	if !strings.Contains(out, "replayed 50 points (51 lines or batches read, 1 refused, 1 parse errors) into 2 series: 40 forecasts") {
		t.Fatalf("summary:\n%s", out)
	}
}
