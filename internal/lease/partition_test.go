package lease

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// partitionConf is the server mapping the README's "Running several
// instances" shows: the series token of metrics.<series>.<field> picks one
// of 4 partitions, by hash, and the stream stores pmetrics.<p>.….
const partitionConf = `
listen: "127.0.0.1:-1"
jetstream { store_dir: %q }
mappings {
  "metrics.*.*": "pmetrics.{{partition(4,1)}}.{{wildcard(1)}}.{{wildcard(2)}}"
}
`

// TestSubjectMappingPartitions runs a nats-server with the partition
// mapping above and a stream of pmetrics.>: every series lands in one
// partition always, the partitions split the series, and a consumer of
// one partition created at a start sequence (as a new holder resumes after
// the partition's checkpointed sequence) receives exactly that
// partition's messages after it, none before, none of other partitions.
func TestSubjectMappingPartitions(t *testing.T) {
	dir := t.TempDir()
	conf := filepath.Join(dir, "nats.conf")
	if err := os.WriteFile(conf, fmt.Appendf(nil, partitionConf, filepath.Join(dir, "js")), 0o600); err != nil {
		t.Fatal(err)
	}
	opts, err := server.ProcessConfigFile(conf)
	if err != nil {
		t.Fatal(err)
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
	nc, err := nats.Connect(ns.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "POINTS", Subjects: []string{"pmetrics.>"}}); err != nil {
		t.Fatal(err)
	}
	const series, rounds = 40, 5
	for r := range rounds {
		for s := range series {
			if _, err := js.Publish(ctx, fmt.Sprintf("metrics.host%d.cpu", s), fmt.Appendf(nil, "%d", r)); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Where each series went, and every message's partition by sequence.
	part := map[string]string{}
	bySeq := map[uint64]string{}
	cons, err := js.OrderedConsumer(ctx, "POINTS", jetstream.OrderedConsumerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	for range series * rounds {
		m, err := cons.Next(jetstream.FetchMaxWait(5 * time.Second))
		if err != nil {
			t.Fatal(err)
		}
		tok := strings.Split(m.Subject(), ".")
		if len(tok) != 4 || tok[0] != "pmetrics" || tok[3] != "cpu" {
			t.Fatalf("stored subject %q, want pmetrics.<p>.<series>.cpu", m.Subject())
		}
		if p, seen := part[tok[2]]; seen && p != tok[1] {
			t.Fatalf("series %s in partitions %s and %s", tok[2], p, tok[1])
		}
		part[tok[2]] = tok[1]
		md, _ := m.Metadata()
		bySeq[md.Sequence.Stream] = tok[1]
	}
	used := map[string]int{}
	for _, p := range part {
		used[p]++
	}
	if len(part) != series || len(used) < 3 {
		t.Fatalf("%d series over partitions %v; want %d series over ≥ 3 of 4", len(part), used, series)
	}
	// Resume partition "2" after sequence start−1, as a takeover does.
	start := uint64(series*rounds/2 + 1)
	c, err := js.CreateConsumer(ctx, "POINTS", jetstream.ConsumerConfig{
		Durable: "forecastd-p2", FilterSubject: "pmetrics.2.>", AckPolicy: jetstream.AckExplicitPolicy,
		DeliverPolicy: jetstream.DeliverByStartSequencePolicy, OptStartSeq: start,
	})
	if err != nil {
		t.Fatal(err)
	}
	var want, got []uint64
	for seq, p := range bySeq {
		if p == "2" && seq >= start {
			want = append(want, seq)
		}
	}
	slices.Sort(want)
	if len(want) == 0 {
		t.Fatalf("partition 2 has no message from sequence %d: the series spread %v proves nothing", start, used)
	}
	for range want {
		m, err := c.Next(jetstream.FetchMaxWait(5 * time.Second))
		if err != nil {
			t.Fatal(err)
		}
		md, _ := m.Metadata()
		got = append(got, md.Sequence.Stream)
		m.Ack()
	}
	if _, err := c.Next(jetstream.FetchMaxWait(300 * time.Millisecond)); err == nil {
		t.Fatal("partition 2's consumer received more than its messages after the start sequence")
	}
	if !slices.Equal(got, want) {
		t.Fatalf("partition 2 from sequence %d: got %v, want %v", start, got, want)
	}
}
