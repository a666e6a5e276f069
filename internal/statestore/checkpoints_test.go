package statestore

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/forecastd/forecastd/pipeline"
)

// TestCheckpointsRandomOps runs random sequences of Save and Forget over a
// few series, with a flush at random points: after each flush, the
// directory holds exactly the latest state of every series saved and not
// forgotten since (byte for byte), and nothing of the others.
func TestCheckpointsRandomOps(t *testing.T) {
	cfg := pipeline.DefaultConfig()
	keys := []string{"a", "b/c", "d e"}
	states := map[string][]pipeline.SeriesState{}
	for _, k := range keys {
		for n := 6; n <= 10; n++ {
			states[k] = append(states[k], export(t, series(t, k, cfg, n)))
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for seed := range uint64(5) {
		rng := rand.New(rand.NewPCG(seed, 7))
		dir := t.TempDir()
		c, err := OpenCheckpoints(dir, nil, Limits{})
		if err != nil {
			t.Fatal(err)
		}
		want := map[string][]byte{} // nil: no file
		for op := range 60 {
			k := keys[rng.IntN(len(keys))]
			if rng.IntN(4) == 0 {
				c.Forget(k)
				want[k] = nil
			} else {
				st := states[k][rng.IntN(len(states[k]))]
				c.Save(st)
				want[k] = Encode(st)
			}
			if rng.IntN(8) == 0 || op == 59 {
				round, err := c.Flush(ctx)
				if err != nil || round.Failed != 0 {
					t.Fatalf("seed %d op %d: flush: %+v, %v", seed, op, round, err)
				}
				for _, k := range keys {
					got, err := os.ReadFile(filepath.Join(dir, FileName(k)))
					switch {
					case want[k] == nil && !os.IsNotExist(err):
						t.Fatalf("seed %d op %d: %q's checkpoint exists (%v), it was forgotten or never saved", seed, op, k, err)
					case want[k] != nil && !bytes.Equal(got, want[k]):
						t.Fatalf("seed %d op %d: %q's checkpoint is not its latest state (%v)", seed, op, k, err)
					}
				}
			}
		}
		if _, err := c.Close(ctx); err != nil {
			t.Fatal(err)
		}
		if st := c.Stats(); st.Errors != 0 || st.Unwritten != 0 || st.Written == 0 {
			t.Fatalf("seed %d: stats %+v", seed, st)
		}
	}
}

// TestCheckpointsRestoreOnce: the states in the directory at open are
// handed over by key, from memory once, then (a series evicted at
// max_series and back) from their file until forgotten; an unreadable
// file is left alone and does not stop the others.
func TestCheckpointsRestoreOnce(t *testing.T) {
	dir := t.TempDir()
	store, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	st := export(t, series(t, "x", pipeline.DefaultConfig(), 8))
	if err := store.Save("x", st); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, FileName("y"))
	if err := os.WriteFile(bad, []byte("not a checkpoint"), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := OpenCheckpoints(dir, nil, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background())
	got, path, ok := c.Saved("x")
	if !ok || path != store.Path("x") || !bytes.Equal(Encode(got), Encode(st)) {
		t.Fatalf("Saved(x) = %v, %q; want the saved state from %s", ok, path, store.Path("x"))
	}
	// Asked again (x evicted at max_series and back), Saved reads x's
	// file, which holds the latest state handed over (none since).
	if again, _, ok := c.Saved("x"); !ok || !bytes.Equal(Encode(again), Encode(st)) {
		t.Fatalf("Saved(x) again = %v: want the state of x's file", ok)
	}
	c.Forget("x") // x evicted idle: its file is to be deleted
	if _, _, ok := c.Saved("x"); ok {
		t.Fatal("Saved(x) handed over the state of a forgotten series")
	}
	if _, _, ok := c.Saved("y"); ok {
		t.Fatal("an unreadable checkpoint was handed over")
	}
	if b, err := os.ReadFile(bad); err != nil || string(b) != "not a checkpoint" {
		t.Fatalf("the unreadable file was changed: %q, %v", b, err)
	}
}

// TestCheckpointsRetry: a write that fails (the file's path is taken by a
// directory) is counted, kept and retried at the next flush, and written
// once the path is free; a newer state replaces it.
func TestCheckpointsRetry(t *testing.T) {
	dir := t.TempDir()
	c, err := OpenCheckpoints(dir, nil, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	s := series(t, "k", pipeline.DefaultConfig(), 10)
	older := export(t, s)
	blocker := filepath.Join(dir, FileName("k"))
	if err := os.MkdirAll(filepath.Join(blocker, "x"), 0o700); err != nil {
		t.Fatal(err)
	}
	c.Save(older)
	round, err := c.Flush(ctx)
	// The writer may have tried once on its own before the flush's try.
	if err != nil || round.Failed < 1 || round.Written != 0 {
		t.Fatalf("flush with the path blocked: %+v, %v; want failures, nothing written", round, err)
	}
	if st := c.Stats(); st.Errors != uint64(round.Failed) || st.Unwritten != 1 {
		t.Fatalf("stats %+v, want %d errors, 1 unwritten", st, round.Failed)
	}
	// Still blocked: tried again, failing again.
	if round, _ := c.Flush(ctx); round.Failed != 1 {
		t.Fatalf("second flush %+v, want the write tried again and failed", round)
	}
	if err := os.RemoveAll(blocker); err != nil {
		t.Fatal(err)
	}
	round, err = c.Flush(ctx)
	if err != nil || round.Written != 1 || round.Failed != 0 {
		t.Fatalf("flush with the path free: %+v, %v; want 1 written", round, err)
	}
	if b, err := os.ReadFile(blocker); err != nil || !bytes.Equal(b, Encode(older)) {
		t.Fatalf("the retried checkpoint: %v", err)
	}
	if _, err := c.Close(ctx); err != nil {
		t.Fatal(err)
	}
	// Close with a write that cannot be done reports it.
	c, err = OpenCheckpoints(dir, nil, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(blocker); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(blocker, "x"), 0o700); err != nil {
		t.Fatal(err)
	}
	c.Save(older)
	if _, err := c.Close(ctx); err == nil || !strings.Contains(err.Error(), "not written") {
		t.Fatalf("Close with an unwritable checkpoint: %v", err)
	}
}

func TestAppliedRoundTrip(t *testing.T) {
	dir := t.TempDir()
	if a, err := ReadApplied(dir); err != nil || a != (Applied{}) {
		t.Fatalf("no file: %+v, %v; want the zero Applied", a, err)
	}
	for i := range uint64(20) {
		want := Applied{Stream: "S", Durable: fmt.Sprint("d", i%3), Seq: i * 1000}
		if err := WriteApplied(dir, want); err != nil {
			t.Fatal(err)
		}
		if got, err := ReadApplied(dir); err != nil || got != want {
			t.Fatalf("read %+v, %v; wrote %+v", got, err, want)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, AppliedFile), []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadApplied(dir); err == nil || !strings.Contains(err.Error(), AppliedFile) {
		t.Fatalf("a damaged file: %v, want an error naming it", err)
	}
	ents, err := os.ReadDir(dir)
	if err != nil || len(ents) != 1 {
		t.Fatalf("directory holds %d entries (%v), want only %s", len(ents), err, AppliedFile)
	}
}
