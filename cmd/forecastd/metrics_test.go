package main

import (
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// httpAddrRE finds the [http] listen address in the daemon's log.
var httpAddrRE = regexp.MustCompile(`msg="http listening" component=http addr=(\S+)`)

// scrape reads the daemon's /metrics in the text format: sample name with
// labels → value.
func scrape(t *testing.T, addr string) map[string]float64 {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %d %v", resp.StatusCode, err)
	}
	out := map[string]float64{}
	for _, line := range strings.Split(string(b), "\n") {
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("/metrics line %q: %v", line, err)
		}
		out[line[:i]] = v
	}
	return out
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestDaemonMetrics: [http] listen serves /-/healthy, /-/ready (ready
// once the state is restored and NATS connected) and /metrics, whose
// counters match what was sent: messages received, parse errors by reason,
// points processed, series active, and the two histograms fed.
func TestDaemonMetrics(t *testing.T) {
	rd := startDaemon(t, fmt.Sprintf(`
[nats]
servers = ["127.0.0.1:0"]
embedded = true

[input]
subjects = ["m.>"]

[http]
listen = "127.0.0.1:0"

[state]
dir = %q

[model]
kind = "norma"
dim = 3
scale = "fixed:-2,2"
`, t.TempDir()), nil)
	addr := rd.d.httpAddr.String()
	if code, body := get(t, "http://"+addr+"/-/healthy"); code != 200 {
		t.Fatalf("/-/healthy: %d %q", code, body)
	}
	waitFor(t, 10*time.Second, "/-/ready", func() bool { code, _ := get(t, "http://"+addr+"/-/ready"); return code == 200 })
	nc := connectTest(t, rd.d.embedded.ClientURL())
	waitSubscribed(t, rd.d.embedded, "m.>")

	const good = 40
	bad := map[string]struct {
		n       int
		payload string
	}{
		"invalid_json":  {5, `not json`},
		"invalid_value": {4, `{"time":%d,"value":"x"}`},
		"missing_value": {3, `{"time":%d}`},
	}
	t0 := time.Now().Add(-time.Hour).Truncate(time.Second)
	sent := 0
	for i := range good {
		ts := t0.Add(time.Duration(i) * time.Second).Unix()
		for _, s := range []string{"m.a", "m.b"} {
			nc.Publish(s, fmt.Appendf(nil, `{"time":%d,"value":%v}`, ts, float64(i%7)/7))
			sent++
		}
		for reason, b := range bad {
			if i < b.n {
				p := b.payload
				if strings.Contains(p, "%d") {
					p = fmt.Sprintf(p, ts)
				}
				nc.Publish("m.bad."+reason, []byte(p))
				sent++
			}
		}
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	var m map[string]float64
	waitFor(t, 20*time.Second, "every message received and every point processed", func() bool {
		m = scrape(t, addr)
		return m["forecastd_messages_received_total"] == float64(sent) && m["forecastd_points_processed_total"] == 2*good
	})
	for reason, b := range bad {
		if got := m[fmt.Sprintf("forecastd_parse_errors_total{reason=%q}", reason)]; got != float64(b.n) {
			t.Errorf("parse_errors_total{reason=%q} = %v, want %d", reason, got, b.n)
		}
	}
	if got := m[`forecastd_parse_errors_total{reason="non_finite"}`]; got != 0 {
		t.Errorf("parse_errors_total{reason=non_finite} = %v, want 0 (every reason exported)", got)
	}
	if got := m["forecastd_series_active"]; got != 2 {
		t.Errorf("series_active = %v, want 2", got)
	}
	if m["forecastd_model_update_duration_seconds_count"] == 0 || m["forecastd_forecast_abs_error_count"] == 0 {
		t.Errorf("histograms not fed: update count %v, abs error count %v",
			m["forecastd_model_update_duration_seconds_count"], m["forecastd_forecast_abs_error_count"])
	}
	if got, want := m["forecastd_forecasts_total"], m[`forecastd_records_written_total{sink="nats"}`]; got == 0 {
		t.Errorf("forecasts_total = %v (records written to nats %v)", got, want)
	}
	t.Logf("sent %d messages (%d good points); /metrics: received %v, processed %v, series %v, updates observed %v, errors scored %v",
		sent, 2*good, m["forecastd_messages_received_total"], m["forecastd_points_processed_total"], m["forecastd_series_active"],
		m["forecastd_model_update_duration_seconds_count"], m["forecastd_forecast_abs_error_count"])
}
