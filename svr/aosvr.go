package svr

import (
	"fmt"
	"math"
)

// AOSVRConfig configures an AOSVR.
type AOSVRConfig struct {
	// Dim is the input dimension; it must be at least 1.
	Dim int
	// Kernel is the kernel; nil means RBF{Gamma: 1}, the paper's choice.
	Kernel Kernel
	// C is the regularisation constant, the box bound on every θ_i; it
	// must be positive and finite.
	C float64
	// Epsilon is the half-width ε of the insensitive tube; it must be
	// non-negative and finite. ε = 0 is allowed.
	Epsilon float64
	// Capacity is the number of samples storage is sized for (the
	// forgetting window W): storage starts at 8 samples and doubles as
	// samples arrive, up to Capacity exactly, so that a model that has seen
	// few samples holds memory for few (then beyond Capacity, doubling
	// again). Zero means no bound known: double as needed. Storage never
	// shrinks, so a model that has been warm at W samples does not
	// allocate again.
	Capacity int
	// KeepColumns keeps the kernel columns of the margin set between
	// calls, 8·|S|·Capacity bytes more per model, whatever the
	// process-wide column cache holds (SetColumnCache), outside it.
	// Otherwise a model at its capacity keeps them only while the cache
	// has room, and computes them again in the next call that moves θ
	// (O(|S|·n·d), the larger part of such a call's time with an RBF
	// kernel). The results are the same bits either way.
	KeepColumns bool
}

// The conditioning policy: every threshold by which an AOSVR tells
// rounding noise from signal, in one place, each with what it is relative
// to. Kernel values, the sensitivities β and γ and the margins are of order
// one for the kernels and scaled data forecastd uses; θ scales with C. The
// thresholds sit well above the rounding of one operation (~1e-16 relative)
// and well below anything a caller could see in a prediction.
const (
	// condDep, relative to K(x_i, x_i): a sample whose Schur complement γ_i
	// (eq. 3.13) is below condDep·K(x_i, x_i) is numerically dependent on
	// the margin set (a duplicate of a margin vector, say) and is refused
	// entry to S, since R would become singular. The same test, at the
	// same threshold, rejects a margin set that a refresh finds dependent.
	// K(x_i, x_i) is floored at condTiny so that a zero diagonal is never
	// taken for independence.
	condDep  = 1e-9
	condTiny = 1e-300
	// condSens, relative to 1+‖β‖₁, the scale of the rounding error in γ_n
	// (eq. 3.9): a sample whose |γ_n| is below it does not move with θ_c
	// and is not a candidate to change set.
	condSens = 1e-11
	// condBeta, absolute (β_s = ∂θ_s/∂θ_c is dimensionless): a margin
	// sample whose |β_s| is below it does not move.
	condBeta = 1e-12
	// condSnap, relative to C: a θ within condSnap·C of 0 or of ±C is that
	// value (a residue of rounding: a sample being unlearnt has θ = 0, a
	// margin sample found at an end of its box leaves S), and θ_S may stand
	// outside its box by as much before a correction is refused as noise
	// (refine) or the margin set is judged inconsistent (refresh).
	// MaxKKTViolation reads the sets off θ at the same threshold. Such a
	// residue moves a prediction by at most condSnap·C per sample.
	condSnap = 1e-9
	// condResid, absolute (margins are in units of y): residuals of the
	// margin equalities h_s = ±ε and Σθ = 0 below it are left alone by
	// refine.
	condResid = 1e-12
	// condRepair, absolute: a sample whose maintained margin violates its
	// KKT conditions by more than this after an operation is relearnt.
	condRepair = 1e-10
	// condImportSum, relative to C·n: how far from 0 the coefficients of
	// an imported state may sum. It is far looser than the others: it
	// guards against a corrupt checkpoint, not against rounding.
	condImportSum = 1e-6
)

// refreshEvery is the number of operations between two refreshes, in
// which R is rebuilt from Q_SS, θ_S and b are re-solved and every margin
// h_i is recomputed from scratch, so rounding cannot accumulate.
const refreshEvery = 256

// A stage of the degenerate-case ladder (see AOSVR), as named to the fault
// hook of tests.
type stage uint8

