package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/forecastd/forecastd/internal/config"
	"github.com/nats-io/nats-server/v2/server"
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
	cfg, err := config.Load(p, config.DaemonChecks)
	if err != nil {
		t.Fatalf("README's forecastd configuration: %v", err)
	}
	if js := cfg.Input.JetStream; js.Partitions != 4 || !cfg.State.JetStream() {
		t.Fatalf("README's configuration: partitions %d, store %q", js.Partitions, cfg.State.Store)
	}
}
