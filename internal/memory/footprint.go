package memory

import "runtime/metrics"

// The runtime metrics a footprint is read from.
var footprintMetrics = []string{
	"/gc/heap/live:bytes",
	"/gc/cycles/total:gc-cycles",
	"/memory/classes/heap/objects:bytes",
	"/memory/classes/heap/unused:bytes",
	"/memory/classes/heap/free:bytes",
	"/memory/classes/heap/released:bytes",
	"/memory/classes/total:bytes",
}

// A footprint is what the process must hold for its live heap: the live
// heap the last collection marked, the bytes of heap spans each live byte
// takes (the collector does not move objects, so a span stays while any
// object in it lives: spans of many small allocations made and freed at
// different times stay part empty), and the runtime's memory outside the
// heap's spans (stacks, metadata). Measured against the live heap alone,
// a budget lets the spans outgrow it: the collector then runs without
// pause at its soft memory limit, and RSS exceeds the budget
// (BENCHMARKS.md, "The kernel cache").
type footprint struct {
	live   uint64  // /gc/heap/live
	cycles uint64  // collections completed
	spans  float64 // heap span bytes per byte of object, ≥ 1
	other  uint64  // total less the heap's objects, unused, free and released bytes
}

// held returns the bytes the process holds for b bytes of live heap.
func (f footprint) held(b uint64) uint64 { return uint64(float64(b) * f.spans) }

// total returns the bytes the process holds for its live heap and the
// rest of the runtime: what the soft memory limit is measured against,
// less the free spans it can give back.
func (f footprint) total() uint64 { return f.held(f.live) + f.other }

// footprintOf computes a footprint from the values of footprintMetrics,
// in their order.
func footprintOf(v [7]uint64) footprint {
	live, cycles, objects, unused, free, released, total := v[0], v[1], v[2], v[3], v[4], v[5], v[6]
	f := footprint{live: live, cycles: cycles, spans: 1}
	if objects > 0 {
		f.spans = float64(objects+unused) / float64(objects)
	}
	if heap := objects + unused + free + released; total > heap {
		f.other = total - heap
	}
	return f
}

// footprintReader reads footprints from the runtime.
type footprintReader struct{ s []metrics.Sample }

func newFootprintReader() *footprintReader {
	s := make([]metrics.Sample, len(footprintMetrics))
	for i, n := range footprintMetrics {
		s[i].Name = n
	}
	return &footprintReader{s: s}
}

// read returns the runtime's footprint now; ok is false when the runtime
// did not report one of footprintMetrics.
func (r *footprintReader) read() (f footprint, ok bool) {
	metrics.Read(r.s)
	var v [7]uint64
	for i := range v {
		if r.s[i].Value.Kind() != metrics.KindUint64 {
			return footprint{}, false
		}
		v[i] = r.s[i].Value.Uint64()
	}
	return footprintOf(v), true
}

// atMark estimates the bytes the kernel cache held while the last
// collection marked the heap. The live heap is read from that marking,
// the cache's bytes now: columns a model gave up since are still in the
// live heap but no longer in the cache, and subtracting the cache's bytes
// of now would charge them to the series (during a warm-up, as the series
// grow and the cache shrinks, hundreds of MB: the series then look dearer
// than they are and are evicted). The marking of the last collection
// began after the one before it completed; atMark keeps the cache's bytes
// at each poll since the poll before that one and returns their maximum,
// which errs high (the series then look cheaper, for one collection).
type atMark struct {
	polls []markPoll
}

type markPoll struct {
	cycles uint64
	bytes  uint64
}

// maxMarkPolls bounds the polls kept while no collection completes.
const maxMarkPolls = 256

// add records a poll at which cycles collections had completed and the
// cache held bytes, and returns the estimate.
func (a *atMark) add(cycles, bytes uint64) uint64 {
	a.polls = append(a.polls, markPoll{cycles, bytes})
	// The first poll that saw the collection before the last one
	// completed, less one: the marking began after it.
	from := 0
	for i, p := range a.polls {
		if p.cycles+1 >= cycles {
			from = max(0, i-1)
			break
		}
	}
	a.polls = a.polls[:copy(a.polls, a.polls[from:])]
	if len(a.polls) > maxMarkPolls {
		// Fold the oldest two: their maximum, under the older count.
		a.polls[1] = markPoll{a.polls[0].cycles, max(a.polls[0].bytes, a.polls[1].bytes)}
		a.polls = a.polls[:copy(a.polls, a.polls[1:])]
	}
	var m uint64
	for _, p := range a.polls {
		m = max(m, p.bytes)
	}
	return m
}
