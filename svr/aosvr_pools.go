package svr

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
// A young model keeps its spare and scratch columns: they grow with it.
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
