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

	"github.com/forecastd/forecastd/internal/dataset"
)

func TestStepText(t *testing.T) {
	for d, want := range map[time.Duration]string{
		5 * time.Minute:                  "5m",
		time.Hour:                        "1h",
		90 * time.Minute:                 "1h30m",
		24 * time.Hour:                   "1d",
		7 * 24 * time.Hour:               "7d",
		10 * time.Second:                 "10s",
		90 * time.Second:                 "1m30s",
		2*time.Hour + 30*time.Second:     "2h0m30s",
		36 * time.Hour:                   "36h",
		time.Hour + 500*time.Millisecond: "1h0m0.5s",
	} {
		if got := stepText(d); got != want {
			t.Errorf("stepText(%v) = %q, want %q", d, got, want)
		}
	}
}

// TestDaemonStepEqualsBacktest: a daemon forecasting a series at a step of
// a minute (a [[rules]] entry sets it, with a horizon of 6) from points
// 10 s apart publishes, for each minute's bucket, one message carrying
// "step":"1m" whose path holds at each step exactly what `forecastd
// backtest --step 1m --horizon 6` computes on the same raw points, bit for
// bit; the last bucket, which no later point closes, is closed by its
// grace period.
func TestDaemonStepEqualsBacktest(t *testing.T) {
	const H, minutes = 6, 240
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
`, nil)
	waitSubscribed(t, rd.d.embedded, "st.>")
	nc := connectTest(t, rd.d.embedded.ClientURL())
	type msg struct {
		Step   string    `json:"step"`
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
	var msgs []msg
	var mu sync.Mutex
	if _, err := nc.Subscribe("forecast.st.path", func(m *nats.Msg) {
		var x msg
		if err := json.Unmarshal(m.Data, &x); err != nil {
			t.Errorf("%s: %v", m.Data, err)
			return
		}
		mu.Lock()
		msgs = append(msgs, x)
		mu.Unlock()
	}); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	raw := dataset.MustLoad("sensor_temperature_15min").Values
	n := minutes * 6
	// Times in the past, so that the last bucket's grace has passed.
	t0 := time.Now().Add(-2 * time.Duration(minutes) * time.Minute).Truncate(time.Minute)
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
	count := func() int { mu.Lock(); defer mu.Unlock(); return len(msgs) }
	// One forecast per bucket once the model is warm, the last by grace.
	waitFor(t, 2*time.Minute, "the forecasts of every bucket", func() bool {
		return count() >= minutes-20 && lastOrigin(&mu, func() time.Time {
			if len(msgs) == 0 {
				return time.Time{}
			}
			return msgs[len(msgs)-1].Origin
		}).Equal(t0.Add(time.Duration(minutes-1)*time.Minute))
	})

	dir := t.TempDir()
	in, out := filepath.Join(dir, "s.csv"), filepath.Join(dir, "out.csv")
	if err := os.WriteFile(in, []byte(csvb.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	mustCLI(t, "backtest", "--step", "1m", "--horizon", "6", "--out", out, in)
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
	mu.Lock()
	defer mu.Unlock()
	compared := 0
	for i, m := range msgs {
		if m.Step != "1m" || len(m.Path) != H || m.Path[0].Yhat == nil || *m.Path[0].Yhat != *m.Yhat {
			t.Fatalf("message %d: step %q, path %+v", i, m.Step, m.Path)
		}
		if m.Origin.Sub(t0)%time.Minute != 0 {
			t.Fatalf("message %d: origin %v is not a bucket's start", i, m.Origin)
		}
		for _, st := range m.Path {
			r, ok := bt[key{st.Time.UTC().Format(time.RFC3339), strconv.Itoa(st.Horizon)}]
			if !ok {
				continue // its actual is beyond the last bucket
			}
			if !sameValue(st.Yhat, num(r[3])) || !sameValue(st.YhatLower, num(r[4])) || !sameValue(st.YhatUpper, num(r[5])) {
				t.Fatalf("message %d (from %v) step %d: %v [%v, %v]; backtest %v", i, m.Origin, st.Horizon, st.Yhat, st.YhatLower, st.YhatUpper, r)
			}
			compared++
		}
	}
	if len(rows) < (minutes-30)*H || compared != len(rows) {
		t.Fatalf("%d steps compared, the backtest scored %d", compared, len(rows))
	}
	if _, err := rd.stop(t); err != nil {
		t.Fatal(err)
	}
}

// lastOrigin returns f() under mu.
func lastOrigin(mu *sync.Mutex, f func() time.Time) time.Time {
	mu.Lock()
	defer mu.Unlock()
	return f()
}
