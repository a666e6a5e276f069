package svr

import (
	"errors"
	"fmt"
	"math"

	"gonum.org/v1/gonum/floats"

	"github.com/forecastd/forecastd/svr/internal/vec"
)

// add appends the sample and drives it to the KKT conditions. A failure is
// returned with the model part-way: the caller rolls it back.
func (m *AOSVR) add(x []float64, y float64, id uint64) (moved bool, err error) {
	if m.n == len(m.y) {
		if m.n < m.capHint {
			m.reserve(min(2*m.n, m.capHint))
		} else {
			m.reserve(2 * m.n)
		}
	}
	c := m.n
	m.n++
	m.storeRow(c, x, c == 0)
	m.y[c], m.theta[c], m.set[c], m.spos[c] = y, 0, inR, -1
	m.setID(c, id, m.n)
	m.blocked, m.bounced = m.blocked[:0], m.bounced[:0]

	// f(x_c) needs only the support vectors' kernel values; the margin
	// columns need those of S. Both are the non-R entries of c's column.
	m.column(m.kc, c, colSV)
	f := m.bias
	for i := 0; i < c; i++ {
		if m.set[i] != inR {
			f += m.theta[i] * m.kc[i]
		}
	}
	if m.colsAt != colsNone {
		for k, i := range m.s {
			m.cols[k][c] = m.kc[i]
		}
	}
	m.h[c] = f - y
	if math.Abs(m.h[c]) <= m.eps {
		return false, nil // inside the tube: c joins R, nothing else changes
	}
	m.column(m.kc, c, colR)
	if err := m.drive(c, true); err != nil {
		return false, err
	}
	if !isFinite(m.bias) || !isFinite(m.theta[c]) {
		return false, errors.New("non-finite solution")
	}
	return true, nil
}

// remove unlearns sample c and deletes it. A failure is returned with the
// model part-way: the caller rolls it back.
func (m *AOSVR) remove(c int) error {
	m.blocked, m.bounced = m.blocked[:0], m.bounced[:0]
	if m.theta[c] != 0 || m.set[c] == inS {
		if err := m.unlearnInPlace(c); err != nil {
			return err
		}
		if !isFinite(m.bias) {
			return errors.New("non-finite solution")
		}
	}
	m.drop(c)
	return nil
}

// unlearnInPlace drives θ_c to 0 (section 4), leaving c stored with θ_c = 0
// outside S, its kernel column in m.kc.
func (m *AOSVR) unlearnInPlace(c int) error {
	m.touch()
	if m.set[c] == inS {
		m.needCols()
		k := int(m.spos[c])
		col := m.cols[k]
		m.leaveS(k)
		// c's column is needed while it moves: swap it in as m.kc.
		m.pool = m.pool[:len(m.pool)-1] // leaveS returned col to the pool
		m.pool = append(m.pool, m.kc)
		m.kc = col
	} else {
		m.column(m.kc, c, colAll)
	}
	m.set[c] = inR
	if m.theta[c] == 0 {
		return nil
	}
	return m.drive(c, false)
}

// Kinds of step bound: the five bookkeeping cases of the AOSVR paper,
// section 3.2, for the step Δθ_c of the sample c moving with sign q.
const (
	stepNone    = iota
	stepMargin  // case 1: c reaches the margin, joins S
	stepBound   // case 2: θ_c reaches its bound (C or, unlearning, 0)
	stepLeaveS  // case 3: a margin sample reaches 0 or ±C
	stepEnterS  // cases 4, 5: an E or R sample reaches the margin
	maxIterBase = 64
)

// step is the smallest bound on Δθ_c (or Δb while S is empty) found so far.
type step struct {
	l      float64 // signed step
	abs    float64
	kind   int
	idx    int     // sample index (stepEnterS) or S position (stepLeaveS)
	target float64 // θ (stepBound, stepLeaveS) or h (stepMargin, stepEnterS) after the step
}

// offer considers a step of l in direction q. A bound already passed by
// rounding (q·l < 0) is taken as a zero step.
func (s *step) offer(q, l float64, kind, idx int, target float64) {
	if q*l < 0 {
		l = 0
	}
	if a := math.Abs(l); a < s.abs {
		s.l, s.abs, s.kind, s.idx, s.target = l, a, kind, idx, target
	}
}

