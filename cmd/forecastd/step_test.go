package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/forecastd/forecastd/lab/dataset"
)

// stepMsg is a forecast message as the tests of steps read it.
type stepMsg struct {
	Step   string    `json:"step"`
	Series string    `json:"series"`
	Origin time.Time `json:"origin"`
	Yhat   *float64  `json:"yhat"`
	Path   []struct {
		Horizon   int       `json:"horizon"`
		Time      time.Time `json:"time"`
		Yhat      *float64  `json:"yhat"`
		YhatLower *float64  `json:"yhat_lower"`
		YhatUpper *float64  `json:"yhat_upper"`
	} `json:"path"`
}

// subscribeForecasts collects the forecast messages on subject, decoded,
// under mu, by the key by gives each.
func subscribeForecasts(t *testing.T, nc *nats.Conn, subject string, mu *sync.Mutex, by func(*nats.Msg, stepMsg) string) map[string][]stepMsg {
	t.Helper()
	msgs := map[string][]stepMsg{}
	if _, err := nc.Subscribe(subject, func(m *nats.Msg) {
		var x stepMsg
		if err := json.Unmarshal(m.Data, &x); err != nil {
			t.Errorf("%s: %v", m.Data, err)
			return
		}
		mu.Lock()
		msgs[by(m, x)] = append(msgs[by(m, x)], x)
		mu.Unlock()
	}); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	return msgs
}

// TestDaemonStepEqualsBacktest: a daemon forecasting a series at a step of
// a minute (a [[rules]] entry sets it, with a horizon of 6) from points
// 10 s apart publishes, for each minute's bucket, one message carrying
// "step":"1m" whose path holds at each step exactly what `forecastd
// backtest --step 1m --horizon 6` computes on the same raw points, bit for
// bit; the last bucket, which no later point closes, is closed by its
// grace period. A [[resolutions]] entry forecasts the same series again at
// 5 minutes, 3 steps ahead, by a series of its own, its messages under
// the same series name with "step":"5m", equal to `backtest --step 5m
// --horizon 3`.
func TestDaemonStepEqualsBacktest(t *testing.T) {
	const minutes = 240
	rd := startDaemon(t, `
[nats]
servers = ["nats://127.0.0.1:0"]
embedded = true

[input]
subjects = ["st.>"]

[[rules]]
match = "st.path"
step = "1m"
horizon = 6

[[resolutions]]
match = "st.*"
step = "5m"
horizon = 3
`, nil)
	waitSubscribed(t, rd.d.embedded, "st.>")
	nc := connectTest(t, rd.d.embedded.ClientURL())
	var mu sync.Mutex
	msgs := subscribeForecasts(t, nc, "forecast.st.path", &mu, func(_ *nats.Msg, x stepMsg) string { return x.Step })
	raw := dataset.MustLoad("sensor_temperature_15min").Values
	n := minutes * 6
	// Times in the past, so that the last bucket's grace has passed.
	t0 := time.Now().Add(-2 * time.Duration(minutes) * time.Minute).Truncate(time.Hour)
	var csvb strings.Builder
	csvb.WriteString("t,value\n")
	for i := range n {
		ts := t0.Unix() + int64(10*i)
		v := raw[i%len(raw)]
		if err := nc.Publish("st.path", fmt.Appendf(nil, `{"time":%d,"value":%v}`, ts, v)); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&csvb, "%d,%s\n", ts, strconv.FormatFloat(v, 'g', -1, 64))
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	// Each point goes to the rule's series and the resolution's. The
	// points are hours old, read at speed: every bucket's end is long
	// past, and none closes by its grace while its points still come.
	waitFor(t, 2*time.Minute, "every point processed", func() bool { return rd.d.runner.Stats().Processed == uint64(2*n) })
	if st := rd.d.runner.Stats(); st.Late != 0 {
		t.Fatalf("%d points late: a bucket closed by its grace while its points still came", st.Late)
	}
	// One forecast per bucket once the model is warm, the last bucket's
	// by grace.
	last := func(step string, d time.Duration, k int) bool {
		mu.Lock()
		defer mu.Unlock()
		m := msgs[step]
		return len(m) > 0 && m[len(m)-1].Origin.Equal(t0.Add(time.Duration(k-1)*d))
	}
	waitFor(t, 2*time.Minute, "the forecasts of every bucket", func() bool {
		return last("1m", time.Minute, minutes) && last("5m", 5*time.Minute, minutes/5)
	})
	dir := t.TempDir()
	in := filepath.Join(dir, "s.csv")
	if err := os.WriteFile(in, []byte(csvb.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(msgs[""]) != 0 {
		t.Fatalf("%d messages without a step: the rule's series is at 1m", len(msgs[""]))
	}
	compareStep(t, msgs["1m"], in, "1m", 6, t0, minutes-30)
	compareStep(t, msgs["5m"], in, "5m", 3, t0, minutes/5-30)
	if _, err := rd.stop(t); err != nil {
		t.Fatal(err)
	}
}

// compareStep checks that the messages of one step are the backtest's of
// the file in at that step and horizon, bit for bit, on at least min
// target points, each message's origin the start of a bucket.
func compareStep(t *testing.T, msgs []stepMsg, in, step string, H int, t0 time.Time, min int) {
	t.Helper()
	d, _ := time.ParseDuration(step)
	for i, m := range msgs {
		if m.Origin.Sub(t0)%d != 0 {
			t.Fatalf("step %s message %d: origin %v is not a bucket's start", step, i, m.Origin)
		}
	}
	label := func(tm time.Time) string { return tm.UTC().Format(time.RFC3339) }
	compareBacktest(t, msgs, "st.path", in, H, min, label, "--step", step)
}

// compareBacktest checks that the forecast messages msgs of the series
// hold at every step of their paths (H steps) exactly the forecast and
// bounds of `forecastd backtest --horizon H args… in` for that target
// time (label: its text in the --out file) and step, bit for bit, and
// that they cover every row of the backtest, at least min target points.
func compareBacktest(t *testing.T, msgs []stepMsg, series, in string, H, min int, label func(time.Time) string, args ...string) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "out.csv")
	mustCLI(t, append(append([]string{"backtest", "--horizon", strconv.Itoa(H), "--out", out}, args...), in)...)
	_, rows := readOutCSV(t, out)
	type key struct {
		time string
		h    string
	}
	bt := map[key][]string{}
	for _, r := range rows {
		bt[key{r[1], r[6]}] = r
	}
	num := func(s string) float64 {
		if s == "" {
			return math.NaN()
		}
		x, _ := strconv.ParseFloat(s, 64)
		return x
	}
	compared := 0
	for i, m := range msgs {
		if m.Series != series || len(m.Path) != H || m.Path[0].Yhat == nil || *m.Path[0].Yhat != *m.Yhat {
			t.Fatalf("%v message %d: series %q, path %+v", args, i, m.Series, m.Path)
		}
		for _, st := range m.Path {
			r, ok := bt[key{label(st.Time), strconv.Itoa(st.Horizon)}]
			if !ok {
				continue // its actual is beyond the last point
			}
			if !sameValue(st.Yhat, num(r[3])) || !sameValue(st.YhatLower, num(r[4])) || !sameValue(st.YhatUpper, num(r[5])) {
				t.Fatalf("%v message %d (from %v) step %d: %v [%v, %v]; backtest %v", args, i, m.Origin, st.Horizon, st.Yhat, st.YhatLower, st.YhatUpper, r)
			}
			compared++
		}
	}
	if len(rows) < min*H || compared != len(rows) {
		t.Fatalf("%v: %d steps compared, the backtest scored %d", args, compared, len(rows))
	}
}
