package svr

import (
	"runtime"
	"sync/atomic"
)

// colCache is the process-wide budget of the kernel columns that AOSVR
// models at their capacity keep between calls. A model keeps its margin
// set's columns at the end of a call if the bytes every model keeps,
// its own included, stay within the limit; otherwise it gives them to
// the spare columns (Pools), and its next call that moves θ computes them again
// (O(|S|·n·d), the larger part of such a call's time with an RBF
// kernel). Recomputed columns are the same bits as kept ones (needCols),
// so the limit trades memory for time and never changes a result.
// Models admitted first keep their place while they stay within it:
// under round robin over more series than the limit holds, the same
// share of them hit at every round instead of none.
var colCache struct {
	limit        atomic.Int64
	held         atomic.Int64
	hits, misses atomic.Uint64
}

// DefaultColumnCache is the column cache's limit until SetColumnCache
// sets one: the columns of about two thousand models at a window of 100,
// so that a process with few series (a backtest) computes none twice.
const DefaultColumnCache = 32 << 20

func init() { colCache.limit.Store(DefaultColumnCache) }

// SetColumnCache sets the bytes of kernel columns the process's AOSVR
// models keep between calls, at most (0: none kept). Lowering it takes
// effect as models end their calls: a model over the limit gives its
// columns up. Models made with KeepColumns keep theirs outside it. It
// panics if bytes is negative.
func SetColumnCache(bytes int64) {
	if bytes < 0 {
		panic("svr: negative column cache")
	}
	colCache.limit.Store(bytes)
}

// ColumnCacheStats is what the column cache holds and how it served the
// calls that needed a margin set's columns.
type ColumnCacheStats struct {
	// Limit is the limit in force (SetColumnCache), Bytes what the
	// models keep now, within it but for the calls in progress (each
	// model checks the limit when it ends a call).
	Limit, Bytes int64
	// Hits counts the calls of models at their capacity that needed
	// their columns and had kept them, Misses those that computed them.
	Hits, Misses uint64
}

// ColumnCache returns the column cache's limit, bytes and counters. Safe
// for concurrent use.
func ColumnCache() ColumnCacheStats {
	return ColumnCacheStats{
		Limit:  colCache.limit.Load(),
		Bytes:  colCache.held.Load(),
		Hits:   colCache.hits.Load(),
		Misses: colCache.misses.Load(),
	}
}

// countColumns counts a call that needs the margin set's columns as a
// hit (it kept them) or, for a model at its capacity, a miss, once per
// call. O(1).
func (m *AOSVR) countColumns() {
	switch {
	case m.colsKept:
		colCache.hits.Add(1)
		m.colsKept = false
	case m.colsAt == colsNone && len(m.s) > 0 && len(m.y) >= m.capHint && !m.cfg.KeepColumns:
		colCache.misses.Add(1)
	}
}

// settleColumns is called at the end of a call: it keeps the margin
// set's columns if the cache has room for them, charging their bytes, and
// else gives them to the spare columns (a model at its capacity) or the
// collector (a young one, whose columns grow with it) and its charge
// back. A young model is charged too: in a warm-up of many series at
// once their columns are most of the heap. O(|S|).
func (m *AOSVR) settleColumns() {
	var want, had int64
	if m.colsAt != colsNone && len(m.cols) > 0 {
		want = 24 * int64(cap(m.cols))
		for _, c := range m.cols {
			want += 8 * int64(cap(c))
		}
	}
	if m.charge != nil {
		had = *m.charge
	}
	// An unchanged charge reads the shared count without writing it.
	n := colCache.held.Load()
	if d := want - had; d != 0 {
		n = colCache.held.Add(d)
	}
	if want > 0 && n > colCache.limit.Load() {
		colCache.held.Add(-want)
		if len(m.y) >= m.capHint {
			// A young model's short columns are left to the collector:
			// the pool keeps columns of the lengths models keep.
			m.pools.column.put(len(m.y), m.cols...)
		}
		clear(m.cols)
		m.cols, m.colsAt, want = m.cols[:0], colsNone, 0
	}
	if want > 0 && m.charge == nil {
		// A model dropped while it keeps columns gives their charge back
		// when the collector frees it.
		m.charge = new(int64)
		runtime.AddCleanup(m, func(c *int64) { colCache.held.Add(-*c) }, m.charge)
	}
	if m.charge != nil {
		*m.charge = want
	}
}

// adopt makes the receiver the model t, built aside (Import, a rebuild),
// under the receiver's charge in the column cache: t's own charge is
// given back, and the receiver's is settled at the end of its next call.
func (m *AOSVR) adopt(t *AOSVR) {
	if t.charge != nil {
		colCache.held.Add(-*t.charge)
		*t.charge = 0
	}
	t.charge = m.charge
	*m = *t
}

// ReleaseColumns gives up the margin set's kernel columns the model keeps
// between calls in the column cache, as the end of a call does when the
// cache is over its limit, and returns the bytes given back to the
// cache's account (0: it kept none). The next call that needs them
// computes them again, the same values: predictions and learning are
// unchanged bit for bit. It lets the owner of idle models shrink the
// cache, which a model otherwise does only at its next call. Like every
// other method, not safe concurrently with the model's calls. O(|S|).
func (m *AOSVR) ReleaseColumns() int64 {
	if m.charge == nil || *m.charge == 0 || m.colsAt == colsNone || m.u != nil {
		return 0
	}
	b := *m.charge
	colCache.held.Add(-b)
	*m.charge = 0
	m.pools.column.put(len(m.y), m.cols...)
	clear(m.cols)
	m.cols, m.colsAt = m.pools.lendList(m.cols[:0]), colsNone
	return b
}