// drive is the bookkeeping loop of section 3.2. Learning, it moves θ_c in
// the direction q = sign(−h_c) until c reaches the margin (joins S) or its
// bound (joins E); unlearning, in the direction −sign(θ_c) until θ_c = 0.
// While S is empty θ_c cannot move (Σθ = 0), so b moves alone, every h_n
// with it, until a sample reaches a margin and enters S. c's full kernel
// column is in m.kc; c is outside S.
func (m *AOSVR) drive(c int, learning bool) error {
	m.touch()
	if m.fault != nil && m.fault(stageStep) {
		return errors.New("fault injected")
	}
	m.needCols()
	q := 1.0
	if learning && m.h[c] > 0 || !learning && m.theta[c] > 0 {
		q = -1
	}
	// Each iteration moves one sample between sets. Refusals of dependent
	// samples (duplicates, mostly) do not count toward the limit: they are
	// bounded by n per change of S.
	limit := 8*m.n + maxIterBase
	refusals := 0
	// The samples that entered S since the last step of non-zero length,
	// with the set each came from. At a degenerate point (several samples
	// exactly on the margin) zero steps can pivot samples in and out of S
	// and cycle for ever, as degenerate simplex pivots can. A sample that
	// leaves by a zero step to the set it entered from is refused another
	// zero step into S until a step of non-zero length is taken; a step of
	// non-zero length that it bounds it still bounds.
	m.zeroIn, m.zeroFrom = m.zeroIn[:0], m.zeroFrom[:0]
	for iter := 0; iter < limit; iter++ {
		if !learning && math.Abs(m.theta[c]) <= condSnap*m.c {
			// Rounding residue (Σθ = 0 leaves nothing to move against,
			// e.g. with c the only sample): θ_c is zero.
			m.theta[c] = 0
			return nil
		}
		l := len(m.s)
		st := m.nextStep(c, q, learning)
		if st.kind == stepNone {
			return fmt.Errorf("no step bound for sample %d (|S|=%d)", c, l)
		}
		m.takeStep(c, st.l, l == 0)
		done, refused := m.moveBound(c, st, l)
		if done {
			return nil
		}
		if refused {
			if refusals++; refusals < m.n*limit {
				iter-- // a refusal changes no set
			}
		}
	}
	return fmt.Errorf("no convergence after %d set changes", limit)
}

// nextStep returns the smallest bound on the step of θ_c in direction q
// (or of b while S is empty): the five cases of section 3.2.
func (m *AOSVR) nextStep(c int, q float64, learning bool) step {
	bOnly := len(m.s) == 0
	sensTol := condSens
	if !bOnly {
		sensTol *= m.sensitivities()
	}
	st := step{abs: math.Inf(1)}

	// Case 1: c reaches the margin h_c = −qε.
	if learning {
		g := 1.0
		if !bOnly {
			g = m.gam[c]
		}
		if bOnly || g > condDep*max(m.kc[c], condTiny) {
			st.offer(q, (-q*m.eps-m.h[c])/g, stepMargin, c, -q*m.eps)
		}
	}
	// Case 2: θ_c reaches its bound.
	if !bOnly {
		if learning {
			st.offer(q, q*m.c-m.theta[c], stepBound, c, q*m.c)
		} else {
			st.offer(q, -m.theta[c], stepBound, c, 0)
		}
	}
	// Case 3: a margin sample's θ reaches an end of its box.
	for k, i := range m.s {
		b := m.beta[k+1]
		if math.Abs(b) < condBeta {
			continue
		}
		lo, hi := m.box(int(i))
		t := lo
		if q*b > 0 {
			t = hi
		}
		st.offer(q, (t-m.theta[i])/b, stepLeaveS, k, t)
	}
	m.enterBounds(&st, c, q, bOnly, sensTol)
	return st
}

