package telemetry

import (
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/forecastd/forecastd/runner"
)

// TestLogWarmStart: one Info line a period for what warm start did since
// the last (series warmed, points, cold and dropped by reason), none for a
// period without any, and a last one at stop.
func TestLogWarmStart(t *testing.T) {
	var mu sync.Mutex
	st := runner.HistoryStats{Cold: map[string]uint64{}, Dropped: map[string]uint64{}}
	stats := func() runner.HistoryStats {
		mu.Lock()
		defer mu.Unlock()
		c := st
		c.Cold, c.Dropped = map[string]uint64{}, map[string]uint64{}
		for k, v := range st.Cold {
			c.Cold[k] = v
		}
		for k, v := range st.Dropped {
			c.Dropped[k] = v
		}
		return c
	}
	var out strings.Builder
	var outMu sync.Mutex
	log := slog.New(slog.NewTextHandler(writerFunc(func(p []byte) (int, error) {
		outMu.Lock()
		defer outMu.Unlock()
		return out.Write(p)
	}), nil))
	lines := func() string { outMu.Lock(); defer outMu.Unlock(); return out.String() }
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { LogWarmStart(log, 5*time.Millisecond, stop, stats); close(done) }()

	mu.Lock()
	st.Warmed, st.Points, st.Cold[runner.ColdFailed] = 3, 900, 2
	mu.Unlock()
	deadline := time.Now().Add(time.Minute) // a hang only
	for !strings.Contains(lines(), "warmed=3 points=900 cold_failed=2") {
		if time.Now().After(deadline) {
			t.Fatalf("no line for 3 series warmed:\n%s", lines())
		}
		time.Sleep(time.Millisecond)
	}
	mu.Lock()
	st.Warmed, st.Points, st.Dropped[runner.HistoryNotBefore] = 4, 1000, 7
	mu.Unlock()
	close(stop)
	<-done
	got := lines()
	if n := strings.Count(got, `msg="warm start from history"`); n != 2 {
		t.Fatalf("%d lines, want 2 (one per change):\n%s", n, got)
	}
	if !strings.Contains(got, "warmed=1 points=100 dropped_not_before_live=7") {
		t.Fatalf("the last line does not count what changed since the first:\n%s", got)
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
