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
	<-ctx.Done()
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
