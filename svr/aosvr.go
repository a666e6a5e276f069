package svr

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"sync"

	"gonum.org/v1/gonum/floats"
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
	// calls, 8·|S|·Capacity bytes more per model, instead of parking them
	// in a process-wide lot of the 2048 models that ended a call last and
	// computing them again in the next call that moves θ if another model
	// took the slot since (O(|S|·n·d), the larger part of such a call's
	// time with an RBF kernel). The results are the same bits either way.
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
// then parked in a process-wide lot that holds those of the 2048 models
// that ended a call last (a model finds its own there if it comes back
// soon enough), and the full n×n kernel matrix is never formed. A learn or unlearn that moves θ costs
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
	// capacity, parked in colLot at the end of the call: a call whose
	// sample falls inside the tube never computes them.
	s      []int32
	cols   [][]float64
	colsAt uint8 // colsNone (cols is empty), colsSV or colsAll
	rbf    bool  // kern is an RBF: the kernel loops are specialised
	idWide bool  // ids holds whole handles (see ids)

	// parkSlot, parkGen: where end parked the columns in colLot (parkGen
	// 0: not parked).
	parkSlot int
	parkGen  uint64

	peakS     int         // largest |S| since restR last shrank R's buffer
	shrinkOps int         // calls since restR last looked
	pool      [][]float64 // spare column buffers
	r         []float64
	rs        int

	// Scratch, reused by every call. kc and gam are a column long: a
	// model at its capacity takes them at the start of a call and gives
	// them back at its end (to pool, then columnPool), so that between
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

	// fault, if set (by tests only), is asked at each stage of the ladder
	// that can fail and makes it fail when it returns true.
	fault func(stage) bool
}

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
// same way (undoRecords), from begin to end.
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

// undoPool lends undoBufs to the model whose call is saving its state; the
// buffers go back at the end of the call (end). One per concurrent call is
// all that is ever in use.
var undoPool = freeList[*undoBufs]{max: 64}

// undoRecords lends the undo record itself to every call (begin to end),
// so that a model between calls holds none.
var undoRecords = freeList[*undo]{max: 64}

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
			undoPool.put(0, u.b)
			u.b = nil
		}
		undoRecords.put(0, u)
		m.u = nil
	}
	m.restR()
	warm := len(m.y) >= m.capHint // at its capacity: its columns' length is final
	if warm && !m.cfg.KeepColumns && m.colsAt != colsNone && len(m.cols) > 0 {
		m.park()
	}
	keep := keepColumns
	if warm && m.beta != nil {
		// Lent like kc and gam; vectors of another length (grown by
		// growR, or by a young model) are left to the collector.
		if k := len(m.y) + 2; len(m.beta) == k && len(m.vec) == k {
			sensPool.put(k, m.beta, m.vec)
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
			n := columnPool.put(len(m.y), m.pool[keep:]...)
			extra := min(len(m.pool)-keep-n, 2)
			copy(m.pool[keep:keep+extra], m.pool[keep+n:keep+n+extra])
			keep += extra
		}
		clear(m.pool[keep:])
		m.pool = m.pool[:keep]
	}
	if warm {
		// The lists of columns, empty between calls, are lent too.
		m.cols = lendList(m.cols)
		m.pool = lendList(m.pool)
	}
}

// colLot holds the kernel columns of the margin sets of the models that
// ended a call most recently, up to lotSlots of them: a model parks its
// columns there at the end of a call and takes them back at the start of
// its next one if no later model has taken its slot since, so that a
// process with few series (a backtest, say) does not compute them again,
// while one with many holds only the columns of lotSlots models. The
// columns of an overwritten slot go to columnPool. Parking and taking back
// cost O(1) under the lot's mutex.
var colLot struct {
	mu    sync.Mutex
	slots [lotSlots]parked
	next  int    // the slot the next model parks in (round robin)
	gen   uint64 // the last parking's number
}

