package svr

import (
	"fmt"
	"math"
)

// AOSVRState is the whole learnt state of an AOSVR, for checkpoints: the
// samples it holds with their coefficients, the margin set and the bias.
// Everything else (R, the kernel columns, the margins h) is recomputed by
// Import. Its fields are plain data, to be encoded by the caller.
type AOSVRState struct {
	Dim   int         // input length
	X     [][]float64 // the samples' inputs
	Y     []float64   // their targets
	Theta []float64   // their coefficients θ_i
	IDs   []uint64    // their handles
	// Margin lists the margin set S by position in X, in R's order.
	Margin []int
	Bias   float64 // b
	Next   uint64  // the handle the next added sample gets

	// The incremental state, for an exact restore: the maintained margins
	// h_i, R row-major ((|S|+1)², empty while S is empty), the operations
	// since the last refresh, and whether a refresh is due. Optional:
	// without H, Import recomputes h and R, which agrees with the
	// exporting model only to rounding, and on a degenerate window (no
	// free margin sample, so b only bounded) a rounding difference can
	// tip a later tie. With them the restored model goes on bit for bit.
	H              []float64
	R              []float64
	Ops            int
	RefreshPending bool
}

// Config returns the configuration the model was made with, defaults
// filled in.
func (m *AOSVR) Config() AOSVRConfig { return m.cfg }

// Export returns a deep copy of the model's learnt state. O(n·d); it
// allocates.
func (m *AOSVR) Export() AOSVRState {
	st := AOSVRState{
		Dim: m.dim, X: make([][]float64, m.n),
		Y: append([]float64(nil), m.y[:m.n]...), Theta: append([]float64(nil), m.theta[:m.n]...),
		IDs: make([]uint64, m.n), Bias: m.bias, Next: m.next,
		H: append([]float64(nil), m.h[:m.n]...), Ops: m.ops,
		RefreshPending: m.refreshDue,
	}
	for i := range m.n {
		st.IDs[i] = m.id(i)
	}
	if l := len(m.s); l > 0 {
		st.R = make([]float64, 0, (l+1)*(l+1))
		for a := 0; a <= l; a++ {
			st.R = append(st.R, m.r[a*m.rs:a*m.rs+l+1]...)
		}
	}
	for i := range st.X {
		st.X[i] = make([]float64, m.dim)
		m.rowInto(st.X[i], i)
	}
	for _, i := range m.s {
		st.Margin = append(st.Margin, int(i))
	}
	return st
}

// Import replaces the model's state with st, which must come from Export
// of a model with the same configuration. The margin set's kernel columns
// are recomputed; with the incremental state (H, R, …) the restored model
// is then the exporting one bit for bit. Without it R is rebuilt from
// Q_SS and every h_i recomputed, and predictions agree to rounding
// (~1e-15). On error, which names what is wrong, the model is unchanged.
// O(n·|S|·d) with the incremental state, O(n·(|S| + |E|)·d + |S|³)
// without.
func (m *AOSVR) Import(st AOSVRState) error {
	margin, err := m.checkState(&st)
	if err != nil {
		return err
	}
	t, err := NewAOSVR(m.cfg)
	if err != nil {
		return err
	}
	n := len(st.X)
	t.reserve(max(n, m.capHint, 8))
	t.n, t.bias, t.next = n, st.Bias, st.Next
	for i := range n {
		t.storeRow(i, st.X[i], i == 0)
		t.y[i], t.theta[i], t.spos[i] = st.Y[i], st.Theta[i], -1
		t.setID(i, st.IDs[i], i+1)
		switch {
		case margin[i]:
			t.set[i] = inS
		case st.Theta[i] == 0:
			t.set[i] = inR
		case math.Abs(st.Theta[i]) >= m.c:
			t.set[i] = inE
			t.theta[i] = math.Copysign(m.c, st.Theta[i])
		default:
			return badState("sample %d: coefficient %v strictly inside its box but not in the margin set", i, st.Theta[i])
		}
	}
	t.colsAt = colsAll
	for k, i := range st.Margin {
		col := t.takeColumn()
		t.column(col, i, colAll)
		if k+2 > t.rs {
			t.growR(k + 2)
		}
		t.spos[i] = int32(k)
		t.s = append(t.s, int32(i))
		t.cols = append(t.cols, col)
	}
	if len(st.H) > 0 {
		if err := t.importExact(&st); err != nil {
			return err
		}
	} else if !t.polish() {
		// polish rebuilds R, recomputes every h (S members snap to the
		// side of ±ε they are on) and refines θ_S and b.
		return badState("the margin set is numerically dependent or inconsistent with the coefficients")
	}
	t.stats, t.fault = m.stats, m.fault
	m.adopt(t)
	return nil
}

