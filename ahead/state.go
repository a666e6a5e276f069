package ahead

import (
	"fmt"
	"math"
	"slices"
)

// State is the whole state of a [Forecaster], for checkpoints: plain data
// sharing nothing with the Forecaster it came from. A Forecaster restored
// from it forecasts bit for bit as the one it came from would have.
type State struct {
	// T counts the values pushed; P1 and P2 are the periods (SetPeriods).
	T      uint64
	P1, P2 int
	// ARs are the autoregressions' of Drift, SAR1 and SAR2, in that
	// order (nil for one absent without its period).
	ARs []*SARState
	// Profile is the exponential smoothing's; nil without periods.
	Profile *ProfileState
	// Sigma, CleanN and Run are the cleaner's error scale, errors seen
	// and run of outliers; Corrections its corrections, oldest first.
	Sigma       float64
	CleanN      uint32
	Run         int
	Corrections []Correction
	// Anchors are the anchor steps' scoring, in increasing step.
	Anchors []AnchorState
	// Window is the errors' window in arrival order, oldest first.
	Window []float64
	// Prev1 is the newest path's step 1, when Has1.
	Prev1 float64
	Has1  bool
}

// SARState is an autoregression's: the weighted sums A (k×k, row-major)
// and B, the mean |z| and the samples learned.
type SARState struct {
	A, B []float64
	ZAbs float64
	N    int
}

// ProfileState is the decomposition's: the level, each profile's bins,
// the values each bin took (saturating) and its moving average's running
// sum, and the values pushed.
type ProfileState struct {
	Level      float64
	S1, S2     []float64
	Cnt1, Cnt2 []uint16
	Sum1, Sum2 float64
	N          uint64
}

// Correction is one of the cleaner's: value T is seen as less by D.
type Correction struct {
	T uint64
	D float64
}

// AnchorState is one anchor step's: per candidate its mean squared and
// absolute errors and the forecasts scored, the guard's losses, the
// combination's forecasts scored and mean error, the interval's
// half-width in those, and the forecasts waiting (Pending, as the anchor's places
// in order).
type AnchorState struct {
	MSE, Abs []float64
	Scored   []uint32
	Guard    []float64
	NErr     uint32
	MAE      float64
	Q        float64
	Pending  []SlotState
}

// SlotState is one forecast waiting: valid, its origin's count, its
// label, scale, the guard's members' forecasts (Top), the path's value
// and half-width, the anchor's mean error at the origin (Unit), and the
// candidates' forecasts (NaN: none).
type SlotState struct {
	Valid            bool
	Origin           uint64
	Label            int64
	Scale            float64
	Top              []float64
	Comb, Half, Unit float64
	Candidates       []float32
}

// State returns a deep copy of f's state.
func (f *Forecaster) State() State {
	st := State{T: f.t, P1: f.p1, P2: f.p2, ARs: make([]*SARState, len(f.ars)),
		Sigma: f.clean.sigma, CleanN: f.clean.n, Run: f.clean.run,
		Prev1: f.prev1, Has1: f.has1}
	for i, ar := range f.ars {
		if ar != nil {
			st.ARs[i] = ar.state()
		}
	}
	if pr := f.prof; pr != nil {
		st.Profile = &ProfileState{Level: pr.level, N: pr.n, S1: slices.Clone(pr.s[0]), S2: slices.Clone(pr.s[1]),
			Cnt1: slices.Clone(pr.cnt[0]), Cnt2: slices.Clone(pr.cnt[1]), Sum1: pr.sum[0], Sum2: pr.sum[1]}
	}
	for _, c := range f.clean.corr {
		st.Corrections = append(st.Corrections, Correction{T: c.t, D: c.d})
	}
	st.Anchors = make([]AnchorState, len(f.anchors))
	for i := range f.anchors {
		an := &f.anchors[i]
		as := AnchorState{MSE: slices.Clone(an.mse[:]), Abs: slices.Clone(an.abs[:]), Scored: slices.Clone(an.scored[:]),
			Guard: slices.Clone(an.guard[:]), NErr: an.nErr, MAE: an.mae, Q: an.q, Pending: make([]SlotState, len(an.pending))}
		cands := f.slotCands(i)
		for k, p := range an.pending {
			as.Pending[k] = SlotState{Valid: p.valid, Origin: p.origin, Label: p.label, Scale: p.scale,
				Top: slices.Clone(p.top[:]), Comb: p.comb, Half: p.half, Unit: p.unit,
				Candidates: slices.Clone(cands[k*f.n : (k+1)*f.n])}
		}
		st.Anchors[i] = as
	}
	st.Window = f.window.arrivals()
	return st
}

