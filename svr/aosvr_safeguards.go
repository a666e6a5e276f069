package svr

import (
	"errors"
	"fmt"
	"math"

	"gonum.org/v1/gonum/floats"
)

// find returns the index of the sample with handle id, or −1. O(n).
func (m *AOSVR) find(id uint64) int {
	if m.idWide {
		lo, hi := uint32(id), uint32(id>>32)
		for i := range m.n {
			if m.ids[2*i] == lo && m.ids[2*i+1] == hi {
				return i
			}
		}
		return -1
	}
	if id < m.idBase || id-m.idBase > math.MaxUint32 {
		return -1
	}
	off := uint32(id - m.idBase)
	for i, v := range m.ids[:m.n] {
		if v == off {
			return i
		}
	}
	return -1
}

// refine takes one step of iterative refinement of θ_S and b against the
// equalities the margin set must meet (h_s = ±ε, Σθ = 0), computed afresh
// from the cached kernel columns, so that the rounding of the rank-one
// updates does not accumulate when R is ill-conditioned (large C, many
// margin samples). O(n + |S|² + |E|·|S|) to check; O(n·|S|) more when
// the residual calls for a correction.
func (m *AOSVR) refine() (residual float64) {
	for range 3 {
		r, corrected := m.refineOnce()
		residual = r
		if !corrected {
			break
		}
	}
	return residual
}

// refineOnce is one refinement step. It returns the residual it found and
// whether it corrected θ_S and b.
func (m *AOSVR) refineOnce() (float64, bool) {
	l := len(m.s)
	if l == 0 {
		return 0, false
	}
	m.needColsSV()
	n := m.n
	v := m.vec[:l+1]
	m.marginResidual(v)
	worst := 0.0
	for _, r := range v {
		worst = max(worst, math.Abs(r))
	}
	if worst <= condResid {
		return worst, false
	}
	d := m.beta[:l+1]
	m.mulR(d, v, l+1, 1)
	// With a nearly dependent margin set R amplifies rounding noise: a
	// correction that would leave a box is noise, not a refinement.
	tol := condSnap * m.c
	for k, i := range m.s {
		lo, hi := m.box(int(i))
		if t := m.theta[i] + d[k+1]; !(t >= lo-tol && t <= hi+tol) {
			return worst, false
		}
	}
	m.touch()
	m.needCols()
	m.bias += d[0]
	for k, i := range m.s {
		m.theta[i] += d[k+1]
	}
	g := m.gam[:n]
	for i := range g {
		g[i] = d[0]
	}
	for k := range m.s {
		floats.AddScaled(g, d[k+1], m.cols[k][:n])
	}
	for i, set := range m.set[:n] {
		if set != inS {
			m.h[i] += g[i]
		}
	}
	return worst, true
}

// marginResidual sets v (of length |S|+1) to the residual of the
// equalities the margin set must meet, from the cached columns: v[0] =
// −Σθ, v[k+1] = h_i − f(x_i) for i = s_k. O(n + |S|² + |E|·|S|).
func (m *AOSVR) marginResidual(v []float64) {
	n := m.n
	theta, ss, cols := m.theta[:n], m.s, m.cols[:len(m.s)]
	var sum float64
	for _, t := range theta {
		sum += t
	}
	v[0] = -sum
	// v[k+1] = h_i − (b − y_i + Σ_j θ_sj Q_{sj,i}) − Σ_e θ_e Q_{e,i} for
	// i = s_k, each sum taken in ascending j, then e; the loops run
	// column by column, which reads each column's memory in order.
	f := v[1 : len(ss)+1]
	bias, ys, hs := m.bias, m.y[:n], m.h[:n]
	for k, i := range ss {
		f[k] = bias - ys[i]
	}
	for j, sj := range ss {
		t, col := theta[sj], cols[j][:n]
		for k, i := range ss {
			f[k] += t * col[i]
		}
	}
	for k, i := range ss {
		f[k] = hs[i] - f[k]
	}
	var es [128]int32
	sets := m.set[:n]
	for e0 := 0; e0 < n; {
		ne := 0
		for ; e0 < n && ne < len(es); e0++ {
			// Written always, kept when e0 is in E: no branch on the set.
			es[ne] = int32(e0)
			if sets[e0] == inE {
				ne++
			}
		}
		// Four margin samples at a time: four independent sums, each
		// still in ascending e.
		k, l := 0, len(ss)
		for ; k+4 <= l; k += 4 {
			c0, c1, c2, c3 := cols[k][:n], cols[k+1][:n], cols[k+2][:n], cols[k+3][:n]
			f0, f1, f2, f3 := f[k], f[k+1], f[k+2], f[k+3]
			for _, e := range es[:ne] {
				t := theta[e]
				f0 -= t * c0[e]
				f1 -= t * c1[e]
				f2 -= t * c2[e]
				f3 -= t * c3[e]
			}
			f[k], f[k+1], f[k+2], f[k+3] = f0, f1, f2, f3
		}
		for ; k < l; k++ {
			col, fk := cols[k][:n], f[k]
			for _, e := range es[:ne] {
				fk -= theta[e] * col[e]
			}
			f[k] = fk
		}
	}
}

