package svr

import (
	"math"

	"github.com/forecastd/forecastd/svr/internal/vec"
)

// takeColumn returns a spare column buffer: the model's own, or one of its
// length from the spare columns (Pools), or a new one.
func (m *AOSVR) takeColumn() []float64 {
	if k := len(m.pool); k > 0 {
		c := m.pool[k-1]
		m.pool = m.pool[:k-1]
		return c
	}
	if c, ok := m.pools.column.get(len(m.y)); ok {
		return c
	}
	return make([]float64, len(m.y))
}

// How much of the margin set's kernel columns cols holds: none (cols is
// empty), the entries of the samples outside R (what refine's check
// reads), or all.
const (
	colsNone uint8 = iota
	colsSV
	colsAll
)

// needCols makes cols hold the kernel columns of S over every sample,
// computing what a previous call lent away or only part computed.
// Recomputed entries are the same bits as the ones computed when each
// member joined S for a kernel whose Eval(a, b) and Eval(b, a) agree bit
// for bit, as RBF, Poly and Linear do. O(|S|·n·d) when it computes, O(1)
// otherwise.
func (m *AOSVR) needCols() {
	m.countColumns()
	switch m.colsAt {
	case colsAll:
		return
	case colsSV:
		for k, i := range m.s {
			m.column(m.cols[k], int(i), colR)
		}
	default:
		for _, i := range m.s {
			col := m.takeColumn()
			m.column(col, int(i), colAll)
			m.cols = append(m.cols, col)
		}
	}
	m.colsAt = colsAll
}

// needColsSV makes cols hold at least the entries of the samples outside
// R: Q_SS and Q_ES, what refine's check reads. Only drive moves a sample
// out of R, and it calls needCols first. O(|S|·(|S|+|E|)·d) when it
// computes, O(1) otherwise.
func (m *AOSVR) needColsSV() {
	m.countColumns()
	if m.colsAt != colsNone {
		return
	}
	for _, i := range m.s {
		col := m.takeColumn()
		m.column(col, int(i), colSV)
		m.cols = append(m.cols, col)
	}
	m.colsAt = colsSV
}

// Which entries of a kernel column to compute.
const (
	colAll = iota
	colSV  // samples outside R
	colR   // samples in R
)

// column sets dst[i] = K(x_i, x_c) for the samples selected by which.
// With an RBF kernel it sums the squared differences of the first xs
// inputs only: the constant inputs after them are equal in x_i and x_c and
// add +0, so the sum and the kernel are the same bits as over all dim
// inputs. O(n·d).
func (m *AOSVR) column(dst []float64, c, which int) {
	d := m.xs
	z := m.x[c*d : c*d+d]
	set := m.set[:m.n]
	if m.rbf {
		g := -m.rbfGam
		if which == colAll {
			// The exponents in place, then their exponentials in one
			// pass: vec.Exps gives math.Exp's bits several at a time.
			dst = dst[:len(set)]
			m.dists(dst, nil, z, g, nil)
			vec.Exps(dst, dst)
			return
		}
		// The selected entries in chunks: their indices gathered, their
		// exponents (dists), their exponentials together.
		var arg [64]float64
		var at [64]int32
		wantR := which == colR
		for i0 := 0; i0 < len(set); {
			k := 0
			for ; i0 < len(set) && k < len(at); i0++ {
				at[k] = int32(i0) // written always, kept when selected
				if (set[i0] == inR) == wantR {
					k++
				}
			}
			m.dists(arg[:k], at[:k], z, g, nil)
			vec.Exps(arg[:k], arg[:k])
			for j, i := range at[:k] {
				dst[i] = arg[j]
			}
		}
		return
	}
	for i := range set {
		if (which == colSV && set[i] == inR) || (which == colR && set[i] != inR) {
			continue
		}
		dst[i] = m.kern.Eval(m.x[i*d:i*d+d], z)
	}
}

// dists sets dst[j] = g·Σ_k (x_ik − z_k)² for the rows i = at[j] (i =
// j when at is nil) over the first xs inputs, then adds tt's terms in
// order (vec.SqDists, eight rows at a time where the CPU has the vector
// instructions). With g = −γ and tt the constant inputs' terms
// (suffixTerms) it is kernel's exponent −γ‖x_i − z‖², its bits. A stored
// row z needs no tt: its constant inputs equal every row's and would add
// +0.
func (m *AOSVR) dists(dst []float64, at []int32, z []float64, g float64, tt []float64) {
	vec.SqDists(dst, m.x, at, z[:m.xs], tt, g)
}

