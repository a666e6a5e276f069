package partition

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/goleak"

	"github.com/forecastd/forecastd/internal/testserver/natstest"
	"github.com/forecastd/forecastd/sources"
)

// TestSetResumesAfterCheckpoint: a Set holding both partitions of a
// stream hands on every message of both; a checkpoint once they are
// acknowledged commits each partition's ack floor, and after the final
// one (which releases the leases) the next Set takes the partitions at
// once and resumes each consumer after the committed position: its first
// message of each partition is one published after, none of those
// already applied. The final checkpoint alone commits the floors too. The goroutines the Sets started have all exited.
func TestSetResumesAfterCheckpoint(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) }) // runs last, after the server's shutdown
	ns := natstest.JetStream(t)
	nc := natstest.Connect(t, ns)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a bound against a hang
	defer cancel()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "PTS", Subjects: []string{"p.>"}}); err != nil {
		t.Fatal(err)
	}
	publish := func(subject string, v int) {
		if _, err := js.Publish(ctx, subject, []byte(strconv.Itoa(v))); err != nil {
			t.Fatal(err)
		}
	}
	msgs := make(chan *sources.Message, 16)
	cfg := Config{
		Servers:    []string{ns.ClientURL()},
		Partitions: 2, Stream: "PTS", PartitionSubject: "p." + Token + ".>",
		LeaseTTL: 2 * time.Second, Keys: 100,
		NewInput: func(filter string, n int, seq uint64, deliver func(context.Context, *sources.Message)) (*sources.Source, error) {
			return sources.New(sources.Config{
				Servers: []string{ns.ClientURL()}, Subjects: []string{filter},
				Decoder:   sources.DecoderConfig{Format: sources.FormatValue},
				JetStream: &sources.JetStreamConfig{Stream: "PTS", Durable: fmt.Sprintf("fc-p%d", n), Checkpointed: &seq},
				Deliver:   deliver,
			})
		},
		Deliver: func(_ context.Context, m *sources.Message) { msgs <- m },
		Export:  func(context.Context) error { return nil }, // no runner: nothing to export
	}
	// next returns the value of the Set's next message, acknowledged.
	next := func(s *Set) int {
		t.Helper()
		select {
		case m := <-msgs:
			m.Done(nil)
			return int(m.Points[0].Value)
		case err := <-s.Fatal():
			t.Fatal(err)
		case <-ctx.Done():
			t.Fatal("no message")
		}
		return 0
	}
	stop := func(s *Set) {
		t.Helper()
		if err := s.StopIntake(ctx); err != nil { // once every message read is delivered
			t.Fatal(err)
		}
		for len(msgs) > 0 {
			(<-msgs).Done(nil)
		}
		if err := s.Close(ctx); err != nil {
			t.Fatal(err)
		}
		if err := s.FinalCheckpoint(ctx, true); err != nil {
			t.Fatal(err)
		}
	}

	for i, subj := range []string{"p.0.a", "p.0.a", "p.1.b", "p.0.a", "p.1.b"} {
		publish(subj, i+1)
	}
	a, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Start(); err != nil {
		t.Fatal(err)
	}
	var got []int
	for range 5 {
		got = append(got, next(a))
	}
	slices.Sort(got)
	if !slices.Equal(got, []int{1, 2, 3, 4, 5}) {
		t.Fatalf("first Set: %v, want 1..5", got)
	}
	if st := a.PartitionStats(); st.Held != 2 || st.Acquired != 2 {
		t.Fatalf("first Set holds %d, acquired %d; want 2 and 2", st.Held, st.Acquired)
	}
	// The acks reach the server asynchronously: checkpoint once both
	// consumers' floors are at their partition's last message.
	for n, last := range []uint64{4, 5} {
		for {
			c, err := js.Consumer(ctx, "PTS", fmt.Sprintf("fc-p%d", n))
			if err != nil {
				t.Fatal(err)
			}
			if c.CachedInfo().AckFloor.Stream == last {
				break
			}
			select {
			case <-ctx.Done():
				t.Fatalf("partition %d: ack floor %d, want %d", n, c.CachedInfo().AckFloor.Stream, last)
			case <-time.After(10 * time.Millisecond):
			}
		}
	}
	if _, err := a.Checkpoint(ctx, false); err != nil {
		t.Fatal(err)
	}
	stop(a)

	publish("p.0.a", 6)
	publish("p.1.b", 7)
	b, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Start(); err != nil {
		t.Fatal(err)
	}
	got = []int{next(b), next(b)}
	slices.Sort(got)
	if !slices.Equal(got, []int{6, 7}) {
		t.Errorf("second Set's first messages %v, want 6 and 7: the applied ones replayed", got)
	}
	// No checkpoint but the final one: it commits the floors the
	// consumers' last acks reached, read before their connections closed.
	stop(b)

	publish("p.0.a", 8)
	publish("p.1.b", 9)
	c, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	got = []int{next(c), next(c)}
	slices.Sort(got)
	if !slices.Equal(got, []int{8, 9}) {
		t.Errorf("third Set's first messages %v, want 8 and 9: the final checkpoint did not commit the floors", got)
	}
	stop(c)
}
