package svr

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
)

// SOGFullPolicy says what [SOGSVR] does with a sample that fails the
// approximate-linear-dependence test when the dictionary already holds
// MaxDict atoms. Both policies are extensions of the paper, whose
// dictionary is unbounded.
type SOGFullPolicy int

const (
	// SOGReplace evicts the atom whose removal raises the (forgetting-
	// weighted) training squared error least, folding its coefficient
	// into the remaining atoms through its own ALD projection, then admits
	// the new sample. Under forgetting, atoms that no recent sample uses
	// lose their weight in AᵀA and are the first to go, so the dictionary
	// follows a drifting stream. Config value "replace" (the default).
	SOGReplace SOGFullPolicy = iota
	// SOGProject freezes the dictionary: the sample is handled as if it
	// had passed the test, through its least-squares projection a_t onto
	// the dictionary (the "else" branch of Table 2, step 3). Cheapest, and
	// right for a stationary series. Config value "project".
	SOGProject
)

// String returns the policy's config value: "replace" or "project".
func (p SOGFullPolicy) String() string {
	switch p {
	case SOGReplace:
		return "replace"
	case SOGProject:
		return "project"
	}
	return fmt.Sprintf("SOGFullPolicy(%d)", int(p))
}

// ParseSOGFullPolicy returns the policy named by a config value (see
// [SOGFullPolicy.String]); the empty string is the default, SOGReplace.
func ParseSOGFullPolicy(s string) (SOGFullPolicy, error) {
	switch s {
	case "", "replace":
		return SOGReplace, nil
	case "project":
		return SOGProject, nil
	}
	return 0, fmt.Errorf("%w: unknown policy %q, want \"replace\" or \"project\"", ErrBadConfig, s)
}

// Defaults of [SOGSVRConfig], chosen on the series of lab/dataset
// (see the package tests for the tuning runs). The dictionary cap trades
// accuracy for cost, O(m²) a step: 24 atoms forecast the Santa Fe laser
// about twice as well as 16, little worse than 64, and stay under a fifth
// of AOSVR's cost over 500 samples (BENCHMARKS.md, "The three regressors
// on every series").
const (
	SOGDefaultLambda  = 0.1
	SOGDefaultNu      = 0.01
	SOGDefaultC       = 1000
	SOGDefaultMaxDict = 24
	SOGDefaultForget  = 0.999
	SOGDefaultSteps   = 3
)

// SOGSVRConfig configures a [SOGSVR]. The zero value of every field but
// Dim selects a documented default; NewSOGSVR validates the rest.
type SOGSVRConfig struct {
	// Dim is the length of every input vector (the embedding dimension
	// B). Required, at least 1.
	Dim int
	// Kernel is k; nil selects RBF{Gamma: 1}, the project default.
	Kernel Kernel
	// Lambda is λ of the homogenised kernel k̄ = k + λ² (eq. 2.7), which
	// stands in for the bias b. Zero selects SOGDefaultLambda; it must be
	// positive and finite.
	Lambda float64
	// Nu is ν, the approximate-linear-dependence threshold of eq. 3.10: a
	// sample joins the dictionary when its squared feature-space distance
	// δ_t from the span of the dictionary exceeds ν. Larger ν, fewer
	// atoms. Zero selects SOGDefaultNu; it must be positive and finite.
	Nu float64
	// Ridge is γ of eq. 3.9, the ℓ₂ penalty on the ALD coefficients a_t.
	// Zero (the paper's choice) is the default; it must be non-negative
	// and finite.
	Ridge float64
	// C is C̃, the box −C̃ ≤ α̃*, α̃ ≤ C̃ of eq. 4.22. Zero selects
	// SOGDefaultC; it must be positive (+Inf removes the box).
	C float64
	// Epsilon is ε, the half-width of the insensitive tube. With the
	// single learning rate used here it moves only α̃* + α̃, never the
	// prediction, except through the box C̃ (see [SOGSVR]). Zero is valid
	// and the default; it must be non-negative and finite.
	Epsilon float64
	// MaxDict is the hard cap on the dictionary size m; every buffer is
	// allocated to it up front. Zero selects SOGDefaultMaxDict; it must
	// not be negative.
	MaxDict int
	// OnFull is the policy once m = MaxDict; the zero value is SOGReplace.
	OnFull SOGFullPolicy
	// Forget is the forgetting factor ρ applied to the accumulated sums
	// AᵀA, Aᵀy and Aᵀe before each sample (sample i then weighs ρ^(t−i)),
	// an extension of the paper for drifting streams: 1 is the paper.
	// Zero selects SOGDefaultForget; it must lie in (0, 1].
	Forget float64
	// Steps is the number of exact line-search steps per sample: the
	// first along Table 2's direction, the others along conjugate
	// directions (see [SOGSVR]); 1 is the paper. Zero selects
	// SOGDefaultSteps; it must not be negative.
	Steps int
}