// suffixTerms appends to dst the terms (xsuf_k − z_{xs+k})² of an input
// z's constant inputs, in order: the same for every row.
func (m *AOSVR) suffixTerms(dst, z []float64) []float64 {
	for k, v := range z[m.xs:m.dim] {
		t := m.xsuf[k] - v
		dst = append(dst, t*t)
	}
	return dst
}

// kernel returns K(x_i, z) for an input z of length dim: with an RBF
// kernel the sum of RBF.Eval in its order, the stored inputs of x_i then
// its constant ones, and the same bits.
func (m *AOSVR) kernel(i int, z []float64) float64 {
	d := m.xs
	xi := m.x[i*d : i*d+d]
	if !m.rbf {
		return m.kern.Eval(xi, z)
	}
	z = z[:m.dim]
	var s float64
	for j, v := range xi {
		t := v - z[j]
		s += t * t
	}
	for j, v := range m.xsuf {
		t := v - z[d+j]
		s += t * t
	}
	return math.Exp(-m.rbfGam * s)
}

// predictRBF returns b + Σ θ_j K(x_j, z) over the support vectors in
// order: their exponents (dists, with z's constant inputs' terms
// computed once), their exponentials by vec.Exps, in chunks; the same
// bits as kernel one at a time. It allocates only for a model with more
// than 64 constant inputs (none varied yet among its samples).
func (m *AOSVR) predictRBF(z []float64) float64 {
	var arg [64]float64
	var at [64]int32
	if m.n == 0 {
		return m.bias // no sample, and no constant inputs recorded yet
	}
	var buf [64]float64
	tt := m.suffixTerms(buf[:0], z)
	f := m.bias
	theta := m.theta[:m.n]
	for i0 := 0; i0 < len(theta); {
		k := 0
		for ; i0 < len(theta) && k < len(at); i0++ {
			at[k] = int32(i0) // written always, kept for a support vector
			if theta[i0] != 0 {
				k++
			}
		}
		m.dists(arg[:k], at[:k], z, -m.rbfGam, tt)
		vec.Exps(arg[:k], arg[:k])
		for j, i := range at[:k] {
			f += theta[i] * arg[j]
		}
	}
	return f
}

// rowInto copies the input of sample i into dst (of length dim). O(d).
func (m *AOSVR) rowInto(dst []float64, i int) {
	copy(dst[:m.xs], m.x[i*m.xs:(i+1)*m.xs])
	copy(dst[m.xs:m.dim], m.xsuf)
}

// storeRow stores x as the input of sample c. alone says that the model
// holds no other sample: then all of x counts as constant (xs = 0, an RBF
// model). Otherwise, if x differs (in its bits)
// from the constant inputs, the stride grows to keep x's last differing
// input in the rows (widen). It never shrinks but when the model holds one
// sample. O(d), or O(cap·d) when the stride grows.
func (m *AOSVR) storeRow(c int, x []float64, alone bool) {
	if m.rbf && alone {
		m.xs, m.x = 0, nil
		m.xsuf = append(m.xsuf[:0], x[:m.dim]...)
		return
	}
	for j := len(m.xsuf) - 1; j >= 0; j-- {
		if math.Float64bits(x[m.xs+j]) != math.Float64bits(m.xsuf[j]) {
			m.widen(m.xs + j + 1)
			break
		}
	}
	copy(m.x[c*m.xs:(c+1)*m.xs], x)
}

// widen re-lays the inputs with the larger stride xs, moving the constant
// inputs before it into every row. It allocates the new rows, for every
// sample storage has room for. O(cap·d).
func (m *AOSVR) widen(xs int) {
	old, k := m.xs, xs-m.xs
	x := make([]float64, len(m.y)*xs)
	for i := range len(m.y) {
		copy(x[i*xs:i*xs+old], m.x[i*old:(i+1)*old])
		copy(x[i*xs+old:(i+1)*xs], m.xsuf[:k])
	}
	m.x, m.xs = x, xs
	m.xsuf = m.xsuf[:copy(m.xsuf, m.xsuf[k:])]
}

// reserve grows per-sample storage to hold at least n samples.
func (m *AOSVR) reserve(n int) {
	if n <= len(m.y) {
		return
	}
	grow := func(s []float64) []float64 { t := make([]float64, n); copy(t, s); return t }
	x := make([]float64, n*m.xs) // exactly: append would round up
	copy(x, m.x)
	m.x = x
	m.y, m.theta, m.h = grow(m.y), grow(m.theta), grow(m.h)
	// Column buffers come from the spare columns when it has some of the new
	// length: the columns that models at their capacity lent, which a model
	// growing to the same capacity takes instead of adding its own.
	growCol := func(s []float64) []float64 {
		if t, ok := m.pools.column.get(n); ok {
			copy(t, s)
			return t
		}
		return grow(s)
	}
	m.kc, m.gam = growCol(m.kc), growCol(m.gam)
	for k := range m.cols {
		m.cols[k] = growCol(m.cols[k])
	}
	for k := range m.pool {
		m.pool[k] = growCol(m.pool[k])
	}
	set := make([]uint8, n)
	copy(set, m.set)
	m.set = set
	spos := make([]int32, n)
	copy(spos, m.spos)
	m.spos = spos
	k := n
	if m.idWide {
		k = 2 * n
	}
	ids := make([]uint32, k)
	copy(ids, m.ids)
	m.ids = ids
	if m.rs == 0 {
		m.growR(2)
	}
}

