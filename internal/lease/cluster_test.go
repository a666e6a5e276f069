// The cluster tests run a 3-node nats-server cluster: they run in
// scripts/test's slow step (go test -tags slow), not in the default suite.
//go:build slow

package lease

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/forecastd/forecastd/internal/testserver/natstest"
)

// TestKeepersTakeOverOnCluster runs three Keepers (Max 3 of 6
// partitions) over a 3-node JetStream cluster with an R3 lease bucket:
// every partition is held by exactly one, the third is a standby; one
// holder is abandoned (as if killed) and its partitions are taken by the
// standby (within TTL + two periods on an idle machine: logged, not
// asserted). Throughout, sampled every 10 ms, no partition has two valid
// leases.
func TestKeepersTakeOverOnCluster(t *testing.T) {
	if testing.Short() && os.Getenv("CI") != "true" { // never skipped under CI
		t.Skip("3-node cluster")
	}
	servers := natstest.Cluster(t, 3)
	ttl := 2 * time.Second
	const parts = 6
	type inst struct {
		name string
		k    *Keeper
		mu   sync.Mutex
		got  map[int]*Lease
		lost []int
	}
	insts := make([]*inst, 3)
	for i := range insts {
		in := &inst{name: fmt.Sprintf("i%d", i), got: map[int]*Lease{}}
		l := open(t, natstest.Connect(t, servers[i]), in.name, ttl, 3)
		k, err := l.Keep(KeeperConfig{
			Partitions: parts, Max: 3,
			Acquired: func(le *Lease) { in.mu.Lock(); in.got[le.Partition()] = le; in.mu.Unlock() },
			Lost:     func(p int, err error) { in.mu.Lock(); in.lost = append(in.lost, p); delete(in.got, p); in.mu.Unlock() },
		})
		if err != nil {
			t.Fatal(err)
		}
		in.k = k
		insts[i] = in
		t.Cleanup(func() { k.Close(context.Background()) })
	}
	// No two valid leases on one partition, ever.
	stop := make(chan struct{})
	violation := make(chan string, 1)
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(10 * time.Millisecond):
			}
			owner := map[int]string{}
			for _, in := range insts {
				in.mu.Lock()
				for p, le := range in.got {
					if le.Valid() {
						if o, dup := owner[p]; dup {
							select {
							case violation <- fmt.Sprintf("partition %d valid at %s and %s", p, o, in.name):
							default:
							}
						}
						owner[p] = in.name
					}
				}
				in.mu.Unlock()
			}
		}
	})
	defer func() {
		close(stop)
		wg.Wait()
		select {
		case v := <-violation:
			t.Fatal(v)
		default:
		}
	}()
	allHeld := func(within time.Duration, live []*inst) {
		t.Helper()
		deadline := time.Now().Add(within)
		for {
			var all []int
			for _, in := range live {
				all = append(all, in.k.Held()...)
			}
			slices.Sort(all)
			if slices.Equal(all, []int{0, 1, 2, 3, 4, 5}) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("held %v after %v, want each of 0…5 once", all, within)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	allHeld(15*time.Second, insts)
	var victim *inst
	var survivors []*inst
	for _, in := range insts {
		if victim == nil && len(in.k.Held()) > 0 {
			victim = in
		} else {
			survivors = append(survivors, in)
		}
	}
	lostParts := victim.k.Held()
	victim.k.Abandon() // no release: the leases expire
	killed := time.Now()
	// A bound to catch a hang; the time taken is logged, not asserted
	// (it is TTL + two periods on an idle machine).
	allHeld(time.Minute, survivors)
	t.Logf("partitions %v of %s resumed on the others %v after it stopped (ttl %v)", lostParts, victim.name, time.Since(killed), ttl)
}