// lotSlots is the number of models whose columns colLot keeps: a process
// running up to that many series round robin computes no column twice
// (at 1 000 default series a point costs 54–63 µs, against 116–124 µs
// with 128 slots; BenchmarkDefaultPushMany), and one running more holds
// at most the columns of lotSlots models beside its series, about 22 MB
// at the default window.
const lotSlots = 2048

// parked is a slot of colLot: the columns of S of a model, how much of
// them were computed (colsAt), their length, and the parking's number,
// which only that model knows.
type parked struct {
	gen  uint64
	cols [][]float64
	at   uint8
	n    int
}

// park moves the model's columns into the next slot of colLot, whose
// previous columns go to columnPool. O(1), plus O(|S|) to free a slot.
func (m *AOSVR) park() {
	colLot.mu.Lock()
	defer colLot.mu.Unlock()
	colLot.gen++
	i := colLot.next
	colLot.next = (i + 1) % lotSlots
	if s := &colLot.slots[i]; s.gen != 0 {
		columnPool.put(s.n, s.cols...)
		lendList(s.cols[:0])
	}
	colLot.slots[i] = parked{gen: colLot.gen, cols: m.cols, at: m.colsAt, n: len(m.y)}
	m.cols, m.colsAt = nil, colsNone
	m.parkSlot, m.parkGen = i, colLot.gen
}

// unpark takes the model's columns back from colLot if they are still
// there. O(1).
func (m *AOSVR) unpark() {
	colLot.mu.Lock()
	defer colLot.mu.Unlock()
	if s := &colLot.slots[m.parkSlot]; s.gen == m.parkGen {
		if m.cols != nil {
			lendList(m.cols[:0])
		}
		m.cols, m.colsAt = s.cols, s.at
		*s = parked{}
	}
	m.parkGen = 0
}

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
// A young model keeps its columns: they grow with it.
const keepColumns = 0

// columnPool holds spare kernel columns for every model (a column is a
// model's capacity long; a model takes one of its own length only), at most
// 4096 of them (3.2 MB at W = 100).
var columnPool = freeList[[]float64]{max: 4096}

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
	m := &AOSVR{cfg: cfg, kern: cfg.Kernel, dim: cfg.Dim, c: cfg.C, eps: cfg.Epsilon, capHint: cfg.Capacity}
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

