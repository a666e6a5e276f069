package svr

import "sync"

// Pools are the free lists AOSVR models lend what they need only during a
// call to, and take it back from: the sensitivity vectors, the lists of
// columns, spare kernel columns, R buffers and the undo copies and
// records. Every model starts on the process's (a model between calls
// then holds none of those); a caller that steps many models on one
// goroutine gives them free lists of their own (NewPools, SetPools), so
// that the lists' memory stays in that goroutine's CPU caches: on lists
// shared by goroutines on several cores, each of the tens of takes and
// gives of a step moves their cache lines between cores, a few
// microseconds a step at 100 000 series. Pools are safe for concurrent
// use.
type Pools struct {
	// sens holds the vectors β and vec of models between calls, by
	// length (a model's capacity plus 2).
	sens freeList[[]float64]
	// list holds the lists (cols, pool) of models between calls: a list
	// holds only column headers, but 24 B per entry of its capacity.
	list freeList[[][]float64]
	// column holds spare kernel columns (a column is a model's capacity
	// long; a model takes one of its own length only).
	column freeList[[]float64]
	// r holds R buffers, by capacity: a model whose R outgrows its
	// buffer gives it back here and takes one that fits, and restR takes
	// an exact one; when full it evicts buffers of other capacities, so
	// that sizes in use are kept.
	r freeList[[]float64]
	// undo lends undoBufs to the model whose call is saving its state;
	// the buffers go back at the end of the call (end). One per
	// concurrent call is all that is ever in use.
	undo freeList[*undoBufs]
	// records lends the undo record itself to every call (begin to
	// end), so that a model between calls holds none.
	records freeList[*undo]
}

// The process's bounds on the buffers its Pools keep, in all: 256
// vectors, 256 lists, 4096 columns (3.2 MB at W = 100), 1024 R buffers,
// 64 undo copies and 64 records.
const (
	maxSens, maxLists, maxColumns, maxR, maxUndo = 256, 256, 4096, 1024, 64
)

// processPools are the Pools of every model not given others.
var processPools = newPools(1)

// allPools lists every Pools made, for PooledBytes.
var allPools struct {
	mu sync.Mutex
	l  []*Pools
}

// NewPools returns free lists for the models one goroutine steps (a
// daemon's shard), each bounded to its share of the process's bounds
// (1/share of them, and at least 16 buffers); share is at least 1.
// PooledBytes counts them until Release: make one per goroutine, not per
// model.
func NewPools(share int) *Pools { return newPools(max(share, 1)) }

// Release empties p, for the collector, and has PooledBytes no longer
// count it; models still on p keep working (what they lend to it then
// is only not counted). The process's Pools are not released.
func (p *Pools) Release() {
	if p == processPools {
		return
	}
	allPools.mu.Lock()
	for i, q := range allPools.l {
		if q == p {
			allPools.l = append(allPools.l[:i], allPools.l[i+1:]...)
			break
		}
	}
	allPools.mu.Unlock()
	p.sens.clear()
	p.list.clear()
	p.column.clear()
	p.r.clear()
	p.undo.clear()
	p.records.clear()
}

func newPools(share int) *Pools {
	b := func(n int) int { return max(n/share, 16) }
	p := &Pools{}
	p.sens.max, p.list.max, p.column.max = b(maxSens), b(maxLists), b(maxColumns)
	p.r.max, p.undo.max, p.records.max = b(maxR), b(maxUndo), b(maxUndo)
	allPools.mu.Lock()
	allPools.l = append(allPools.l, p)
	allPools.mu.Unlock()
	return p
}

// SetPools has the model lend its call buffers to p from its next call
// on (nil: the process's); what it holds now stays its own. It must not
// be called during a call (concurrently with another method).
func (m *AOSVR) SetPools(p *Pools) {
	if p == nil {
		p = processPools
	}
	m.pools = p
}

// takeSens returns a vector of length k from the sensitivity vectors, or
// a new one.
func (p *Pools) takeSens(k int) []float64 {
	if v, ok := p.sens.get(k); ok {
		return v
	}
	return make([]float64, k)
}

// lendList gives an empty list back to the lists and returns nil, or
// returns a non-empty list as it is.
func (p *Pools) lendList(l [][]float64) [][]float64 {
	if l == nil || len(l) > 0 {
		return l
	}
	clear(l[:cap(l)])
	p.list.put(0, l)
	return nil
}

// takeList returns a list from the lists, or nil (append allocates it).
func (p *Pools) takeList() [][]float64 {
	l, _ := p.list.get(0)
	return l
}

// keepColumns is the number of spare kernel columns a model at its
// capacity keeps between calls; the others, and its scratch columns kc and
// gam, are lent to the spare columns (Pools) for any model to take (a call then takes
// two columns at begin and gives them back at end, under the pool's mutex:
// two columns less per model, for three short critical sections per call).
// A young model keeps its spare and scratch columns: they grow with it.
const keepColumns = 0
