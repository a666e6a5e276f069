package sinks

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/forecastd/forecastd/anomaly"
	"github.com/forecastd/forecastd/anomaly/threshold"
	"github.com/forecastd/forecastd/internal/config/schema"
	"github.com/forecastd/forecastd/internal/testserver/amtest"
	"github.com/forecastd/forecastd/pipeline"
)

// diskRec is a forecast of a disk series (its host tag host) at origin,
// with one observation of "above 95" whose event is ev: crossing 21 h
// ahead, unless closed.
func diskRec(host string, origin time.Time, ev threshold.Event) Record {
	f := pipeline.Forecast{Origin: origin, Time: origin.Add(time.Hour), Value: 90, Lower: 88, Upper: 92}
	o := threshold.Observation{Value: 95, Direction: threshold.Above, Probability: 0.52, Forecast: 95.3, Lower: 91.2, Upper: 99.4, Event: ev}
	if ev != threshold.Closed {
		o.Crossing, o.Step, o.ETA = true, 21, 21*time.Hour
		o.At = origin.Add(o.ETA)
	}
	f.Thresholds = []threshold.Observation{o}
	series := "disk,host=" + host + ",path=/var used_percent"
	return Record{Kind: KindForecast, Series: series, Model: "aosvr", Subject: "telegraf", Step: "1h",
		Measurement: "disk", Field: "used_percent", Tags: []Tag{{Key: "host", Value: host}, {Key: "path", Value: "/var"}}, Forecast: f}
}

// amConfig routes the threshold alerts, by their labels, to the webhook
// receiver at url, one group per series, resolutions included.
func amConfig(url string) string {
	return fmt.Sprintf(`route:
  receiver: none
  routes:
    - matchers: ['alertname="ForecastThreshold"', 'kind="threshold"']
      receiver: hook
      group_by: [series]
      group_wait: 100ms
      group_interval: 500ms
      repeat_interval: 1h
receivers:
  - name: none
  - name: hook
    webhook_configs:
      - url: %q
        send_resolved: true
`, url+"/hook")
}

// notified reports whether the receiver got a notification of status
// (firing, resolved) with an alert of host.
func notified(rcv *amtest.Receiver, host, status string) bool {
	for _, n := range rcv.Notifications() {
		for _, a := range n.Alerts {
			if a.Labels["host"] == host && a.Status == status {
				return true
			}
		}
	}
	return false
}

// active returns the alerts of host Alertmanager holds active.
func active(t *testing.T, am *amtest.Server, host string) []amtest.Alert {
	t.Helper()
	as, err := am.Alerts(`host="` + host + `"`)
	if err != nil {
		t.Fatal(err)
	}
	return as
}