func (s *sar) state() *SARState {
	return &SARState{A: slices.Clone(s.a), B: slices.Clone(s.b), ZAbs: s.zabs, N: s.n}
}

// badState returns an error wrapping [ErrBadState].
func badState(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrBadState}, args...)...)
}

// SetState replaces f's state with st (from State of a Forecaster of the
// same Config). It returns an error wrapping [ErrBadState] for a state
// that does not fit, and leaves f unchanged then.
func (f *Forecaster) SetState(st State) error {
	if p1, p2 := normPeriods(st.P1, st.P2); p1 != st.P1 || p2 != st.P2 {
		return badState("periods %d, %d", st.P1, st.P2)
	}
	if len(st.Anchors) != len(f.anchors) {
		return badState("%d anchor steps, want %d", len(st.Anchors), len(f.anchors))
	}
	// Built aside, swapped in on success.
	g := *f
	g.anchors = slices.Clone(f.anchors)
	for i := range g.anchors {
		g.anchors[i].pending = make([]slot, len(f.anchors[i].pending))
	}
	g.slots = make([]float32, len(f.slots))
	g.window = newResiduals(f.window.size)
	g.SetPeriods(st.P1, st.P2, nil) // fresh parts of the right shapes
	g.t, g.prev1, g.has1 = st.T, st.Prev1, st.Has1
	if len(st.ARs) != len(g.ars) {
		return badState("%d autoregressions, want %d", len(st.ARs), len(g.ars))
	}
	for i, ar := range g.ars {
		c := Drift + Candidate(i)
		if (st.ARs[i] != nil) != (ar != nil) {
			return badState("%s state present: %v, periods %d, %d", c, st.ARs[i] != nil, st.P1, st.P2)
		}
		if ar != nil {
			if err := ar.setState(st.ARs[i]); err != nil {
				return badState("%s: %v", c, err)
			}
		}
	}
	if err := g.setProfile(&st); err != nil {
		return err
	}
	if err := g.setCleaner(&st); err != nil {
		return err
	}
	if err := g.setAnchors(&st); err != nil {
		return err
	}
	if len(st.Window) > g.window.size {
		return badState("%d errors in a window of %d", len(st.Window), g.window.size)
	}
	for _, r := range st.Window {
		if !(r >= 0) || math.IsInf(r, 0) {
			return badState("error %v in the window", r)
		}
		g.window.add(r)
	}
	*f = g
	return nil
}

// setProfile sets the profile forecaster's state of f, built aside by
// SetState, from st.
func (f *Forecaster) setProfile(st *State) error {
	if (st.Profile != nil) != (f.prof != nil) {
		return badState("profile state present: %v, periods %d, %d", st.Profile != nil, st.P1, st.P2)
	}
	ps := st.Profile
	if ps == nil {
		return nil
	}
	pr := f.prof
	if len(ps.S1) != len(pr.s[0]) || len(ps.S2) != len(pr.s[1]) || len(ps.Cnt1) != len(pr.cnt[0]) || len(ps.Cnt2) != len(pr.cnt[1]) {
		return badState("profile of %d+%d bins, want %d+%d", len(ps.S1), len(ps.S2), len(pr.s[0]), len(pr.s[1]))
	}
	if !finite(ps.Level) || !allFinite(ps.S1) || !allFinite(ps.S2) || !finite(ps.Sum1) || !finite(ps.Sum2) {
		return badState("profile values not finite")
	}
	pr.level, pr.n, pr.sum = ps.Level, ps.N, [2]float64{ps.Sum1, ps.Sum2}
	copy(pr.s[0], ps.S1)
	copy(pr.s[1], ps.S2)
	copy(pr.cnt[0], ps.Cnt1)
	copy(pr.cnt[1], ps.Cnt2)
	return nil
}