// SOGSVR is the sparse online greedy support vector regressor of Engel,
// Mannor and Meir (2002), Table 2, with a bounded dictionary.
//
// The model is f(x) = Σ_j (α̃*_j − α̃_j) k̄(x̃_j, x) (eq. 4.13) over a
// dictionary x̃_1..x̃_m of approximately linearly independent inputs, with
// the homogenised kernel k̄ = k + λ². Each Learn runs Table 2: the ALD test
// (step 3, eq. 3.10) either admits x_t as an atom, growing (K̃ + γI)⁻¹ by
// the block-inverse formula, or adds its projection a_t to AᵀA, Aᵀy and
// Aᵀe; then step 4 moves α̃*, α̃ along the paper's direction
// Δα̃* = η Aᵀ(y − f − εe), Δα̃ = −η Aᵀ(y − f + εe) and clips them to
// [−C̃, C̃].
//
// Learning rate. The paper leaves η*, η open. Here η* = η, so the
// prediction coefficients β̃ = α̃* − α̃ move by 2η g with g = Aᵀ(y − f)
// = Aᵀy − AᵀA K̃ β̃, and η is the exact line search along that direction
// on the training squared error J(β̃) = Σ_i ρ^(t−i) (y_i − f(x_i))²: with
// γ = 0 the ALD projection is exact on the kernel row (k̃(x_i) = K̃ a_i),
// so f(x_i) = a_iᵀ K̃ β̃ and J(β̃ + s g) = ‖y − A K̃ β̃ − s A K̃ g‖², minimal at
//
//	s = gᵀK̃g / (K̃g)ᵀ AᵀA (K̃g),   η = s/2,
//
// all in m dimensions. g is a descent direction of J (the derivative along
// it is −2gᵀK̃g ≤ 0), s is invariant to the scale of the sums (hence to
// forgetting), and with ρ = 1 it decays like 1/t as a running mean should.
// The line search is not done on the reduced dual L̂ of eq. 4.18: that needs
// (AᵀA)⁻¹, which forgetting makes ill-conditioned, and L̂ is linear and
// unbounded along α̃* + α̃, so its exact step is set by the ε term rather
// than the fit. ε therefore enters only through the box: a pair whose
// partner sits at −C̃ moves by η(g ∓ εAᵀe), a tube of half-width εAᵀe.
//
// Since −∇J/2 = K̃g, the paper's direction is the gradient of J
// preconditioned by K̃⁻¹. With Steps > 1 (an extension: the paper's
// conclusion notes that the rates "may be optimized resulting in faster
// convergence") each sample gets further exact line-search steps along
// preconditioned conjugate-gradient directions, which reach the minimum of
// J in at most m steps; one step per sample converges slowly on the
// ill-conditioned K̃ AᵀA K̃ of a smooth kernel.
//
// Bounds (extensions of the paper): at most MaxDict atoms, with the
// OnFull policy beyond; an optional forgetting factor on the sums.
//
// Cost: Learn is O(m² + m·d) time (3 + 2·Steps m×m matrix-vector
// products, one rank-one update, m + 1 kernel evaluations; an eviction
// adds O(m²)), plus m(m+1)/2 kernel evaluations, O(m²·d), for K̃ when
// MaxDict ≤ 16: so small a model does not keep K̃ but computes it from the
// atoms in each call. Predict is O(m·d). Memory is 8·(M·d + M(M+1) + 4M)
// bytes for M = MaxDict ≤ 16 ((K̃ + γI)⁻¹ and AᵀA packed, their lower
// triangles only), 8·(M·d + 3M(M+1)/2 + 4M) for a larger M (K̃ packed
// too), allocated once by NewSOGSVR; Learn borrows K̃ and AᵀA unpacked
// (two M×M matrices) for its products and its nine scratch vectors from a
// process-wide pool, for the length of the call. Learn and Predict do not
// allocate once the pool has served. BENCHMARKS.md has the figures.
//
// A SOGSVR is not safe for concurrent use.
type SOGSVR struct {
	dim, max int
	kern     Kernel
	lam2     float64 // λ²
	nu       float64
	ridge    float64 // γ
	c        float64 // C̃
	eps      float64
	forget   float64 // ρ
	onFull   SOGFullPolicy
	steps    int

	m     int
	wt    float64   // weight of the current sample in the sums, ∝ ρ^(−t)
	atoms []float64 // dictionary, max×dim, row j is x̃_j
	// The symmetric m×m matrices, packed: the lower triangle row by row,
	// (i, j) with j ≤ i at i(i+1)/2 + j (sogAt), so that the leading m×m
	// block is the first m(m+1)/2 numbers, a packed matrix of order m for
	// BLAS; max(max+1)/2 each, half of a square. K̃ is a function of the
	// atoms (gram): kept only for a dictionary of more than sogGramKept
	// atoms, computed by the call that needs it otherwise.
	kmat  []float64 // K̃, homogenised; nil when not kept
	kinv  []float64 // (K̃ + γI)⁻¹
	ata   []float64 // AᵀA (weighted)
	aty   []float64 // Aᵀy
	ate   []float64 // Aᵀe
	astar []float64 // α̃*
	alpha []float64 // α̃; the prediction coefficients β̃ are α̃* − α̃

	full *sogFull // what Learn borrows for the call (nil between calls)

	learned   int64 // samples learned
	evictions int64 // atoms evicted by SOGReplace
}

