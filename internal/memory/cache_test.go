package memory

import (
	"testing"
	"time"

	"github.com/forecastd/forecastd/pipeline"
	"github.com/forecastd/forecastd/svr"
)

// TestCacheLimit: "auto" gives the cache what the target leaves beside
// the rest of the live heap, never below 0, and counts the cache's own
// bytes as its own.
func TestCacheLimit(t *testing.T) {
	for _, c := range []struct{ live, held, target, want int64 }{
		{0, 0, 1000, 1000},
		{600, 0, 1000, 400},
		{600, 500, 1000, 900},
		{2000, 100, 1000, 0},
		{100, 200, 1000, 1000}, // held read after live: never more than the target
	} {
		if got := CacheLimit(c.live, c.held, c.target); got != c.want {
			t.Errorf("CacheLimit(%d, %d, %d) = %d, want %d", c.live, c.held, c.target, got, c.want)
		}
	}
}

// TestSetCache: a size sets the limit as it is; "auto" follows the budget
// (cacheFill of it) and returns it as the target, from an empty cache.
func TestSetCache(t *testing.T) {
	defer svr.SetColumnCache(svr.ColumnCache().Limit)
	var k pipeline.KernelCache
	if err := k.UnmarshalText([]byte("64MiB")); err != nil {
		t.Fatal(err)
	}
	if target := SetCache(k, 1<<30); target != 0 || svr.ColumnCache().Limit != 64<<20 {
		t.Errorf("64MiB: target %d, limit %d", target, svr.ColumnCache().Limit)
	}
	if err := k.UnmarshalText([]byte("auto")); err != nil {
		t.Fatal(err)
	}
	fill := cacheFill
	want := int64(fill * float64(1<<30))
	// Under a budget the cache starts empty (HoldCache grows it).
	if target := SetCache(k, 1<<30); target != want || svr.ColumnCache().Limit != 0 {
		t.Errorf("auto under 1GiB: target %d, limit %d, want %d and 0", target, svr.ColumnCache().Limit, want)
	}
	if err := k.UnmarshalText([]byte("lots")); err == nil {
		t.Error(`"lots" parsed`)
	}
}

// TestCacheLimitSpans: the cache's limit is what the target leaves
// beside the process's other memory, in the cache's own bytes, each of
// which takes its share of spans.
func TestCacheLimitSpans(t *testing.T) {
	f := footprint{live: 1000, spans: 1.25, other: 50}
	// Held: 1250 + 50; the cache's 200 live bytes are 250 of them, the
	// rest 1050; a target of 1550 leaves 500 held bytes: 400 of the cache's.
	if got := cacheLimitOf(f, 200, 1550); got != 400 {
		t.Errorf("limit %d, want 400", got)
	}
	if got := cacheLimitOf(f, 200, 900); got != 0 {
		t.Errorf("over the target: limit %d, want 0", got)
	}
}

// TestSteadyRest: the cache may grow only once the rest of the memory has
// stayed within 2 % of its least for 30 s: not while it grows (a
// warm-up), nor before 30 s have been seen.
func TestSteadyRest(t *testing.T) {
	t0 := time.Unix(1000, 0)
	var s steadyRest
	at := func(sec float64) time.Time { return t0.Add(time.Duration(sec * float64(time.Second))) }
	// Growing 1 % every 5 s for a minute: never steady.
	for i := range 13 {
		if s.steady(at(5*float64(i)), int64(1000*(1+0.01*float64(i)))) {
			t.Fatalf("growing, at %d s: steady", 5*i)
		}
	}
	// Flat at 1120 from 60 s: steady once the least of the last 30 s is
	// within 2 % (at 80 s: 1100 at 50 s), not before (at 75 s: 1090).
	var got []bool
	for i := 13; i <= 24; i++ {
		got = append(got, s.steady(at(5*float64(i)), 1120))
	}
	if got[2] || !got[3] || !got[11] {
		t.Errorf("flat from 60 s: steady at 75, 80, 120 s = %v, %v, %v; want false, true, true", got[2], got[3], got[11])
	}
	// A step down is steady (the least is the new value); a step up
	// beyond 2 % is not.
	if !s.steady(at(125), 1000) {
		t.Error("after a fall: not steady")
	}
	if s.steady(at(130), 1100) {
		t.Error("10 % over the least of the last 30 s: steady")
	}
	if len(s.polls) > 10 {
		t.Errorf("%d polls kept for a 30 s window of 5 s polls", len(s.polls))
	}
}
