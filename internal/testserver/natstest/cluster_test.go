package natstest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// TestClusterAfterServer: a single JetStream server, then a cluster, in
// one process: the cluster's JetStream serves R3 buckets (a test process
// may run both kinds one after the other).
func TestClusterAfterServer(t *testing.T) {
	for i := range 2 {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			ns := JetStream(t)
			js, _ := jetstream.New(Connect(t, ns))
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			if _, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "b"}); err != nil {
				t.Fatal(err)
			}
			ns.Shutdown()
			servers := Cluster(t, 3)
			js, _ = jetstream.New(Connect(t, servers...))
			if _, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "b", Replicas: 3}); err != nil {
				t.Fatalf("R3 bucket on a cluster started after a single server: %v", err)
			}
		})
	}
}
