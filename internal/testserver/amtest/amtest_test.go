package amtest

import (
	"bytes"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/forecastd/forecastd/internal/testserver/proc"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestStartRestart: an alert posted is listed; after a stop and a restart
// on the same port the server answers again, without the alert
// (Alertmanager keeps none across a restart).
func TestStartRestart(t *testing.T) {
	s := Start(t, "")
	post := func() {
		t.Helper()
		body := fmt.Sprintf(`[{"labels":{"alertname":"T","x":"1"},"endsAt":%q}]`, time.Now().Add(time.Hour).UTC().Format(time.RFC3339))
		resp, err := proc.Client.Post(s.URL+"/api/v2/alerts", "application/json", bytes.NewReader([]byte(body)))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("POST: %s", resp.Status)
		}
	}
	post()
	as, err := s.Alerts(`x="1"`)
	if err != nil || len(as) != 1 || as[0].Labels["alertname"] != "T" {
		t.Fatalf("alerts %+v, %v", as, err)
	}
	url := s.URL
	s.Stop()
	if _, err := s.Alerts(); err == nil {
		t.Fatal("a stopped server answers")
	}
	s.Restart()
	if as, err := s.Alerts(); err != nil || len(as) != 0 || s.URL != url {
		t.Fatalf("after the restart on %s: %+v, %v", s.URL, as, err)
	}
}
