package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/forecastd/forecastd/internal/testserver/influxtest"
	"github.com/forecastd/forecastd/lab/dataset"
	"github.com/forecastd/forecastd/pipeline"
	"github.com/forecastd/forecastd/sinks"
	"github.com/forecastd/forecastd/sources"
)

// syncBuffer is a bytes.Buffer safe for the daemon's logger and the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// runningDaemon is a daemon run in process by runDaemon, as `forecastd run`
// runs it, with the test sending its signals.
type runningDaemon struct {
	d       *daemon
	path    string
	sigs    chan os.Signal
	errc    chan error
	logs    *syncBuffer
	stopped bool
	err     error
}

// startDaemon writes cfg to a file and runs the daemon on it until the
// test ends (or stop).
func startDaemon(t testing.TB, cfg string, d *daemon) *runningDaemon {
	t.Helper()
	path := filepath.Join(t.TempDir(), "forecastd.toml")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	if d == nil {
		d = &daemon{}
	}
	ready := make(chan struct{})
	d.ready = func(*daemon) { close(ready) }
	rd := &runningDaemon{d: d, path: path, sigs: make(chan os.Signal, 1), errc: make(chan error, 1), logs: &syncBuffer{}}
	go func() { rd.errc <- runDaemon([]string{"-config", path}, rd.logs, rd.sigs, d) }()
	select {
	case <-ready:
	case err := <-rd.errc:
		t.Fatalf("daemon exited at start: %v\n%s", err, rd.logs)
	case <-time.After(minWait):
		t.Fatalf("daemon not ready within %v\n%s", minWait, rd.logs)
	}
	t.Cleanup(func() {
		if _, err := rd.stop(t); err != nil {
			t.Errorf("daemon stopped with %v\n%s", err, rd.logs)
		}
	})
	return rd
}

// minWait is the least bound of the tests' waits, all for a hang.
const minWait = 2 * time.Minute

// stop sends SIGTERM and waits for runDaemon to return; it returns how
// long that took.
func (rd *runningDaemon) stop(t testing.TB) (time.Duration, error) {
	t.Helper()
	if rd.stopped {
		return 0, rd.err
	}
	rd.stopped = true
	start := time.Now()
	rd.sigs <- syscall.SIGTERM
	select {
	case rd.err = <-rd.errc:
	case <-time.After(90 * time.Second):
		t.Fatalf("daemon still running 90s after SIGTERM\n%s", rd.logs)
	}
	return time.Since(start), rd.err
}

// waitFor polls cond until it holds, failing t after d, or after
// minWait if d is shorter: every wait is a bound for a hang, and a loaded
// machine running the race detector can take many times an idle one's.
// The polls start 5 ms apart and slow to 20 ms: a cond that scrapes
// /metrics or walks the runner must not take the CPU from what it waits
// for.
func waitFor(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	waitForState(t, d, what, func() (bool, string) { return cond(), "" })
}

// waitForState is waitFor for a condition that also describes what it
// saw, which a timeout reports.
func waitForState(t testing.TB, d time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	d = max(d, minWait)
	deadline := time.Now().Add(d)
	pause := 5 * time.Millisecond
	for {
		ok, state := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			if state != "" {
				t.Fatalf("timed out after %v waiting for %s; last seen: %s", d, what, state)
			}
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(pause)
		pause = min(pause*3/2, 20*time.Millisecond)
	}
}

// waitSubscribed waits until the daemon's input connection has subscribed
// to subject on ns, so that what the test publishes next reaches it.
func waitSubscribed(t testing.TB, ns *server.Server, subject string) {
	t.Helper()
	waitFor(t, 10*time.Second, "the daemon's subscription to "+subject, func() bool {
		cz, err := ns.Connz(&server.ConnzOptions{Subscriptions: true})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range cz.Conns {
			if c.Name == sources.DefaultName && slices.Contains(c.Subs, subject) {
				return true
			}
		}
		return false
	})
}

// published is a forecast as the NATS output publishes it.
type published struct {
	Subject string    `json:"-"`
	Series  string    `json:"series"`
	Model   string    `json:"model"`
	Time    time.Time `json:"time"`
	Origin  time.Time `json:"origin"`
	Horizon int       `json:"horizon"`
	Yhat    *float64  `json:"yhat"`
	Lower   *float64  `json:"yhat_lower"`
	Upper   *float64  `json:"yhat_upper"`
}

// collector subscribes to forecasts and keeps them per series.
type collector struct {
	mu  sync.Mutex
	got map[string][]published
	bad []string
	// anomalies are the anomaly events, published under the same prefix
	// on <prefix>.anomaly.<subject>, kept apart from the forecasts.
	anomalies []*nats.Msg
}

// anomalyEvents counts the anomaly events of series in state.
func (c *collector) anomalyEvents(t *testing.T, series, state string) int {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, m := range c.anomalies {
		var e struct{ Series, State string }
		if err := json.Unmarshal(m.Data, &e); err != nil {
			t.Fatalf("anomaly event %s: %v", m.Data, err)
		}
		if e.Series == series && e.State == state {
			n++
		}
	}
	return n
}

