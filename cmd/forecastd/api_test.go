package main

import (
	"encoding/json"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/forecastd/forecastd/internal/config"
	"github.com/forecastd/forecastd/internal/readapi"
)

// getJSON GETs path on the daemon's HTTP port into v, failing t unless
// it answers code.
func getJSON(t *testing.T, addr, path string, code int, v any) {
	t.Helper()
	resp, err := http.Get("http://" + addr + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != code {
		t.Fatalf("GET %s: %s, want %d", path, resp.Status, code)
	}
	if v != nil {
		if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
	}
}

// TestDaemonReadAPI: with [output.api], the daemon's HTTP port answers,
// beside /metrics, the series it forecasts (a page by glob) and one
// series' latest path with its band and its open threshold event, as
// the disk of docs/events.md fills.
func TestDaemonReadAPI(t *testing.T) {
	rd := startDaemon(t, `
[nats]
servers = ["127.0.0.1:0"]
embedded = true

[input]
subjects = ["telegraf"]
data_format = "influx"
max_past = "2000h" # the test's hourly points are weeks old

[http]
listen = "127.0.0.1:0"

[[rules]]
match = "disk,* used_percent"
step = "1h"
horizon = 48
min = 0.0
max = 100.0
threshold_above = 95.0

[output.api]
nats_service = true
`, nil)
	nc := connectTest(t, rd.d.embedded.ClientURL())
	waitSubscribed(t, rd.d.embedded, "telegraf")
	d := &diskFeed{t: t, nc: nc, r: rand.New(rand.NewPCG(3, 7)), t0: time.Now().Add(-600 * time.Hour).Truncate(time.Hour), v: 50}
	d.ramp(220, 0.2)
	addr := rd.d.httpAddr.String()
	const key = "disk,device=sda1,fstype=ext4,host=web1,mode=rw,path=/var used_percent"
	var s readapi.Series
	waitFor(t, time.Minute, "the series' open threshold event", func() bool {
		resp, err := http.Get("http://" + addr + "/api/v1/series/" + url.PathEscape(key))
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		s = readapi.Series{}
		return resp.StatusCode == http.StatusOK && json.NewDecoder(resp.Body).Decode(&s) == nil &&
			len(s.Resolutions) == 1 && len(s.Resolutions[0].Events) == 1
	})
	r := s.Resolutions[0]
	if r.Step != "1h" || len(r.Forecast.Path) != 48 || r.Tags["path"] != "/var" || r.Model.Kind != "aosvr" || r.Model.Forecasts == 0 ||
		r.Events[0].Kind != "threshold" || r.Events[0].ETA == nil {
		t.Errorf("series %+v", r)
	}
	var p readapi.SeriesPage
	getJSON(t, addr, "/api/v1/series?"+url.Values{"match": {"disk,*"}}.Encode(), http.StatusOK, &p)
	if len(p.Series) != 1 || p.Series[0].Key != key || p.Series[0].Resolutions[0].OpenEvents != 1 {
		t.Errorf("page %+v", p)
	}
	getJSON(t, addr, "/api/v1/series?limit=100000", http.StatusBadRequest, nil)
	getJSON(t, addr, "/api/v1/series/nope", http.StatusNotFound, nil)
	if m := scrape(t, addr); m["forecastd_api_series"] != 1 {
		t.Errorf("forecastd_api_series = %v, want 1 beside the other metrics", m["forecastd_api_series"])
	}
	readOverNATS(t, nc, key)
}

// readOverNATS: the same answers from the micro service on NATS, found by
// $SRV.PING.
func readOverNATS(t *testing.T, nc *nats.Conn, key string) {
	t.Helper()
	if m, err := nc.Request("$SRV.PING."+readapi.ServiceName, nil, 10*time.Second); err != nil || !strings.Contains(string(m.Data), readapi.ServiceName) {
		t.Fatalf("$SRV.PING: %v %v", m, err)
	}
	m, err := nc.Request(readapi.SubjectSeries, []byte(key), 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var s readapi.Series
	if err := json.Unmarshal(m.Data, &s); err != nil || s.Key != key || len(s.Resolutions) != 1 || len(s.Resolutions[0].Forecast.Path) != 48 {
		t.Errorf("%s over NATS: %.300s, %v", readapi.SubjectSeries, m.Data, err)
	}
	m, err = nc.Request(readapi.SubjectList, []byte(`{"match":"disk,*","limit":10}`), 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var p readapi.SeriesPage
	if err := json.Unmarshal(m.Data, &p); err != nil || len(p.Series) != 1 || p.Series[0].Key != key {
		t.Errorf("%s over NATS: %.300s, %v", readapi.SubjectList, m.Data, err)
	}
	m, err = nc.Request(readapi.SubjectSeries, []byte("nope"), 10*time.Second)
	if err != nil || m.Header.Get("Nats-Service-Error-Code") != "404" {
		t.Errorf("an unknown key over NATS: %v, %v", m, err)
	}
}

// TestAPIDoc: the tables of docs/api.md load.
func TestAPIDoc(t *testing.T) {
	b, err := os.ReadFile("../../docs/api.md")
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
}