const (
	stageStep    stage = iota // the incremental step (drive) itself
	stageRepair               // a relearn by repair
	stageRefresh              // a refresh (polish)
	stageRebuild              // a rebuild from the stored samples
)

// Sample sets by the KKT conditions of the AOSVR paper, eq. 2.9 (with
// h_i = f(x_i) − y_i): E with θ_i = −C and h_i ≥ ε or θ_i = C and h_i ≤ −ε;
// S with h_i = ±ε and θ_i strictly inside its box, opposite in sign to
// h_i; R with θ_i = 0 and |h_i| ≤ ε.
const (
	inR uint8 = iota // remaining: θ = 0, |h| ≤ ε
	inS              // margin: h = ±ε, θ inside its box
	inE              // error: |θ| = C
)

// AOSVR is the accurate online ε-support vector regression of Ma, Theiler
// and Perkins, "Accurate On-line Support Vector Regression", Neural
// Computation 15 (2003), sections 3 and 4. After every call it holds
// exactly (to rounding) the solution a batch ε-SVR would find on the
// samples it holds:
//
//	f(x) = Σ_j θ_j K(x_j, x) + b,  −C ≤ θ_j ≤ C,  Σ_j θ_j = 0,
//
// with every sample meeting the KKT conditions of eq. 2.9. Samples are
// learnt one at a time (the incremental algorithm, section 3) and can be
// unlearnt in any order (the decremental algorithm, section 4), which is
// what a sliding forgetting window needs.
//
// Memory is O(n·d + |S|²) for n samples of dimension d with |S| margin
// support vectors once the model is at its capacity: the kernel columns of
// the margin set (|S|·n) are computed within a call that needs them and
// kept between calls while the process-wide column cache has room for
// them (SetColumnCache), and the full n×n kernel matrix is never formed. A learn or unlearn that moves θ costs
// O(n·|S|·d + k·n·|S|) time, where k is the number of set changes it
// causes (usually 0–3): the first term computes the margin set's columns.
// A sample that falls inside the tube costs only O(m·d) for m support
// vectors; unlearning a sample with θ = 0 costs O(n). Once storage has
// grown to the window, a call allocates only when R outgrows its buffer,
// or ends in a buffer larger than (|S|+1)², while the process-wide list of
// R buffers has none that fits, when a trailing input that was constant
// starts to vary (storeRow), or when the call needs a kernel column while
// neither the model nor the process-wide list of spare columns holds one.
// What a call needs only while it runs (the copies it saves to roll back,
// the undo record, the kernel columns of S and of the moving sample, the
// sensitivities β and γ) and spare buffers are shared by every model of
// the process through bounded free lists (svr.PooledBytes), not held per
// model: a warm model holds its samples (the trailing inputs they all
// share once), θ, margins and R, laid out with the exact stride |S|+1 in
// a buffer of (|S|+1)² values (MemoryParts).
//
// Accuracy: the KKT conditions hold to about 1e-12 on well-conditioned
// data and to 1e-8 across the tested ladders (windows 1 to 100, C from
// 1e-3 to 1e4, ε from 0 to 0.1, duplicate inputs). What rounding still
// leaves grows with the conditioning of the margin set: on clusters of
// inputs closer than about 1e-2 (at RBF γ = 1), where
// cond([[0, 1ᵀ], [1, Q_SS]]) passes 1e10 during a step, violations up to
// 1e-4 have been seen. The thresholds that tell rounding from signal are
// one policy, the cond… constants.
//
// Degenerate cases are met by a ladder of five stages, each costlier and
// rarer than the one before; Stats counts every stage but refine:
//
//  1. Refuse (Stats.Refused): a sample numerically dependent on the
//     margin set (Schur complement γ_i < condDep·K_ii) is refused entry to
//     S and the step goes on without it, and a sample that would cycle by
//     zero steps is refused another. O(|S|²) per refusal. Refusals do not
//     count toward drive's limit of 8n+64 set changes but are bounded by n
//     per change, so a step is at worst O(n²) iterations of O(n·|S|)
//     each, O(n³·|S|), against O(k·n·|S|) for k set changes (usually
//     0–3) in the usual case. A refusal makes the next operation end with
//     a refresh.
//  2. Refine: after every step that moved θ, one to three rounds of
//     iterative refinement of θ_S and b against the margin equalities.
//     O(n + |S|² + |E|·|S|) to check, O(n·|S|) more to correct.
//  3. Repair (Stats.Repairs): a sample that rounding has left violating
//     its KKT conditions by more than condRepair is relearnt in place,
//     after a refresh, at most 8 times per operation. O(n) to look; each
//     relearn costs a step.
//  4. Refresh (Stats.Refreshes): R is rebuilt from Q_SS, every h_i
//     recomputed from scratch and θ_S and b refined, every refreshEvery
//     operations, after a refusal and before a repair.
//     O(|S|³ + n·(|S| + |E|·d)).
//  5. Rebuild (Stats.Rebuilds): when a stage above fails (no step bound,
//     no convergence, a dependent margin set or θ_S out of its box at a
//     refresh, a non-finite result), the model is first restored to its
//     state before the call (Stats.Rollbacks) and then the samples the
//     call should leave are relearnt from scratch into a new model, in the
//     order they were first added, which replaces the receiver only if
//     every sample is learnt. O(n²·(d + k·|S|)) time and O(n·(d+|S|))
//     allocated: a rare path.
//
// A call therefore either succeeds or returns an error, wrapping
// ErrNumerical when the rebuild fails too (Stats.Failures), with the model
// exactly as before the call: the same samples under the same handles,
// the same θ, b, margins and R, the same predictions bit for bit. Restoring
// costs nothing on the usual path: the first change to the state within a
// call saves θ, h, the sets and R (O(n + |S|²), into buffers grown with
// the model); a failure restores them and recomputes the margin set's
// kernel columns, which gives the same bits for a kernel whose Eval(a, b)
// and Eval(b, a) agree bit for bit, as RBF, Poly and Linear do.
//
// An AOSVR is not safe for concurrent use.
type AOSVR struct {
	cfg     AOSVRConfig // as given to NewAOSVR, defaults filled in
	kern    Kernel
	rbfGam  float64 // γ of the RBF kernel
	dim     int
	c, eps  float64
	capHint int

	// Per sample, indexed 0..n−1 (compacted by swap-removal).
	n int
	// The inputs, row-major with stride xs ≤ dim: the trailing dim − xs
	// inputs, the same (bit for bit) in every sample held, are stored once,
	// in xsuf (an RBF model only; otherwise xs = dim). A forecasting
	// series' unused seasonal inputs, 0 until its history reaches back a
	// period, are such inputs. The kernel of two stored samples reads only
	// the first xs inputs: the others add (c − c)² = +0 to the sum, which
	// changes no bit of it. See storeRow.
	x     []float64 // n·xs inputs
	xs    int
	xsuf  []float64 // dim − xs inputs
	y     []float64 // targets
	theta []float64 // θ_i = α_i − α_i*
	h     []float64 // margins h_i = f(x_i) − y_i
	set   []uint8   // inR, inS, inE
	spos  []int32   // position in s, or −1
	// ids are the handles, read with id: narrow, ids[i] is sample i's
	// handle less idBase, while every handle held lies within 2³²−1 of
	// the lowest; wide (idWide), ids[2i] and ids[2i+1] are its low and
	// high halves, once a sample is held across 2³² additions. Narrow
	// takes 4 B a sample where a handle is 8. See setID.
	ids    []uint32
	idBase uint64
	bias   float64
	next   uint64 // next handle

	// Margin set S: s[k] is the sample index of the k-th member, cols[k]
	// its kernel column K(x_i, x_s[k]) over the samples colsAt says, and
	// R (eq. 3.7) the (l+1)×(l+1) inverse of [[0, 1ᵀ], [1, Q_SS]], row
	// and column 0 belonging to b, stored row-major with stride rs. The
	// columns are computed by needCols when a call first needs them (a
	// step that moves θ, a refinement, a refresh) and, for a model at its
	// capacity, kept at the end of the call only within the column cache
	// (settleColumns): a call whose sample falls inside the tube never
	// computes them.
	s      []int32
	cols   [][]float64
	colsAt uint8 // colsNone (cols is empty), colsSV or colsAll
	rbf    bool  // kern is an RBF: the kernel loops are specialised
	idWide bool  // ids holds whole handles (see ids)

	// colsKept: the call began with the columns the model kept (a hit
	// of the column cache, counted once by countColumns). charge: the
	// bytes of columns the model keeps in the column cache's account
	// (nil: never any).
	colsKept bool
	charge   *int64

	peakS     int         // largest |S| since restR last shrank R's buffer
	shrinkOps int         // calls since restR last looked
	pool      [][]float64 // spare column buffers
	r         []float64
	rs        int

	// Scratch, reused by every call. kc and gam are a column long: a
	// model at its capacity takes them at the start of a call and gives
	// them back at its end (to pool, then its Pools), so that between
	// calls it holds neither.
	kc       []float64 // kernel column of the moving sample
	gam      []float64 // sensitivities γ_n (eq. 3.9)
	beta     []float64 // sensitivities [β_b; β_s] (eq. 3.7)
	vec      []float64 // right-hand sides of R products
	blocked  []int32   // samples refused entry to S as dependent on it, until S shrinks
	bounced  []int32   // samples refused a zero step into S until the next non-zero step
	zeroIn   []int32   // samples that entered S since the last non-zero step
	zeroFrom []uint8   // the set each of zeroIn came from

	ops        int  // operations since the last refresh
	refreshDue bool // a refusal since the last refresh: refresh after this operation
	stats      AOSVRStats

	u *undo // what the current call needs to roll back; lent for the call (nil between calls)

	pools *Pools // what the model lends its call buffers to (SetPools)

	// fault, if set (by tests only), is asked at each stage of the ladder
	// that can fail and makes it fail when it returns true.
	fault func(stage) bool
}