func collect(t *testing.T, nc *nats.Conn, subject string) *collector {
	t.Helper()
	c := &collector{got: map[string][]published{}}
	sub, err := nc.Subscribe(subject, func(m *nats.Msg) {
		if _, rest, _ := strings.Cut(m.Subject, "."); strings.HasPrefix(rest, "anomaly.") {
			c.mu.Lock()
			c.anomalies = append(c.anomalies, m)
			c.mu.Unlock()
			return
		}
		var p published
		err := json.Unmarshal(m.Data, &p)
		c.mu.Lock()
		defer c.mu.Unlock()
		if err != nil {
			c.bad = append(c.bad, string(m.Data))
			return
		}
		p.Subject = m.Subject
		c.got[p.Series] = append(c.got[p.Series], p)
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := sub.SetPendingLimits(-1, -1); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	return c
}

func (c *collector) series(key string) []published {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.got[key])
}

func (c *collector) count(key string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.got[key])
}

func connectTest(t testing.TB, url string) *nats.Conn {
	t.Helper()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// btRow is a row of `forecastd backtest --out`.
type btRow struct {
	label        string
	actual, yhat float64
	lower, upper float64 // NaN without an interval
	anomaly      bool    // the detector fired (opened an event) at this point
}

// backtestRows runs `forecastd backtest` on values (with Unix-second times
// if times is not nil) and returns its --out rows.
func backtestRows(t *testing.T, values []float64, times []int64, flags ...string) []btRow {
	t.Helper()
	dir := t.TempDir()
	var b strings.Builder
	if times != nil {
		b.WriteString("t,value\n")
	} else {
		b.WriteString("value\n")
	}
	for i, v := range values {
		if times != nil {
			fmt.Fprintf(&b, "%d,", times[i])
		}
		b.WriteString(strconv.FormatFloat(v, 'g', -1, 64) + "\n")
	}
	in, out := filepath.Join(dir, "s.csv"), filepath.Join(dir, "out.csv")
	if err := os.WriteFile(in, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	mustCLI(t, append(append([]string{"backtest", "--out", out}, flags...), in)...)
	return readBtRows(t, out)
}

// readBtRows reads the rows of a `forecastd backtest --out` file.
func readBtRows(t *testing.T, out string) []btRow {
	t.Helper()
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	num := func(s string) float64 {
		if s == "" {
			return math.NaN()
		}
		x, err := strconv.ParseFloat(s, 64)
		if err != nil {
			t.Fatal(err)
		}
		return x
	}
	var rows []btRow
	for _, r := range recs[1:] { // index,time,actual,forecast,lower,upper,anomaly_score,anomaly
		rows = append(rows, btRow{label: r[1], actual: num(r[2]), yhat: num(r[3]), lower: num(r[4]), upper: num(r[5]), anomaly: r[7] == "1"})
	}
	return rows
}

// sameValue compares a published number with the backtest's: the same code
// path on the same points gives the same float64, bit for bit (NaN is no
// interval, published as null).
func sameValue(p *float64, want float64) bool {
	if p == nil {
		return math.IsNaN(want)
	}
	return *p == want
}

// e2eSeries is one series of the end-to-end test.
type e2eSeries struct {
	key, subject string // series key, input subject
	model        string // aosvr, or norma for the rule's series
	values       []float64
	tags         map[string]string // expected source tags in InfluxDB
}

const e2ePoints = 500

// TestDaemonEndToEnd publishes 500 points of three series in each data
// format to a running daemon (embedded NATS, a real influxd), and checks
// that the forecasts arrive on NATS with the right subjects and times, with
// the values `forecastd backtest` computes on the same series, and are in
// InfluxDB with the right tags and timestamps.
func TestDaemonEndToEnd(t *testing.T) {
	influx := influxtest.Shared(t, influxtest.Options{})
	names := []string{"santafe_laser_a", "market_price_daily", "sensor_temperature_15min"}
	var values [3][]float64
	for i, n := range names {
		values[i] = slices.Clone(dataset.MustLoad(n).Values[:e2ePoints])
	}
	// An outage on the sensor at point 400, so that at least one anomaly
	// event is compared with the backtest's (the series alone need not
	// raise one).
	lo, hi := slices.Min(values[2]), slices.Max(values[2])
	values[2][400] = hi + 10*(hi-lo)
	// Times: one a second, ending a minute ago (the decoders refuse points
	// a week old or an hour ahead).
	t0 := time.Now().Add(-time.Minute - e2ePoints*time.Second).Truncate(time.Second)
	times := make([]int64, e2ePoints)
	for i := range times {
		times[i] = t0.Unix() + int64(i)
	}

	for _, tc := range []struct {
		format   string
		subjects string
		rule     string
		series   [3]e2eSeries
		// payload returns the message(s) of point i: subject → payload.
		publish func(t *testing.T, nc *nats.Conn, ss [3]e2eSeries, i int)
	}{
		{
			format: "json", subjects: "metrics.json.>", rule: "metrics.json.b",
			series: [3]e2eSeries{
				{key: "metrics.json.a", subject: "metrics.json.a", model: "aosvr"},
				{key: "metrics.json.b", subject: "metrics.json.b", model: "norma"},
				{key: "metrics.json.c named_c", subject: "metrics.json.c", model: "aosvr"}, // keyed under its subject
			},
			publish: func(t *testing.T, nc *nats.Conn, ss [3]e2eSeries, i int) {
				ts := time.Unix(times[i], 0).UTC()
				for k, s := range ss {
					var p string
					switch k {
					case 0: // RFC 3339
						p = fmt.Sprintf(`{"time":%q,"value":%v}`, ts.Format(time.RFC3339), s.values[i])
					case 1: // Unix seconds
						p = fmt.Sprintf(`{"time":%d,"value":%v}`, times[i], s.values[i])
					case 2: // named series
						p = fmt.Sprintf(`{"series":"named_c","time":%d,"value":%v}`, times[i], s.values[i])
					}
					if err := nc.Publish(s.subject, []byte(p)); err != nil {
						t.Fatal(err)
					}
				}
			},
		},
		{
			format: "influx", subjects: "telegraf", rule: "market,*",
			series: [3]e2eSeries{
				// The line's tags, and its measurement and field as tags.
				{key: "laser,host=h1 value", subject: "telegraf", model: "aosvr", tags: map[string]string{"host": "h1", "src_measurement": "laser", "src_field": "value"}},
				{key: "market,host=h2 value", subject: "telegraf", model: "norma", tags: map[string]string{"host": "h2", "src_measurement": "market", "src_field": "value"}},
				{key: "sensor,host=h3,room=r1 value", subject: "telegraf", model: "aosvr", tags: map[string]string{"host": "h3", "room": "r1", "src_measurement": "sensor", "src_field": "value"}},
			},
			publish: func(t *testing.T, nc *nats.Conn, ss [3]e2eSeries, i int) {
				ns := times[i] * 1e9
				p := fmt.Sprintf("laser,host=h1 value=%v %d\nmarket,host=h2 value=%v %d\nsensor,room=r1,host=h3 value=%v %d\n",
					ss[0].values[i], ns, ss[1].values[i], ns, ss[2].values[i], ns)
				if err := nc.Publish("telegraf", []byte(p)); err != nil {
					t.Fatal(err)
				}
			},
		},
		{
			format: "value", subjects: "metrics.value.*", rule: "*.b",
			series: [3]e2eSeries{
				{key: "metrics.value.a", subject: "metrics.value.a", model: "aosvr"},
				{key: "metrics.value.b", subject: "metrics.value.b", model: "norma"},
				{key: "metrics.value.c", subject: "metrics.value.c", model: "aosvr"},
			},
			publish: func(t *testing.T, nc *nats.Conn, ss [3]e2eSeries, i int) {
				for _, s := range ss {
					if err := nc.Publish(s.subject, []byte(strconv.FormatFloat(s.values[i], 'g', -1, 64))); err != nil {
						t.Fatal(err)
					}
				}
			},
		},
	} {
		t.Run(tc.format, func(t *testing.T) {
			// json writes to the default measurement, which the Grafana
			// dashboard queries.
			measurement, measurementKey := "fc_"+tc.format, fmt.Sprintf("measurement = %q", "fc_"+tc.format)
			if tc.format == "json" {
				measurement, measurementKey = "forecast", ""
			}
			cfg := fmt.Sprintf(`
[nats]
servers = ["nats://127.0.0.1:0"]
embedded = true

[input]
subjects = [%q]
data_format = %q

[model]
kind = "aosvr"

[[rules]]
match = %q
kind = "norma"

[pipeline]
shards = 2
shutdown_timeout = "30s"

[output.nats]
subject_prefix = "fc"

[output.influxdb]
url = %q
bucket = %q
%s
flush_interval = "100ms"
`, tc.subjects, tc.format, tc.rule, influx.URL, influx.Database, measurementKey)
			rd := startDaemon(t, cfg, nil)
			url := rd.d.embedded.ClientURL()
			waitSubscribed(t, rd.d.embedded, tc.subjects)
			nc := connectTest(t, url)
			col := collect(t, nc, "fc.>")
			ss := tc.series
			for k := range ss {
				ss[k].values = values[k]
			}
			for i := range e2ePoints {
				tc.publish(t, nc, ss, i)
			}
			if err := nc.Flush(); err != nil {
				t.Fatal(err)
			}
			// The default model (target change, dim 5) forecasts from
			// the sixth point: points 5…499 are forecast, the last for
			// the point after it.
			const first = 5
			const want = e2ePoints - first
			for _, s := range ss {
				waitFor(t, 2*time.Minute, fmt.Sprintf("%d forecasts of %s", want, s.key), func() bool { return col.count(s.key) >= want })
			}

			anomalies := 0 // events opened, over the series
			defer func() {
				if anomalies == 0 && !t.Failed() {
					t.Error("no anomaly event in any series: the comparison with the backtest proved nothing")
				}
			}()
			for _, s := range ss {
				got := col.series(s.key)
				if len(got) != want {
					t.Fatalf("%s: %d forecasts, want %d", s.key, len(got), want)
				}
				var tflags []string
				if s.model == "norma" {
					tflags = []string{"--model", "norma"}
				}
				var rows []btRow
				if tc.format == "value" {
					rows = backtestRows(t, s.values, nil, tflags...)
				} else {
					rows = backtestRows(t, s.values, times, tflags...)
				}
				if len(rows) != want-1 {
					t.Fatalf("%s: backtest scored %d points, want %d", s.key, len(rows), want-1)
				}
				opened := 0
				for _, r := range rows {
					if r.anomaly {
						opened++
					}
				}
				if n := col.anomalyEvents(t, s.key, "opened"); n != opened {
					t.Errorf("%s: %d anomaly events opened on NATS, backtest fires at %d points", s.key, n, opened)
				}
				anomalies += opened
				subject := "fc." + s.subject
				if tc.format == "influx" { // one subject per series: <prefix>.<subject>.<measurement>.<field>
					measurement, _, _ := strings.Cut(s.key, ",")
					subject += "." + measurement + "." + s.key[strings.LastIndex(s.key, " ")+1:]
				}
				for i, p := range got {
					if p.Subject != subject || p.Model != s.model || p.Horizon != 1 {
						t.Fatalf("%s: forecast on %q, model %q, horizon %d; want %s, %s, 1", s.key, p.Subject, p.Model, p.Horizon, subject, s.model)
					}
					if !p.Time.After(p.Origin) || i > 0 && !p.Origin.After(got[i-1].Origin) {
						t.Fatalf("%s: forecast %d: time %v, origin %v, previous origin %v", s.key, i, p.Time, p.Origin, got[i-1].Origin)
					}
					if tc.format != "value" {
						// Forecast i is made from point first+i, for
						// the next second.
						if o := time.Unix(times[first+i], 0); !p.Origin.Equal(o) {
							t.Fatalf("%s: forecast %d from %v, want %v", s.key, i, p.Origin, o)
						}
						if p.Time.Sub(p.Origin) != time.Second {
							t.Fatalf("%s: forecast %d for %v from %v, want a second later", s.key, i, p.Time, p.Origin)
						}
					}
					if i == len(rows) {
						break // the forecast of the point after the last
					}
					r := rows[i]
					if tc.format != "value" && r.label != strconv.FormatInt(p.Time.Unix(), 10) {
						t.Fatalf("%s: backtest row %d is for %s, forecast for %d", s.key, i, r.label, p.Time.Unix())
					}
					if !sameValue(p.Yhat, r.yhat) || !sameValue(p.Lower, r.lower) || !sameValue(p.Upper, r.upper) {
						t.Fatalf("%s: forecast %d (for %v) is %v [%v, %v]; backtest %v [%v, %v]", s.key, i, p.Time,
							deref(p.Yhat), deref(p.Lower), deref(p.Upper), r.yhat, r.lower, r.upper)
					}
				}
				checkInflux(t, influx, measurement, s, got, rows)
				if measurement == "forecast" {
					checkDashboard(t, influx, s, rows)
				}
			}
			took, err := rd.stop(t)
			if err != nil {
				t.Fatalf("stop: %v\n%s", err, rd.logs)
			}
			st := rd.d.runner.Stats()
			t.Logf("%s: %d forecasts from %d points in %d series; stop took %v", tc.format, st.Forecasts, st.Processed, st.SeriesCreated, took)
			if st.Processed != 3*e2ePoints || st.SeriesCreated != 3 || st.OutOfOrder != 0 || st.SinkErrors != 0 {
				t.Errorf("runner stats %+v", st)
			}
		})
	}
}

func deref(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}

// checkInflux checks that InfluxDB holds, for series s, a point per
// forecast at its target time with its values and the series' tags, and
// y on each point whose actual value arrived.
func checkInflux(t *testing.T, influx *influxtest.Server, measurement string, s e2eSeries, got []published, rows []btRow) {
	t.Helper()
	where := fmt.Sprintf(`series_key = '%s' AND "model" = '%s'`, s.key, s.model)
	for k, v := range s.tags {
		where += fmt.Sprintf(` AND %q = '%s'`, k, v)
	}
	q := fmt.Sprintf(`SELECT "yhat", "yhat_lower", "yhat_upper", "y", "anomaly" FROM %q WHERE %s`, measurement, where)
	var res struct {
		Results []struct {
			Series []struct {
				Values [][]any `json:"values"`
			} `json:"series"`
		} `json:"results"`
	}
	var vals [][]any
	waitForState(t, time.Minute, "the forecasts in InfluxDB", func() (bool, string) {
		if err := json.Unmarshal([]byte(influx.Query(t, q)), &res); err != nil {
			t.Fatal(err)
		}
		vals = nil
		if len(res.Results) > 0 && len(res.Results[0].Series) > 0 {
			vals = res.Results[0].Series[0].Values
		}
		ys, yhats := 0, 0
		for _, v := range vals {
			if v[4] != nil {
				ys++
			}
			if v[1] != nil {
				yhats++
			}
		}
		// Forecasts and outcomes are separate writes to the same point:
		// wait for every field, not just every point.
		return len(vals) == len(got) && ys == len(rows) && yhats == len(got),
			fmt.Sprintf("%d points, %d with a forecast, %d with an outcome; want %d, %d, %d", len(vals), yhats, ys, len(got), len(got), len(rows))
	})
	// InfluxDB returns its points by time. With arrival times ("value"
	// format) a forecast's time is its origin plus the spacing estimated
	// then, so forecasts from successive origins need not be in time
	// order: match each forecast to the point at its time.
	at := make(map[int64][]any, len(vals))
	for _, v := range vals {
		ts, err := time.Parse(time.RFC3339Nano, v[0].(string))
		if err != nil {
			t.Fatal(err)
		}
		at[ts.UnixNano()] = v
	}
	for i, p := range got {
		ts := p.Time.UTC()
		v, ok := at[ts.UnixNano()]
		if !ok {
			t.Fatalf("%s: no InfluxDB point at %v, the time of forecast %d", s.key, ts, i)
		}
		if yhat, ok := v[1].(float64); !ok || !sameValue(p.Yhat, yhat) {
			t.Fatalf("%s: InfluxDB yhat %v at %v, published %v", s.key, v[1], ts, deref(p.Yhat))
		}
		if i < len(rows) {
			if y, ok := v[4].(float64); !ok || y != rows[i].actual {
				t.Fatalf("%s: InfluxDB y %v at %v, want %v", s.key, v[4], ts, rows[i].actual)
			}
			if (v[5] != nil) != rows[i].anomaly {
				t.Fatalf("%s: InfluxDB anomaly %v at %v; backtest opens an event there: %v", s.key, v[5], ts, rows[i].anomaly)
			}
		}
	}
}

// gate stands between the series and the real sinks: open, it passes
// forecasts through; blocking, it holds them; failing, it refuses them
// (as a sink that cannot take more would).
type gate struct {
	next     sinks.Writer
	mu       sync.Mutex
	mode     string
	changed  chan struct{}
	attempts atomic.Int64
}

var errSinkDown = errors.New("test: sink down")

func (g *gate) set(mode string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.mode = mode
	close(g.changed)
	g.changed = make(chan struct{})
}

func (g *gate) Write(r sinks.Record) error {
	if r.Kind != sinks.KindForecast {
		return g.next.Write(r)
	}
	g.attempts.Add(1)
	for {
		g.mu.Lock()
		mode, ch := g.mode, g.changed
		g.mu.Unlock()
		switch mode {
		case "open":
			return g.next.Write(r)
		case "fail":
			return errSinkDown
		}
		<-ch
	}
}

// startNATS starts an in-process nats-server on a random loopback port,
// with JetStream stored in a temporary directory when js is set; it is shut
// down when the test ends.
func startNATS(t *testing.T, js bool) *server.Server {
	t.Helper()
	opts := &server.Options{Host: "127.0.0.1", Port: server.RANDOM_PORT, NoLog: true, NoSigs: true}
	if js {
		opts.JetStream, opts.StoreDir = true, t.TempDir()
	}
	ns, err := server.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	ns.Start()
	t.Cleanup(func() { ns.Shutdown(); ns.WaitForShutdown() })
	if !ns.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats-server not ready")
	}
	return ns
}

// TestDaemonJetStreamAcksAfterSinks: under JetStream a message is acked
// only once its forecast was accepted by the sinks. While the sinks hold
// the forecasts, the messages stay unacked; while they refuse them, the
// messages are redelivered and never acked; once the sinks accept them,
// every message is acked and every forecast is published exactly as an
// uninterrupted run would have made it.
func TestDaemonJetStreamAcksAfterSinks(t *testing.T) {
	ns := startNATS(t, true)
	nc := connectTest(t, ns.ClientURL())
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "M", Subjects: []string{"js.>"}}); err != nil {
		t.Fatal(err)
	}
	col := collect(t, nc, "forecast.>")

	g := &gate{mode: "block", changed: make(chan struct{})}
	d := &daemon{wrapOut: func(w sinks.Writer) sinks.Writer { g.next = w; return g }}
	rd := startDaemon(t, fmt.Sprintf(`
[nats]
servers = [%q]

[input]
subjects = ["js.>"]

[input.jetstream]
stream = "M"
durable = "fd"
nak_delay = "200ms"
max_deliver = 100

[model]
kind = "norma"
dim = 2
scale = "fixed:-2,2"
`, ns.ClientURL()), d)
	t.Cleanup(func() { g.set("open") }) // before the daemon stops: a held sink would hold the shards

	const n = 20
	t0 := time.Now().Add(-time.Hour).Truncate(time.Second)
	mc := pipeline.Keys{Kind: ptr("norma"), Dim: ptr(2), Scale: ptr("fixed:-2,2")}
	cfg, err := mc.Config()
	if err != nil {
		t.Fatal(err)
	}
	alone, _ := pipeline.New("js.a", cfg)
	var want []pipeline.Forecast
	for i := range n {
		v := math.Sin(float64(i) / 3)
		ts := t0.Add(time.Duration(i) * time.Second)
		if _, err := js.Publish(ctx, "js.a", fmt.Appendf(nil, `{"time":%d,"value":%v}`, ts.Unix(), v)); err != nil {
			t.Fatal(err)
		}
		if res, _ := alone.Push(pipeline.Point{Time: ts, Value: v}); res.HasForecast {
			want = append(want, res.Forecast)
		}
	}
	firstForecast := n - len(want) // points before it make none: acked at once
	var cons jetstream.Consumer
	waitFor(t, 30*time.Second, "the daemon's durable consumer", func() bool { // created in the background
		cons, err = js.Consumer(ctx, "M", "fd")
		return err == nil
	})
	info := func() *jetstream.ConsumerInfo {
		i, err := cons.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return i
	}

	// 1. The sinks hold the first forecast: only the points without one
	// are acked, every other message is delivered and stays unacked.
	waitFor(t, 30*time.Second, "the first forecast at the sink", func() bool { return g.attempts.Load() >= 1 })
	waitFor(t, 30*time.Second, "every message delivered, the forecast-less ones acked", func() bool {
		i := info()
		return i.Delivered.Stream == n && i.AckFloor.Stream == uint64(firstForecast)
	})
	if i := info(); i.NumAckPending != n-firstForecast || i.AckFloor.Stream != uint64(firstForecast) {
		t.Fatalf("sinks holding: %d pending, ack floor %d; want %d pending, floor %d", i.NumAckPending, i.AckFloor.Stream, n-firstForecast, firstForecast)
	}
	if c := col.count("js.a"); c != 0 {
		t.Fatalf("%d forecasts published while the sinks held them", c)
	}

	// 2. The sinks refuse: the message is naked, the series holds its
	// newer points (naked too), nothing more is acked, and the server
	// redelivers.
	g.set("fail")
	waitFor(t, 30*time.Second, "redeliveries while the sinks refuse", func() bool {
		return rd.d.src.Stats().Naked >= uint64(n-firstForecast) && info().NumRedelivered > 0
	})
	if i := info(); i.AckFloor.Stream != uint64(firstForecast) || i.NumAckPending != n-firstForecast {
		t.Fatalf("sinks refusing: ack floor %d, %d pending; want %d, %d", i.AckFloor.Stream, i.NumAckPending, firstForecast, n-firstForecast)
	}
	if st := rd.d.runner.Stats(); st.Held == 0 || st.SinkErrors == 0 {
		t.Fatalf("runner stats %+v: want held points and sink errors", st)
	}

	// 3. The sinks accept: every message is acked, and the forecasts are
	// those of an uninterrupted run, each once.
	g.set("open")
	// Well within ack_wait (30s): the redeliveries come after nak_delay.
	waitFor(t, 10*time.Second, "every message acked", func() bool {
		i := info()
		return i.AckFloor.Stream == n && i.NumAckPending == 0
	})
	waitFor(t, 30*time.Second, "every forecast published", func() bool { return col.count("js.a") >= len(want) })
	got := col.series("js.a")
	if len(got) != len(want) {
		t.Fatalf("%d forecasts published, want %d", len(got), len(want))
	}
	for i, w := range want {
		p := got[i]
		if !p.Time.Equal(w.Time) || !p.Origin.Equal(w.Origin) || !sameValue(p.Yhat, w.Value) {
			t.Fatalf("forecast %d: %v from %v = %v; want %v from %v = %v", i, p.Time, p.Origin, deref(p.Yhat), w.Time, w.Origin, w.Value)
		}
	}
	// 4. A payload that can never parse is terminated, not redelivered.
	if _, err := js.Publish(ctx, "js.a", []byte("not json")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the bad payload terminated", func() bool {
		return rd.d.src.Stats().Termed == 1 && info().AckFloor.Stream == n+1
	})
	st := rd.d.runner.Stats()
	t.Logf("runner: %d held, %d sink errors, %d re-emitted; source: %+v", st.Held, st.SinkErrors, st.Reemitted, rd.d.src.Stats())
}