// enterBounds offers st the steps at which an E or R sample's margin
// reaches ±ε (cases 4 and 5).
func (m *AOSVR) enterBounds(st *step, c int, q float64, bOnly bool, sensTol float64) {
	n := m.n
	sets, hs, gams, thetas := m.set[:n], m.h[:n], m.gam[:n], m.theta[:n]
	eps := m.eps
	for i, set := range sets {
		if set == inS || i == c {
			continue
		}
		g := 1.0
		if !bOnly {
			g = gams[i]
		}
		h := hs[i]
		ag, ah := math.Abs(g), math.Abs(h)
		// A sample strictly inside its set (R with |h| < ε, E with
		// |h| > ε) moves toward its target t = ±ε, and |t − h| ≥
		// ||h| − ε|. When that exceeds the bound held times |g| its step
		// |(t − h)/g| cannot be shorter, and offer would refuse it: skip
		// the division and the cases. The factor and the addend make the
		// test safe against the rounding of the product.
		if math.Abs(ah-eps) > st.abs*ag*(1+1e-14)+1e-300 && (set == inR) == (ah < eps) {
			continue
		}
		if ag < sensTol {
			continue
		}
		qg := q * g
		var t float64
		switch {
		case set == inR && qg > 0:
			t = eps
		case set == inR:
			t = -eps
		case thetas[i] > 0 && qg > 0: // θ = C, h ≤ −ε, rising
			t = -eps
		case thetas[i] < 0 && qg < 0: // θ = −C, h ≥ ε, falling
			t = eps
		default:
			continue
		}
		L := (t - h) / g
		if m.isBlocked(i) {
			continue
		}
		if q*L <= 0 && m.isBounced(i) {
			// Refused a zero step to break a cycle; a step of non-zero
			// length (to the tube's other edge) still binds.
			continue
		}
		st.offer(q, L, stepEnterS, i, t)
	}
}

// takeStep moves θ_c by L, S's θ and b along β, and the margins of the
// samples outside S along γ; with S empty (bOnly), b and every margin
// by L.
func (m *AOSVR) takeStep(c int, L float64, bOnly bool) {
	if L != 0 {
		// Progress: a sample refused to break a cycle of zero steps may
		// be needed again.
		m.zeroIn, m.zeroFrom = m.zeroIn[:0], m.zeroFrom[:0]
		m.bounced = m.bounced[:0]
	}
	if bOnly {
		m.bias += L
		for i := range m.h[:m.n] {
			m.h[i] += L
		}
		return
	}
	m.theta[c] += L
	m.bias += m.beta[0] * L
	for k, i := range m.s {
		m.theta[i] += m.beta[k+1] * L
	}
	// Every margin moved, then S's put back: no branch on the set in
	// the loop over all samples.
	h, gam := m.h[:m.n], m.gam[:m.n]
	keep := m.vec[:len(m.s)] // free: the step that needed it is done
	for k, i := range m.s {
		keep[k] = h[i]
	}
	for i := range h {
		h[i] += gam[i] * L
	}
	for k, i := range m.s {
		h[i] = keep[k]
	}
}

// moveBound moves the sample that set the bound st, S having l samples
// before the step. It reports done when c has reached its set, and
// refused when a sample was refused entry to S as dependent on it.
func (m *AOSVR) moveBound(c int, st step, l int) (done, refused bool) {
	switch st.kind {
	case stepMargin:
		m.h[c] = st.target
		if l == 0 && m.theta[c] == 0 {
			// θ_c = 0 on the margin with S empty: c is in R; b is
			// centred by afterOp.
			return true, false
		}
		col := m.kc
		m.kc = m.takeColumn()
		m.joinS(c, col, m.beta[:l+1], m.gam[c]) // l = 0: β, γ unused
		return true, false
	case stepBound:
		m.theta[c] = st.target
		if st.target != 0 {
			m.set[c] = inE
		}
		return true, false
	case stepLeaveS:
		m.leaveBound(st)
	case stepEnterS:
		i := st.idx
		m.h[i] = st.target
		from := m.set[i]
		if m.enterS(i) {
			m.zeroIn = append(m.zeroIn, int32(i))
			m.zeroFrom = append(m.zeroFrom, from)
			return false, false
		}
		m.blocked = append(m.blocked, int32(i))
		m.stats.Refused++
		m.refreshDue = true
		return false, true
	}
	return false, false
}

// leaveBound moves the margin sample whose θ reached an end of its box
// (case 3) out of S, into R or E; one that leaves by a zero step to the
// set it entered from is refused the next zero step into S.
func (m *AOSVR) leaveBound(st step) {
	i := int(m.s[st.idx])
	m.theta[i] = st.target
	m.leaveS(st.idx)
	// A sample refused as dependent on S may not be any more.
	m.blocked = m.blocked[:0]
	if st.target == 0 {
		m.set[i] = inR
	} else {
		m.set[i] = inE
	}
	if st.l != 0 {
		return
	}
	for k, j := range m.zeroIn {
		if int(j) == i && m.zeroFrom[k] == m.set[i] {
			m.bounced = append(m.bounced, int32(i))
			m.stats.Refused++
			m.refreshDue = true
			break
		}
	}
}

// isBlocked reports whether sample i was refused entry to S as dependent
// on it.
func (m *AOSVR) isBlocked(i int) bool {
	for _, b := range m.blocked {
		if int(b) == i {
			return true
		}
	}
	return false
}