// repair finds, from the maintained margins, the sample that most violates
// its KKT conditions and, if the violation exceeds repairTol, relearns that
// sample in place (θ driven to 0, then learnt again). Violations arise only
// from rounding on nearly dependent margin sets, where a sample may have
// been refused entry to S; relearning puts it where it belongs. A relearn
// or refresh that fails is returned, for the caller to roll back and
// rebuild. O(n) when nothing needs repair.
func (m *AOSVR) repair() error {
	refreshed := false
	for range 8 {
		worst, who := m.worstViolation()
		if worst <= condRepair || m.set[who] == inS {
			return nil
		}
		if !refreshed {
			// Judge on exact margins, not on the incremental ones.
			if err := m.refresh(); err != nil {
				return err
			}
			refreshed = true
			continue
		}
		m.stats.Repairs++
		m.blocked, m.bounced = m.blocked[:0], m.bounced[:0]
		if m.fault != nil && m.fault(stageRepair) {
			return errors.New("repair: fault injected")
		}
		if err := m.relearn(who); err != nil {
			return fmt.Errorf("repair sample %d: %w", who, err)
		}
		if err := m.refresh(); err != nil {
			return err
		}
	}
	return nil
}

// worstViolation returns the largest violation of the KKT conditions read
// off the maintained margins (for margin samples, of their box, relative
// to C) and the sample that has it. O(n).
func (m *AOSVR) worstViolation() (float64, int) {
	n := m.n
	hs, thetas, sets := m.h[:n], m.theta[:n], m.set[:n]
	eps, c := m.eps, m.c
	worst, who := 0.0, -1
	for i, set := range sets {
		h, t := hs[i], thetas[i]
		var v float64
		switch {
		case set == inS:
			lo, hi := -c, c // m.box(i), on the locals
			if eps != 0 {
				if h < 0 {
					lo = 0
				} else {
					hi = 0
				}
			}
			v = max(lo-t, t-hi) / c
		case t == 0:
			v = math.Abs(h) - eps
		case t > 0:
			v = h + eps
		default:
			v = eps - h
		}
		if v > worst {
			worst, who = v, i
		}
	}
	return worst, who
}

// relearn drives θ_c to 0 and learns sample c again, with its target.
func (m *AOSVR) relearn(c int) error {
	haveCol := false
	if m.theta[c] != 0 || m.set[c] == inS {
		if err := m.unlearnInPlace(c); err != nil {
			return err
		}
		haveCol = true
	}
	if math.Abs(m.h[c]) <= m.eps {
		return nil
	}
	if !haveCol {
		m.column(m.kc, c, colAll)
	}
	m.blocked, m.bounced = m.blocked[:0], m.bounced[:0]
	return m.drive(c, true)
}

// afterOp runs stages 2–4 of the ladder after a step: refine (or refresh
// after a refusal) and repair when the step changed θ, then fixes b when
// it is not determined by a free margin vector and refreshes the state
// every refreshEvery operations. A failed refresh or repair is returned.
func (m *AOSVR) afterOp(changed bool) error {
	if changed {
		if m.refreshDue {
			// A nearly dependent margin set: the incremental margins may
			// have drifted; recompute everything before judging them.
			m.refreshDue = false
			if err := m.refresh(); err != nil {
				return err
			}
		} else {
			m.refine()
		}
		if err := m.repair(); err != nil {
			return err
		}
	}
	m.centreBias()
	m.ops++
	if m.ops >= refreshEvery {
		m.ops = 0
		return m.refresh()
	}
	return nil
}