func ptr[T any](v T) *T { return &v }

// TestDaemonReload: SIGHUP with an invalid file keeps the running
// configuration (and the daemon running); with a valid one, new series
// take the new [model] and [[rules]], existing ones keep theirs, and the
// log says what changed.
func TestDaemonReload(t *testing.T) {
	base := `
[nats]
servers = ["127.0.0.1:0"]
embedded = true

[input]
subjects = ["r.>"]

[pipeline]
shutdown_timeout = "10s"

[model]
kind = "norma"
scale = "fixed:-2,2"
`
	rd := startDaemon(t, base+"dim = 2\n", nil)
	nc := connectTest(t, rd.d.embedded.ClientURL())
	col := collect(t, nc, "forecast.>")
	waitSubscribed(t, rd.d.embedded, "r.>")
	t0 := time.Now().Add(-time.Hour).Truncate(time.Second)
	next := map[string]int{}
	publish := func(subject string, n int) {
		t.Helper()
		for range n {
			i := next[subject]
			next[subject]++
			if err := nc.Publish(subject, fmt.Appendf(nil, `{"time":%d,"value":%v}`, t0.Unix()+int64(i), math.Sin(float64(i)/4))); err != nil {
				t.Fatal(err)
			}
		}
	}
	models := func(key string, want int) []string {
		t.Helper()
		waitFor(t, 10*time.Second, fmt.Sprintf("%d forecasts of %s", want, key), func() bool { return col.count(key) >= want })
		var m []string
		for _, p := range col.series(key) {
			m = append(m, p.Model)
		}
		return slices.Compact(m)
	}
	hup := func(cfg, wantLog string) {
		t.Helper()
		if err := os.WriteFile(rd.path, []byte(cfg), 0o644); err != nil {
			t.Fatal(err)
		}
		before := strings.Count(rd.logs.String(), wantLog)
		rd.sigs <- syscall.SIGHUP
		waitFor(t, 10*time.Second, "log "+wantLog, func() bool { return strings.Count(rd.logs.String(), wantLog) > before })
	}

	publish("r.a", 6) // dim 2: points 2…5 make forecasts
	if m := models("r.a", 4); !slices.Equal(m, []string{"norma"}) {
		t.Fatalf("r.a forecast by %v", m)
	}

	hup(base+"dim = 0\ncolour = \"red\"\n", "reload failed")
	if logs := rd.logs.String(); !strings.Contains(logs, `unknown key \"model.colour\"`) || !strings.Contains(logs, "dim must be at least 1") {
		t.Fatalf("the failed reload does not say why:\n%s", logs)
	}
	publish("r.b", 6) // the old configuration: dim 2, norma
	if m := models("r.b", 4); !slices.Equal(m, []string{"norma"}) {
		t.Fatalf("r.b forecast by %v after a bad reload", m)
	}

	hup(base+"dim = 3\n\n[[rules]]\nmatch = \"r.c*\"\nkind = \"aosvr\"\nwindow = 20\n", "reloaded")
	logs := rd.logs.String()
	for _, want := range []string{"model.dim: 2 → 3", "rules: 0 → 1 entries", "rules[0].kind: set to aosvr", `rules[0].match: set to r.c*`} {
		if !strings.Contains(logs, want) {
			t.Errorf("reload log does not say %q:\n%s", want, logs)
		}
	}
	publish("r.c1", 6) // the rule: aosvr, dim 3 → points 3…5
	publish("r.d", 6)  // [model]: norma, dim 3
	publish("r.a", 2)  // existing: norma, dim 2
	if m := models("r.c1", 3); !slices.Equal(m, []string{"aosvr"}) {
		t.Errorf("r.c1 forecast by %v, want aosvr", m)
	}
	if m := models("r.d", 3); !slices.Equal(m, []string{"norma"}) {
		t.Errorf("r.d forecast by %v, want norma", m)
	}
	models("r.a", 6)
	if c := col.count("r.d"); c != 3 {
		t.Errorf("r.d: %d forecasts, want 3 (dim 3)", c)
	}
	// stop's own bound catches a stop that hangs.
	if _, err := rd.stop(t); err != nil {
		t.Fatalf("stop: %v", err)
	}
}

