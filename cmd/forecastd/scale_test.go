package main

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/forecastd/forecastd/sources"
)

// TestReadmeSeveralInstances: the README's server mapping is a valid
// nats-server configuration that partitions metrics.<series> as it says,
// and its forecastd configuration passes check-config.
func TestReadmeSeveralInstances(t *testing.T) {
	sec := docSection(t, "docs/operations.md", "Running several instances")
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
