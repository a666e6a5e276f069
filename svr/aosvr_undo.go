package svr

import "fmt"

// undo is what a call needs to put the model back as it was before it
// (gonum's Cholesky.SymRankOne: "If the update fails the receiver is left
// unchanged"). begin records the scalars; the first change to θ, h, the
// sets, S or R within the call saves them (save); drop and retarget record
// the one sample they change. The margin set's kernel columns are not
// saved: rollback recomputes them. The saved copies live in undoBufs taken
// from a pool shared by every model for the length of one call (a model
// between calls holds none: they are most of what a model would otherwise
// keep for its undo); they grow to the largest model that used them, so a
// warm process saves without allocating. The record itself is lent the
// same way (Pools.records), from begin to end.
type undo struct {
	active, saved bool
	n             int     // samples before the call
	bias          float64 // b before the call
	ops           int
	refreshDue    bool

	ns int       // m.n when save ran
	b  *undoBufs // the saved θ, h, sets, S and R while saved, else nil

	dropped   int  // index of the sample drop removed, or −1
	dropLate  bool // drop ran after save
	dropX     []float64
	dropY     float64
	dropTheta float64
	dropH     float64
	dropSet   uint8
	dropID    uint64

	retarget int     // index of the sample whose target retarget changed, or −1
	oldY     float64 // its target before the call

	added bool // add ran after drop (Replace): the added sample is at m.n−1
}

// undoBufs are the copies undo saves: θ, h and the sets of the first ns
// samples, S, and R as (|S|+1)² row-major.
type undoBufs struct {
	theta, h []float64
	set      []uint8
	s        []int32
	r        []float64
}

// grown returns s with length n, reallocated (contents dropped) only when
// its capacity is short.
func grown[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n, max(n, 2*cap(s)))
	}
	return s[:n]
}

// end finishes a call begun by begin: the undo buffers go back to their
// pool, and spare kernel columns beyond keepColumns to theirs. O(1), plus
// O(spare) when S shrank.
func (m *AOSVR) end() {
	if u := m.u; u != nil {
		u.active, u.saved = false, false
		if u.b != nil {
			m.pools.undo.put(0, u.b)
			u.b = nil
		}
		m.pools.records.put(0, u)
		m.u = nil
	}
	m.restR()
	warm := len(m.y) >= m.capHint // at its capacity: its columns' length is final
	if !m.cfg.KeepColumns {
		m.settleColumns()
	}
	keep := keepColumns
	if warm && m.beta != nil {
		// Lent like kc and gam; vectors of another length (grown by
		// growR, or by a young model) are left to the collector.
		if k := len(m.y) + 2; len(m.beta) == k && len(m.vec) == k {
			m.pools.sens.put(k, m.beta, m.vec)
		}
		m.beta, m.vec = nil, nil
	}
	if warm && m.kc != nil {
		m.pool = append(m.pool, m.kc, m.gam)
		m.kc, m.gam = nil, nil
	} else if !warm {
		keep = 1 // a young model's short columns are left to the collector: keep one
	}
	if len(m.pool) > keep {
		if warm {
			// A full pool (held by models of other lengths, say) takes
			// none: the model then keeps its scratch columns rather than
			// allocate them at every call.
			n := m.pools.column.put(len(m.y), m.pool[keep:]...)
			extra := min(len(m.pool)-keep-n, 2)
			copy(m.pool[keep:keep+extra], m.pool[keep+n:keep+n+extra])
			keep += extra
		}
		clear(m.pool[keep:])
		m.pool = m.pool[:keep]
	}
	if warm {
		// The lists of columns, empty between calls, are lent too.
		m.cols = m.pools.lendList(m.cols)
		m.pool = m.pools.lendList(m.pool)
	}
}

// begin starts a call that may have to be rolled back, taking the scratch
// columns kc and gam if end gave them back. O(1).
func (m *AOSVR) begin() {
	m.colsKept = m.colsAt != colsNone && len(m.y) >= m.capHint
	if m.cols == nil {
		m.cols = m.pools.takeList()
	}
	if m.pool == nil {
		m.pool = m.pools.takeList()
	}
	if m.kc == nil && len(m.y) > 0 {
		m.kc, m.gam = m.takeColumn(), m.takeColumn()
	}
	if m.beta == nil && len(m.y) > 0 && len(m.y) >= m.capHint {
		// At its capacity, β and the right-hand sides are lent too (an R
		// order is at most n+1); a young model grows them (growR).
		k := len(m.y) + 2
		m.beta, m.vec = m.pools.takeSens(k), m.pools.takeSens(k)
	}
	if m.u == nil {
		var ok bool
		if m.u, ok = m.pools.records.get(0); !ok {
			m.u = new(undo)
		}
	}
	u := m.u
	u.active, u.saved = true, false
	u.n, u.bias, u.ops, u.refreshDue = m.n, m.bias, m.ops, m.refreshDue
	u.dropped, u.retarget, u.added = -1, -1, false
}