// isBounced reports whether sample i is refused a zero step into S.
func (m *AOSVR) isBounced(i int) bool {
	for _, b := range m.bounced {
		if int(b) == i {
			return true
		}
	}
	return false
}

// box returns the interval θ_i may take while i is a margin sample: [0, C]
// on the lower margin h = −ε, [−C, 0] on the upper, [−C, C] when ε = 0.
func (m *AOSVR) box(i int) (lo, hi float64) {
	switch {
	case m.eps == 0:
		return -m.c, m.c
	case m.h[i] < 0:
		return 0, m.c
	default:
		return -m.c, 0
	}
}

// sensitivities computes β = −R [1; Q_Sc] (eq. 3.7) into m.beta and
// γ_n = Q_nc + Σ_s Q_ns β_s + β_b (eq. 3.9) for every sample into m.gam.
// It returns 1 + ‖β‖₁, the scale of the rounding error in γ_n: a sample
// dependent on S (a duplicate of a margin vector, say) has γ_n = 0
// exactly, computed as noise of that order. O(|S|² + n·|S|).
func (m *AOSVR) sensitivities() float64 {
	l := len(m.s)
	v := m.vec[:l+1]
	v[0] = 1
	for k, i := range m.s {
		v[k+1] = m.kc[i]
	}
	m.mulR(m.beta[:l+1], v, l+1, -1)
	// γ_n = (Q_nc + β_b) + Σ_s β_s Q_ns, the terms added in order of s.
	vec.SumScaled(m.gam[:m.n], m.kc, m.beta[0], m.beta[1:l+1], m.cols)
	return 1 + floats.Norm(m.beta[:l+1], 1)
}

// mulR sets dst = alpha·R·v for the leading order×order block of R.
func (m *AOSVR) mulR(dst, v []float64, order int, alpha float64) {
	for a := range order {
		row := m.r[a*m.rs : a*m.rs+order]
		dst[a] = alpha * floats.Dot(row, v[:order])
	}
}

// enterS moves sample i (outside S, h_i already on the margin) into S,
// computing its kernel column. It reports false, changing nothing, when i
// is numerically dependent on S.
func (m *AOSVR) enterS(i int) bool {
	col := m.takeColumn()
	m.column(col, i, colAll)
	l := len(m.s)
	var g float64
	beta := m.vec[:l+1] // β = −R [1; Q_Si], eq. 3.13
	if l == 0 {
		g = col[i]
	} else {
		u := m.beta[:l+1] // m.beta is free: the step that needed it is done
		u[0] = 1
		for k, s := range m.s {
			u[k+1] = col[s]
		}
		m.mulR(beta, u, l+1, -1)
		g = col[i] + floats.Dot(beta, u)
	}
	if !(g > condDep*max(col[i], condTiny)) {
		m.pool = append(m.pool, col)
		return false
	}
	m.joinS(i, col, beta, g)
	return true
}

// joinS appends sample i, with kernel column col, to S and updates R by
// eq. 3.13. beta is β = −R [1; Q_Si] and g the Schur complement γ_i.
// O(|S|²).
func (m *AOSVR) joinS(i int, col, beta []float64, g float64) {
	l := len(m.s)
	if l+2 > m.rs {
		m.growR(l + 2)
	}
	m.extendR(l, col[i], beta, g)
	m.set[i] = inS
	m.spos[i] = int32(l)
	m.s = append(m.s, int32(i))
	m.cols = append(m.cols, col)
}

// extendR grows R from order l+1 to l+2 for a new margin sample with
// kernel diagonal qii (eq. 3.13): R ← [[R, 0], [0ᵀ, 0]] +
// (1/γ_i)[β; 1][β; 1]ᵀ, or, for the first member (l = 0),
// R = [[−Q_ii, 1], [1, 0]]. O(l²).
func (m *AOSVR) extendR(l int, qii float64, beta []float64, g float64) {
	rs := m.rs
	if l == 0 {
		m.r[0], m.r[1] = -qii, 1
		m.r[rs], m.r[rs+1] = 1, 0
		return
	}
	n := l + 1 // index of the new row and column
	for a := 0; a < n; a++ {
		m.r[a*rs+n] = 0
		m.r[n*rs+a] = 0
	}
	m.r[n*rs+n] = 0
	inv := 1 / g
	for a := 0; a <= n; a++ {
		va := inv
		if a < n {
			va *= beta[a]
		}
		row := m.r[a*rs : a*rs+n+1]
		floats.AddScaled(row[:n], va, beta[:n])
		row[n] += va
	}
}

