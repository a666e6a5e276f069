package sinks

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/forecastd/forecastd/anomaly/threshold"
)

func jsonDecode(r *http.Request, v any) error {
	return json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(v)
}

// TestWebhook: the webhook posts each state of an alert as Alertmanager's
// webhook notifications do (firing with a zero endsAt, then resolved at
// the closing), retrying after a failure, one fingerprint per alert.
func TestWebhook(t *testing.T) {
	var mu sync.Mutex
	var got []WebhookMessage
	fails := 2
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if fails > 0 {
			fails--
			http.Error(w, "not yet", http.StatusBadGateway)
			return
		}
		var m WebhookMessage
		if err := jsonDecode(r, &m); err != nil || r.Header.Get("Content-Type") != "application/json" {
			http.Error(w, "bad", http.StatusBadRequest)
			return
		}
		got = append(got, m)
	}))
	defer srv.Close()
	s, err := NewWebhook(WebhookConfig{URL: srv.URL + "/hook", RetryInterval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(ctxTimeout(t, 10*time.Second))
	if err := s.Write(diskRec("a", t0, threshold.Opened)); err != nil {
		t.Fatal(err)
	}
	if err := s.Flush(ctxTimeout(t, 30*time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := s.Write(diskRec("a", t0.Add(3*time.Hour), threshold.Closed)); err != nil {
		t.Fatal(err)
	}
	if err := s.Flush(ctxTimeout(t, 30*time.Second)); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 2 || len(got[0].Alerts) != 1 || len(got[1].Alerts) != 1 {
		t.Fatalf("posted %+v, want two messages of one alert", got)
	}
	f, r := got[0], got[1]
	if f.Version != "4" || f.Status != "firing" || f.Alerts[0].Status != "firing" || !f.Alerts[0].EndsAt.IsZero() || !f.Alerts[0].StartsAt.Equal(t0) {
		t.Errorf("firing message %+v", f)
	}
	if r.Status != "resolved" || !r.Alerts[0].EndsAt.Equal(t0.Add(3*time.Hour)) || r.Alerts[0].Fingerprint != f.Alerts[0].Fingerprint ||
		r.Alerts[0].Labels["host"] != "a" || r.Alerts[0].Annotations["state"] != "closed" {
		t.Errorf("resolved message %+v", r)
	}
	if st := s.Stats(); st.Errors != 2 || st.Delivered != 2 || st.Held != 0 {
		t.Errorf("stats %+v", st)
	}
}

// TestAlertLabels: tags become valid Prometheus label names, never
// overriding the alert's own labels; the count and the values are
// bounded, a cut value ending with a hash of the whole.
func TestAlertLabels(t *testing.T) {
	r := diskRec("a", t0, threshold.Opened)
	long := strings.Repeat("x", 100)
	r.Tags = []Tag{{Key: "9lives", Value: "1"}, {Key: "__name__", Value: "n"}, {Key: "alertname", Value: "mine"},
		{Key: "host", Value: "a"}, {Key: "long", Value: long + "1"}, {Key: "long2", Value: long + "2"}, {Key: "my-tag.x", Value: "v"}}
	l := alertLabels(&r, alertBounds{maxLabels: 32, maxLen: 64}, AlertNameThreshold, "threshold", "above", "95")
	want := map[string]string{"alertname": AlertNameThreshold, "tag_alertname": "mine", "tag_9lives": "1", "tag___name__": "n",
		"host": "a", "my_tag_x": "v", "kind": "threshold", "threshold": "95", "direction": "above"}
	for k, v := range want {
		if l[k] != v {
			t.Errorf("label %s = %q, want %q (%v)", k, l[k], v, l)
		}
	}
	if a, b := l["long"], l["long2"]; len(a) > 64 || len(b) > 64 || a == b || !strings.HasPrefix(a, "xxxx") {
		t.Errorf("long values %q and %q: want at most 64 bytes each, told apart", a, b)
	}
	if l := alertLabels(&r, alertBounds{maxLabels: 10, maxLen: 64}, AlertNameThreshold, "threshold", "above", "95"); len(l) != 10 || l["threshold"] != "95" || l["step"] != "1h" {
		t.Errorf("with max_labels 10: %v", l)
	}
	if got := boundValue("é"+strings.Repeat("é", 40), 32); len(got) > 32 || !strings.HasPrefix(got, "é") || !strings.Contains(got, "~") {
		t.Errorf("boundValue cut %q", got)
	}
}

// TestAlertConfigValidate: every problem of the alert sinks' tables at
// once, each naming its key.
func TestAlertConfigValidate(t *testing.T) {
	c := AlertmanagerConfig{URL: "127.0.0.1:9093", MaxAlerts: -1, MaxLabels: 2, MaxLabelLength: 8}
	c.ResendInterval.D, c.ResendInterval.Text = 0, "0s"
	err := c.Validate()
	for _, want := range []string{"url: want http(s)", "resend_interval: must be positive", "max_alerts: negative", "max_labels: at least 9", "max_label_length: at least 32"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v lacks %q", err, want)
		}
	}
	w := WebhookConfig{URL: "http://127.0.0.1/hook"}
	w.ResendInterval.Text = "0s"
	if err := w.Validate(); err != nil {
		t.Errorf("webhook with resend_interval 0s: %v", err)
	}
}