// touch is called before every change to θ, h, the sets, S, R or b within a
// call; the first one saves them. O(n + |S|²) once per call, no allocation.
func (m *AOSVR) touch() {
	u := m.u
	if u == nil || !u.active || u.saved {
		return
	}
	u.saved = true
	n := m.n
	u.ns = n
	if u.b == nil {
		var ok bool
		if u.b, ok = m.pools.undo.get(0); !ok {
			u.b = new(undoBufs)
		}
	}
	b := u.b
	b.theta, b.h, b.set = grown(b.theta, n), grown(b.h, n), grown(b.set, n)
	copy(b.theta, m.theta[:n])
	copy(b.h, m.h[:n])
	copy(b.set, m.set[:n])
	b.s = append(b.s[:0], m.s...)
	if l := len(m.s); l > 0 {
		b.r = grown(b.r, (l+1)*(l+1))
		for a := 0; a <= l; a++ {
			copy(b.r[a*(l+1):(a+1)*(l+1)], m.r[a*m.rs:a*m.rs+l+1])
		}
	}
}

// rollback puts the model back as it was when begin was called, undoing
// what was done since in reverse order. O(n + |S|² + |S|·n·d): the margin
// set's kernel columns are recomputed.
func (m *AOSVR) rollback() {
	u := m.u
	if u.dropped >= 0 && u.dropLate {
		if u.added {
			m.n-- // the added sample, in the slot drop emptied
		}
		m.undrop()
	}
	if u.saved {
		n, b := u.ns, u.b
		m.n = n
		copy(m.theta[:n], b.theta[:n])
		copy(m.h[:n], b.h[:n])
		copy(m.set[:n], b.set[:n])
		m.s = append(m.s[:0], b.s...)
		if l := len(m.s); l > 0 { // l+1 ≤ m.rs: R's stride never shrinks
			for a := 0; a <= l; a++ {
				copy(m.r[a*m.rs:a*m.rs+l+1], b.r[a*(l+1):(a+1)*(l+1)])
			}
		}
	}
	if u.dropped >= 0 && !u.dropLate {
		if u.added {
			m.n = u.n - 1 // the saved state may hold the added sample
		}
		m.undrop()
	}
	if u.retarget >= 0 {
		m.y[u.retarget] = u.oldY
	}
	m.n, m.bias, m.ops, m.refreshDue = u.n, u.bias, u.ops, u.refreshDue
	if u.saved || u.dropped >= 0 {
		// The columns of S: those saved were released or overwritten.
		m.pool = append(m.pool, m.cols...)
		clear(m.cols)
		m.cols = m.cols[:0]
		m.colsAt = colsNone
		for i := range m.spos[:m.n] {
			m.spos[i] = -1
		}
		for k, i := range m.s {
			m.spos[i] = int32(k)
		}
		m.needCols()
	}
	m.end()
}

// undrop reverses drop: the sample that took the dropped one's place goes
// back to the end and the dropped sample to its index.
func (m *AOSVR) undrop() {
	u := m.u
	c, last, d := u.dropped, m.n, m.xs
	if c != last {
		copy(m.x[last*d:(last+1)*d], m.x[c*d:(c+1)*d])
		m.y[last], m.theta[last], m.h[last] = m.y[c], m.theta[c], m.h[c]
		m.set[last] = m.set[c]
		m.moveID(last, c)
	}
	m.storeRow(c, u.dropX, m.n == 0)
	m.y[c], m.theta[c], m.h[c] = u.dropY, u.dropTheta, u.dropH
	m.set[c] = u.dropSet
	m.setID(c, u.dropID, m.n+1)
	// The dropped sample was outside S: an S member at c is the one drop
	// moved there, back at last now.
	for k, i := range m.s {
		if int(i) == c {
			m.s[k] = int32(last)
		}
	}
	m.n++
}

// change is what a call should do to the stored samples, for the rebuild
// that is its last resort: leave out the sample skipID, add the sample
// (x, y) under handle id (both, for Replace), or give the sample id the
// target y.
type change struct {
	add, skip, retarget bool
	x                   []float64
	y                   float64
	id, skipID          uint64
}

// recoverFrom is the last stage of the ladder, after the incremental path
// of a call (named op) failed with err: the model is rolled back, then
// rebuilt with the change ch, and the rebuilt model replaces it if every
// sample could be learnt. Otherwise it returns an error wrapping
// ErrNumerical and the model is as before the call.
func (m *AOSVR) recoverFrom(op string, err error, ch change) error {
	m.rollback()
	m.stats.Rollbacks++
	t, rerr := m.rebuilt(ch)
	if rerr != nil {
		m.stats.Failures++
		return fmt.Errorf("%w: aosvr: %s: %v; rebuild: %v", ErrNumerical, op, err, rerr)
	}
	m.adopt(t)
	return nil
}