var _ Regressor = (*SOGSVR)(nil)

// NewSOGSVR returns an empty model configured by cfg, or the join of one
// *FieldError per invalid field of cfg (see SOGSVRConfig.Validate).
func NewSOGSVR(cfg SOGSVRConfig) (*SOGSVR, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.WithDefaults()
	n := cfg.MaxDict
	s := &SOGSVR{
		dim: cfg.Dim, max: n, kern: cfg.Kernel,
		lam2: cfg.Lambda * cfg.Lambda, nu: cfg.Nu, ridge: cfg.Ridge,
		c: cfg.C, eps: cfg.Epsilon, forget: cfg.Forget, onFull: cfg.OnFull,
		steps: cfg.Steps, wt: 1,
	}
	// Two allocations: the dictionary, and the rest in one backing array
	// (at the daemon's defaults, M = 16 and d = 12, 1 536 and 2 688
	// bytes, two of the runtime's size classes exactly).
	s.atoms = make([]float64, n*cfg.Dim)
	buf := make([]float64, s.matrices()*sogPacked(n)+sogVectors*n)
	take := func(k int) []float64 {
		r := buf[:k:k]
		buf = buf[k:]
		return r
	}
	if n > sogGramKept {
		s.kmat = take(sogPacked(n))
	}
	s.kinv, s.ata = take(sogPacked(n)), take(sogPacked(n))
	s.aty, s.ate, s.astar, s.alpha = take(n), take(n), take(n), take(n)
	return s, nil
}

// Dim is the length every input vector must have.
func (s *SOGSVR) Dim() int { return s.dim }

// Len is the dictionary size m, at most MaxDict.
func (s *SOGSVR) Len() int { return s.m }

// Evictions is the number of atoms SOGReplace has evicted so far.
func (s *SOGSVR) Evictions() int64 { return s.evictions }

// Cap is MaxDict, the largest dictionary the model will hold.
func (s *SOGSVR) Cap() int { return s.max }

// StateBytes is the memory the model holds, in bytes: fixed at
// construction, 8·(M·d + M(M+1) + 4M) plus a small header for M =
// MaxDict ≤ 16 and d = Dim, 8·(M·d + 3M(M+1)/2 + 4M) plus the header for
// a larger M (which keeps K̃), whatever the number of samples learned.
func (s *SOGSVR) StateBytes() int {
	return 8*(s.max*s.dim+s.matrices()*sogPacked(s.max)+sogVectors*s.max) + sogHeaderBytes
}

