package main

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// logKeys returns the keys of a line of slog's text format, in order.
func logKeys(line string) []string {
	var keys []string
	for i := 0; i < len(line); {
		j := strings.IndexByte(line[i:], '=')
		if j < 0 {
			break
		}
		keys = append(keys, strings.TrimSpace(line[i:i+j]))
		i += j + 1
		if i < len(line) && line[i] == '"' { // a quoted value: up to its closing quote
			for i++; i < len(line) && line[i] != '"'; i++ {
				if line[i] == '\\' {
					i++
				}
			}
			i++
		} else {
			for i < len(line) && line[i] != ' ' {
				i++
			}
		}
	}
	return keys
}

// checkLogKeys fails t for a log line that repeats a key
// ("component=sinks component=sinks.influxdb").
func checkLogKeys(t *testing.T, logs string) {
	t.Helper()
	for _, line := range strings.Split(logs, "\n") {
		seen := map[string]bool{}
		for _, k := range logKeys(line) {
			if seen[k] {
				t.Errorf("log line repeats %s: %s", k, line)
				break
			}
			seen[k] = true
		}
	}
}

// TestDaemonLogsDrops: a point dropped for coming out of order is logged,
// with its reason and what to do, once per period for however many.
func TestDaemonLogsDrops(t *testing.T) {
	rd := startDaemon(t, `
[nats]
servers = ["127.0.0.1:0"]
embedded = true
[input]
subjects = ["drop.>"]
`, &daemon{dropLogEvery: 20 * time.Millisecond})
	waitSubscribed(t, rd.d.embedded, "drop.>")
	nc := connectTest(t, rd.d.embedded.ClientURL())
	t0 := time.Now().Add(-time.Hour).Unix()
	for _, dt := range []int64{0, 1, 2, 3, 1, 2} { // the last two out of order
		if err := nc.Publish("drop.a", fmt.Appendf(nil, `{"time":%d,"value":%d}`, t0+dt, dt)); err != nil {
			t.Fatal(err)
		}
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "two points out of order", func() bool { return rd.d.runner.Stats().OutOfOrder == 2 })
	const want = `msg="points dropped: not after their series' previous point" component=daemon reason=out_of_order`
	waitFor(t, 30*time.Second, "the drop logged", func() bool { return strings.Contains(rd.logs.String(), want) })
	if _, err := rd.stop(t); err != nil {
		t.Fatal(err)
	}
	logs := rd.logs.String()
	if n := strings.Count(logs, want); n > 2 || !strings.Contains(logs, "dropped_total=2 fix=") {
		t.Errorf("%d lines for 2 drops, or no total:\n%s", n, logs)
	}
	checkLogKeys(t, logs)
}

// TestBuildInfoRevision: forecastd_build_info carries the version and
// revision `forecastd version` prints, stamped at link time.
func TestBuildInfoRevision(t *testing.T) {
	defer func(v, r string) { version, revision = v, r }(version, revision)
	version, revision = "v1.2.3", "0123456789abcdef0123456789abcdef01234567"
	rd := startDaemon(t, `
[nats]
servers = ["127.0.0.1:0"]
embedded = true
[input]
subjects = ["bi.>"]
[http]
listen = "127.0.0.1:0"
`, nil)
	m := httpAddrRE.FindStringSubmatch(rd.logs.String())
	if m == nil {
		t.Fatalf("no http address in the log:\n%s", rd.logs)
	}
	var found string
	for k := range scrape(t, m[1]) {
		if strings.HasPrefix(k, "forecastd_build_info{") {
			found = k
		}
	}
	if !strings.Contains(found, `revision="`+revision+`"`) || !strings.Contains(found, `version="v1.2.3"`) {
		t.Errorf("build_info %q, want revision %s and version v1.2.3", found, revision)
	}
}