// TestAlertmanagerReal: against a real Alertmanager, a threshold event
// becomes one alert labelled so that a route matches it (notified to the
// route's webhook), updated in place, resolved at its closing; and with
// Alertmanager stopped, the alerts that changed meanwhile and the one
// that stayed open are all there once it is back on the same port.
func TestAlertmanagerReal(t *testing.T) {
	rcv := amtest.NewReceiver(t)
	am := amtest.Start(t, amConfig(rcv.URL))
	s, err := NewAlertmanager(AlertmanagerConfig{URL: am.URL, ResendInterval: schema.Dur(300 * time.Millisecond),
		RetryInterval: 50 * time.Millisecond, MaxRetryInterval: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(ctxTimeout(t, 10*time.Second))
	origin := time.Now().Add(-2 * time.Hour).Truncate(time.Second)
	write := func(r Record) {
		t.Helper()
		if err := s.Write(r); err != nil {
			t.Fatal(err)
		}
	}

	write(diskRec("a", origin, threshold.Opened))
	write(diskRec("a", origin.Add(time.Hour), threshold.Updated))
	waitFor(t, 60*time.Second, "host a's alert notified", func() bool { return notified(rcv, "a", "firing") })
	as := active(t, am, "a")
	if len(as) != 1 {
		t.Fatalf("%d alerts of host a, want 1: %+v", len(as), as)
	}
	a := as[0]
	for k, v := range map[string]string{"alertname": "ForecastThreshold", "kind": "threshold", "direction": "above",
		"threshold": "95", "step": "1h", "series": "disk,host=a,path=/var used_percent", "path": "/var", "measurement": "disk", "field": "used_percent"} {
		if a.Labels[k] != v {
			t.Errorf("label %s = %q, want %q (%v)", k, a.Labels[k], v, a.Labels)
		}
	}
	if !a.StartsAt.Equal(origin) || a.Annotations["eta_seconds"] != "75600" || a.Annotations["probability"] != "0.52" ||
		a.Annotations["yhat"] != "95.3" || a.Annotations["state"] != "updated" || !strings.Contains(a.Annotations["summary"], "above 95 in 21h0m0s") {
		t.Errorf("alert %+v: want startsAt %v, the update's annotations", a, origin)
	}
	closedAt := origin.Add(90 * time.Minute)
	write(diskRec("a", closedAt, threshold.Closed))
	waitFor(t, 60*time.Second, "host a's alert resolved", func() bool { return notified(rcv, "a", "resolved") })
	if as := active(t, am, "a"); len(as) != 0 {
		t.Errorf("host a's alert still active: %+v", as)
	}
	outage(t, s, am, rcv, origin)
}

// outage: host b's alert, notified, closes while Alertmanager is down;
// host c's opens then, and host d's stays open through it. Back up on the
// same port (its alerts lost, its notification log kept), Alertmanager
// learns all three: b resolved, c and d active.
func outage(t *testing.T, s *Alertmanager, am *amtest.Server, rcv *amtest.Receiver, origin time.Time) {
	t.Helper()
	for _, h := range []string{"b", "d"} {
		if err := s.Write(diskRec(h, origin, threshold.Opened)); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, 60*time.Second, "hosts b and d notified", func() bool { return notified(rcv, "b", "firing") && notified(rcv, "d", "firing") })
	am.Stop()
	errs := s.Stats().Errors
	for _, r := range []Record{diskRec("b", origin.Add(time.Hour), threshold.Closed), diskRec("c", origin.Add(time.Hour), threshold.Opened)} {
		if err := s.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, 60*time.Second, "failed deliveries while Alertmanager is down", func() bool { return s.Stats().Errors >= errs+3 })
	if st := s.Stats(); st.Pending < 2 || st.Held != 3 || st.Dropped != 0 {
		t.Fatalf("while down: %+v, want b's and c's states pending, 3 alerts held", st)
	}
	am.Restart()
	waitFor(t, 60*time.Second, "c and d active again, b resolved", func() bool {
		return len(active(t, am, "c")) == 1 && len(active(t, am, "d")) == 1 && notified(rcv, "b", "resolved")
	})
	if as := active(t, am, "b"); len(as) != 0 {
		t.Errorf("host b's alert active after the restart: %+v", as)
	}
	if st := s.Stats(); st.Dropped != 0 || st.Rejected != 0 {
		t.Errorf("stats %+v: nothing dropped or rejected", st)
	}
}

// TestAlertmanagerAnomaly: an anomaly event's alert has the opening's
// direction, and its closing resolves the same alert whatever side the
// closing point fell on.
func TestAlertmanagerAnomaly(t *testing.T) {
	am := amtest.Start(t, "")
	s, err := NewAlertmanager(AlertmanagerConfig{URL: am.URL})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(ctxTimeout(t, 10*time.Second))
	r := anomalyRec("cpu.web1", "cpu.web1", 1, 20, anomaly.Opened)
	r.Outcome.Time = time.Now().Add(-time.Minute).Truncate(time.Second)
	if err := s.Write(r); err != nil {
		t.Fatal(err)
	}
	var as []amtest.Alert
	waitFor(t, 60*time.Second, "the anomaly's alert", func() bool {
		as, err = am.Alerts(`kind="anomaly"`)
		return err == nil && len(as) == 1
	})
	if l := as[0].Labels; l["alertname"] != "ForecastAnomaly" || l["direction"] != "above" || l["series"] != "cpu.web1" || as[0].Annotations["score"] == "" {
		t.Errorf("alert %+v", as[0])
	}
	c := anomalyRec("cpu.web1", "cpu.web1", 2, 9.5, anomaly.Closed)
	c.Outcome.Time = r.Outcome.Time.Add(30 * time.Second)
	if err := s.Write(c); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 60*time.Second, "the anomaly's alert resolved", func() bool {
		as, err = am.Alerts(`kind="anomaly"`)
		return err == nil && len(as) == 0
	})
}

// TestAlertQueueBounded: with the receiver down, the sink holds at most
// max_alerts alerts, the latest state of each: new alerts beyond are
// dropped and counted, updates of held ones are not; once the receiver
// answers, each held alert's latest state is delivered once.
func TestAlertQueueBounded(t *testing.T) {
	var up atomic.Bool
	var posted atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !up.Load() {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		var m WebhookMessage
		if err := jsonDecode(r, &m); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		posted.Add(int64(len(m.Alerts)))
	}))
	defer srv.Close()
	s, err := NewWebhook(WebhookConfig{URL: srv.URL, MaxAlerts: 3, RetryInterval: 10 * time.Millisecond, MaxRetryInterval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(ctxTimeout(t, 10*time.Second))
	for i, h := range []string{"a", "b", "c", "d", "e"} {
		if err := s.Write(diskRec(h, t0.Add(time.Duration(i)*time.Hour), threshold.Opened)); err != nil {
			t.Fatal(err)
		}
	}
	for range 10 {
		if err := s.Write(diskRec("a", t0.Add(5*time.Hour), threshold.Updated)); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, 30*time.Second, "failed posts", func() bool { return s.Stats().Errors >= 2 })
	if st := s.Stats(); st.Dropped != 2 || st.Held != 3 || st.Pending != 3 {
		t.Fatalf("stats %+v: want 2 dropped, 3 held and pending", st)
	}
	up.Store(true)
	if err := s.Flush(ctxTimeout(t, 30*time.Second)); err != nil {
		t.Fatal(err)
	}
	if n := posted.Load(); n != 3 {
		t.Errorf("%d alert states posted, want 3 (the latest of each held alert)", n)
	}
	fams := gather(t, s)
	if v := metricValue(t, fams, "forecastd_records_dropped_total", "reason=full"); v != 2 {
		t.Errorf(`records_dropped_total{reason="full"} = %v, want 2`, v)
	}
}
