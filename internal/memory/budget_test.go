package memory

import (
	"runtime/debug"
	"testing"
)

// seriesLimit sizes the series to 95 % of the budget by the heap per
// series held now, raises the bound back as the heap falls, and sets none
// while the series fit.
func TestSeriesLimit(t *testing.T) {
	const mib = 1 << 20
	for _, c := range []struct {
		name                           string
		live, transit, history, budget uint64
		active, current                int64
		maxSeries                      int
		want                           int64
	}{
		{"under the budget, no bound", 50 * mib, 0, 0, 100 * mib, 1000, 0, 100000, 0},
		{"over: 1000 series in 200 MiB, 95 MiB allowed", 200 * mib, 0, 0, 100 * mib, 1000, 0, 100000, 475},
		{"the bound holds at 95 %", 95 * mib, 0, 0, 100 * mib, 475, 475, 100000, 475},
		{"raised as the heap falls", 95 * mib / 2, 0, 0, 100 * mib, 475, 475, 100000, 950},
		{"raised to max_series: no bound", 10 * mib, 0, 0, 100 * mib, 450, 450, 1000, 0},
		{"at least one", 1000 * mib, 0, 0, 100 * mib, 5, 0, 100000, 1},
		{"nothing held: unchanged", 80 * mib, 0, 0, 100 * mib, 0, 7, 100000, 7},
		// 475 series in 95 MiB, and 12 MiB of evicted states waiting to
		// be written: the series do not look dearer (it would be 421),
		// and the queue takes its 12 MiB of the 95 (83 MiB: 415 series).
		{"the checkpoint queue is not the series'", 107 * mib, 12 * mib, 0, 100 * mib, 475, 475, 100000, 415},
		{"the checkpoint queue takes at most half", 145 * mib, 100 * mib, 0, 100 * mib, 450, 450, 100000, 475},
		// 1000 series in 50 MiB while history loads hold 150 MiB: the
		// loads neither make the series look dearer nor take their room.
		{"history loads are not the series'", 200 * mib, 0, 150 * mib, 100 * mib, 1000, 0, 100000, 0},
		{"history loads leave the bound as the series set it", 245 * mib, 0, 150 * mib, 100 * mib, 900, 900, 100000, 900},
		{"history and the checkpoint queue", 257 * mib, 12 * mib, 150 * mib, 100 * mib, 475, 475, 100000, 415},
	} {
		if got := SeriesLimit(c.live, c.transit, c.history, c.budget, c.active, c.current, c.maxSeries); got != c.want {
			t.Errorf("%s: %d, want %d", c.name, got, c.want)
		}
	}
}

// setGCPercent sets [pipeline] gc_percent, DefaultGCPercent when absent, and leaves
// the runtime's value alone when GOGC is in the environment.
func TestSetGCPercent(t *testing.T) {
	orig := debug.SetGCPercent(100)
	defer debug.SetGCPercent(orig)
	current := func() int {
		p := debug.SetGCPercent(-1)
		debug.SetGCPercent(p)
		return p
	}
	forty := 40
	for _, c := range []struct {
		name     string
		cfg      *int
		gogc     string
		runtime  int // the value before the call
		want     int
		wantFrom string
	}{
		{"default", nil, "", 100, DefaultGCPercent, "pipeline.gc_percent"},
		{"configured", &forty, "", 100, 40, "pipeline.gc_percent"},
		{"GOGC wins", &forty, "70", 70, 70, "GOGC"},
		{"GOGC=off is kept", nil, "off", -1, -1, "GOGC"},
	} {
		debug.SetGCPercent(c.runtime)
		got, from := SetGCPercent(c.cfg, c.gogc)
		if got != c.want || from != c.wantFrom || current() != c.want {
			t.Errorf("%s: %d from %s, runtime %d; want %d from %s", c.name, got, from, current(), c.want, c.wantFrom)
		}
	}
}

// TestHolderSpans: the series are held to the budget by the bytes their
// heap takes in its spans, not by the live heap alone: 577 MiB live in
// spans 1.29 times as large is over 95 % of a 720 MiB budget, though
// the live heap is under it.
func TestHolderSpans(t *testing.T) {
	const mib = 1 << 20
	h := holder{budget: 720 * mib, maxSeries: 200000}
	f := footprint{live: 577 * mib, cycles: 10, spans: 1.29, other: 30 * mib}
	n := h.step(f, holderInput{}, 30000, 0)
	// 30 000 series in 774 MiB held, 684 MiB allowed: 26 500.
	if n < 26400 || n > 26600 {
		t.Errorf("bound %d, want about 26 500", n)
	}
	if n := (&holder{budget: 720 * mib, maxSeries: 200000}).step(footprint{live: 577 * mib, cycles: 10, spans: 1, other: 30 * mib}, holderInput{}, 30000, 0); n != 0 {
		t.Errorf("the same heap in full spans: bound %d, want none", n)
	}
}

// TestHolderNoCascade: once lowered, the bound is not lowered again on
// the heap of the same collection, nor of the one under way when it was
// lowered (both still hold the series evicted), only on a later one; it
// is raised at any poll.
func TestHolderNoCascade(t *testing.T) {
	const mib = 1 << 20
	h := holder{budget: 100 * mib, maxSeries: 100000}
	over := func(cycles uint64) footprint { return footprint{live: 200 * mib, cycles: cycles, spans: 1} }
	n := h.step(over(5), holderInput{}, 1000, 0)
	if n != 475 {
		t.Fatalf("first bound %d, want 475", n)
	}
	// The evicted series are still in the heap read at collections 5 and 6.
	for _, c := range []uint64{5, 6} {
		if got := h.step(over(c), holderInput{}, 475, n); got != n {
			t.Errorf("collection %d: bound %d, want %d held", c, got, n)
		}
	}
	// Collection 7 began after the eviction: its heap counts.
	if got := h.step(footprint{live: 150 * mib, cycles: 7, spans: 1}, holderInput{}, 475, n); got != 300 {
		t.Errorf("collection 7: bound %d, want 300", got)
	}
	// Raised at once, by 1 % or more.
	if got := h.step(footprint{live: 94.5 * mib, cycles: 8, spans: 1}, holderInput{}, 300, 300); got != 300 { // 301.6
		t.Errorf("raised by less than 1 %%: %d, want 300 held", got)
	}
	if got := h.step(footprint{live: 10 * mib, cycles: 8, spans: 1}, holderInput{}, 300, 300); got != 2850 {
		t.Errorf("raised: %d, want 2850", got)
	}
}

// TestHolderCacheAtMark: columns the kernel cache gave up since the last
// marking are still in its live heap; they are not charged to the series.
func TestHolderCacheAtMark(t *testing.T) {
	const mib = 1 << 20
	h := holder{budget: 100 * mib, maxSeries: 100000}
	// 80 MiB of series and 30 MiB of cache: under 95 MiB.
	if n := h.step(footprint{live: 110 * mib, cycles: 3, spans: 1}, holderInput{cache: 30 * mib}, 1000, 0); n != 0 {
		t.Fatalf("bound %d, want none", n)
	}
	// The cache gave up 25 MiB; the heap read is still collection 3's.
	if n := h.step(footprint{live: 110 * mib, cycles: 3, spans: 1}, holderInput{cache: 5 * mib}, 1000, 0); n != 0 {
		t.Errorf("after the cache shrank: bound %d, want none (the cache's columns are still in the heap read)", n)
	}
}