// sogGramKept is the largest dictionary whose K̃ is computed by each Learn
// (at most 136 kernel values, about 1.5 times the rest of a step at
// d = 5) rather than kept (M(M+1)/2 floats): beyond it the computation
// grows to several times a step (9 times at M = 128).
const sogGramKept = 16

// matrices is the number of packed M×M matrices the model keeps: (K̃ +
// γI)⁻¹ and AᵀA, and K̃ for a dictionary of more than sogGramKept atoms.
func (s *SOGSVR) matrices() int {
	if s.max > sogGramKept {
		return 3
	}
	return 2
}

// sogPacked is the length of a packed symmetric matrix of order m.
func sogPacked(m int) int { return m * (m + 1) / 2 }

// sogAt is the index of entry (i, j) of a packed symmetric matrix, either
// triangle.
func sogAt(i, j int) int {
	if j > i {
		i, j = j, i
	}
	return i*(i+1)/2 + j
}

// sogVectors is the number of length-M vectors the model keeps (Learn
// borrows its scratch vectors, sogScratchVectors, with sogFull).
const sogVectors = 4

// sogHeaderBytes bounds the struct itself (fields, slice headers).
const sogHeaderBytes = 384

// Predict returns f(x) = Σ_j β̃_j k̄(x̃_j, x) (eq. 4.13), 0 for an empty
// model. O(m·d). It returns an error wrapping ErrBadInput for an input of
// the wrong length or with NaN or Inf, and one wrapping ErrNumerical if
// the kernel overflows.
func (s *SOGSVR) Predict(x []float64) (float64, error) {
	if err := checkVector(x, s.dim); err != nil {
		return 0, fmt.Errorf("sog-svr: predict: %w", err)
	}
	var f float64
	for j := range s.m {
		f += (s.astar[j] - s.alpha[j]) * (s.kern.Eval(s.atom(j), x) + s.lam2)
	}
	if !isFinite(f) {
		return 0, fmt.Errorf("%w: sog-svr: predict: kernel overflow, f(x) = %v", ErrNumerical, f)
	}
	return f, nil
}

func (s *SOGSVR) atom(j int) []float64 { return s.atoms[j*s.dim : (j+1)*s.dim] }

// gram returns entry (i, j) of K̃, k(x̃_min, x̃_max) + λ² with min and max
// the smaller and larger of i and j: the value grow computed for it when
// the later atom joined, the same bits for a kernel whose Eval(a, b) and
// Eval(b, a) agree bit for bit, as RBF, Poly and Linear do. O(d).
func (s *SOGSVR) gram(i, j int) float64 {
	if j > i {
		i, j = j, i
	}
	if s.kmat != nil {
		return s.kmat[sogAt(i, j)]
	}
	return s.kern.Eval(s.atom(j), s.atom(i)) + s.lam2
}

// Learn updates the model with (x, y) by one pass of Table 2, steps 2–4.
// O(m² + m·d). It returns an error wrapping ErrBadInput for a bad sample
// and one wrapping ErrNumerical when the kernel overflows; either way the
// model is unchanged.
func (s *SOGSVR) Learn(x []float64, y float64) error {
	if err := checkSample(x, y, s.dim); err != nil {
		return fmt.Errorf("sog-svr: learn: %w", err)
	}
	s.borrow()
	defer s.giveBack()
	// Step 2: k̃_t and k_tt, homogenised. Nothing is mutated until all of
	// the inputs to the update are known to be finite.
	m := s.m
	kt := s.full.kt[:m]
	for j := range kt {
		kt[j] = s.kern.Eval(s.atom(j), x) + s.lam2
	}
	ktt := s.kern.Eval(x, x) + s.lam2
	if !isFinite(ktt) || !sogAllFinite(kt) {
		return fmt.Errorf("%w: sog-svr: learn: kernel overflow", ErrNumerical)
	}
	if m == 0 {
		if ktt > s.nu {
			s.first(x, y, ktt)
		}
		// Otherwise φ̄(x) is (nearly) zero: f(x) = 0 whatever the model,
		// and there is nothing to learn.
		s.learned++
		return nil
	}
	// Step 3: approximate linear dependence, eq. 3.10.
	a, delta := s.ald(kt, ktt)
	if !isFinite(delta) || !sogAllFinite(a) {
		return fmt.Errorf("%w: sog-svr: learn: ALD test overflow", ErrNumerical)
	}
	wt := s.wt / s.forget
	if amax := sogMaxAbs(a); !isFinite(wt * amax * amax * (1 + math.Abs(y))) {
		return fmt.Errorf("%w: sog-svr: learn: sample weight overflow", ErrNumerical)
	}
	// From here on the update cannot fail.
	s.wt = wt
	if s.wt > 1e64 {
		s.renormalise()
	}
	add := delta > s.nu
	if add && s.m == s.max {
		if s.onFull == SOGProject {
			add = false
		} else {
			j := s.weakest()
			kt[j] = kt[s.m-1]
			s.evict(j)
			kt = kt[:s.m]
			a, _ = s.ald(kt, ktt)
		}
	}
	if add && !s.grow(x, y, kt, a, ktt) {
		add = false
		a, _ = s.ald(kt, ktt)
	}
	if !add {
		s.accumulate(a, y)
	}
	s.optimise()
	s.learned++
	return nil
}