// setCleaner sets the cleaner of f, built aside by SetState, from st.
func (f *Forecaster) setCleaner(st *State) error {
	if !(st.Sigma >= 0) || math.IsInf(st.Sigma, 0) || len(st.Corrections) > maxCorrections {
		return badState("cleaner: scale %v, %d corrections", st.Sigma, len(st.Corrections))
	}
	f.clean = cleaner{sigma: st.Sigma, n: st.CleanN, run: st.Run}
	for i, c := range st.Corrections {
		if !finite(c.D) || (i > 0 && c.T <= st.Corrections[i-1].T) {
			return badState("cleaner: correction %d", i)
		}
		f.clean.corr = append(f.clean.corr, correction{t: c.T, d: c.D})
	}
	return nil
}

// setAnchors sets the anchors of f, built aside by SetState, from st.
func (f *Forecaster) setAnchors(st *State) error {
	for i := range f.anchors {
		an, as := &f.anchors[i], st.Anchors[i]
		if len(as.MSE) != maxCands || len(as.Abs) != maxCands || len(as.Scored) != maxCands ||
			len(as.Guard) != nTop || len(as.Pending) != len(an.pending) {
			return badState("anchor %d: sizes %d, %d, %d, %d, %d", an.step, len(as.MSE), len(as.Abs), len(as.Scored), len(as.Guard), len(as.Pending))
		}
		if !allFinite(as.MSE) || !allFinite(as.Abs) || !allFinite(as.Guard) || !(as.MAE >= 0) || math.IsInf(as.MAE, 0) || !(as.Q >= 0) || math.IsInf(as.Q, 0) {
			return badState("anchor %d: values not finite", an.step)
		}
		copy(an.mse[:], as.MSE)
		copy(an.abs[:], as.Abs)
		copy(an.scored[:], as.Scored)
		copy(an.guard[:], as.Guard)
		an.mae, an.nErr, an.q = as.MAE, as.NErr, as.Q
		cands := f.slotCands(i)
		for k, ps := range as.Pending {
			if len(ps.Top) != nTop || len(ps.Candidates) != f.n {
				return badState("anchor %d place %d: sizes %d, %d", an.step, k, len(ps.Top), len(ps.Candidates))
			}
			p := &an.pending[k]
			*p = slot{valid: ps.Valid, origin: ps.Origin, label: ps.Label, scale: ps.Scale, comb: ps.Comb, half: ps.Half, unit: ps.Unit}
			copy(p.top[:], ps.Top)
			copy(cands[k*f.n:], ps.Candidates)
		}
	}
	return nil
}

func (s *sar) setState(st *SARState) error {
	if st == nil {
		return fmt.Errorf("missing")
	}
	if len(st.A) != s.k*s.k || len(st.B) != s.k {
		return fmt.Errorf("%d×%d sums, want %d", len(st.A), len(st.B), s.k)
	}
	if !allFinite(st.A) || !allFinite(st.B) || !finite(st.ZAbs) || st.N < 0 {
		return fmt.Errorf("values not finite")
	}
	copy(s.a, st.A)
	copy(s.b, st.B)
	s.zabs, s.n = st.ZAbs, st.N
	return nil
}

// arrivals returns the window's errors, oldest first.
func (r *residuals) arrivals() []float64 {
	out := make([]float64, len(r.sorted))
	base := r.next - uint32(len(r.sorted))
	for i, s := range r.seq {
		out[s-base] = r.sorted[i]
	}
	return out
}

func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

func allFinite(xs []float64) bool {
	for _, x := range xs {
		if !finite(x) {
			return false
		}
	}
	return true
}
