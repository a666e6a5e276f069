package lease

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/forecastd/forecastd/internal/kvstate"
	"github.com/forecastd/forecastd/internal/testserver/natstest"
)

func open(t testing.TB, nc *nats.Conn, owner string, ttl time.Duration, replicas int) *Leases {
	t.Helper()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	l, err := Open(ctx, js, Config{Owner: owner, TTL: ttl, Replicas: replicas})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// TestAcquireExclusive: while one owner holds and renews a lease, another
// cannot acquire it and is told who holds it; once released, it can at
// once, with a greater epoch.
func TestAcquireExclusive(t *testing.T) {
	ns := natstest.JetStream(t)
	nc := natstest.Connect(t, ns)
	a, b := open(t, nc, "a", time.Second, 1), open(t, nc, "b", time.Second, 1)
	ctx := context.Background()
	la, err := a.Acquire(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	end := time.Now().Add(2500 * time.Millisecond) // 2.5 TTLs
	for time.Now().Before(end) {
		if err := la.Renew(ctx); err != nil {
			t.Fatal(err)
		}
		if !la.Valid() {
			t.Fatal("renewed lease not valid")
		}
		_, err := b.Acquire(ctx, 0)
		if !errors.Is(err, ErrHeld) || !strings.Contains(err.Error(), `held by "a"`) {
			t.Fatalf("acquire of a held lease: %v, want ErrHeld naming a", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	// Another partition is free.
	if _, err := b.Acquire(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if err := la.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if la.Valid() {
		t.Fatal("released lease valid")
	}
	lb, err := b.Acquire(ctx, 0)
	if err != nil {
		t.Fatalf("acquire after release: %v", err)
	}
	if lb.Epoch() <= la.Epoch() {
		t.Fatalf("epoch %d after %d", lb.Epoch(), la.Epoch())
	}
	if err := la.Renew(ctx); !errors.Is(err, ErrLost) {
		t.Fatalf("renew after release: %v, want ErrLost", err)
	}
}

// TestExpiryTakeoverFenced: a holder that stops renewing counts its lease
// invalid ¾ TTL after its last renewal was sent, before the server expires
// the key; another owner takes the partition after the TTL, its renewal
// then fails with ErrLost, and its kvstate claim is fenced: its commit and
// writes of the new holder's series fail with kvstate.ErrFenced.
func TestExpiryTakeoverFenced(t *testing.T) {
	ns := natstest.JetStream(t)
	nc := natstest.Connect(t, ns)
	ttl := time.Second
	a, b := open(t, nc, "a", ttl, 1), open(t, nc, "b", ttl, 1)
	js, _ := jetstream.New(nc)
	ctx := context.Background()
	states, err := kvstate.OpenBucket(ctx, js, kvstate.Config{})
	if err != nil {
		t.Fatal(err)
	}
	la, err := a.Acquire(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	sa, _, err := states.Claim(ctx, 2, la.Epoch(), "a")
	if err != nil {
		t.Fatal(err)
	}
	if err := sa.SaveEncoded("s", []byte("not read back")); err != nil {
		t.Fatal(err)
	}
	if err := sa.Commit(ctx, "S", "p.2.>", 10); err != nil {
		t.Fatal(err)
	}
	// a stops renewing (it hangs, or died).
	start := time.Now()
	var lb *Lease
	for lb == nil {
		// The holder gives up before anyone else can take over.
		if la.Valid() && time.Since(start) > ttl {
			t.Fatal("lease valid after its TTL without renewal")
		}
		l, err := b.Acquire(ctx, 2)
		switch {
		case err == nil:
			lb = l
			if la.Valid() {
				t.Fatalf("b acquired partition 2 %v after a's last renewal while a still counts it valid", time.Since(start))
			}
		case !errors.Is(err, ErrHeld):
			t.Fatal(err)
		case time.Since(start) > time.Minute: // a bound to catch a hang
			t.Fatalf("not taken over %v after the holder stopped renewing (ttl %v)", time.Since(start), ttl)
		default:
			time.Sleep(20 * time.Millisecond)
		}
	}
	took := time.Since(start)
	if took < ttl*3/4 {
		t.Fatalf("taken over after %v, before a's lease could have expired (ttl %v)", took, ttl)
	}
	t.Logf("taken over %v after the holder's last renewal (ttl %v)", took, ttl)
	if lb.Epoch() <= la.Epoch() {
		t.Fatalf("takeover epoch %d ≤ %d", lb.Epoch(), la.Epoch())
	}
	if err := la.Renew(ctx); !errors.Is(err, ErrLost) {
		t.Fatalf("old holder's renew: %v, want ErrLost", err)
	}
	sb, applied, err := states.Claim(ctx, 2, lb.Epoch(), "b")
	if err != nil {
		t.Fatal(err)
	}
	if applied.Seq != 10 || applied.Owner != "a" {
		t.Fatalf("new holder found %+v, want seq 10 by a", applied)
	}
	if err := sb.SaveEncoded("s", []byte("b's")); err != nil {
		t.Fatal(err)
	}
	if err := sa.Commit(ctx, "S", "p.2.>", 11); !errors.Is(err, kvstate.ErrFenced) {
		t.Fatalf("old holder's commit: %v, want kvstate.ErrFenced", err)
	}
	if err := sa.SaveEncoded("s", []byte("a's")); !errors.Is(err, kvstate.ErrFenced) {
		t.Fatalf("old holder's save: %v, want kvstate.ErrFenced", err)
	}
	if _, _, err := states.Claim(ctx, 2, la.Epoch(), "a"); !errors.Is(err, kvstate.ErrFenced) {
		t.Fatalf("old holder's claim again: %v, want kvstate.ErrFenced", err)
	}
	if err := sb.Commit(ctx, "S", "p.2.>", 12); err != nil {
		t.Fatal(err)
	}
}
