// Package prefetch asks the CPU to start loading memory into its caches
// before it is read. A caller that knows which state it works on next
// (a shard's next queued point) prefetches that state before working on
// the current one, so that the next one's cache misses, each a trip to
// memory, overlap the current one's computation instead of each stalling
// it in turn. A prefetch is a hint: it changes no value, faults on no
// address, and may be dropped.
//
// It is hand-written because Go has no prefetch: the runtime's own
// (internal/runtime/sys.Prefetch) cannot be imported, and no library in
// the module graph offers one. On amd64 it is PREFETCHT0, a cache line at
// a time; elsewhere the functions do nothing.
package prefetch

import "unsafe"

// headBytes is how much of an array Head prefetches: two cache lines.
// Prefetching more costs more than it saves (measured on the pipeline's
// many-series benchmark): every prefetch holds one of the few miss
// buffers a core has, and once the first lines of an array are read in
// order the CPU's own stream prefetcher loads the rest.
const headBytes = 128

// Head prefetches the first lines of s's elements (not what they point
// to).
func Head[T any](s []T) {
	if len(s) == 0 {
		return
	}
	var z T
	Bytes(unsafe.Pointer(unsafe.SliceData(s)), min(uintptr(len(s))*unsafe.Sizeof(z), headBytes))
}

// Object prefetches the object *p, whatever its size (not what it points
// to); nil is ignored.
func Object[T any](p *T) {
	if p == nil {
		return
	}
	Bytes(unsafe.Pointer(p), unsafe.Sizeof(*p))
}
