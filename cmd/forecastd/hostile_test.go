package main

import (
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestDaemonReloadDuringCheckpoints: SIGHUPs while the checkpoints run
// every millisecond and points flow. Under -race, the reload must not
// write the configuration the checkpoint loop and the budget loop read.
func TestDaemonReloadDuringCheckpoints(t *testing.T) {
	base := fmt.Sprintf(`
[nats]
servers = ["127.0.0.1:0"]
embedded = true

[input]
subjects = ["hup.>"]

[pipeline]
shutdown_timeout = "20s"
memory_budget = "1GiB"

[state]
dir = %q
checkpoint_interval = "1ms"

[model]
kind = "norma"
scale = "fixed:-2,2"
`, t.TempDir())
	rd := startDaemon(t, base+"dim = 2\n", nil)
	nc := connectTest(t, rd.d.embedded.ClientURL())
	waitSubscribed(t, rd.d.embedded, "hup.>")
	const reloads = 200
	for i := range reloads {
		// Renamed into place: a reload never reads a half-written file.
		tmp := rd.path + ".new"
		if err := os.WriteFile(tmp, []byte(base+fmt.Sprintf("dim = %d\n", 2+i%3)), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, rd.path); err != nil {
			t.Fatal(err)
		}
		for k := range 4 {
			if err := nc.Publish(fmt.Sprintf("hup.s%d", k), fmt.Appendf(nil, `{"time":%d,"value":%v}`, 1_700_000_000+i, float64(i%7)/7)); err != nil {
				t.Fatal(err)
			}
		}
		rd.sigs <- syscall.SIGHUP
	}
	waitFor(t, 60*time.Second, "every reload logged", func() bool {
		return strings.Count(rd.logs.String(), "reloaded") >= reloads
	})
	if n := strings.Count(rd.logs.String(), "reload failed"); n > 0 {
		t.Fatalf("%d reloads failed\n%s", n, rd.logs)
	}
	if _, err := rd.stop(t); err != nil {
		t.Fatalf("stop: %v\n%s", err, rd.logs)
	}
}
