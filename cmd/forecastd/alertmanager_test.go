package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/forecastd/forecastd/internal/config"
	"github.com/forecastd/forecastd/internal/testserver/amtest"
	"github.com/forecastd/forecastd/sinks"
)

// alertRoute routes the threshold alerts to the webhook receiver at url by
// the labels a user would match on, one group per series.
func alertRoute(url string) string {
	return fmt.Sprintf(`route:
  receiver: none
  routes:
    - matchers: ['alertname="ForecastThreshold"', 'threshold="95"', 'direction="above"', 'field="used_percent"']
      receiver: disk
      group_by: [series]
      group_wait: 100ms
      group_interval: 500ms
      repeat_interval: 1h
receivers:
  - name: none
  - name: disk
    webhook_configs:
      - url: %q
        send_resolved: true
`, url+"/disk")
}

// diskEvents collects the threshold events the daemon publishes.
type diskEvents struct {
	mu     sync.Mutex
	opened []time.Time // each opened event's time (its origin)
	closed int
}

func (e *diskEvents) counts() (opened, closed int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.opened), e.closed
}

// firings returns the distinct startsAt of the firing alerts and the
// resolved ones the receiver was notified of.
func firings(rcv *amtest.Receiver) (firing, resolved map[time.Time]bool) {
	firing, resolved = map[time.Time]bool{}, map[time.Time]bool{}
	for _, n := range rcv.Notifications() {
		for _, a := range n.Alerts {
			if a.Status == "firing" {
				firing[a.StartsAt.UTC()] = true
			} else {
				resolved[a.StartsAt.UTC()] = true
			}
		}
	}
	return firing, resolved
}