// dashboardPanel is a panel of grafana/forecastd.json: its title and
// InfluxQL queries.
type dashboardPanel struct {
	Title   string `json:"title"`
	Targets []struct {
		Query string `json:"query"`
	} `json:"targets"`
}

// influxSeries runs an InfluxQL query and returns the columns and rows of
// its first series (none if it has none).
func influxSeries(t *testing.T, influx *influxtest.Server, q string) (columns []string, values [][]any) {
	t.Helper()
	body := influx.Query(t, q)
	var res struct {
		Results []struct {
			Series []struct {
				Columns []string `json:"columns"`
				Values  [][]any  `json:"values"`
			} `json:"series"`
		} `json:"results"`
	}
	if err := json.Unmarshal([]byte(body), &res); err != nil {
		t.Fatalf("%s: %v\n%s", q, err, body)
	}
	if len(res.Results) == 0 || len(res.Results[0].Series) == 0 {
		return nil, nil
	}
	return res.Results[0].Series[0].Columns, res.Results[0].Series[0].Values
}

// dashboard is what the tests read of grafana/forecastd.json: its panels
// and its annotations' queries.
type dashboard struct {
	Panels      []dashboardPanel `json:"panels"`
	Annotations struct {
		List []struct {
			Query string `json:"query"`
		} `json:"list"`
	} `json:"annotations"`
}

