package svr

import "sync"

// colLot holds the kernel columns of the margin sets of the models that
// ended a call most recently, up to lotSlots of them: a model parks its
// columns there at the end of a call and takes them back at the start of
// its next one if no later model has taken its slot since, so that a
// process with few series (a backtest, say) does not compute them again,
// while one with many holds only the columns of lotSlots models. The
// columns of an overwritten slot go to columnPool. Parking and taking back
// cost O(1) under the lot's mutex.
var colLot struct {
	mu    sync.Mutex
	slots [lotSlots]parked
	next  int    // the slot the next model parks in (round robin)
	gen   uint64 // the last parking's number
}

// lotSlots is the number of models whose columns colLot keeps: a process
// running up to that many series round robin computes no column twice
// (at 1 000 default series a point costs 54–63 µs, against 116–124 µs
// with 128 slots; BenchmarkDefaultPushMany), and one running more holds
// at most the columns of lotSlots models beside its series, about 22 MB
// at the default window.
const lotSlots = 2048

// parked is a slot of colLot: the columns of S of a model, how much of
// them were computed (colsAt), their length, and the parking's number,
// which only that model knows.
type parked struct {
	gen  uint64
	cols [][]float64
	at   uint8
	n    int
}

// park moves the model's columns into the next slot of colLot, whose
// previous columns go to columnPool. O(1), plus O(|S|) to free a slot.
func (m *AOSVR) park() {
	colLot.mu.Lock()
	defer colLot.mu.Unlock()
	colLot.gen++
	i := colLot.next
	colLot.next = (i + 1) % lotSlots
	if s := &colLot.slots[i]; s.gen != 0 {
		columnPool.put(s.n, s.cols...)
		lendList(s.cols[:0])
	}
	colLot.slots[i] = parked{gen: colLot.gen, cols: m.cols, at: m.colsAt, n: len(m.y)}
	m.cols, m.colsAt = nil, colsNone
	m.parkSlot, m.parkGen = i, colLot.gen
}

// unpark takes the model's columns back from colLot if they are still
// there. O(1).
func (m *AOSVR) unpark() {
	colLot.mu.Lock()
	defer colLot.mu.Unlock()
	if s := &colLot.slots[m.parkSlot]; s.gen == m.parkGen {
		if m.cols != nil {
			lendList(m.cols[:0])
		}
		m.cols, m.colsAt = s.cols, s.at
		*s = parked{}
	}
	m.parkGen = 0
}

// sensPool holds the vectors β and vec of models between calls, by
// length (a model's capacity plus 2), at most 256 of them.
var sensPool = freeList[[]float64]{max: 256}

// takeSens returns a vector of length k from sensPool, or a new one.
func takeSens(k int) []float64 {
	if v, ok := sensPool.get(k); ok {
		return v
	}
	return make([]float64, k)
}

// listPool holds the lists (cols, pool) of models between calls: a list
// holds only column headers, but 24 B per entry of its capacity.
var listPool = freeList[[][]float64]{max: 256}

// lendList gives an empty list back to listPool and returns nil, or
// returns a non-empty list as it is.
func lendList(l [][]float64) [][]float64 {
	if l == nil || len(l) > 0 {
		return l
	}
	clear(l[:cap(l)])
	listPool.put(0, l)
	return nil
}

// takeList returns a list from listPool, or nil (append allocates it).
func takeList() [][]float64 {
	l, _ := listPool.get(0)
	return l
}

// keepColumns is the number of spare kernel columns a model at its
// capacity keeps between calls; the others, and its scratch columns kc and
// gam, are lent to columnPool for any model to take (a call then takes
// two columns at begin and gives them back at end, under the pool's mutex:
// two columns less per model, for three short critical sections per call).
// A young model keeps its columns: they grow with it.
const keepColumns = 0

// columnPool holds spare kernel columns for every model (a column is a
// model's capacity long; a model takes one of its own length only), at most
// 4096 of them (3.2 MB at W = 100).
var columnPool = freeList[[]float64]{max: 4096}

// rPool holds R buffers for every model, by capacity, at most 1024 of
// them: a model whose R outgrows its buffer gives it back here and takes
// one that fits, and restR takes an exact one; when full it evicts buffers
// of other capacities, so that sizes in use are kept.
var rPool = freeList[[]float64]{max: 1024}
