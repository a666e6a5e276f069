package memory

import (
	"math"
	"runtime"
	"testing"
)

// TestFootprintRuntime: the footprint the runtime reports holds the live
// heap in at least as many span bytes, and the rest of the runtime's
// memory beside it; a process whose heap is a fresh slice of one large
// object takes about one span byte per byte.
func TestFootprintRuntime(t *testing.T) {
	big := make([]byte, 64<<20)
	runtime.GC()
	f, ok := newFootprintReader().read()
	if !ok {
		t.Fatal("the runtime does not report a footprint")
	}
	runtime.KeepAlive(big)
	if f.live < 64<<20 || f.spans < 1 || f.spans > 1.5 || f.other == 0 || f.cycles == 0 {
		t.Errorf("footprint %+v: want live ≥ 64 MiB, spans in [1, 1.5], other and cycles > 0", f)
	}
	if got := f.total(); got < f.live || got > f.live*2 {
		t.Errorf("total %d for live %d", got, f.live)
	}
}

// TestFootprintSpans: spans part empty make each live byte dearer, and
// what the runtime holds outside the heap's spans is counted once.
func TestFootprintSpans(t *testing.T) {
	f := footprintOf([7]uint64{577, 9, 620, 180, 30, 50, 910})
	if math.Abs(f.spans-800.0/620) > 1e-12 {
		t.Errorf("spans %v, want 800/620", f.spans)
	}
	if f.other != 910-620-180-30-50 {
		t.Errorf("other %d, want 30", f.other)
	}
	if got, want := f.total(), uint64(744+30); got != want { // 577 live bytes in 744.5 span bytes
		t.Errorf("total %d, want %d", got, want)
	}
}

// TestAtMark: the cache's bytes at the last marking are the most it held
// at any poll since the poll before the previous collection completed:
// columns given up after the marking began are still in its live heap.
func TestAtMark(t *testing.T) {
	var a atMark
	steps := []struct{ cycles, bytes, want uint64 }{
		{1, 900, 900},
		{1, 800, 900},   // no collection since: the marking may have seen 900
		{2, 500, 900},   // collection 2 began after 1 completed, before poll 0
		{2, 400, 900},   // still collection 2's reading
		{3, 300, 800},   // 3 began after 2 completed, after poll 1 (800)
		{3, 300, 800},   // still collection 3's reading
		{4, 300, 400},   // 4 began after 3 completed, after poll 3 (400)
		{4, 1000, 1000}, // the cache grew since: the larger counts
	}
	for i, s := range steps {
		if got := a.add(s.cycles, s.bytes); got != s.want {
			t.Errorf("poll %d (cycles %d, %d B): %d, want %d", i, s.cycles, s.bytes, got, s.want)
		}
	}
	// No collection for long: the polls kept stay bounded, their maximum kept.
	var b atMark
	b.add(1, 5000)
	for range 10 * maxMarkPolls {
		b.add(1, 10)
	}
	if len(b.polls) > maxMarkPolls {
		t.Errorf("%d polls kept, want at most %d", len(b.polls), maxMarkPolls)
	}
	if got := b.add(1, 10); got != 5000 {
		t.Errorf("after many polls without a collection: %d, want 5000", got)
	}
}