// readDashboard reads grafana/forecastd.json.
func readDashboard(t *testing.T) dashboard {
	t.Helper()
	b, err := os.ReadFile("../../grafana/forecastd.json")
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	return d
}

// dashboardPanels reads the panels of grafana/forecastd.json.
func dashboardPanels(t *testing.T) []dashboardPanel { t.Helper(); return readDashboard(t).Panels }

// dashboardAnnotations reads the InfluxQL queries of the annotations of
// grafana/forecastd.json.
func dashboardAnnotations(t *testing.T) []string {
	t.Helper()
	var qs []string
	for _, a := range readDashboard(t).Annotations.List {
		if a.Query != "" {
			qs = append(qs, a.Query)
		}
	}
	return qs
}

// checkDashboard runs the InfluxQL queries of grafana/forecastd.json for
// series s, as Grafana would (variables substituted), and checks that each
// answers, that the MAE and RMSE panel shows the backtest's errors, and
// that the anomaly annotations fall where the backtest opens events.
func checkDashboard(t *testing.T, influx *influxtest.Server, s e2eSeries, rows []btRow) {
	t.Helper()
	anns := dashboardAnnotations(t)
	if len(anns) == 0 {
		t.Fatal("the dashboard has no InfluxDB annotation")
	}
	opened := 0
	for _, r := range rows {
		if r.anomaly {
			opened++
		}
	}
	vars := map[string]any{"series": s.key, "step": allValue("(?:)")}
	for _, q := range anns {
		if thresholdQuery(q) {
			continue // no thresholds here: TestDashboardThresholds
		}
		if _, vals := influxSeries(t, influx, grafanaQuery(q, vars)); len(vals) != opened {
			t.Errorf("%s: annotation query %q marks %d points; the backtest opens %d events", s.key, q, len(vals), opened)
		}
	}
	panels := dashboardPanels(t)
	var mae, rmse float64
	for _, r := range rows {
		e := math.Abs(r.actual - r.yhat)
		mae += e
		rmse += e * e
	}
	mae, rmse = mae/float64(len(rows)), math.Sqrt(rmse/float64(len(rows)))
	for _, p := range panels {
		for _, q := range p.Targets {
			if thresholdQuery(q.Query) {
				continue // no thresholds here: TestDashboardThresholds
			}
			cols, vals := influxSeries(t, influx, grafanaQuery(q.Query, vars))
			if len(vals) == 0 {
				t.Fatalf("panel %q: no data for %s:\n%s", p.Title, s.key, q.Query)
			}
			if slices.Contains(cols, "MAE") {
				got := vals[0]
				if m, r := got[1].(float64), got[2].(float64); math.Abs(m-mae) > 1e-9*mae || math.Abs(r-rmse) > 1e-9*rmse {
					t.Errorf("panel %q: MAE %v, RMSE %v; backtest %v, %v", p.Title, m, r, mae, rmse)
				}
			}
		}
	}
}

