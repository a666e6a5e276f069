package statestore

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

// slowDisk is a Store whose first write waits for release and whose later
// writes wait for the end of the test: a disk that takes longer than any
// deadline to write what is queued.
type slowDisk struct {
	*Store
	release, never chan struct{}
	first          chan struct{} // closed when the first write starts
	n              int           // writes begun; the writer goroutine's
}

func (s *slowDisk) SaveEncoded(key string, data []byte) error {
	s.n++
	if s.n == 1 {
		close(s.first)
		<-s.release
	} else {
		<-s.never
	}
	return s.Store.SaveEncoded(key, data)
}

// TestCheckpointsCloseKeepsDeadline: Close past its deadline returns once
// the file being written is, whatever is left queued; what was not
// written is counted (Unwritten) and Close's error says how many.
func TestCheckpointsCloseKeepsDeadline(t *testing.T) {
	st, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	disk := &slowDisk{Store: st, release: make(chan struct{}), never: make(chan struct{}), first: make(chan struct{})}
	t.Cleanup(func() { close(disk.never) })
	c := NewCheckpoints(disk, "test", nil, Limits{})
	const n = 100
	for i := range n {
		c.Save(smallState(t, fmt.Sprintf("s%03d", i), int64(i)))
	}
	<-disk.first
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	closed := make(chan error, 1)
	go func() { _, err := c.Close(ctx); closed <- err }()
	<-c.stop // Close is past its deadline and stops the writer
	close(disk.release)
	select {
	case err := <-closed:
		if !errors.Is(err, context.DeadlineExceeded) || c.Stats().Unwritten != n-1 {
			t.Fatalf("Close: %v; unwritten %d, want %d", err, c.Stats().Unwritten, n-1)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Close did not return: it waits for the writer to write everything queued")
	}
}

// TestCheckpointQueueLimit: Limits.MaxQueuedEvicted (the daemon's share
// of its memory budget) bounds SaveEvicted's queue below the package's
// ceiling, and Stats reports the bytes queued.
func TestCheckpointQueueLimit(t *testing.T) {
	st, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	disk := &slowDisk{Store: st, release: make(chan struct{}), never: make(chan struct{}), first: make(chan struct{})}
	state := smallState(t, "s000", 0) // keys of one length: states of one size
	size := len(Encode(state))
	c := NewCheckpoints(disk, "test", nil, Limits{MaxQueuedEvicted: 10 * size})
	saved := 0
	for i := range 100 {
		state.Key = fmt.Sprintf("s%03d", i)
		if c.SaveEvicted(state) {
			saved++
		}
		if q := c.Stats().Queued; q > int64(10*size) {
			t.Fatalf("%d bytes queued, bound %d", q, 10*size)
		}
	}
	if saved != 10 { // the one being written included
		t.Fatalf("%d evicted states saved, want the bound's 10", saved)
	}
	close(disk.release)
	close(disk.never)
	if _, err := c.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
}