// TestDaemonAlertmanager: the disk of docs/events.md ("used_percent" of
// Telegraf's disk input, forecast at 1h, 48 steps ahead, threshold_above
// 95) through the daemon to a real Alertmanager: each threshold event the
// daemon publishes is one alert there, with the series' tags and the
// threshold as labels (a route on them notifies it), resolved when the
// event closes; and an event that opens while Alertmanager is down
// reaches it once it is back on the same port.
func TestDaemonAlertmanager(t *testing.T) {
	rcv := amtest.NewReceiver(t)
	am := amtest.Start(t, alertRoute(rcv.URL))
	rd := startDaemon(t, fmt.Sprintf(`
[nats]
servers = ["127.0.0.1:0"]
embedded = true

[input]
subjects = ["telegraf"]
data_format = "influx"
max_past = "2000h" # the test's hourly points are weeks old

[pipeline]
shutdown_timeout = "10s"

[[rules]]
match = "disk,* used_percent"
step = "1h"
horizon = 48
min = 0.0
max = 100.0
threshold_above = 95.0

[output.alertmanager]
url = %q
# An open alert's endsAt is four resends ahead: long enough that on a
# loaded machine Alertmanager does not take it for ended before its
# dispatcher notifies it.
resend_interval = "5s"
`, am.URL), nil)
	nc := connectTest(t, rd.d.embedded.ClientURL())
	evs := &diskEvents{}
	sub, err := nc.Subscribe("forecast.threshold.>", func(m *nats.Msg) {
		var e struct {
			State string
			Time  time.Time
		}
		if json.Unmarshal(m.Data, &e) != nil {
			return
		}
		evs.mu.Lock()
		defer evs.mu.Unlock()
		switch e.State {
		case "opened":
			evs.opened = append(evs.opened, e.Time.UTC())
		case "closed":
			evs.closed++
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	waitSubscribed(t, rd.d.embedded, "telegraf")
	d := &diskFeed{t: t, nc: nc, r: rand.New(rand.NewPCG(3, 7)), t0: time.Now().Add(-600 * time.Hour).Truncate(time.Hour), v: 50}

	// Filling at 0.2 % an hour towards 95; then cleaned, down to 40.
	d.ramp(220, 0.2)
	waitFor(t, time.Minute, "an opened threshold event", func() bool { o, _ := evs.counts(); return o >= 1 })
	waitFor(t, time.Minute, "its alert notified", func() bool { f, _ := firings(rcv); return len(f) >= 1 })
	as, err := am.Alerts(`alertname="ForecastThreshold"`)
	if err != nil || len(as) != 1 {
		t.Fatalf("alerts %+v, %v: want one", as, err)
	}
	for k, v := range map[string]string{"kind": "threshold", "host": "web1", "path": "/var", "device": "sda1", "step": "1h",
		"series": "disk,device=sda1,fstype=ext4,host=web1,mode=rw,path=/var used_percent"} {
		if as[0].Labels[k] != v {
			t.Errorf("label %s = %q, want %q: %v", k, as[0].Labels[k], v, as[0].Labels)
		}
	}
	if as[0].Annotations["eta"] == "" || as[0].Annotations["probability"] == "" {
		t.Errorf("annotations %v: want the ETA and its probability", as[0].Annotations)
	}
	d.clean(40, 60)
	waitFor(t, time.Minute, "the event closed", func() bool { _, c := evs.counts(); return c >= 1 })
	waitFor(t, time.Minute, "its alert resolved", func() bool { _, r := firings(rcv); return len(r) >= 1 })

	// Filling again while Alertmanager is down.
	am.Stop()
	amSink := sinkOf[*sinks.Alertmanager](rd.d)
	d.ramp(120, 0.45)
	waitFor(t, time.Minute, "a second opened event", func() bool { o, _ := evs.counts(); return o >= 2 })
	errs := amSink.Stats().Errors
	waitFor(t, time.Minute, "failed deliveries", func() bool { return amSink.Stats().Errors > errs })
	am.Restart()
	// The sink retries at up to DefaultAlertMaxRetry (30 s) plus jitter
	// apart: on a loaded machine the first attempt after the restart may
	// come that long after it.
	waitFor(t, 3*time.Minute, "the second alert notified after the restart", func() bool { f, _ := firings(rcv); return len(f) >= 2 })
	d.clean(40, 60)
	waitFor(t, time.Minute, "every event closed", func() bool { o, c := evs.counts(); return c == o })
	waitFor(t, time.Minute, "every alert resolved", func() bool {
		o, _ := evs.counts()
		_, r := firings(rcv)
		return len(r) == o
	})
	// One alert per event, starting at the event's opening.
	evs.mu.Lock()
	opened := append([]time.Time(nil), evs.opened...)
	evs.mu.Unlock()
	f, r := firings(rcv)
	t.Logf("%d events opened; %d alerts fired, %d resolved; sink %+v", len(opened), len(f), len(r), amSink.Stats())
	if len(f) != len(opened) || len(r) != len(opened) {
		t.Errorf("%d events opened, %d alerts fired, %d resolved", len(opened), len(f), len(r))
	}
	for _, at := range opened {
		if !f[at] || !r[at] {
			t.Errorf("the event opened at %v: fired %t, resolved %t (%v)", at, f[at], r[at], f)
		}
	}
	if st := amSink.Stats(); st.Dropped != 0 || st.Rejected != 0 {
		t.Errorf("alertmanager sink %+v: nothing dropped or rejected", st)
	}
}

// diskFeed publishes a Telegraf disk's used_percent, an hour a point.
type diskFeed struct {
	t  *testing.T
	nc *nats.Conn
	r  *rand.Rand
	t0 time.Time
	i  int
	v  float64
}

func (d *diskFeed) publish() {
	d.t.Helper()
	line := fmt.Sprintf("disk,device=sda1,fstype=ext4,host=web1,mode=rw,path=/var used_percent=%g %d",
		d.v+0.05*d.r.NormFloat64(), d.t0.Add(time.Duration(d.i)*time.Hour).UnixNano())
	if err := d.nc.Publish("telegraf", []byte(line)); err != nil {
		d.t.Fatal(err)
	}
	d.i++
}

// ramp publishes n points rising by slope a point.
func (d *diskFeed) ramp(n int, slope float64) {
	for range n {
		d.publish()
		d.v += slope
	}
	if err := d.nc.Flush(); err != nil {
		d.t.Fatal(err)
	}
}

// clean drops the disk to v and publishes n points there.
func (d *diskFeed) clean(v float64, n int) {
	d.v = v
	d.ramp(n, 0)
}

// TestCheckConfigAlertmanager: check-config reports every problem of
// [output.alertmanager] and [output.webhook] on its line, and warns,
// without failing, of an Alertmanager that does not answer; of a real
// one it says nothing.
func TestCheckConfigAlertmanager(t *testing.T) {
	p := writeConfig(t, "[input]\nsubjects = [\"a\"]\n\n[output.alertmanager]\nurl = \"127.0.0.1:9093\"\nresend_interval = \"0s\"\nmax_labels = 2\n\n[output.webhook]\ntimeout = \"-1s\"\n")
	_, err := config.Load(p)
	for _, want := range []string{
		p + ":5: output.alertmanager.url: want http(s)://HOST:PORT[/PATH]",
		p + ":6: output.alertmanager.resend_interval: must be positive",
		p + ":7: output.alertmanager.max_labels: at least 9",
		p + ":9: output.webhook.url: required",
		p + ":10: output.webhook.timeout: must be positive",
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	am := amtest.Start(t, "")
	down := closedURL(t)
	for _, c := range []struct {
		url  string
		warn bool
	}{{down, true}, {am.URL, false}} {
		path := writeConfig(t, fmt.Sprintf("[nats]\nservers = [\"127.0.0.1:4222\"]\n\n[input]\nsubjects = [\"a.>\"]\n\n[output.alertmanager]\nurl = %q\n", c.url))
		var out strings.Builder
		if err := config.CheckCommand([]string{path}, &out, io.Discard); err != nil {
			t.Fatalf("check-config fails: %v", err)
		}
		got := out.String()
		if w := strings.Contains(got, "warning: output.alertmanager.url: does not answer"); w != c.warn || !strings.HasSuffix(got, path+": OK\n") {
			t.Errorf("check-config of %s (warning wanted: %t):\n%s", c.url, c.warn, got)
		}
	}
}

// TestAlertingDoc: the tables of docs/alerting.md load, and its route
// loads into a real Alertmanager.
func TestAlertingDoc(t *testing.T) {
	b, err := os.ReadFile("../../docs/alerting.md")
	if err != nil {
		t.Fatal(err)
	}
	tomls := codeBlocks(string(b), "toml")
	if len(tomls) != 2 {
		t.Fatalf("%d toml blocks, want 2", len(tomls))
	}
	for _, c := range tomls {
		if _, err := config.Load(writeConfig(t, "[input]\nsubjects = [\"a\"]\n\n"+c)); err != nil {
			t.Errorf("%s: %v", c, err)
		}
	}
	yamls := codeBlocks(string(b), "yaml")
	if len(yamls) != 1 {
		t.Fatalf("%d yaml blocks, want 1", len(yamls))
	}
	amtest.Start(t, yamls[0]) // fails t if Alertmanager refuses it
}

// TestDaemonWebhook: the disk's threshold event through the daemon to a
// webhook: posted firing when it opens, then resolved, one alert (one
// fingerprint) with the series' tags as labels.
func TestDaemonWebhook(t *testing.T) {
	var mu sync.Mutex
	var got []sinks.WebhookAlert
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var m sinks.WebhookMessage
		if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&m); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		mu.Lock()
		for _, a := range m.Alerts {
			if a.Labels["kind"] == "threshold" { // the cleaning's drop is an anomaly too
				got = append(got, a)
			}
		}
		mu.Unlock()
	}))
	// Closed after the daemon stops (cleanups run last first): an alert
	// still being posted then is delivered, not retried to the deadline.
	t.Cleanup(srv.Close)
	rd := startDaemon(t, fmt.Sprintf(`
[nats]
servers = ["127.0.0.1:0"]
embedded = true

[input]
subjects = ["telegraf"]
data_format = "influx"
max_past = "2000h" # the test's hourly points are weeks old

[[rules]]
match = "disk,* used_percent"
step = "1h"
horizon = 48
min = 0.0
max = 100.0
threshold_above = 95.0

[output.webhook]
url = %q
`, srv.URL+"/hook"), nil)
	nc := connectTest(t, rd.d.embedded.ClientURL())
	waitSubscribed(t, rd.d.embedded, "telegraf")
	d := &diskFeed{t: t, nc: nc, r: rand.New(rand.NewPCG(3, 7)), t0: time.Now().Add(-600 * time.Hour).Truncate(time.Hour), v: 50}
	d.ramp(220, 0.2)
	// The event is posted firing before it is closed: one that opened and
	// closed before its first post would be posted resolved only.
	waitFor(t, time.Minute, "the alert posted firing", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(got) > 0 && got[0].Status == "firing"
	})
	d.clean(40, 60)
	waitFor(t, time.Minute, "the alert posted resolved", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(got) > 0 && got[len(got)-1].Status == "resolved"
	})
	mu.Lock()
	defer mu.Unlock()
	first, last := got[0], got[len(got)-1]
	if first.Status != "firing" || first.Labels["host"] != "web1" || first.Labels["threshold"] != "95" || first.Fingerprint != last.Fingerprint ||
		!last.EndsAt.After(first.StartsAt) {
		t.Errorf("posted %+v", got)
	}
}