// TestDaemonStopsWithinDeadline: with InfluxDB unreachable, the sink cannot
// flush what it buffered; the daemon still stops (its closing does not
// wait out the back-off for a server that does not answer), and says what
// it lost.
func TestDaemonStopsWithinDeadline(t *testing.T) {
	rd := startDaemon(t, `
[nats]
servers = ["127.0.0.1:0"]
embedded = true

[input]
subjects = ["d.>"]

[model]
kind = "norma"
dim = 2
scale = "fixed:-2,2"

[pipeline]
shutdown_timeout = "2s"

[output.influxdb]
url = "http://127.0.0.1:1"
bucket = "db"
flush_interval = "50ms"
timeout = "200ms"
`, nil)
	waitSubscribed(t, rd.d.embedded, "d.>")
	nc := connectTest(t, rd.d.embedded.ClientURL())
	t0 := time.Now().Add(-time.Hour).Truncate(time.Second)
	for i := range 50 {
		if err := nc.Publish("d.x", fmt.Appendf(nil, `{"time":%d,"value":%v}`, t0.Unix()+int64(i), math.Sin(float64(i)))); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, 10*time.Second, "forecasts buffered for InfluxDB", func() bool {
		st := sinkOf[*sinks.Influx](rd.d).Stats()
		return st.WriteErrors > 0 && st.Buffered >= 40
	})
	took, err := rd.stop(t)
	if err == nil || !strings.Contains(err.Error(), "influxdb output") || !strings.Contains(err.Error(), "records not written") {
		t.Errorf("stop: %v, want the InfluxDB output's loss reported", err)
	}
	t.Logf("stopped in %v: %v", took, err)
	rd.err = nil // expected: the cleanup must not fail on it
}