// leaveS removes the k-th margin sample from S (its set is for the caller
// to assign) and updates R by eq. 3.12: R ← R_II − R_Ik R_kI / R_kk. The
// member is first swapped to the end so that S stays compact. O(|S|²).
func (m *AOSVR) leaveS(k int) {
	l := len(m.s)
	last := l - 1
	rs := m.rs
	if k != last {
		a, b := k+1, last+1
		for j := 0; j <= l; j++ { // swap rows a and b
			m.r[a*rs+j], m.r[b*rs+j] = m.r[b*rs+j], m.r[a*rs+j]
		}
		for j := 0; j <= l; j++ { // swap columns a and b
			m.r[j*rs+a], m.r[j*rs+b] = m.r[j*rs+b], m.r[j*rs+a]
		}
		m.s[k], m.s[last] = m.s[last], m.s[k]
		if m.colsAt != colsNone {
			m.cols[k], m.cols[last] = m.cols[last], m.cols[k]
		}
		m.spos[m.s[k]] = int32(k)
	}
	i := m.s[last]
	m.spos[i] = -1
	if m.colsAt != colsNone {
		m.pool = append(m.pool, m.cols[last])
		m.cols[last] = nil
		m.cols = m.cols[:last]
	}
	m.s = m.s[:last]
	if last == 0 {
		return // S is empty: R is unused
	}
	p := l // R index of the removed member
	rpp := m.r[p*rs+p]
	for a := 0; a < p; a++ {
		f := m.r[a*rs+p] / rpp
		if f == 0 {
			continue
		}
		floats.AddScaled(m.r[a*rs:a*rs+p], -f, m.r[p*rs:p*rs+p])
	}
}

// drop deletes sample c, which must be outside S with θ_c = 0, by moving
// the last sample into its place. O(|S| + d).
func (m *AOSVR) drop(c int) {
	if u := m.u; u != nil && u.active {
		u.dropped, u.dropLate = c, u.saved
		if cap(u.dropX) < m.dim {
			u.dropX = make([]float64, m.dim)
		}
		u.dropX = u.dropX[:m.dim]
		m.rowInto(u.dropX, c)
		u.dropY, u.dropTheta, u.dropH = m.y[c], m.theta[c], m.h[c]
		u.dropSet, u.dropID = m.set[c], m.id(c)
	}
	last := m.n - 1
	if c != last {
		d := m.xs
		copy(m.x[c*d:(c+1)*d], m.x[last*d:(last+1)*d])
		m.y[c], m.theta[c], m.h[c] = m.y[last], m.theta[last], m.h[last]
		m.set[c], m.spos[c] = m.set[last], m.spos[last]
		m.moveID(c, last)
		for _, col := range m.cols { // empty at colsNone
			col[c] = col[last]
		}
		if m.set[c] == inS {
			m.s[m.spos[c]] = int32(c)
		}
	}
	m.n--
}

// centreBias handles the case where no margin sample is free (0 < |θ| < C):
// then b is not fixed by the KKT conditions but only bounded. Margin
// samples with θ = 0 are moved to R, and b is put at the middle of its
// feasible interval, as LIBSVM does, so that the model is the same
// function a batch solver returns. O(|S|) when S has a free member.
func (m *AOSVR) centreBias() {
	for _, i := range m.s {
		if t := m.theta[i]; t != 0 && math.Abs(t) != m.c {
			return
		}
	}
	m.touch()
	for len(m.s) > 0 {
		last := len(m.s) - 1
		i := m.s[last]
		m.leaveS(last)
		if m.theta[i] == 0 {
			m.set[i] = inR
		} else {
			m.set[i] = inE
		}
	}
	if m.n == 0 {
		return
	}
	lo, hi := math.Inf(-1), math.Inf(1)
	for i := 0; i < m.n; i++ {
		h := m.h[i]
		switch {
		case m.set[i] == inR:
			lo, hi = max(lo, -m.eps-h), min(hi, m.eps-h)
		case m.theta[i] > 0:
			hi = min(hi, -m.eps-h)
		default:
			lo = max(lo, m.eps-h)
		}
	}
	if math.IsInf(lo, 0) || math.IsInf(hi, 0) {
		return
	}
	d := (lo + hi) / 2
	m.bias += d
	for i := range m.h[:m.n] {
		m.h[i] += d
	}
}
