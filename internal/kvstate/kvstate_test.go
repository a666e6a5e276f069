package kvstate

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/forecastd/forecastd/internal/statestore"
	"github.com/forecastd/forecastd/internal/testserver/natstest"
	"github.com/forecastd/forecastd/lab/dataset"
	"github.com/forecastd/forecastd/pipeline"
)

// state returns the state of a series of cfg that has taken n points of
// the Santa Fe laser series, one a second.
func state(t testing.TB, key string, cfg pipeline.Config, n int) pipeline.SeriesState {
	t.Helper()
	s, err := pipeline.New(key, cfg)
	if err != nil {
		t.Fatal(err)
	}
	v := dataset.MustLoad("santafe_laser_a").Values
	t0 := time.Date(2024, 1, 2, 3, 4, 5, 6, time.UTC)
	for i := range n {
		if _, err := s.Push(pipeline.Point{Time: t0.Add(time.Duration(i) * time.Second), Value: v[i%len(v)]}); err != nil {
			t.Fatal(err)
		}
	}
	st, err := s.Export()
	if err != nil {
		t.Fatal(err)
	}
	st.Seq = uint64(n)
	return st
}

func bucket(t testing.TB, nc *nats.Conn, cfg Config) *Bucket {
	t.Helper()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	b, err := OpenBucket(ctx, js, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func claim(t testing.TB, b *Bucket, p int, epoch uint64) (*Store, Applied) {
	t.Helper()
	s, a, err := b.Claim(context.Background(), p, epoch, fmt.Sprintf("holder-%d", epoch))
	if err != nil {
		t.Fatal(err)
	}
	return s, a
}

// hostile are series keys no file system or KV token would take as they
// are.
var hostile = []string{"a", "b/c", "..", "d e", "x.y.>", "*", "ünïcödé", "\x00\xff", strings.Repeat("k", 300)}

// TestStoreRoundTrip saves the state of every model kind and of hostile
// keys, and reads each back byte for byte (Load and LoadAll); partitions
// do not see each other's series; a deleted state is fs.ErrNotExist.
func TestStoreRoundTrip(t *testing.T) {
	ns := natstest.JetStream(t)
	b := bucket(t, natstest.Connect(t, ns), Config{})
	s, a := claim(t, b, 0, 1)
	if a.Seq != 0 {
		t.Fatalf("fresh partition: applied %+v", a)
	}
	cfg := pipeline.DefaultConfig()
	sog := cfg
	sog.Kind = pipeline.SOGSVR
	norma := cfg
	norma.Kind = pipeline.NORMA
	want := map[string][]byte{}
	for i, k := range hostile {
		c := []pipeline.Config{cfg, sog, norma}[i%3]
		st := state(t, k, c, 250+i)
		if err := s.Save(k, st); err != nil {
			t.Fatal(err)
		}
		want[k] = statestore.Encode(st)
	}
	// Saving again replaces (a revision-checked update).
	st := state(t, "a", cfg, 260)
	if err := s.Save("a", st); err != nil {
		t.Fatal(err)
	}
	want["a"] = statestore.Encode(st)
	for k, w := range want {
		got, err := s.Load(k)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(statestore.Encode(got), w) {
			t.Fatalf("series %q: loaded state differs from the saved one", k)
		}
	}
	// Another Store of the same epoch (a restart) lists them all.
	s2, _ := claim(t, b, 0, 1)
	all, errs := s2.LoadAll()
	if len(errs) != 0 {
		t.Fatal(errs)
	}
	if len(all) != len(want) {
		t.Fatalf("LoadAll: %d states, want %d", len(all), len(want))
	}
	for _, st := range all {
		if !bytes.Equal(statestore.Encode(st), want[st.Key]) {
			t.Fatalf("LoadAll: series %q differs from the saved state", st.Key)
		}
	}
	// Partition 1 sees none of partition 0's.
	p1, _ := claim(t, b, 1, 2)
	if all, errs := p1.LoadAll(); len(all) != 0 || len(errs) != 0 {
		t.Fatalf("partition 1: %d states, %v", len(all), errs)
	}
	if _, err := p1.Load("a"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("partition 1 Load(a): %v, want fs.ErrNotExist", err)
	}
	// Delete, twice.
	for range 2 {
		if err := s2.Delete("b/c"); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s2.Load("b/c"); !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), "kv:"+DefaultBucket+"/p0.s.b_c-") {
		t.Fatalf("Load after Delete: %v, want fs.ErrNotExist naming the key", err)
	}
	if all, _ := s2.LoadAll(); len(all) != len(want)-1 {
		t.Fatalf("LoadAll after Delete: %d states, want %d", len(all), len(want)-1)
	}
	// A save after a delete creates the key again.
	if err := s2.SaveEncoded("b/c", want["b/c"]); err != nil {
		t.Fatal(err)
	}
}

// TestStoreRejectsDamage: a value that is not a state, a corrupt state,
// and a state under another series' key are each an error naming the
// key, and do not stop LoadAll reading the others.
func TestStoreRejectsDamage(t *testing.T) {
	ns := natstest.JetStream(t)
	nc := natstest.Connect(t, ns)
	b := bucket(t, nc, Config{})
	s, _ := claim(t, b, 0, 1)
	good := state(t, "good", pipeline.DefaultConfig(), 230)
	if err := s.Save("good", good); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := b.kv.Put(ctx, Key(0, "junk"), []byte("hello")); err != nil {
		t.Fatal(err)
	}
	bad := frame(1, statestore.Encode(state(t, "corrupt", pipeline.DefaultConfig(), 230)))
	bad[len(bad)/2] ^= 0xff
	if _, err := b.kv.Put(ctx, Key(0, "corrupt"), bad); err != nil {
		t.Fatal(err)
	}
	if _, err := b.kv.Put(ctx, Key(0, "moved"), frame(1, statestore.Encode(good))); err != nil {
		t.Fatal(err)
	}
	all, errs := s.LoadAll()
	if len(all) != 1 || all[0].Key != "good" {
		t.Fatalf("LoadAll: %d states, want only \"good\"", len(all))
	}
	if len(errs) != 3 {
		t.Fatalf("LoadAll: errors %v, want 3", errs)
	}
	joined := fmt.Sprint(errs)
	for _, want := range []string{Key(0, "junk"), "no \"FKVS\" header", Key(0, "corrupt"), "holds series \"good\""} {
		if !strings.Contains(joined, want) {
			t.Errorf("LoadAll errors %v do not say %q", errs, want)
		}
	}
	if _, err := s.Load("corrupt"); !errors.Is(err, statestore.ErrChecksum) {
		t.Errorf("Load(corrupt): %v, want statestore.ErrChecksum", err)
	}
}

func restartable(t *testing.T, dir string, port int) *server.Server {
	t.Helper()
	o := &server.Options{ServerName: "r", Host: "127.0.0.1", Port: port, NoLog: true, NoSigs: true, JetStream: true, StoreDir: dir}
	ns, err := server.NewServer(o)
	if err != nil {
		t.Fatal(err)
	}
	ns.Start()
	if !ns.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats-server not ready")
	}
	return ns
}