// TestDaemonEmbeddedJetStream: with [nats] embedded and [input.jetstream],
// the embedded server runs JetStream in [state] dir and the daemon creates
// the stream, so points published to it before or after are forecast.
func TestDaemonEmbeddedJetStream(t *testing.T) {
	rd := startDaemon(t, fmt.Sprintf(`
[nats]
servers = ["127.0.0.1:0"]
embedded = true

[input]
subjects = ["ejs.>"]

[input.jetstream]
stream = "EJS"
durable = "fd"

[model]
kind = "norma"
dim = 2
scale = "fixed:-2,2"

[state]
dir = %q
`, t.TempDir()), nil)
	nc := connectTest(t, rd.d.embedded.ClientURL())
	col := collect(t, nc, "forecast.>")
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	t0 := time.Now().Add(-time.Hour).Truncate(time.Second)
	for i := range 10 {
		if _, err := js.Publish(ctx, "ejs.a", fmt.Appendf(nil, `{"time":%d,"value":%v}`, t0.Unix()+int64(i), math.Sin(float64(i)))); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, 30*time.Second, "8 forecasts", func() bool { return col.count("ejs.a") == 8 })
	waitFor(t, 10*time.Second, "every message acked", func() bool { return rd.d.src.Stats().Acked == 10 })
}
