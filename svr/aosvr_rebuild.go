package svr

import (
	"errors"
	"fmt"
	"math"
	"sort"

	"gonum.org/v1/gonum/floats"
)

// shrinkEvery is the number of calls between two looks at R's size.
const shrinkEvery = 256

// refresh (stage 4 of the ladder) rebuilds R from Q_SS, re-solves θ_S and
// b for the current sets and recomputes every margin from scratch, so that
// rounding errors of the rank-one updates cannot accumulate. It returns an
// error if the sets turn out inconsistent, for the caller to roll back and
// rebuild. O(|S|³ + n·(|S| + |E|·d)).
func (m *AOSVR) refresh() error {
	m.stats.Refreshes++
	if !m.polish() {
		return errors.New("refresh: the margin set is numerically dependent or θ_S left its box")
	}
	return nil
}

// polish is the refresh proper: R is rebuilt from Q_SS, every margin is
// recomputed from scratch, and θ_S and b are refined against the margin
// equalities. It reports false when the margin set is numerically
// dependent or θ_S has left its box.
func (m *AOSVR) polish() bool {
	m.touch()
	if m.fault != nil && m.fault(stageRefresh) {
		return false
	}
	m.needCols()
	n := m.n
	// A margin sample whose θ sits at an end of its box is as well an R or
	// E sample on the tube's edge; out of S, its margin is judged on its
	// true value below, and repair relearns it if it is on the wrong side.
	// (Degenerate pivoting leaves such samples behind.)
	for k := len(m.s) - 1; k >= 0; k-- {
		i := int(m.s[k])
		t := math.Abs(m.theta[i])
		switch {
		case t <= condSnap*m.c:
			m.leaveS(k)
			m.set[i], m.theta[i] = inR, 0
		case t >= m.c*(1-condSnap):
			m.leaveS(k)
			m.set[i], m.theta[i] = inE, math.Copysign(m.c, m.theta[i])
		}
	}
	if len(m.s) > 0 && !m.rebuildR() {
		return false
	}
	h := m.h[:n]
	for i := range h {
		h[i] = m.bias - m.y[i]
	}
	for k, i := range m.s {
		floats.AddScaled(h, m.theta[i], m.cols[k][:n])
	}
	for e := 0; e < n; e++ {
		if m.set[e] == inE {
			m.column(m.gam, e, colAll)
			floats.AddScaled(h, m.theta[e], m.gam[:n])
		}
	}
	for _, i := range m.s {
		t := -m.eps
		if m.eps == 0 {
			t = 0
		} else if h[i] > 0 {
			t = m.eps
		}
		m.stats.MaxDrift = max(m.stats.MaxDrift, math.Abs(h[i]-t))
		h[i] = t
	}
	m.refine()
	tol := condSnap * m.c
	for _, i := range m.s {
		lo, hi := m.box(int(i))
		t := m.theta[i]
		if t < lo-tol || t > hi+tol || !isFinite(t) {
			return false
		}
	}
	return isFinite(m.bias)
}

// rebuildR recomputes R from Q_SS by the rank-one additions of eq. 3.13,
// one margin sample at a time. It reports false if a member is dependent.
func (m *AOSVR) rebuildR() bool {
	for k, i := range m.s {
		qii := m.cols[k][i]
		if k == 0 {
			m.extendR(0, qii, nil, 0)
			continue
		}
		u := m.beta[:k+1]
		u[0] = 1
		for j := 0; j < k; j++ {
			u[j+1] = m.cols[j][i]
		}
		beta := m.vec[:k+1]
		m.mulR(beta, u, k+1, -1)
		g := qii + floats.Dot(beta, u)
		if !(g > condDep*max(qii, condTiny)) {
			return false
		}
		m.extendR(k, qii, beta, g)
	}
	return true
}

// rebuilt (stage 5 of the ladder) returns a new model holding the model's
// samples with the change ch, relearnt from scratch in the order they
// were first added (an added sample last), then refined and repaired as
// after any call. The receiver is not changed but for its counters. It
// restores a valid solution after a numerical failure.
// O(n²·(d + k·|S|)) and it allocates: a rare path.
func (m *AOSVR) rebuilt(ch change) (*AOSVR, error) {
	m.stats.Rebuilds++
	if m.fault != nil && m.fault(stageRebuild) {
		return nil, errors.New("fault injected")
	}
	t, err := NewAOSVR(m.cfg)
	if err != nil {
		return nil, err
	}
	t.fault = m.fault
	d := m.dim
	order := make([]int, 0, m.n)
	for i := 0; i < m.n; i++ {
		if !(ch.skip && m.id(i) == ch.skipID) {
			order = append(order, i)
		}
	}
	sort.Slice(order, func(a, b int) bool { return m.id(order[a]) < m.id(order[b]) })
	t.reserve(max(m.n+1, m.capHint, 8))
	learn := func(x []float64, y float64, id uint64) error {
		moved, err := t.add(x, y, id)
		if err != nil {
			m.stats.Refused += t.stats.Refused
			return fmt.Errorf("sample %d: %w", id, err)
		}
		if moved {
			t.refine()
		}
		t.centreBias()
		return nil
	}
	xi := make([]float64, d)
	for _, i := range order {
		y := m.y[i]
		if ch.retarget && m.id(i) == ch.id {
			y = ch.y
		}
		m.rowInto(xi, i)
		if err := learn(xi, y, m.id(i)); err != nil {
			return nil, err
		}
	}
	if ch.add {
		if err := learn(ch.x, ch.y, ch.id); err != nil {
			return nil, err
		}
	}
	refused := t.stats.Refused
	t.stats = m.stats
	t.stats.Refused += refused
	t.next = m.next
	// Finish as after any call; if that fails, keep the plain rebuild.
	t.begin()
	if t.afterOp(true) != nil {
		t.rollback()
	}
	t.end()
	return t, nil
}

// MaxKKTViolation recomputes every margin h_i from the stored θ and b and
// returns the largest violation of the KKT conditions (eq. 2.9), of the
// box −C ≤ θ_i ≤ C and of Σθ = 0. It does not trust the model's own set
// bookkeeping: sets are read off θ, a θ within condSnap·C (1e-9·C) of 0
// or ±C counting as that value (rounding leaves such residues on
// degenerate problems; they move a prediction by at most 1e-9·C per
// sample). O(n·m·d) for m support
// vectors; for tests and operators, not for the per-sample path.
func (m *AOSVR) MaxKKTViolation() float64 {
	tol := condSnap * m.c
	var worst, sum float64
	xi := make([]float64, m.dim)
	for i := 0; i < m.n; i++ {
		m.rowInto(xi, i)
		f := m.bias
		for j := 0; j < m.n; j++ {
			if t := m.theta[j]; t != 0 {
				f += t * m.kernel(j, xi)
			}
		}
		h, t := f-m.y[i], m.theta[i]
		sum += t
		var v float64
		switch {
		case math.Abs(t) > m.c:
			v = math.Abs(t) - m.c
		case t >= m.c-tol:
			v = max(0, h+m.eps)
		case t <= -m.c+tol:
			v = max(0, m.eps-h)
		case t > tol:
			v = math.Abs(h + m.eps)
		case t < -tol:
			v = math.Abs(h - m.eps)
		default:
			v = max(0, math.Abs(h)-m.eps)
		}
		if !(v <= worst) { // NaN counts as a violation
			worst = v
		}
	}
	return max(worst, math.Abs(sum))
}
