package statestore

import (
	"context"
	"fmt"
	"math"
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
	c, err := OpenCheckpoints(t.TempDir(), nil)
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
