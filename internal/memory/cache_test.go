package memory

import (
	"testing"

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
// (cacheFill of it) and returns it as the target.
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
	if target := SetCache(k, 1<<30); target != want || svr.ColumnCache().Limit != want {
		t.Errorf("auto under 1GiB: target %d, limit %d, want %d", target, svr.ColumnCache().Limit, want)
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
