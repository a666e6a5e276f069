// The scale-out tests run forecastd binaries over JetStream: they run in
// scripts/test's slow step (go test -tags slow), not in the default suite.
//go:build slow

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/forecastd/forecastd/internal/kvstate"
	"github.com/forecastd/forecastd/internal/lease"
	"github.com/forecastd/forecastd/internal/testserver/natstest"
)

// TestScaleOutPausedHolderFenced: an instance paused (SIGSTOP) longer than
// its lease loses its partitions; another holder takes one and claims its
// states. Resumed (SIGCONT), the paused instance forwards none of the
// points published meanwhile (no forecast from them: they are the new
// holder's), writes nothing over the new holder's claim, and stops with an
// error saying it no longer holds a partition.
func TestScaleOutPausedHolderFenced(t *testing.T) {
	if testing.Short() && os.Getenv("CI") != "true" { // never skipped under CI
		t.Skip("a forecastd binary")
	}
	ns := natstest.JetStream(t)
	nc := connectTest(t, ns.ClientURL())
	js, _ := jetstream.New(nc)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "P", Subjects: []string{"pm.>"}}); err != nil {
		t.Fatal(err)
	}
	col := collect(t, nc, "forecast.>")
	cfgPath := writeConfig(t, fmt.Sprintf(`
[nats]
servers = [%q]

[input.jetstream]
stream = "P"
durable = "fd"
partitions = 2
partition_subject = "pm.{partition}.>"

[state]
store = "jetstream"
lease_ttl = "2s"
instance = "paused"
checkpoint_interval = "500ms"
`, ns.ClientURL())+stateModels)
	keys := []string{"pm.0.aosvr", "pm.1.aosvr"}
	t0 := time.Now().Add(-time.Hour).Truncate(time.Second)
	publish := func(from, to int) {
		for i := from; i < to; i++ {
			for k, key := range keys {
				if _, err := js.Publish(ctx, key, fmt.Appendf(nil, `{"time":%d,"value":%v}`, t0.Add(time.Duration(i)*time.Second).Unix(), stateValue(k, i))); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	c := startChild(t, cfgPath)
	t.Cleanup(func() {
		c.cmd.Process.Signal(syscall.SIGCONT)
		if t.Failed() {
			t.Logf("logs:\n%s", c.logs)
		}
	})
	const n, more = 40, 20
	publish(0, n)
	for _, key := range keys {
		waitFor(t, 60*time.Second, key+"'s forecast from the last point", func() bool {
			got := col.series(key)
			return len(got) > 0 && got[len(got)-1].Origin.Equal(t0.Add((n-1)*time.Second))
		})
	}
	states, err := kvstate.OpenBucket(ctx, js, kvstate.Config{})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "a checkpoint of partition 1", func() bool {
		kv, _ := js.KeyValue(ctx, kvstate.DefaultBucket)
		e, err := kv.Get(ctx, "p1.applied")
		if err != nil {
			return false
		}
		var a kvstate.Applied
		json.Unmarshal(e.Value(), &a)
		return a.Seq > 0
	})
	leases, err := lease.Open(ctx, js, lease.Config{Owner: "thief", TTL: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	var le *lease.Lease
	waitFor(t, 10*time.Second, "partition 1's lease expired", func() bool {
		le, err = leases.Acquire(ctx, 1)
		return err == nil
	})
	store, applied, err := states.Claim(ctx, 1, le.Epoch(), "thief")
	if err != nil {
		t.Fatal(err)
	}
	if applied.Owner != "paused" || applied.Seq == 0 {
		t.Fatalf("partition 1's position before the theft: %+v, want the paused instance's, with a sequence", applied)
	}
	if err := store.Commit(ctx, applied.Stream, applied.Filter, applied.Seq); err != nil {
		t.Fatal(err)
	}
	publish(n, n+more)
	if err := c.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	select {
	case <-c.exited:
	case <-time.After(30 * time.Second):
		t.Fatal("the resumed instance still runs 30 s after losing its leases")
	}
	if c.err == nil || !strings.Contains(c.logs.String(), "no longer holds a partition") {
		t.Fatalf("exit %v, want an error saying it no longer holds a partition", c.err)
	}
	for _, key := range keys {
		for _, p := range col.series(key) {
			if !p.Origin.Before(t0.Add(n * time.Second)) {
				t.Fatalf("%s: forecast from %v, a point published after the instance lost its leases", key, p.Origin)
			}
		}
	}
	e, err := js.KeyValue(ctx, kvstate.DefaultBucket)
	if err != nil {
		t.Fatal(err)
	}
	got, err := e.Get(ctx, "p1.applied")
	if err != nil {
		t.Fatal(err)
	}
	var a kvstate.Applied
	json.Unmarshal(got.Value(), &a)
	if a.Epoch != le.Epoch() || a.Owner != "thief" || a.Seq != applied.Seq {
		t.Fatalf("partition 1's position after the paused instance stopped: %+v, want the thief's (epoch %d, seq %d)", a, le.Epoch(), applied.Seq)
	}
	t.Logf("paused instance stopped: %v; partition 1 stays the new holder's: %+v", c.err, a)
}
