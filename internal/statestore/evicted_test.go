package statestore

import (
	"context"
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/forecastd/forecastd/pipeline"
)

// The checkpoint queue bounds the states of series evicted at
// max_series: SaveEvicted refuses once the bytes queued for the writer
// reach MaxQueuedEvicted, so that a flood of new series, evicting faster
// than files can be written, does not move into the queue the memory
// eviction freed. Its byte count returns to zero once everything is
// written (the accounting holds through writes, replacements and
// deletes).
func TestCheckpointQueueBoundsEvictedStates(t *testing.T) {
	c, err := OpenCheckpoints(t.TempDir(), nil, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := pipeline.DefaultConfig()
	cfg.Window = 2000 // a large state, so that the bound is reached soon
	s, err := pipeline.New("x", cfg)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 * 2000 {
		if _, err := s.Push(pipeline.Point{Time: time.Unix(int64(i), 0), Value: math.Sin(float64(i) / 7)}); err != nil {
			t.Fatal(err)
		}
	}
	st, err := s.Export()
	if err != nil {
		t.Fatal(err)
	}
	size := len(Encode(st))
	refused := 0
	n := 4 * MaxQueuedEvicted / size
	for i := range n {
		st.Key = fmt.Sprintf("flood.%d", i)
		if !c.SaveEvicted(st) {
			refused++
		}
		if i%3 == 0 {
			c.Forget(st.Key) // replaced by a delete
		}
		c.mu.Lock()
		q := c.queued
		c.mu.Unlock()
		if q > MaxQueuedEvicted {
			t.Fatalf("after %d evicted states of %d bytes: %d bytes queued, bound %d", i+1, size, q, MaxQueuedEvicted)
		}
	}
	if refused == 0 {
		t.Logf("the writer kept up with %d states of %d bytes: no refusal to check", n, size)
	}
	if _, err := c.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if c.queued != 0 {
		t.Fatalf("%d bytes still counted as queued after close", c.queued)
	}
	t.Logf("%d evicted states of %d bytes offered, %d refused", n, size, refused)
}

// smallState is a real series' state after a few points at times from t0.
func smallState(t *testing.T, key string, t0 int64) pipeline.SeriesState {
	t.Helper()
	s, err := pipeline.New(key, pipeline.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		if _, err := s.Push(pipeline.Point{Time: time.Unix(t0+int64(i), 0), Value: math.Sin(float64(i) / 3)}); err != nil {
			t.Fatal(err)
		}
	}
	st, err := s.Export()
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// stored lists the keys with a state in the store, sorted.
func stored(t *testing.T, dir string) []string {
	t.Helper()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	states, errs := s.LoadAll()
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	var keys []string
	for _, st := range states {
		keys = append(keys, st.Key)
	}
	slices.Sort(keys)
	return keys
}

// TestKeepEvictedBound: a flood of series evicted at max_series keeps at
// most Limits.MaxEvicted states on disk, those evicted last; a series that
// came back (Saved) is live again, off the list, and its state is never
// deleted by later evictions; a forgotten series leaves the list.
func TestKeepEvictedBound(t *testing.T) {
	dir := t.TempDir()
	c, err := OpenCheckpoints(dir, nil, Limits{MaxEvicted: 3})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	evict := func(keys ...string) {
		for _, k := range keys {
			if !c.SaveEvicted(smallState(t, k, 0)) {
				t.Fatalf("%s: evicted state refused", k)
			}
		}
		if _, err := c.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	evict("e0", "e1", "e2", "e3", "e4")
	if got, want := stored(t, dir), []string{"e2", "e3", "e4"}; !slices.Equal(got, want) {
		t.Fatalf("after 5 evictions with room for 3: %v stored, want %v", got, want)
	}
	if _, _, ok := c.Saved("e0"); ok {
		t.Fatal("e0's state restored after it was discarded")
	}
	// e3 comes back: live, its state restored and checkpointed as usual.
	st, _, ok := c.Saved("e3")
	if !ok || st.Key != "e3" {
		t.Fatalf("e3's kept state not restored: %v", ok)
	}
	c.Save(st)
	c.Forget("e2") // idle: its state deleted, and off the list
	evict("e5", "e6", "e7")
	if got, want := stored(t, dir), []string{"e3", "e5", "e6", "e7"}; !slices.Equal(got, want) {
		t.Fatalf("after e3 came back, e2 was forgotten and 3 more evictions: %v stored, want %v (live e3 and the 3 evicted last)", got, want)
	}
	if _, err := c.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if st := c.Stats(); st.Discarded != 3 { // e0, e1, e4
		t.Errorf("%d states discarded, want 3", st.Discarded)
	}
}

// TestKeepEvictedUnchanged: a series evicted at max_series with its state
// saved before (a periodic checkpoint) and unchanged since is handed over
// by key alone (KeepEvicted), and its state counts against MaxEvicted as
// a saved evicted state does: the oldest beyond the bound is deleted.
func TestKeepEvictedUnchanged(t *testing.T) {
	dir := t.TempDir()
	c, err := OpenCheckpoints(dir, nil, Limits{MaxEvicted: 2})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, k := range []string{"k0", "k1", "k2", "k3"} {
		c.Saved(k) // made: live
		c.Save(smallState(t, k, 0))
	}
	if _, err := c.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"k0", "k1", "k2"} {
		c.KeepEvicted(k)
	}
	if _, err := c.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if got, want := stored(t, dir), []string{"k1", "k2", "k3"}; !slices.Equal(got, want) {
		t.Fatalf("3 series evicted unchanged with room for 2, 1 live: %v stored, want %v", got, want)
	}
	st, _, ok := c.Saved("k2") // comes back: its kept state restored
	if !ok || st.Key != "k2" {
		t.Fatalf("k2's kept state not restored: %v", ok)
	}
	if _, err := c.Close(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestMaxLoadedBound: a start finding more states than Limits.MaxLoaded
// loads the series whose last point is the newest and deletes the rest,
// so that a directory filled by an earlier run (or by hand) cannot make
// the start hold them all.
func TestMaxLoadedBound(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	var all []string
	for i := range 8 {
		st := smallState(t, fmt.Sprintf("s%d", i), int64(1000*((i*5)%8))) // last points in a shuffled order
		if err := s.Save(st.Key, st); err != nil {
			t.Fatal(err)
		}
		all = append(all, st.Key)
	}
	c, err := OpenCheckpoints(dir, nil, Limits{MaxLoaded: 3})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	// (i*5)%8 for i = 0…7: 0 5 2 7 4 1 6 3: the newest are s3 (7), s6 (6), s1 (5).
	want := []string{"s1", "s3", "s6"}
	if got := stored(t, dir); !slices.Equal(got, want) {
		t.Fatalf("stored after a start with room for 3 of %v: %v, want %v", all, got, want)
	}
	for _, k := range all {
		_, _, ok := c.Saved(k)
		if ok != slices.Contains(want, k) {
			t.Errorf("%s: restored %v", k, ok)
		}
	}
	if _, err := c.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if st := c.Stats(); st.Discarded != 5 {
		t.Errorf("%d discarded, want 5", st.Discarded)
	}
}
