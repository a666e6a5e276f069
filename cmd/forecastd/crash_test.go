package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/forecastd/forecastd/internal/config"
	"github.com/forecastd/forecastd/internal/statestore"
	"github.com/forecastd/forecastd/pipeline"
)

var buildOnce struct {
	sync.Once
	bin string
	err error
}

// forecastdBinary builds the forecastd binary once per test run, as
// scripts/build does, with GOFLAGS=-buildvcs=false (TestBuildStampsVersion
// checks its stamps).
func forecastdBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "forecastd-bin-")
		if err != nil {
			buildOnce.err = err
			return
		}
		buildOnce.bin = filepath.Join(dir, "forecastd")
		cmd := exec.Command("../../scripts/build", buildOnce.bin)
		cmd.Env = append(os.Environ(), "GOFLAGS=-buildvcs=false")
		if out, err := cmd.CombinedOutput(); err != nil {
			buildOnce.err = fmt.Errorf("scripts/build: %v\n%s", err, out)
		}
	})
	if buildOnce.err != nil {
		t.Fatal(buildOnce.err)
	}
	return buildOnce.bin
}

// child is the forecastd binary running as a child process.
type child struct {
	cmd    *exec.Cmd
	logs   *syncBuffer
	exited chan struct{} // closed when it has exited, with err
	err    error
}

func startChild(t *testing.T, cfgPath string) *child {
	t.Helper()
	return startChildEnv(t, cfgPath)
}

// startChildEnv is startChild with env (KEY=value) added to the test's
// environment.
func startChildEnv(t *testing.T, cfgPath string, env ...string) *child {
	t.Helper()
	c := &child{cmd: exec.Command(forecastdBinary(t), "run", "-config", cfgPath), logs: &syncBuffer{}, exited: make(chan struct{})}
	c.cmd.Stdout, c.cmd.Stderr = c.logs, c.logs
	if len(env) > 0 {
		c.cmd.Env = append(os.Environ(), env...)
	}
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { c.err = c.cmd.Wait(); close(c.exited) }()
	t.Cleanup(func() {
		select {
		case <-c.exited:
		default:
			c.cmd.Process.Kill()
			<-c.exited
		}
	})
	return c
}