// first admits the first atom with Table 2's initialisation, corrected as in
// the project's notes: α̃*₁ = max(0, y/k₁₁), α̃₁ = max(0, −y/k₁₁).
func (s *SOGSVR) first(x []float64, y, ktt float64) {
	copy(s.atom(0), x)
	if s.kmat != nil {
		s.kmat[0] = ktt
	}
	s.kinv[0] = 1 / (ktt + s.ridge)
	s.ata[0] = s.wt
	s.aty[0] = s.wt * y
	s.ate[0] = s.wt
	s.astar[0] = s.clip(max(0, y/ktt))
	s.alpha[0] = s.clip(max(0, -y/ktt))
	s.m = 1
}

// ald returns a_t = (K̃ + γI)⁻¹ k̃_t and δ_t = k_tt − (k̃_t + γa_t)ᵀa_t
// (Table 2, step 3; eq. 3.10), in the scratch vector a. O(m²).
func (s *SOGSVR) ald(kt []float64, ktt float64) ([]float64, float64) {
	m := len(kt)
	a := s.full.a[:m]
	if m == 0 {
		return a, ktt
	}
	sogSymv(s.kinv, m, kt, a)
	delta := ktt
	for i, ai := range a {
		delta -= (kt[i] + s.ridge*ai) * ai
	}
	return a, delta
}

// grow appends x as atom m+1 (Table 2, step 3, "add"): (K̃ + γI)⁻¹ by the
// block inverse with Schur complement σ = k_tt + γ − k̃_tᵀa_t, which is at
// least δ_t > ν; AᵀA gains a row and column (0…0, w); Aᵀy, Aᵀe gain w·y
// and w; α̃*, α̃ gain 0. It reports false, changing nothing, if σ is not
// safely positive. O(m²).
func (s *SOGSVR) grow(x []float64, y float64, kt, a []float64, ktt float64) bool {
	m := s.m
	var ka float64
	for i, ai := range a {
		ka += kt[i] * ai
	}
	sigma := ktt + s.ridge - ka
	if !(sigma > 1e-12*(ktt+s.ridge)) || !isFinite(1/sigma) {
		return false
	}
	// (K̃+γI)⁻¹ ← [[P + a aᵀ/σ, −a/σ], [−aᵀ/σ, 1/σ]].
	sogSyr(1/sigma, a, s.kinv)
	row := sogAt(m, 0) // row m: (m, 0…m)
	for i, ai := range a {
		s.kinv[row+i] = -ai / sigma
		s.ata[row+i] = 0
	}
	s.kinv[row+m] = 1 / sigma
	s.ata[row+m] = s.wt
	if s.kmat != nil {
		copy(s.kmat[row:row+m], kt)
		s.kmat[row+m] = ktt
	}
	s.aty[m] = s.wt * y
	s.ate[m] = s.wt
	s.astar[m], s.alpha[m] = 0, 0
	copy(s.atom(m), x)
	s.m = m + 1
	return true
}

// accumulate adds the projected sample (Table 2, step 3, "else"):
// AᵀA += w a aᵀ, Aᵀy += w y a, Aᵀe += w a. O(m²).
func (s *SOGSVR) accumulate(a []float64, y float64) {
	sogSyr(s.wt, a, s.ata)
	for i, ai := range a {
		s.aty[i] += s.wt * y * ai
		s.ate[i] += s.wt * ai
	}
}

