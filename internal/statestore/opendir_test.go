package statestore

import (
	"context"
	"log/slog"
	"testing"
)

// TestOpenDir: the position a directory's checkpoints cover is its own
// consumer's, else that consumer's from the start; without JetStream
// there is none.
func TestOpenDir(t *testing.T) {
	dir := t.TempDir()
	if err := WriteApplied(dir, Applied{Stream: "S", Durable: "d", Seq: 42}); err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	for _, tc := range []struct {
		stream, durable string
		want            Applied
	}{
		{"S", "d", Applied{Stream: "S", Durable: "d", Seq: 42}},
		{"S", "other", Applied{Stream: "S", Durable: "other"}},
		{"T", "d", Applied{Stream: "T", Durable: "d"}},
		{"", "", Applied{}},
	} {
		c, a, err := OpenDir(dir, log, Limits{}, tc.stream, tc.durable)
		if err != nil {
			t.Fatal(err)
		}
		if a != tc.want {
			t.Errorf("stream %q durable %q: %+v, want %+v", tc.stream, tc.durable, a, tc.want)
		}
		if _, err := c.Round(context.Background(), true); err != nil {
			t.Errorf("an empty round: %v", err)
		}
		if _, err := c.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
}