// TestCheckpointsResumeAfterRestart runs statestore.Checkpoints over a
// Store, commits a position, restarts the nats-server on its storage, and
// has a new holder (a newer epoch) restore every series byte for byte and
// find the position.
func TestCheckpointsResumeAfterRestart(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "js")
	ns := restartable(t, dir, server.RANDOM_PORT)
	port := ns.Addr().(interface{ String() string }).String()
	nc, err := nats.Connect(ns.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	b := bucket(t, nc, Config{})
	s, _ := claim(t, b, 3, 7)
	c := statestore.NewCheckpoints(s, "kv", nil, statestore.Limits{})
	want := map[string][]byte{}
	for i, k := range []string{"cpu/host1", "mem host2", "x"} {
		st := state(t, k, pipeline.DefaultConfig(), 240+i)
		c.Save(st)
		want[k] = statestore.Encode(st)
	}
	c.Forget("x")
	delete(want, "x")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if round, err := c.Close(ctx); err != nil || round.Failed != 0 || round.Written+round.Deleted < 3 {
		t.Fatalf("close: %+v, %v", round, err)
	}
	if err := s.Commit(ctx, "POINTS", "points.3.>", 42); err != nil {
		t.Fatal(err)
	}
	nc.Close()
	ns.Shutdown()
	ns.WaitForShutdown()

	_, p, _ := strings.Cut(port, ":")
	var n int
	fmt.Sscan(p, &n)
	ns = restartable(t, dir, n)
	t.Cleanup(func() { ns.Shutdown(); ns.WaitForShutdown() })
	b = bucket(t, natstest.Connect(t, ns), Config{})
	s2, a := claim(t, b, 3, 9)
	if a.Seq != 42 || a.Stream != "POINTS" || a.Filter != "points.3.>" || a.Epoch != 7 {
		t.Fatalf("applied after restart: %+v, want seq 42 of POINTS points.3.> by epoch 7", a)
	}
	c2 := statestore.NewCheckpoints(s2, "kv", nil, statestore.Limits{})
	defer c2.Close(ctx)
	for k, w := range want {
		st, from, ok := c2.Saved(k)
		if !ok {
			t.Fatalf("series %q not restored", k)
		}
		if !bytes.Equal(statestore.Encode(st), w) {
			t.Fatalf("series %q (from %s) differs from the saved state", k, from)
		}
	}
	if _, _, ok := c2.Saved("x"); ok {
		t.Fatal("forgotten series x restored")
	}
}