// begin starts a call that may have to be rolled back, taking the scratch
// columns kc and gam if end gave them back. O(1).
func (m *AOSVR) begin() {
	if m.parkGen != 0 {
		m.unpark()
	}
	if m.cols == nil {
		m.cols = takeList()
	}
	if m.pool == nil {
		m.pool = takeList()
	}
	if m.kc == nil && len(m.y) > 0 {
		m.kc, m.gam = m.takeColumn(), m.takeColumn()
	}
	if m.beta == nil && len(m.y) > 0 && len(m.y) >= m.capHint {
		// At its capacity, β and the right-hand sides are lent too (an R
		// order is at most n+1); a young model grows them (growR).
		k := len(m.y) + 2
		m.beta, m.vec = takeSens(k), takeSens(k)
	}
	if m.u == nil {
		var ok bool
		if m.u, ok = undoRecords.get(0); !ok {
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
		if u.b, ok = undoPool.get(0); !ok {
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
	*m = *t
	return nil
}

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
	var sum float64
	for _, t := range m.theta[:n] {
		sum += t
	}
	v[0] = -sum
	for k, i := range m.s {
		f := m.bias - m.y[i]
		for j, sj := range m.s {
			f += m.theta[sj] * m.cols[j][i]
		}
		v[k+1] = m.h[i] - f
	}
	for e := 0; e < n; e++ {
		if m.set[e] == inE {
			t := m.theta[e]
			for k := range m.s {
				v[k+1] -= t * m.cols[k][e]
			}
		}
	}
	worst := 0.0
	for _, r := range v {
		worst = math.Max(worst, math.Abs(r))
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
	worst, who := 0.0, -1
	for i := 0; i < m.n; i++ {
		h, t := m.h[i], m.theta[i]
		var v float64
		switch {
		case m.set[i] == inS:
			lo, hi := m.box(i)
			v = math.Max(lo-t, t-hi) / m.c
		case t == 0:
			v = math.Abs(h) - m.eps
		case t > 0:
			v = h + m.eps
		default:
			v = m.eps - h
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
	var q float64
	if learning {
		q = 1
		if m.h[c] > 0 {
			q = -1
		}
	} else {
		q = 1
		if m.theta[c] > 0 {
			q = -1
		}
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
		bOnly := l == 0
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
			if bOnly || g > condDep*math.Max(m.kc[c], condTiny) {
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
		// Cases 4 and 5: an E or R sample's margin reaches ±ε.
		for i := 0; i < m.n; i++ {
			set := m.set[i]
			if set == inS || i == c {
				continue
			}
			g := 1.0
			if !bOnly {
				g = m.gam[i]
			}
			if math.Abs(g) < sensTol {
				continue
			}
			qg := q * g
			var t float64
			switch {
			case set == inR && qg > 0:
				t = m.eps
			case set == inR:
				t = -m.eps
			case m.theta[i] > 0 && qg > 0: // θ = C, h ≤ −ε, rising
				t = -m.eps
			case m.theta[i] < 0 && qg < 0: // θ = −C, h ≥ ε, falling
				t = m.eps
			default:
				continue
			}
			L := (t - m.h[i]) / g
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
		if st.kind == stepNone {
			return fmt.Errorf("no step bound for sample %d (|S|=%d)", c, l)
		}

		// Take the step.
		L := st.l
		if L != 0 {
			// Progress: a sample refused to break a cycle of zero steps
			// may be needed again.
			m.zeroIn, m.zeroFrom = m.zeroIn[:0], m.zeroFrom[:0]
			m.bounced = m.bounced[:0]
		}
		if bOnly {
			m.bias += L
			for i := range m.h[:m.n] {
				m.h[i] += L
			}
		} else {
			m.theta[c] += L
			m.bias += m.beta[0] * L
			for k, i := range m.s {
				m.theta[i] += m.beta[k+1] * L
			}
			h, gam, set := m.h[:m.n], m.gam[:m.n], m.set[:m.n]
			for i := range h {
				if set[i] != inS {
					h[i] += gam[i] * L
				}
			}
		}

		// Move the sample that set the bound.
		switch st.kind {
		case stepMargin:
			m.h[c] = st.target
			if bOnly && m.theta[c] == 0 {
				// θ_c = 0 on the margin with S empty: c is in R; b is
				// centred by afterOp.
				return nil
			}
			col := m.kc
			m.kc = m.takeColumn()
			m.joinS(c, col, m.beta[:l+1], m.gam[c]) // l = 0: β, γ unused
			return nil
		case stepBound:
			m.theta[c] = st.target
			if st.target != 0 {
				m.set[c] = inE
			}
			return nil
		case stepLeaveS:
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
			if L == 0 {
				for k, j := range m.zeroIn {
					if int(j) == i && m.zeroFrom[k] == m.set[i] {
						m.bounced = append(m.bounced, int32(i))
						m.stats.Refused++
						m.refreshDue = true
						break
					}
				}
			}
		case stepEnterS:
			i := st.idx
			m.h[i] = st.target
			from := m.set[i]
			if m.enterS(i) {
				m.zeroIn = append(m.zeroIn, int32(i))
				m.zeroFrom = append(m.zeroFrom, from)
			} else {
				m.blocked = append(m.blocked, int32(i))
				m.stats.Refused++
				m.refreshDue = true
				if refusals++; refusals < m.n*limit {
					iter-- // a refusal changes no set
				}
			}
		}
	}
	return fmt.Errorf("no convergence after %d set changes", limit)
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
	b0 := m.beta[0]
	gam := m.gam[:m.n]
	for i, k := range m.kc[:m.n] {
		gam[i] = k + b0
	}
	for k := range m.s {
		floats.AddScaled(gam, m.beta[k+1], m.cols[k][:m.n])
	}
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
	if !(g > condDep*math.Max(col[i], condTiny)) {
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
			lo, hi = math.Max(lo, -m.eps-h), math.Min(hi, m.eps-h)
		case m.theta[i] > 0:
			hi = math.Min(hi, -m.eps-h)
		default:
			lo = math.Max(lo, m.eps-h)
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

// takeColumn returns a spare column buffer: the model's own, or one of its
// length from columnPool, or a new one.
func (m *AOSVR) takeColumn() []float64 {
	if k := len(m.pool); k > 0 {
		c := m.pool[k-1]
		m.pool = m.pool[:k-1]
		return c
	}
	if c, ok := columnPool.get(len(m.y)); ok {
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
		for i := range set {
			if (which == colSV && set[i] == inR) || (which == colR && set[i] != inR) {
				continue
			}
			xi := m.x[i*d : i*d+d]
			var s float64
			for j, v := range xi {
				t := v - z[j]
				s += t * t
			}
			dst[i] = math.Exp(g * s)
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
	// Column buffers come from columnPool when it has some of the new
	// length: the columns that models at their capacity lent, which a model
	// growing to the same capacity takes instead of adding its own.
	growCol := func(s []float64) []float64 {
		if t, ok := columnPool.get(n); ok {
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
// holds rs² values, else in a buffer from rPool or a new one with room for
// S to grow by a quarter (at least 2), so that growing S allocates
// O(log |S|) times. O(|S|²).
func (m *AOSVR) growR(rs int) {
	if rs <= m.rs {
		return
	}
	m.peakS = max(m.peakS, rs-1)
	if rs*rs > cap(m.r) {
		c := rs + max(2, rs/4)
		var r []float64
		for k := rs; k <= c && r == nil; k++ {
			if b, ok := rPool.get(k * k); ok {
				r = b[:rs*rs]
			}
		}
		if r == nil {
			r = make([]float64, rs*rs, c*c)
		}
		m.copyR(r, rs)
		if m.r != nil {
			rPool.putEvict(cap(m.r), m.r[:cap(m.r)])
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
// rows, and moves it into a buffer of exactly (|S|+1)² values, one rPool
// has (the buffers models give back when R grows) or a new one; and every
// shrinkEvery calls, if the buffer still holds more than the largest R of
// those calls needed (S empty), it moves R into one of that size, so that
// a model whose margin set has shrunk does not keep the memory of its
// largest. O(|S|²) when |S| changed, and an allocation only when |S|
// changed and rPool has no buffer of the new size.
func (m *AOSVR) restR() {
	l := len(m.s)
	m.peakS = max(m.peakS, l)
	if rs := l + 1; l > 0 && rs < m.rs {
		m.copyR(m.r, rs)
		m.rs = rs
		m.r = m.r[:rs*rs]
	}
	if n := len(m.r); l > 0 && cap(m.r) > n {
		// An exact buffer: one another model gave back, or a new one.
		b, ok := rPool.get(n)
		if !ok {
			b = make([]float64, n)
		}
		copy(b, m.r)
		rPool.putEvict(cap(m.r), m.r[:cap(m.r)])
		m.r = b
	}
	if m.shrinkOps++; m.shrinkOps < shrinkEvery {
		return
	}
	if want := (m.peakS + 1) * (m.peakS + 1); m.peakS > 0 && cap(m.r) > want && m.rs*m.rs <= want {
		r := make([]float64, len(m.r), want)
		copy(r, m.r)
		m.r = r
	}
	m.shrinkOps, m.peakS = 0, l
}

// rPool holds R buffers for every model, by capacity, at most 1024 of
// them: a model whose R outgrows its buffer gives it back here and takes
// one that fits, and restR takes an exact one; when full it evicts buffers
// of other capacities, so that sizes in use are kept.
var rPool = freeList[[]float64]{max: 1024}

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
		m.stats.MaxDrift = math.Max(m.stats.MaxDrift, math.Abs(h[i]-t))
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
		if !(g > condDep*math.Max(qii, condTiny)) {
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
			v = math.Max(0, h+m.eps)
		case t <= -m.c+tol:
			v = math.Max(0, m.eps-h)
		case t > tol:
			v = math.Abs(h + m.eps)
		case t < -tol:
			v = math.Abs(h - m.eps)
		default:
			v = math.Max(0, math.Abs(h)-m.eps)
		}
		if !(v <= worst) { // NaN counts as a violation
			worst = v
		}
	}
	return math.Max(worst, math.Abs(sum))
}

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
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: aosvr: import: %s", ErrBadInput, fmt.Sprintf(format, args...))
	}
	n := len(st.X)
	switch {
	case st.Dim != m.dim:
		return bad("state has dimension %d, model %d", st.Dim, m.dim)
	case len(st.Y) != n || len(st.Theta) != n || len(st.IDs) != n:
		return bad("%d inputs but %d targets, %d coefficients, %d handles", n, len(st.Y), len(st.Theta), len(st.IDs))
	case !isFinite(st.Bias):
		return bad("bias is %v", st.Bias)
	}
	seen := make(map[uint64]bool, n)
	var sum float64
	for i := range n {
		if err := checkSample(st.X[i], st.Y[i], m.dim); err != nil {
			return bad("sample %d: %v", i, err)
		}
		t := st.Theta[i]
		if !isFinite(t) || math.Abs(t) > m.c*(1+condSnap) {
			return bad("sample %d: coefficient %v outside [−C, C] = [%v, %v]", i, t, -m.c, m.c)
		}
		if seen[st.IDs[i]] || st.IDs[i] >= st.Next {
			return bad("sample %d: handle %d repeated or not below next %d", i, st.IDs[i], st.Next)
		}
		seen[st.IDs[i]] = true
		sum += t
	}
	if math.Abs(sum) > condImportSum*m.c*float64(max(n, 1)) {
		return bad("coefficients sum to %v, not 0", sum)
	}
	margin := make([]bool, n)
	for _, i := range st.Margin {
		if i < 0 || i >= n || margin[i] {
			return bad("margin set names sample %d twice or out of range", i)
		}
		margin[i] = true
	}

	t, err := NewAOSVR(m.cfg)
	if err != nil {
		return err
	}
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
			return bad("sample %d: coefficient %v strictly inside its box but not in the margin set", i, st.Theta[i])
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
	l := len(st.Margin)
	exact := len(st.H) > 0
	if exact {
		if len(st.H) != n || (l > 0 && len(st.R) != (l+1)*(l+1)) || (l == 0 && len(st.R) != 0) || st.Ops < 0 {
			return bad("%d margins, %d entries of R for %d samples and %d margin samples", len(st.H), len(st.R), n, l)
		}
		for i, v := range st.H {
			if !isFinite(v) {
				return bad("margin %d is %v", i, v)
			}
		}
		for i, v := range st.R {
			if !isFinite(v) {
				return bad("R entry %d is %v", i, v)
			}
		}
		copy(t.h, st.H)
		for a := 0; a <= l && l > 0; a++ {
			copy(t.r[a*t.rs:a*t.rs+l+1], st.R[a*(l+1):(a+1)*(l+1)])
		}
		t.ops = st.Ops
		t.refreshDue = st.RefreshPending
	} else if !t.polish() {
		// polish rebuilds R, recomputes every h (S members snap to the
		// side of ±ε they are on) and refines θ_S and b.
		return bad("the margin set is numerically dependent or inconsistent with the coefficients")
	}
	t.stats, t.fault = m.stats, m.fault
	*m = *t
	return nil
}
