package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/forecastd/forecastd/internal/testserver/influxtest"
	"github.com/forecastd/forecastd/sinks"
)

// tomlMap decodes TOML text, failing t.
func tomlMap(t *testing.T, what, text string) map[string]any {
	t.Helper()
	var m map[string]any
	if _, err := toml.Decode(text, &m); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return m
}

func readText(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestTelegrafReadme: what the README's "With Telegraf" section shows is
// what telegraf/telegraf.conf and telegraf/forecastd.toml hold, and every
// fielddrop list the documentation offers for Telegraf's fields (that
// section, "Data formats", config.example.toml) is the same one.
func TestTelegrafReadme(t *testing.T) {
	blocks := codeBlocks(readmeSection(t, "With Telegraf"), "toml")
	if len(blocks) != 2 {
		t.Fatalf("%d toml blocks in \"With Telegraf\", want 2 (Telegraf's outputs, forecastd's input and rules)", len(blocks))
	}
	tele := tomlMap(t, "telegraf/telegraf.conf", readText(t, "../../telegraf/telegraf.conf"))
	fd := tomlMap(t, "telegraf/forecastd.toml", readText(t, "../../telegraf/forecastd.toml"))

	shown := tomlMap(t, "README's Telegraf outputs", blocks[0])
	for _, out := range []string{"nats", "influxdb"} {
		got := shown["outputs"].(map[string]any)[out]
		want := tele["outputs"].(map[string]any)[out]
		if !reflect.DeepEqual(got, want) {
			t.Errorf("README's [[outputs.%s]] %v, telegraf/telegraf.conf's %v", out, got, want)
		}
	}
	shown = tomlMap(t, "README's forecastd input", blocks[1])
	for _, k := range []string{"input", "rules"} {
		if !reflect.DeepEqual(shown[k], fd[k]) {
			t.Errorf("README's %s %v, telegraf/forecastd.toml's %v", k, shown[k], fd[k])
		}
	}
	// Telegraf sends where forecastd listens, in the format it reads.
	nats := tele["outputs"].(map[string]any)["nats"].([]map[string]any)[0]
	in := fd["input"].(map[string]any)
	if !reflect.DeepEqual(nats["servers"], fd["nats"].(map[string]any)["servers"]) ||
		!reflect.DeepEqual([]any{nats["subject"]}, in["subjects"]) || nats["data_format"] != in["data_format"] {
		t.Errorf("Telegraf's [[outputs.nats]] %v does not match forecastd's [nats] and [input] %v", nats, in)
	}

	lists := map[string]any{"telegraf/forecastd.toml": in["fielddrop"]}
	for _, b := range codeBlocks(docSection(t, "docs/data.md", "Data formats"), "toml") {
		if strings.Contains(b, "fielddrop") {
			lists["README's Data formats"] = tomlMap(t, "README's Data formats", b)["fielddrop"]
		}
	}
	m := regexp.MustCompile(`(?m)^#\s+(fielddrop = \[.*\])$`).FindStringSubmatch(readText(t, "../../config.example.toml"))
	if m == nil {
		t.Fatal("config.example.toml shows no fielddrop on one line")
	}
	lists["config.example.toml"] = tomlMap(t, "config.example.toml's fielddrop", m[1])["fielddrop"]
	for name, l := range lists {
		if !reflect.DeepEqual(l, in["fielddrop"]) {
			t.Errorf("%s's fielddrop %v, telegraf/forecastd.toml's %v", name, l, in["fielddrop"])
		}
	}
	if len(lists) != 3 {
		t.Errorf("fielddrop lists found: %v, want 3", lists)
	}
}

// TestTelegrafEndToEnd feeds the committed Telegraf capture, as Telegraf's
// [[outputs.nats]] of telegraf/telegraf.conf would send it (a message per
// gather, on its subject), to a daemon run on telegraf/forecastd.toml as
// committed, but for its ports: its embedded nats-server and a real
// InfluxDB 1.8 without the database. The database is created; every
// field that moves, and none that is constant, becomes a series whose
// forecasts reach InfluxDB; percentages stay in [0, 100] and load
// averages at or above 0; nothing is refused or dropped.
func TestTelegrafEndToEnd(t *testing.T) {
	influx := influxtest.Shared(t, influxtest.Options{})
	db := influx.Database + "_forecastd" // on the shared server, not yet created
	cfg := readText(t, "../../telegraf/forecastd.toml")
	for old, new := range map[string]string{
		"nats://127.0.0.1:4222": "nats://127.0.0.1:0",
		"http://127.0.0.1:8086": influx.URL,
		"127.0.0.1:9470":        "127.0.0.1:0",
		`bucket = "forecastd"`:  `bucket = "` + db + `"`,
	} {
		if !strings.Contains(cfg, old) {
			t.Fatalf("telegraf/forecastd.toml has no %s", old)
		}
		cfg = strings.ReplaceAll(cfg, old, new)
	}
	tele := tomlMap(t, "telegraf/telegraf.conf", readText(t, "../../telegraf/telegraf.conf"))
	subject := tele["outputs"].(map[string]any)["nats"].([]map[string]any)[0]["subject"].(string)

	// The capture's gathers, one message each, moved to end now (max_past).
	f, err := os.Open("../../testdata/telegraf/capture.lp")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var stamps []int64
	gathers := map[int64][]string{}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		i := strings.LastIndexByte(line, ' ')
		ts, err := strconv.ParseInt(line[i+1:], 10, 64)
		if err != nil {
			t.Fatalf("capture line %q: %v", line, err)
		}
		if _, ok := gathers[ts]; !ok {
			stamps = append(stamps, ts)
		}
		gathers[ts] = append(gathers[ts], line[:i])
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	const n = 240 // gathers: four minutes at 1 s
	stamps = stamps[:n]
	shift := time.Now().Add(-time.Minute).UnixNano() - stamps[n-1]

	rd := startDaemon(t, cfg, nil)
	waitSubscribed(t, rd.d.embedded, subject)
	nc := connectTest(t, rd.d.embedded.ClientURL())
	for i, ts := range stamps {
		var b strings.Builder
		for _, l := range gathers[ts] {
			fmt.Fprintf(&b, "%s %d\n", l, ts+shift)
		}
		if err := nc.Publish(subject, []byte(b.String())); err != nil {
			t.Fatal(err)
		}
		// Telegraf sends a gather every 10 s; this sends the next once the
		// last is processed and InfluxDB's buffer is under half full.
		waitFor(t, time.Minute, "the gather processed", func() bool {
			st := rd.d.src.Stats()
			return st.Received == uint64(i+1) && rd.d.runner.Stats().Processed == st.Points &&
				sinkOf[*sinks.Influx](rd.d).Stats().Buffered < sinks.DefaultMetricBufferLimit/2 // telegraf/forecastd.toml keeps the default
		})
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 2*time.Minute, "every point processed", func() bool {
		st := rd.d.src.Stats()
		return st.Received == n && st.Points > 0 && rd.d.runner.Stats().Processed == st.Points
	})
	src, run := rd.d.src.Stats(), rd.d.runner.Stats()
	if _, err := rd.stop(t); err != nil {
		t.Fatalf("stop: %v\n%s", err, rd.logs)
	}
	checkLogKeys(t, rd.logs.String())
	for r, c := range src.ParseErrors {
		if c > 0 {
			t.Errorf("%d parse errors %s", c, r)
		}
	}
	if src.Refused+src.Dropped > 0 || run.OutOfOrder+run.DroppedQueueFull > 0 {
		t.Errorf("source %+v, runner %+v: something refused or dropped", src, run)
	}
	if st := sinkOf[*sinks.Influx](rd.d).Stats(); st.Dropped+st.Rejected > 0 || st.Written == 0 {
		t.Errorf("influxdb %+v: want everything written\n%s", st, rd.logs)
	}

	query := func(q string) [][]any {
		t.Helper()
		var ans struct {
			Results []struct {
				Series []struct{ Values [][]any }
			}
		}
		out := influx.Query(t, strings.ReplaceAll(q, "FROM forecast", `FROM "`+db+`"."autogen"."forecast"`))
		if err := json.Unmarshal([]byte(out), &ans); err != nil || len(ans.Results) == 0 || len(ans.Results[0].Series) == 0 {
			t.Fatalf("%s: %s (%v)", q, out, err)
		}
		return ans.Results[0].Series[0].Values
	}
	series := map[string]bool{}
	for _, v := range query(`SHOW TAG VALUES ON "` + db + `" FROM "forecast" WITH KEY = series_key`) {
		series[v[1].(string)] = true
	}
	// 64 of the capture's 100 fields move (sources' TestFieldFilterTelegrafCapture).
	if len(series) != 64 {
		t.Errorf("%d series in InfluxDB, want 64: %v", len(series), series)
	}
	for _, constant := range []string{"mem,host=capture total", "system,host=capture n_cpus", "mem,host=capture swap_total"} {
		if series[constant] {
			t.Errorf("constant series %q forecast", constant)
		}
	}
	for _, tc := range []struct {
		where  string
		lo, hi float64
	}{
		{`src_field =~ /_percent$/ OR src_measurement = 'cpu'`, 0, 100},
		{`src_measurement = 'system' AND src_field =~ /^load/`, 0, 1e9},
	} {
		v := query(`SELECT min("yhat"), max("yhat"), min("yhat_lower"), max("yhat_upper") FROM forecast WHERE ` + tc.where)[0]
		for _, x := range v[1:] {
			if f, ok := x.(float64); !ok || f < tc.lo || f > tc.hi {
				t.Errorf("%s: min yhat, max yhat, min lower, max upper %v: want within [%v, %v]", tc.where, v[1:], tc.lo, tc.hi)
				break
			}
		}
	}
}
