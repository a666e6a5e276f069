package sources

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestStopAbandonedReaderReturnsLate: a reader that stopIntake abandoned
// (stuck in nats.go's pull iterator past the deadline and the grace) and
// that then returns with a message must not send on the closed Messages
// channel: the message is counted as dropped (JetStream would redeliver
// it), nothing panics.
func TestStopAbandonedReaderReturnsLate(t *testing.T) {
	ns := runServer(t, -1, t.TempDir())
	s, err := New(Config{Servers: []string{ns.ClientURL()}, Subjects: []string{"in.>"}, Buffer: 1,
		Decoder: DecoderConfig{Format: FormatValue}})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "connected", s.Connected)
	// The stuck reader: one of s's goroutines, blocked until released,
	// then handling a message as a reader whose Next returned would.
	release := make(chan struct{})
	exited := make(chan any, 1)
	dec, _ := NewDecoder(s.cfg.Decoder)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer func() { exited <- recover() }()
		<-release
		s.handle(dec, "in.x", []byte("1"), nil)
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := s.Close(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Close past its deadline: %v", err)
	}
	for range s.Messages() { // closed
	}
	close(release)
	select {
	case p := <-exited:
		if p != nil {
			t.Fatalf("the abandoned reader panicked on its return: %v", p)
		}
	case <-time.After(waitFor):
		t.Fatal("the abandoned reader did not return")
	}
	if st := s.Stats(); st.Dropped != 1 || st.Delivered != 0 {
		t.Fatalf("stats %+v: want the late message dropped, not delivered", st)
	}
}
