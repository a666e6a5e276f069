package sources

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// TestJetStreamResume: the source owns the consumer's life across
// restarts of its caller. A caller acknowledges 10 messages but its
// checkpoints cover only 4 (it was killed): the next Source, told
// Checkpointed = 4, deletes the consumer and delivers from message 5, so
// that 5..10 are seen again and 1..4 are not; the Source after that (the
// consumer now created at a start sequence, its checkpoints covering
// everything) keeps the consumer and its position, delivering only new
// messages. AckFloor reports the position each time.
func TestJetStreamResume(t *testing.T) {
	f := newJSFixture(t)
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	jsCfg := func(cp *uint64) *JetStreamConfig {
		return &JetStreamConfig{Stream: "POINTS", Durable: "fc", Checkpointed: cp}
	}
	open := func(cp *uint64) *Source {
		s, err := New(Config{Servers: []string{f.ns.ClientURL()}, Subjects: []string{"points.>"},
			Decoder: DecoderConfig{Format: FormatValue}, ReconnectWait: 50 * time.Millisecond, JetStream: jsCfg(cp)})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	closeSrc := func(s *Source) {
		if err := s.Close(ctx); err != nil {
			t.Fatal(err)
		}
	}
	// receive acks n messages and returns their sequences.
	receive := func(s *Source, n int) []uint64 {
		var seqs []uint64
		for range n {
			m := next(t, s)
			seqs = append(seqs, m.Sequence)
			m.Done(nil)
		}
		if n := s.Stats().AckErrors; n != 0 {
			t.Fatalf("%d acks failed", n)
		}
		return seqs
	}
	floor := func(s *Source, want uint64) {
		t.Helper()
		eventually(t, fmt.Sprintf("ack floor %d", want), func() bool {
			f, found, err := s.AckFloor(ctx)
			return err == nil && found && f == want
		})
	}
	for i := 1; i <= 10; i++ {
		f.publish(t, fmt.Sprintf("points.s%d", i), fmt.Sprint(i))
	}

	// 1. No checkpoints yet: everything, acked.
	zero := uint64(0)
	s := open(&zero)
	if got := receive(s, 10); got[0] != 1 || got[9] != 10 {
		t.Fatalf("first run delivered %v, want 1..10", got)
	}
	floor(s, 10)
	if st := s.Stats(); st.Resets != 0 || st.Skipped != 0 {
		t.Fatalf("first run: %d resets, %d skipped, want none", st.Resets, st.Skipped)
	}
	closeSrc(s)

	// 2. The checkpoints cover 4 of the 10 acked: reset, redeliver 5..10.
	four := uint64(4)
	s = open(&four)
	got := receive(s, 6)
	for i, seq := range got {
		if seq != uint64(5+i) {
			t.Fatalf("after the reset delivered %v, want 5..10", got)
		}
	}
	floor(s, 10)
	if st := s.Stats(); st.Resets != 1 {
		t.Fatalf("%d resets, want 1", st.Resets)
	}
	select {
	case m := <-s.Messages():
		t.Fatalf("message %d delivered beyond the stream", m.Sequence)
	case <-time.After(200 * time.Millisecond):
	}
	closeSrc(s)

	// 3. Checkpoints cover all 10: the consumer (now at a start sequence)
	// is kept as it is, and only the new message comes.
	ten := uint64(10)
	s = open(&ten)
	f.publish(t, "points.s11", "11")
	if got := receive(s, 1); got[0] != 11 {
		t.Fatalf("third run delivered %v, want [11]", got)
	}
	floor(s, 11)
	if st := s.Stats(); st.Resets != 0 || st.ConsumerErrors != 0 {
		t.Fatalf("third run: %d resets, %d consumer errors, want none", st.Resets, st.ConsumerErrors)
	}
	closeSrc(s)

	// 4. Messages a reset consumer delivers at or below the checkpoints
	// are acknowledged without delivery: delete the consumer, so that the
	// next one starts at the stream's beginning.
	if err := f.js.DeleteConsumer(ctx, "POINTS", "fc"); err != nil {
		t.Fatal(err)
	}
	eight := uint64(8)
	s = open(&eight)
	if got := receive(s, 3); got[0] != 9 || got[2] != 11 {
		t.Fatalf("fourth run delivered %v, want 9..11", got)
	}
	floor(s, 11)
	if st := s.Stats(); st.Skipped != 8 {
		t.Fatalf("%d messages skipped, want 8", st.Skipped)
	}
	closeSrc(s)
}

// TestAckFloorWithoutJetStream: a core source has no position.
func TestAckFloorWithoutJetStream(t *testing.T) {
	ns := runServer(t, -1, t.TempDir())
	s := newSource(t, Config{Servers: []string{ns.ClientURL()}, Subjects: []string{"x"}})
	if _, _, err := s.AckFloor(context.Background()); err == nil {
		t.Fatal("AckFloor of a core source succeeded")
	}
}