// AOSVRStats counts the safeguards of the degenerate-case ladder (see
// AOSVR) an AOSVR has used since it was made. The counters only grow and
// count attempts: a call that fails and is rolled back still counts the
// refusals, refreshes and rebuilds it tried. They survive Import, which
// keeps the importing model's counters, and are meant for export as
// monotonic counters (MaxDrift as a gauge).
type AOSVRStats struct {
	// Refreshes is the number of refreshes (stage 4: R rebuilt from Q_SS,
	// θ_S and b re-solved, every h_i recomputed): periodic, after a
	// refusal and before a repair.
	Refreshes uint64
	// MaxDrift is the largest deviation |h_s ∓ ε| of a margin sample found
	// by a refresh: how far rounding had carried the incremental state, in
	// units of y. It stays below 1e-9 on well-conditioned data.
	MaxDrift float64
	// Rebuilds is the number of rebuilds (stage 5) tried: the samples a
	// call should leave relearnt from scratch into a new model after the
	// incremental path failed. Each costs O(n²·(d + k·|S|)).
	Rebuilds uint64
	// Refused is the number of refusals (stage 1): a sample numerically
	// dependent on the margin set refused entry to it, or a sample refused
	// a zero step into S to break a cycle.
	Refused uint64
	// Repairs is the number of samples relearnt (stage 3) because rounding
	// had left them violating their KKT conditions.
	Repairs uint64
	// Rollbacks is the number of calls whose incremental path failed, so
	// that the model was restored to its state before the call and a
	// rebuild tried. Rollbacks − Failures of them succeeded by the
	// rebuild.
	Rollbacks uint64
	// Failures is the number of calls that returned ErrNumerical: the
	// rebuild failed too, and the model is as it was before the call.
	Failures uint64
}

