package svr

import (
	"slices"
	"sync"
	"unsafe"
)

// freeList is a bounded store of spare buffers shared by the models of a
// Pools, safe for concurrent use: what a model needs only during a call,
// or no longer needs, goes back to it for the next model to take. Buffers
// are kept by a key (a column's length), and a model takes only one of its
// own key. Unlike a sync.Pool it is not emptied by the collector (so a warm
// process does not allocate again after a collection, and the race
// detector's random drops do not apply) and it keeps at most max buffers
// (what does not fit is left to the collector). get and put cost
// O(keys) under a mutex held for a few instructions.
type freeList[T any] struct {
	mu sync.Mutex
	// lists[i] holds the buffers of key keys[i], kept once added (an
	// empty list keeps its array for the next put). A list has the keys
	// its models' sizes took: one column length, R's orders up to the
	// largest margin set's, so a search of them is quicker than a map's
	// hash at the default window of 100 (tens of keys at most).
	keys  []int
	lists [][]T
	n     int // buffers held, ≤ max
	max   int
}

// list returns the index of key k's list, adding an empty one if add,
// else −1 if k has none.
func (f *freeList[T]) list(k int, add bool) int {
	for i, j := range f.keys {
		if j == k {
			return i
		}
	}
	if !add {
		return -1
	}
	f.keys = append(f.keys, k)
	f.lists = append(f.lists, nil)
	return len(f.keys) - 1
}

// get returns a spare buffer of key k, or the zero T and false.
func (f *freeList[T]) get(k int) (T, bool) {
	var zero T
	f.mu.Lock()
	defer f.mu.Unlock()
	i := f.list(k, false)
	if i < 0 || len(f.lists[i]) == 0 {
		return zero, false
	}
	s := f.lists[i]
	b := s[len(s)-1]
	s[len(s)-1] = zero
	f.lists[i] = s[:len(s)-1]
	f.n--
	return b, true
}

// put keeps the buffers bs under key k, as many as fit under max, the
// first ones first, and returns how many it kept.
func (f *freeList[T]) put(k int, bs ...T) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := min(len(bs), f.max-f.n)
	if n <= 0 {
		return 0
	}
	i := f.list(k, true)
	f.lists[i] = append(f.lists[i], bs[:n]...)
	f.n += n
	return n
}

// clear drops every buffer the list keeps.
func (f *freeList[T]) clear() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.keys, f.lists, f.n = nil, nil, 0
}

// putEvict keeps b under key k; when the list is full it first drops a
// buffer of another key (for the collector), so that buffers of keys no
// model uses any more do not keep out those in use.
func (f *freeList[T]) putEvict(k int, b T) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.n >= f.max {
		var zero T
		evicted := false
		for j, s := range f.lists {
			if f.keys[j] != k && len(s) > 0 {
				s[len(s)-1] = zero
				f.lists[j] = s[:len(s)-1]
				f.n--
				evicted = true
				break
			}
		}
		if !evicted {
			return
		}
	}
	i := f.list(k, true)
	f.lists[i] = append(f.lists[i], b)
	f.n++
}

// PooledBytes returns the bytes of the spare buffers the process's AOSVR
// models share (spare kernel columns, lists of columns, R buffers,
// sensitivity vectors, undo copies), in every Pools: memory no model
// holds, bounded by the pools' sizes (in all, for the process's Pools and
// for each made by NewPools: 4096 columns, 256 lists, 1024 R buffers, 256
// vectors, and 64 undo copies and records). A buffer counts what the
// runtime allocated for it, its capacity rounded up to the allocator's
// size class.
func PooledBytes() int {
	allPools.mu.Lock()
	ps := allPools.l
	allPools.mu.Unlock()
	b := 0
	for _, p := range ps {
		b += p.bytes()
	}
	return b
}

// bytes is PooledBytes for p.
func (p *Pools) bytes() int {
	floats := func(f *freeList[[]float64]) int {
		f.mu.Lock()
		defer f.mu.Unlock()
		b := 0
		for _, s := range f.lists {
			b += listBytes(s)
			for _, c := range s {
				b += allocBytes(cap(c))
			}
		}
		return b
	}
	b := floats(&p.column) + floats(&p.sens) + floats(&p.r)
	p.list.mu.Lock()
	for _, s := range p.list.lists {
		b += listBytes(s)
		for _, l := range s {
			b += 24 * cap(l)
		}
	}
	p.list.mu.Unlock()
	p.undo.mu.Lock()
	for _, s := range p.undo.lists {
		b += listBytes(s)
		for _, u := range s {
			b += allocBytes(cap(u.theta)) + allocBytes(cap(u.h)) + allocBytes(cap(u.r)) + cap(u.set) + 4*cap(u.s)
		}
	}
	p.undo.mu.Unlock()
	p.records.mu.Lock()
	for _, s := range p.records.lists {
		b += listBytes(s)
		for _, u := range s {
			b += int(unsafe.Sizeof(*u)) + allocBytes(cap(u.dropX))
		}
	}
	p.records.mu.Unlock()
	return b
}

// listBytes is what the backing array of a pool's list s takes, at its
// size class: the lists grow as models return buffers, and their arrays
// are heap the pools hold.
func listBytes[T any](s []T) int {
	var z T
	return allocBytes((int(unsafe.Sizeof(z))*cap(s) + 7) / 8)
}

// smallLens are the lengths of the []float64 the allocator's small size
// classes hold, ascending (a buffer of n floats takes the slot of the
// first length ≥ n), up to maxSmallLen, probed once with slices.Grow: the
// runtime has no public table of its size classes.
var smallLens = func() []int {
	var l []int
	for n := 1; n <= maxSmallLen; {
		c := cap(slices.Grow([]float64(nil), n))
		l = append(l, c)
		n = c + 1
	}
	return l
}()

// maxSmallLen is the largest small object's length in float64s (32 KiB);
// the allocator gives a larger one whole pages of pageLen float64s (8 KiB).
const maxSmallLen, pageLen = 4096, 1024

// classLen returns the length of the []float64 the allocator gives n
// floats: n rounded up to its size class, so that a buffer made with
// that capacity holds no more memory than one of n. O(log classes).
func classLen(n int) int {
	if n <= 0 {
		return 0
	}
	if n > maxSmallLen {
		return (n + pageLen - 1) / pageLen * pageLen
	}
	i, _ := slices.BinarySearch(smallLens, n)
	return smallLens[i]
}

// allocBytes returns the bytes the runtime allocates for n float64s: append
// rounds a new buffer's capacity up to the allocator's size class.
func allocBytes(n int) int { return 8 * classLen(n) }