// optimise is Table 2, step 4, with the learning rate of an exact line
// search (see SOGSVR), repeated along conjugate directions when steps > 1.
//
// With g = Aᵀy − AᵀA K̃ β̃ and H = K̃ AᵀA K̃ (J's half Hessian), the first
// direction is the paper's, p = g, and the step s = gᵀK̃g / pᵀHp; then
// α̃* ← ⌊α̃* + η(p − εAᵀe)⌋, α̃ ← ⌊α̃ − η(p + εAᵀe)⌋ with η = s/2, so that
// β̃ moves by s·p. Since −∇J/2 = K̃g, g is the gradient preconditioned by
// K̃⁻¹ and further steps are preconditioned conjugate gradients on J:
// p ← g + (gᵀK̃g / g₀ᵀK̃g₀) p. A clipped coordinate breaks conjugacy, so
// the next step restarts from the paper's direction. O(m²): 2 + 2·steps
// matrix-vector products.
func (s *SOGSVR) optimise() {
	m := s.m
	// The 2 + 2·steps products go through gonum's vectorised GemvN on
	// K̃ and AᵀA unpacked into a buffer lent for the call (a matrix-vector
	// product by rows of the packed triangle costs 1.7× as much at m = 24).
	full := s.unpack()
	K := blas64.General{Rows: m, Cols: m, Stride: m, Data: full.k[:m*m]}
	AtA := blas64.General{Rows: m, Cols: m, Stride: m, Data: full.ata[:m*m]}
	w, g, u, p, v, q := full.w[:m], full.g[:m], full.u[:m], full.p[:m], full.v[:m], full.q[:m]
	beta := full.beta[:m]
	restart := true
	var gu float64 // gᵀK̃g
	for it := range s.steps {
		if restart {
			// g = Aᵀy − AᵀA K̃ β̃, u = K̃g, p = g.
			for i := range m {
				beta[i] = s.astar[i] - s.alpha[i]
			}
			blas64.Gemv(blas.NoTrans, 1, K, sogVec(beta), 0, sogVec(w))
			copy(g, s.aty[:m])
			blas64.Gemv(blas.NoTrans, -1, AtA, sogVec(w), 1, sogVec(g))
			blas64.Gemv(blas.NoTrans, 1, K, sogVec(g), 0, sogVec(u))
			copy(p, g)
			copy(v, u)
			gu = sogDot(g, u)
			restart = false
		} else {
			blas64.Gemv(blas.NoTrans, 1, K, sogVec(g), 0, sogVec(u))
			gu0 := gu
			gu = sogDot(g, u)
			if !(gu0 > 0) {
				return
			}
			b := gu / gu0
			for i := range m {
				p[i] = g[i] + b*p[i]
				v[i] = u[i] + b*v[i] // K̃p, by linearity
			}
		}
		blas64.Gemv(blas.NoTrans, 1, AtA, sogVec(v), 0, sogVec(q))
		num, den := sogDot(p, u), sogDot(v, q) // pᵀK̃g = gᵀK̃g for conjugate p
		if !(num > 0 && den > 0) {
			return // at the optimum along p, or degenerate
		}
		step := num / den
		eta := 0.5 * step
		if !isFinite(step) {
			return
		}
		// Compute, check, then commit, so that no NaN or Inf enters the
		// state; w holds the new α̃*, and u the new α̃ until u is recomputed.
		clipped := false
		for i := range m {
			ds := eta * (p[i] - s.eps*s.ate[i])
			dl := -eta * (p[i] + s.eps*s.ate[i])
			as, al := s.clip(s.astar[i]+ds), s.clip(s.alpha[i]+dl)
			if !isFinite(as) || !isFinite(al) || !isFinite(as-al) {
				return
			}
			if as != s.astar[i]+ds || al != s.alpha[i]+dl {
				clipped = true
			}
			w[i], u[i] = as, al
		}
		copy(s.astar[:m], w)
		copy(s.alpha[:m], u)
		if it+1 == s.steps {
			return
		}
		if clipped {
			restart = true
			continue
		}
		// g ← g − s·AᵀA K̃ p.
		for i := range m {
			g[i] -= step * q[i]
		}
	}
}