var _ Forgetter = (*AOSVR)(nil)

// NewAOSVR returns an empty AOSVR, or the join of one *FieldError per
// invalid field of cfg (see AOSVRConfig.Validate).
func NewAOSVR(cfg AOSVRConfig) (*AOSVR, error) {
	if cfg.Kernel == nil {
		cfg.Kernel = RBF{Gamma: 1}
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	m := &AOSVR{cfg: cfg, kern: cfg.Kernel, dim: cfg.Dim, c: cfg.C, eps: cfg.Epsilon, capHint: cfg.Capacity, pools: processPools}
	if k, ok := cfg.Kernel.(RBF); ok {
		m.rbf, m.rbfGam = true, k.Gamma
	} else {
		m.xs = m.dim
	}
	m.reserve(8)
	return m, nil
}

// Dim returns the input dimension.
func (m *AOSVR) Dim() int { return m.dim }

// Len returns the number of samples the model holds.
func (m *AOSVR) Len() int { return m.n }

// Bias returns b.
func (m *AOSVR) Bias() float64 { return m.bias }

// Sizes returns the sizes of the margin set S, the error set E and the
// remaining set R.
func (m *AOSVR) Sizes() (s, e, r int) {
	s = len(m.s)
	for i := 0; i < m.n; i++ {
		if m.set[i] == inE {
			e++
		}
	}
	return s, e, m.n - s - e
}

// RSize returns the order of the matrix R: |S|+1, or 0 while S is empty.
func (m *AOSVR) RSize() int {
	if len(m.s) == 0 {
		return 0
	}
	return len(m.s) + 1
}

// NumSupport returns the number of support vectors: samples with θ ≠ 0.
func (m *AOSVR) NumSupport() int {
	k := 0
	for i := 0; i < m.n; i++ {
		if m.theta[i] != 0 {
			k++
		}
	}
	return k
}

// borderline counts the samples within tol of a change of set: θ = 0 with
// |h| within tol of ε, or 0 < |θ| < tol·C. Tests use it to tell a rounding
// difference in the support-vector count from a real one.
func (m *AOSVR) borderline(tol float64) int {
	k := 0
	for i := 0; i < m.n; i++ {
		t := math.Abs(m.theta[i])
		if (t == 0 && math.Abs(math.Abs(m.h[i])-m.eps) <= tol) || (t > 0 && t < tol*m.c) {
			k++
		}
	}
	return k
}

// Stats returns the counters of the numerical safeguards.
func (m *AOSVR) Stats() AOSVRStats { return m.stats }

// StateBytes returns the bytes of memory the model's state occupies.
func (m *AOSVR) StateBytes() int {
	b := 0
	for _, p := range m.MemoryParts() {
		b += p.Bytes
	}
	return b
}

// Predict returns f(x) = Σ θ_j K(x_j, x) + b. O(m·d) for m support vectors.
func (m *AOSVR) Predict(x []float64) (float64, error) {
	if err := checkVector(x, m.dim); err != nil {
		return 0, err
	}
	if m.rbf {
		return m.predictRBF(x), nil
	}
	f := m.bias
	for i := 0; i < m.n; i++ {
		if t := m.theta[i]; t != 0 {
			f += t * m.kernel(i, x)
		}
	}
	return f, nil
}

// Learn adds the sample (x, y). It is Add without the handle.
func (m *AOSVR) Learn(x []float64, y float64) error {
	_, err := m.Add(x, y)
	return err
}

// Add learns the sample (x, y) by the incremental algorithm (section 3) and
// returns a handle for Remove and UpdateTarget. x is copied. On error the
// model is unchanged: the error wraps ErrBadInput for a bad sample and
// ErrNumerical when neither the incremental step nor a rebuild could
// learn it.
func (m *AOSVR) Add(x []float64, y float64) (uint64, error) {
	if err := checkSample(x, y, m.dim); err != nil {
		return 0, err
	}
	id := m.next
	m.begin()
	moved, err := m.add(x, y, id)
	if err == nil {
		err = m.afterOp(moved)
	}
	if err != nil {
		if err := m.recoverFrom("learn", err, change{add: true, x: x, y: y, id: id}); err != nil {
			return 0, err
		}
	}
	m.end()
	m.next++
	return id, nil
}

// Sample copies the input of the sample with handle id into x (of length
// Dim) and returns its target; ok is false if the model holds no sample id.
// It lets a forgetting window keep only handles (window.Sampler). O(n) to
// find the handle, O(d) to copy.
func (m *AOSVR) Sample(id uint64, x []float64) (y float64, ok bool) {
	c := m.find(id)
	if c < 0 {
		return 0, false
	}
	m.rowInto(x, c)
	return m.y[c], true
}

// ForgetOldest unlearns the sample added first among those held (the
// lowest handle). O(n) to find it, plus Remove's cost.
func (m *AOSVR) ForgetOldest() error {
	if m.n == 0 {
		return ErrEmpty
	}
	old := 0
	for i := 1; i < m.n; i++ {
		if m.id(i) < m.id(old) {
			old = i
		}
	}
	return m.Remove(m.id(old))
}

// Oldest returns the handle of the oldest sample held.
func (m *AOSVR) Oldest() (uint64, bool) {
	if m.n == 0 {
		return 0, false
	}
	id := m.id(0)
	for i := 1; i < m.n; i++ {
		id = min(id, m.id(i))
	}
	return id, true
}

// Remove unlearns the sample with handle id by the decremental algorithm
// (section 4): the model becomes the solution on the remaining samples. On
// error (ErrNotFound, or ErrNumerical when neither the decremental step
// nor a rebuild succeeded) the model is unchanged.
func (m *AOSVR) Remove(id uint64) error {
	c := m.find(id)
	if c < 0 {
		return fmt.Errorf("%w: handle %d", ErrNotFound, id)
	}
	m.begin()
	err := m.remove(c)
	if err == nil {
		err = m.afterOp(true)
	}
	if err != nil {
		return m.recoverFrom(fmt.Sprintf("unlearn handle %d", id), err, change{skip: true, skipID: id})
	}
	m.end()
	return nil
}

// Replace unlearns the sample with handle old and learns the sample
// (x, y), in one call: the model becomes the solution on the samples it
// held but old, plus (x, y), and the returned handle is the one that Add
// would have returned. When neither half needs a rebuild (stage 5 of the
// ladder) the model is bit for bit as after Remove(old) then Add(x, y);
// when one does, the rebuild learns both changes at once, an exact
// solution that may differ from the two calls' in rounding. On error
// (ErrBadInput, ErrNotFound, or ErrNumerical when neither the incremental
// steps nor a rebuild succeeded) the model is unchanged, old included,
// which the two calls cannot offer. x is copied. The cost is Remove's plus
// Add's.
func (m *AOSVR) Replace(old uint64, x []float64, y float64) (uint64, error) {
	if err := checkSample(x, y, m.dim); err != nil {
		return 0, err
	}
	c := m.find(old)
	if c < 0 {
		return 0, fmt.Errorf("%w: handle %d", ErrNotFound, old)
	}
	id := m.next
	m.begin()
	err := m.remove(c)
	if err == nil {
		err = m.afterOp(true)
	}
	if err == nil {
		var moved bool
		m.u.added = true
		moved, err = m.add(x, y, id)
		if err == nil {
			err = m.afterOp(moved)
		}
	}
	if err != nil {
		ch := change{skip: true, skipID: old, add: true, x: x, y: y, id: id}
		if err := m.recoverFrom(fmt.Sprintf("replace handle %d", old), err, ch); err != nil {
			return 0, err
		}
	}
	m.end()
	m.next++
	return id, nil
}

// UpdateTarget changes the target of the stored sample id to y and brings
// the solution back to the KKT conditions (Martín's "change target"): θ_c
// is first driven to 0 as in unlearning, then the sample is relearnt with
// its new target, keeping its handle and position in the window. On error
// the model is unchanged.
func (m *AOSVR) UpdateTarget(id uint64, y float64) error {
	if !isFinite(y) {
		return fmt.Errorf("%w: target is %v", ErrBadInput, y)
	}
	c := m.find(id)
	if c < 0 {
		return fmt.Errorf("%w: handle %d", ErrNotFound, id)
	}
	if y == m.y[c] {
		return nil
	}
	m.begin()
	err := m.retarget(c, y)
	if err == nil {
		err = m.afterOp(true)
	}
	if err != nil {
		return m.recoverFrom(fmt.Sprintf("update target of handle %d", id), err, change{retarget: true, id: id, y: y})
	}
	m.end()
	return nil
}

func (m *AOSVR) retarget(c int, y float64) error {
	m.touch()
	m.u.retarget, m.u.oldY = c, m.y[c]
	m.blocked, m.bounced = m.blocked[:0], m.bounced[:0]
	if m.theta[c] != 0 || m.set[c] == inS {
		if err := m.unlearnInPlace(c); err != nil {
			return err
		}
	}
	m.h[c] += m.y[c] - y
	m.y[c] = y
	return m.relearn(c)
}