// growR re-lays R with a stride of at least rs, in place when its buffer
// holds rs² values, else in a buffer of rs²'s size class (classLen, by
// which the pools key R buffers) from the R buffers (Pools) or a new
// one. Such a buffer is what restR keeps at the end of the call, so that
// a call that grows S by one moves R at most once (often not at all: a
// class has room for more than rs²), trading a buffer of one class for
// one of the next with the pools, whose takes and gives of each class
// then balance. O(|S|²).
func (m *AOSVR) growR(rs int) {
	if rs <= m.rs {
		return
	}
	m.peakS = max(m.peakS, rs-1)
	if rs*rs > cap(m.r) {
		c := classLen(rs * rs)
		r, ok := m.pools.r.get(c)
		if !ok {
			r = make([]float64, c)
		}
		r = r[:rs*rs]
		m.copyR(r, rs)
		if m.r != nil {
			m.pools.r.putEvict(cap(m.r), m.r[:cap(m.r)])
		}
		m.r, m.rs = r, rs
	} else {
		m.r = m.r[:rs*rs]
		m.copyR(m.r, rs)
		m.rs = rs
	}
	if len(m.beta) < rs {
		c := rs + max(2, rs/4)
		m.beta, m.vec = make([]float64, c), make([]float64, c)
	}
}

// copyR copies R's (|S|+1)² entries from m.r (stride m.rs) into dst with
// stride rs, which may be m.r itself re-laid in place: rows move forward
// (rs < m.rs) in increasing order, backward (rs > m.rs) in decreasing
// order, so that no row is overwritten before it is copied. O(|S|²).
func (m *AOSVR) copyR(dst []float64, rs int) {
	if m.rs == 0 {
		return
	}
	order := len(m.s) + 1
	if rs < m.rs {
		for a := 0; a < order; a++ {
			copy(dst[a*rs:a*rs+order], m.r[a*m.rs:a*m.rs+order])
		}
		return
	}
	for a := order - 1; a >= 0; a-- {
		copy(dst[a*rs:a*rs+order], m.r[a*m.rs:a*m.rs+order])
	}
}

// restR is called at the end of every call (between calls: within a call
// the stride never shrinks; rollback relies on it). It re-lays R in place
// with the exact stride |S|+1, so that the buffer holds no padding between
// rows, and, if its buffer is longer than the size class of (|S|+1)²
// values (classLen), moves it into one of that class, one Pools has (the
// buffers models give back when R grows) or a new one: such a buffer
// takes no more memory than one of exactly (|S|+1)² values, and S can
// often grow or shrink by one within it (when the neighbouring order's
// values fall in the same class). Every shrinkEvery calls, if the buffer
// is still longer than the class of the largest R of those calls (S
// empty), it moves R into one of that class, so that a model whose
// margin set has shrunk does not keep the memory of its largest.
// O(|S|²) when |S| changed, and an allocation only when R left its
// size class and the R buffers have none of the new class.
func (m *AOSVR) restR() {
	l := len(m.s)
	m.peakS = max(m.peakS, l)
	if rs := l + 1; l > 0 && rs < m.rs {
		m.copyR(m.r, rs)
		m.rs = rs
		m.r = m.r[:rs*rs]
	}
	if n, c := len(m.r), classLen(len(m.r)); l > 0 && cap(m.r) > c {
		// A buffer of n's class: one another model gave back, or a new one.
		b, ok := m.pools.r.get(c)
		if !ok {
			b = make([]float64, c)
		}
		b = b[:n]
		copy(b, m.r)
		m.pools.r.putEvict(cap(m.r), m.r[:cap(m.r)])
		m.r = b
	}
	if m.shrinkOps++; m.shrinkOps < shrinkEvery {
		return
	}
	if want := classLen((m.peakS + 1) * (m.peakS + 1)); m.peakS > 0 && cap(m.r) > want && m.rs*m.rs <= want {
		r := make([]float64, len(m.r), want)
		copy(r, m.r)
		m.r = r
	}
	m.shrinkOps, m.peakS = 0, l
}