// weakest returns the atom whose eviction raises the training squared error
// J least: folding atom j into the others through its ALD projection
// c = −P_{·j}/P_jj, P = (K̃ + γI)⁻¹, changes f by −β̃_j r_j with r_j the
// projection residual, and at the least-squares optimum (γ = 0) that
// raises J by exactly β̃_j² (AᵀA)_jj / P_jj². O(m).
func (s *SOGSVR) weakest() int {
	best, bestScore := 0, math.Inf(1)
	for j := range s.m {
		jj := sogAt(j, j)
		p := s.kinv[jj]
		bj := s.astar[j] - s.alpha[j]
		score := bj * bj * s.ata[jj] / (p * p)
		if score < bestScore || math.IsNaN(bestScore) {
			best, bestScore = j, score
		}
	}
	return best
}

// evict removes atom j, replacing φ̄(x̃_j) by its projection Σ_i c_i φ̄(x̃_i)
// on the other atoms, c = −P_{·j}/P_jj: A's column j is folded into the
// others (A ← A_{−j} + A_j cᵀ), so AᵀA, Aᵀy, Aᵀe, α̃*, α̃ follow; P loses
// row and column j by the block-inverse downdate P ← P − P_{·j}P_{j·}/P_jj.
// The last atom then moves into slot j. O(m²).
func (s *SOGSVR) evict(j int) {
	m := s.m
	c := s.full.w[:m] // scratch: c, with c_j = 0
	pjj := s.kinv[sogAt(j, j)]
	for i := range m {
		c[i] = -s.kinv[sogAt(i, j)] / pjj
	}
	c[j] = 0
	// AᵀA ← AᵀA + c (AᵀA)_{j·} + (AᵀA)_{·j} cᵀ + (AᵀA)_jj c cᵀ, on rows and
	// columns other than j (the lower triangle).
	rowj := s.full.v[:m]
	for k := range m {
		rowj[k] = s.ata[sogAt(j, k)]
	}
	ajj := rowj[j]
	for i := range m {
		if i == j {
			continue
		}
		row := sogAt(i, 0)
		for k := range i + 1 {
			if k == j {
				continue
			}
			s.ata[row+k] += c[i]*rowj[k] + rowj[i]*c[k] + ajj*c[i]*c[k]
		}
	}
	for i := range m {
		s.aty[i] += c[i] * s.aty[j]
		s.ate[i] += c[i] * s.ate[j]
		s.astar[i] = s.clip(s.astar[i] + c[i]*s.astar[j])
		s.alpha[i] = s.clip(s.alpha[i] + c[i]*s.alpha[j])
	}
	// P ← P − P_{·j} P_{j·} / P_jj.
	for k := range m {
		rowj[k] = s.kinv[sogAt(j, k)]
	}
	for i := range m {
		row := sogAt(i, 0)
		for k := range i + 1 {
			s.kinv[row+k] -= rowj[i] * rowj[k] / pjj
		}
	}
	s.moveAtom(m-1, j)
	s.m = m - 1
	s.evictions++
}

// moveAtom copies atom from into slot to (rows and columns of every
// matrix, entries of every vector). O(m + d).
func (s *SOGSVR) moveAtom(from, to int) {
	if from == to {
		return
	}
	m := s.m
	for _, mat := range [...][]float64{s.kmat, s.kinv, s.ata} {
		if mat == nil {
			continue
		}
		for i := range m {
			if i != to && i != from {
				mat[sogAt(i, to)] = mat[sogAt(i, from)]
			}
		}
		mat[sogAt(to, to)] = mat[sogAt(from, from)]
	}
	for _, v := range [...][]float64{s.aty, s.ate, s.astar, s.alpha} {
		v[to] = v[from]
	}
	copy(s.atom(to), s.atom(from))
}

// renormalise rescales the weighted sums so that the current sample's
// weight is 1 again; the learning rate is invariant to this scale. O(m²).
func (s *SOGSVR) renormalise() {
	m, f := s.m, 1/s.wt
	for k := range sogPacked(m) {
		s.ata[k] *= f
	}
	for i := range m {
		s.aty[i] *= f
		s.ate[i] *= f
	}
	s.wt = 1
}

func (s *SOGSVR) clip(v float64) float64 { return max(-s.c, min(s.c, v)) }
