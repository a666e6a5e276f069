// The cluster tests run a 3-node nats-server cluster: they run in
// scripts/test's slow step (go test -tags slow), not in the default suite.
//go:build slow

package kvstate

import (
	"bytes"
	"context"
	"os"
	"testing"
	"time"

	"github.com/forecastd/forecastd/internal/statestore"
	"github.com/forecastd/forecastd/internal/testserver/natstest"
	"github.com/forecastd/forecastd/pipeline"
)

// TestReplicatedBucketSurvivesServerLoss keeps states in an R3 bucket on a
// 3-node cluster, stops one server, and reads and writes them through the
// other two.
func TestReplicatedBucketSurvivesServerLoss(t *testing.T) {
	if testing.Short() && os.Getenv("CI") != "true" { // never skipped under CI
		t.Skip("3-node cluster")
	}
	servers := natstest.Cluster(t, 3)
	nc := natstest.Connect(t, servers[1], servers[2])
	b := bucket(t, nc, Config{Replicas: 3})
	s, _ := claim(t, b, 0, 1)
	st := state(t, "a", pipeline.DefaultConfig(), 230)
	if err := s.Save("a", st); err != nil {
		t.Fatal(err)
	}
	servers[0].Shutdown()
	servers[0].WaitForShutdown()
	var got pipeline.SeriesState
	var err error
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) { // while the stream elects a leader
		if got, err = s.Load("a"); err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(statestore.Encode(got), statestore.Encode(st)) {
		t.Fatal("state read after a server's loss differs")
	}
	for time.Now().Before(deadline) {
		if err = s.Commit(context.Background(), "S", "f", 5); err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
}