// badState is an error of Import: a state m cannot take.
func badState(format string, args ...any) error {
	return fmt.Errorf("%w: aosvr: import: %s", ErrBadInput, fmt.Sprintf(format, args...))
}

// checkState returns the problem of a state m cannot take, and else which
// samples are in the margin set.
func (m *AOSVR) checkState(st *AOSVRState) ([]bool, error) {
	n := len(st.X)
	switch {
	case st.Dim != m.dim:
		return nil, badState("state has dimension %d, model %d", st.Dim, m.dim)
	case len(st.Y) != n || len(st.Theta) != n || len(st.IDs) != n:
		return nil, badState("%d inputs but %d targets, %d coefficients, %d handles", n, len(st.Y), len(st.Theta), len(st.IDs))
	case !isFinite(st.Bias):
		return nil, badState("bias is %v", st.Bias)
	}
	seen := make(map[uint64]bool, n)
	var sum float64
	for i := range n {
		if err := checkSample(st.X[i], st.Y[i], m.dim); err != nil {
			return nil, badState("sample %d: %v", i, err)
		}
		t := st.Theta[i]
		if !isFinite(t) || math.Abs(t) > m.c*(1+condSnap) {
			return nil, badState("sample %d: coefficient %v outside [−C, C] = [%v, %v]", i, t, -m.c, m.c)
		}
		if seen[st.IDs[i]] || st.IDs[i] >= st.Next {
			return nil, badState("sample %d: handle %d repeated or not below next %d", i, st.IDs[i], st.Next)
		}
		seen[st.IDs[i]] = true
		sum += t
	}
	if math.Abs(sum) > condImportSum*m.c*float64(max(n, 1)) {
		return nil, badState("coefficients sum to %v, not 0", sum)
	}
	margin := make([]bool, n)
	for _, i := range st.Margin {
		if i < 0 || i >= n || margin[i] {
			return nil, badState("margin set names sample %d twice or out of range", i)
		}
		margin[i] = true
	}
	return margin, nil
}

// importExact takes st's margins and R as they are (an exact state).
func (t *AOSVR) importExact(st *AOSVRState) error {
	n, l := len(st.X), len(st.Margin)
	if len(st.H) != n || (l > 0 && len(st.R) != (l+1)*(l+1)) || (l == 0 && len(st.R) != 0) || st.Ops < 0 {
		return badState("%d margins, %d entries of R for %d samples and %d margin samples", len(st.H), len(st.R), n, l)
	}
	for i, v := range st.H {
		if !isFinite(v) {
			return badState("margin %d is %v", i, v)
		}
	}
	for i, v := range st.R {
		if !isFinite(v) {
			return badState("R entry %d is %v", i, v)
		}
	}
	copy(t.h, st.H)
	for a := 0; a <= l && l > 0; a++ {
		copy(t.r[a*t.rs:a*t.rs+l+1], st.R[a*(l+1):(a+1)*(l+1)])
	}
	t.ops = st.Ops
	t.refreshDue = st.RefreshPending
	return nil
}