// TestDaemonKill9JetStream: the forecastd binary reads a JetStream stream
// with a state dir, is killed (SIGKILL) after acknowledging messages its
// last checkpoint does not cover, and is started again: it replays the
// stream, skips what its checkpoints had applied, and every forecast it
// ever published equals the uninterrupted run's (none learned twice), every
// point is forecast from (none lost), and the final state files equal the
// uninterrupted series' state, byte for byte. The clean stop that follows
// records the position of its last acks.
func TestDaemonKill9JetStream(t *testing.T) {
	ns := startNATS(t, true)
	nc := connectTest(t, ns.ClientURL())
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "K", Subjects: []string{"st.>"}}); err != nil {
		t.Fatal(err)
	}
	col := collect(t, nc, "forecast.>")
	stateDir := t.TempDir()
	cfgText := fmt.Sprintf(`
[nats]
servers = [%q]

[input]
subjects = ["st.>"]

[input.jetstream]
stream = "K"
durable = "fd"

[pipeline]
shutdown_timeout = "20s"

[state]
dir = %q
checkpoint_interval = "1s"
`, ns.ClientURL(), stateDir) + stateModels
	cfgPath := filepath.Join(t.TempDir(), "forecastd.toml")
	if err := os.WriteFile(cfgPath, []byte(cfgText), 0o644); err != nil {
		t.Fatal(err)
	}

	const n, cut, kill = 240, 100, 170
	ns3 := uint64(len(stateSeries))
	t0 := time.Now().Add(-time.Minute - n*time.Second).Truncate(time.Second)
	times := make([]time.Time, n)
	for i := range times {
		times[i] = t0.Add(time.Duration(i) * time.Second)
	}
	want := uninterrupted(t, cfgText, stateSeries, n, times)
	publish := func(from, to int) {
		for i := from; i < to; i++ {
			for k, key := range stateSeries {
				if _, err := js.Publish(ctx, key, fmt.Appendf(nil, `{"time":%d,"value":%v}`, times[i].Unix(), stateValue(k, i))); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	ackFloorNow := func() uint64 {
		cons, err := js.Consumer(ctx, "K", "fd")
		if err != nil {
			return 0
		}
		info, err := cons.Info(ctx)
		if err != nil {
			return 0
		}
		return info.AckFloor.Stream
	}

	// 1. Points 0..cut, a checkpoint covering them; points cut..kill,
	// acked; SIGKILL before the next checkpoint.
	c1 := startChild(t, cfgPath)
	publish(0, cut)
	waitFor(t, 30*time.Second, "a checkpoint covering the first points", func() bool {
		a, _ := statestore.ReadApplied(stateDir)
		return a.Seq >= ns3*cut
	})
	publish(cut, kill)
	waitFor(t, 30*time.Second, "every point acked", func() bool { return ackFloorNow() == ns3*kill })
	if err := c1.cmd.Process.Signal(os.Kill); err != nil {
		t.Fatal(err)
	}
	<-c1.exited
	a, _ := statestore.ReadApplied(stateDir)
	if a.Seq >= ns3*kill {
		t.Fatalf("the last checkpoint covers every point (%d): the kill came too late to test anything", a.Seq)
	}
	t.Logf("killed with %d messages acked, %d covered by the checkpoints", ns3*kill, a.Seq)

	// 2. Restart, the rest of the points, SIGTERM.
	c2 := startChild(t, cfgPath)
	publish(kill, n)
	waitFor(t, 60*time.Second, "every point acked after the restart", func() bool { return ackFloorNow() == ns3*n })
	for _, key := range stateSeries {
		waitFor(t, 30*time.Second, key+"'s last forecast", func() bool {
			got := col.series(key)
			return len(got) > 0 && got[len(got)-1].Origin.Equal(times[n-1])
		})
	}
	if err := c2.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	select {
	case <-c2.exited:
		if c2.err != nil {
			t.Fatalf("forecastd exited with %v\n%s", c2.err, c2.logs)
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("forecastd still running 60s after SIGINT\n%s", c2.logs)
	}
	logs := c2.logs.String()
	if !strings.Contains(logs, "replaying the stream") {
		t.Fatalf("the restarted daemon did not replay the stream:\n%s", logs)
	}
	// The clean stop's final checkpoint covers every point: a restart
	// would read nothing again.
	if a, err := statestore.ReadApplied(stateDir); err != nil || a.Seq != ns3*n {
		t.Fatalf("after the clean stop the checkpoints cover the stream up to %d (%v), want %d:\n%s", a.Seq, err, ns3*n, logs)
	}

	// Every forecast ever published equals the uninterrupted run's; every
	// point the uninterrupted run forecast from was forecast from.
	for _, key := range stateSeries {
		got := col.series(key)
		d, m := compareForecasts(t, key, got, want[key], times, 0)
		seen := map[int64]bool{}
		for _, p := range got {
			seen[p.Origin.Unix()] = true
		}
		for i := range want[key] {
			if !seen[times[i].Unix()] {
				t.Fatalf("%s: no forecast from point %d: lost", key, i)
			}
		}
		t.Logf("%s: %d forecasts published (%d origins, %d published again after the replay), all equal to the uninterrupted run's, max |Δ| = %g",
			key, m, len(want[key]), m-len(want[key]), d)
	}

	// The state files equal the uninterrupted series' state, with the last
	// stream sequence of each series.
	store, err := statestore.Open(stateDir)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(cfgPath, config.DaemonChecks)
	if err != nil {
		t.Fatal(err)
	}
	def, rules, _ := cfg.PipelineRules()
	for k, key := range stateSeries {
		got, err := store.Load(key)
		if err != nil {
			t.Fatal(err)
		}
		c := def
		for _, r := range rules {
			if ok, _ := filepath.Match(r.Match, key); ok {
				c = r.Config
				break
			}
		}
		s, _ := pipeline.New(key, c)
		for i := range n {
			s.Push(pipeline.Point{Time: times[i], Value: stateValue(k, i)})
		}
		w, err := s.Export()
		if err != nil {
			t.Fatal(err)
		}
		w.Seq = uint64(n-1)*ns3 + uint64(k) + 1
		if !bytes.Equal(statestore.Encode(got), statestore.Encode(w)) {
			t.Fatalf("%s: the checkpoint after the crash and restart differs from the uninterrupted state (seq %d, want %d; learned %d, want %d)",
				key, got.Seq, w.Seq, got.Learned, w.Learned)
		}
	}
	t.Logf("state files equal the uninterrupted run's, byte for byte")
}