// TestFencingRandom runs random sequences of claims (each a newer epoch),
// saves, deletes and commits by every holder so far over a few series of
// one partition. Invariants after every step: only the latest claimer's
// Commit succeeds; a holder whose epoch is older than the epoch that last
// wrote a key cannot write or delete it; the epoch a key's value was
// written at never decreases; the latest claimer's writes always succeed.
func TestFencingRandom(t *testing.T) {
	ns := natstest.JetStream(t)
	b := bucket(t, natstest.Connect(t, ns), Config{})
	keys := []string{"a", "b", "c"}
	data := statestore.Encode(state(t, "a", pipeline.DefaultConfig(), 220))
	enc := func(k string) []byte {
		st, err := statestore.Decode(data)
		if err != nil {
			t.Fatal(err)
		}
		st.Key = k
		return statestore.Encode(st)
	}
	ctx := context.Background()
	for seed := range uint64(4) {
		rng := rand.New(rand.NewPCG(seed, 11))
		p := int(seed)
		var holders []*Store
		written := map[string]uint64{} // key → epoch of its value; 0: none
		epoch := uint64(0)
		for step := range 80 {
			if len(holders) == 0 || rng.IntN(6) == 0 {
				epoch += uint64(1 + rng.IntN(3))
				s, _ := claim(t, b, p, epoch)
				holders = append(holders, s)
				continue
			}
			i := rng.IntN(len(holders))
			h := holders[i]
			latest := i == len(holders)-1
			k := keys[rng.IntN(len(keys))]
			switch rng.IntN(3) {
			case 0:
				err := h.Commit(ctx, "S", "f", uint64(step))
				if latest != (err == nil) {
					t.Fatalf("seed %d step %d: commit by epoch %d (latest %v): %v", seed, step, h.Epoch(), latest, err)
				}
				if err != nil && !errors.Is(err, ErrFenced) {
					t.Fatalf("seed %d step %d: %v, want ErrFenced", seed, step, err)
				}
			case 1:
				err := h.SaveEncoded(k, enc(k))
				if latest && err != nil {
					t.Fatalf("seed %d step %d: latest holder's save: %v", seed, step, err)
				}
				if written[k] > h.Epoch() && err == nil {
					t.Fatalf("seed %d step %d: epoch %d overwrote %q written at epoch %d", seed, step, h.Epoch(), k, written[k])
				}
				if err == nil {
					written[k] = h.Epoch()
				} else if !errors.Is(err, ErrFenced) {
					t.Fatalf("seed %d step %d: %v, want ErrFenced", seed, step, err)
				}
			case 2:
				err := h.Delete(k)
				if latest && err != nil {
					t.Fatalf("seed %d step %d: latest holder's delete: %v", seed, step, err)
				}
				if written[k] > h.Epoch() && err == nil {
					t.Fatalf("seed %d step %d: epoch %d deleted %q written at epoch %d", seed, step, h.Epoch(), k, written[k])
				}
				if err == nil {
					written[k] = 0
				}
			}
			// The bucket agrees with the model.
			for _, k := range keys {
				e, err := b.kv.Get(ctx, Key(p, k))
				var got uint64
				if err == nil {
					got, _, _ = unframe(e.Value())
				}
				if got != written[k] {
					t.Fatalf("seed %d step %d: %q written at epoch %d, want %d", seed, step, k, got, written[k])
				}
			}
		}
		// A claim older than the latest is refused.
		if _, _, err := b.Claim(ctx, p, 1, "late"); epoch > 1 && !errors.Is(err, ErrFenced) {
			t.Fatalf("seed %d: claim at epoch 1 after %d: %v, want ErrFenced", seed, epoch, err)
		}
	}
}

// TestCommitForwardOnly: a position below the recorded one is refused,
// naming both.
func TestCommitForwardOnly(t *testing.T) {
	ns := natstest.JetStream(t)
	b := bucket(t, natstest.Connect(t, ns), Config{})
	s, _ := claim(t, b, 0, 1)
	ctx := context.Background()
	if err := s.Commit(ctx, "S", "f", 10); err != nil {
		t.Fatal(err)
	}
	err := s.Commit(ctx, "S", "f", 9)
	if err == nil || !strings.Contains(err.Error(), "commit sequence 9, below the recorded 10") {
		t.Fatalf("commit 9 after 10: %v", err)
	}
	if got := s.Applied(); got.Seq != 10 {
		t.Fatalf("applied %+v after refused commit", got)
	}
}
