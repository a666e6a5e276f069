package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/forecastd/forecastd/internal/kvstate"
	"github.com/forecastd/forecastd/internal/lease"
	"github.com/forecastd/forecastd/internal/natstest"
	"github.com/forecastd/forecastd/sources"
)

// TestReadmeSeveralInstances: the README's server mapping is a valid
// nats-server configuration that partitions metrics.<series> as it says,
// and its forecastd configuration passes check-config.
func TestReadmeSeveralInstances(t *testing.T) {
	sec := readmeSection(t, "Running several instances")
	confs, tomls := codeBlocks(sec, "conf"), codeBlocks(sec, "toml")
	if len(confs) != 1 || len(tomls) != 1 {
		t.Fatalf("README's several instances section: %d conf and %d toml blocks, want 1 each", len(confs), len(tomls))
	}
	dir := t.TempDir()
	conf := filepath.Join(dir, "nats.conf")
	if err := os.WriteFile(conf, []byte("listen: \"127.0.0.1:-1\"\n"+confs[0]), 0o600); err != nil {
		t.Fatal(err)
	}
	opts, err := server.ProcessConfigFile(conf)
	if err != nil {
		t.Fatalf("README's nats-server mapping: %v", err)
	}
	opts.NoLog, opts.NoSigs = true, true
	ns, err := server.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	ns.Start()
	t.Cleanup(func() { ns.Shutdown(); ns.WaitForShutdown() })
	if !ns.ReadyForConnections(10 * time.Second) {
		t.Fatal("not ready")
	}
	nc := connectTest(t, ns.ClientURL())
	sub, err := nc.SubscribeSync("pmetrics.>")
	if err != nil {
		t.Fatal(err)
	}
	nc.Flush()
	parts := map[string]bool{}
	for i := range 40 {
		nc.Publish(fmt.Sprintf("metrics.host%d", i), []byte("1"))
		m, err := sub.NextMsg(5 * time.Second)
		if err != nil {
			t.Fatal(err)
		}
		tok := strings.Split(m.Subject, ".")
		if len(tok) != 3 || tok[2] != fmt.Sprintf("host%d", i) || len(tok[1]) != 1 || tok[1] < "0" || tok[1] > "3" {
			t.Fatalf("metrics.host%d mapped to %q, want pmetrics.<0-3>.host%d", i, m.Subject, i)
		}
		parts[tok[1]] = true
	}
	if len(parts) < 3 {
		t.Fatalf("40 series over partitions %v only", parts)
	}
	p := writeConfig(t, tomls[0])
	cfg, err := LoadConfig(p)
	if err != nil {
		t.Fatalf("README's forecastd configuration: %v", err)
	}
	if js := cfg.Input.JetStream; js.Partitions != 4 || cfg.State.Store != storeJetStream {
		t.Fatalf("README's configuration: partitions %d, store %q", js.Partitions, cfg.State.Store)
	}
}

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

// TestAddStats: every counter of sources.Stats is summed, the parse
// errors by reason too (a field added to Stats is summed without a change
// here, or the test fails).
func TestAddStats(t *testing.T) {
	var a, b sources.Stats
	av, bv := reflect.ValueOf(&a).Elem(), reflect.ValueOf(&b).Elem()
	for i := range av.NumField() {
		switch f := av.Field(i); f.Kind() {
		case reflect.Uint64:
			f.SetUint(uint64(i + 1))
			bv.Field(i).SetUint(uint64(100 * (i + 1)))
		case reflect.Int64:
			f.SetInt(int64(i + 1))
			bv.Field(i).SetInt(int64(100 * (i + 1)))
		case reflect.Map:
		case reflect.Bool:
			if av.Type().Field(i).Name != "Connected" {
				t.Fatalf("sources.Stats.%s is a bool: addStats does not sum it", av.Type().Field(i).Name)
			}
		default:
			t.Fatalf("sources.Stats.%s is a %v: addStats does not sum it", av.Type().Field(i).Name, f.Kind())
		}
	}
	a.ParseErrors = map[sources.Reason]uint64{1: 1}
	b.ParseErrors = map[sources.Reason]uint64{1: 2, 2: 5}
	var sum sources.Stats
	addStats(&sum, a)
	addStats(&sum, b)
	sv := reflect.ValueOf(sum)
	for i := range sv.NumField() {
		switch f := sv.Field(i); f.Kind() {
		case reflect.Uint64:
			if f.Uint() != uint64(101*(i+1)) {
				t.Errorf("%s = %d, want %d", sv.Type().Field(i).Name, f.Uint(), 101*(i+1))
			}
		case reflect.Int64:
			if f.Int() != int64(101*(i+1)) {
				t.Errorf("%s = %d, want %d", sv.Type().Field(i).Name, f.Int(), 101*(i+1))
			}
		}
	}
	if sum.ParseErrors[1] != 3 || sum.ParseErrors[2] != 5 || len(sum.ParseErrors) != 2 {
		t.Errorf("ParseErrors = %v, want 1: 3, 2: 5", sum.ParseErrors)
	}
}
