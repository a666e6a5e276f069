package sources

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
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

// TestDeliver: with Config.Deliver, each message is given to it on the
// reading goroutine, in order; StopIntake returns only once the delivery
// under way has returned, and past its deadline it ends the delivery's
// context, so that a Deliver blocked downstream gives up and what was not
// delivered is counted as dropped.
func TestDeliver(t *testing.T) {
	ns := runServer(t, -1, t.TempDir())
	pub := connect(t, ns)
	const n = 50
	publish := func(s *Source) { t.Helper(); publishValues(t, pub, s, n) }

	t.Run("drain", func(t *testing.T) {
		defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
		var mu sync.Mutex
		var got []int
		gate := make(chan struct{})
		s, err := New(Config{Servers: []string{ns.ClientURL()}, Subjects: []string{"in.>"},
			Decoder: DecoderConfig{Format: FormatValue},
			Deliver: func(_ context.Context, m *Message) {
				<-gate
				mu.Lock()
				got = append(got, int(m.Points[0].Value))
				mu.Unlock()
			}})
		if err != nil {
			t.Fatal(err)
		}
		publish(s)
		stopped := make(chan error, 1)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), waitFor)
			defer cancel()
			stopped <- s.StopIntake(ctx)
		}()
		select {
		case err := <-stopped:
			t.Fatalf("StopIntake returned (%v) while a delivery was under way", err)
		case <-time.After(50 * time.Millisecond):
		}
		close(gate)
		if err := <-stopped; err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		if len(got) != n || !slices.IsSorted(got) {
			t.Errorf("delivered %d messages %v, want %d in order", len(got), got, n)
		}
		mu.Unlock()
		if _, ok := <-s.Messages(); ok {
			t.Error("a message on the channel beside Deliver")
		}
		ctx, cancel := context.WithTimeout(context.Background(), waitFor)
		defer cancel()
		if err := s.Close(ctx); err != nil {
			t.Fatal(err)
		}
		if st := s.Stats(); st.Delivered != n || st.Points != n || st.Dropped != 0 {
			t.Fatalf("stats %+v", st)
		}
	})

	t.Run("deadline", func(t *testing.T) {
		defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
		var given atomic.Int64
		s, err := New(Config{Servers: []string{ns.ClientURL()}, Subjects: []string{"in.>"},
			Decoder: DecoderConfig{Format: FormatValue},
			Deliver: func(ctx context.Context, m *Message) {
				given.Add(1)
				<-ctx.Done() // blocked downstream until the deadline
			}})
		if err != nil {
			t.Fatal(err)
		}
		publish(s)
		eventually(t, "a delivery under way", func() bool { return given.Load() == 1 })
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		if err := s.Close(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Close past its deadline: %v", err)
		}
		if st := s.Stats(); st.Delivered != uint64(given.Load()) || st.Delivered+st.Dropped != n {
			t.Fatalf("stats %+v, %d given to Deliver; want delivered + dropped = %d", st, given.Load(), n)
		}
	})
}
