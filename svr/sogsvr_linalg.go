package svr

import (
	"math"

	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/floats"
)

// sogSymv sets y = Ax for the leading m×m block A of a packed symmetric
// matrix ap. Row i of the lower triangle is contiguous: it gives y_i its
// dot product with x and, by symmetry, adds x_i times itself to
// y_0…y_{i−1}; both through gonum's vectorised kernels (blas64.Spmv loops
// element by element, 1.4× slower at m = 24). O(m²).
func sogSymv(ap []float64, m int, x, y []float64) {
	y, x = y[:m], x[:m]
	clear(y)
	for i := range m {
		row := ap[sogAt(i, 0):sogPacked(i+1)]
		y[i] += floats.Dot(row, x[:i+1])
		if i > 0 {
			floats.AddScaled(y[:i], x[i], row[:i])
		}
	}
}

// sogFull is what Learn borrows for the length of a call: K̃ (computed
// from the atoms) and AᵀA unpacked (m×m with stride m) for optimise's
// products, and the scratch vectors kt, a, w, g, u, p, v, q and β̃
// (sogScratchVectors of length M, in vec).
type sogFull struct {
	k, ata, vec                   []float64
	kt, a, w, g, u, p, v, q, beta []float64
}

// sogScratchVectors is the number of scratch vectors in sogFull.vec.
const sogScratchVectors = 9

// sogFullPool lends sogFulls to the models in a call, one per concurrent
// call (see freeList), keyed by MaxDict.
var sogFullPool = freeList[*sogFull]{max: 64}

// borrow takes a sogFull from the pool (or makes one) for the call.
func (s *SOGSVR) borrow() {
	n := s.max
	f, ok := sogFullPool.get(n)
	if !ok {
		f = &sogFull{k: make([]float64, n*n), ata: make([]float64, n*n), vec: make([]float64, sogScratchVectors*n)}
		v := f.vec
		f.kt, f.a, f.w, f.g = v[0:n], v[n:2*n], v[2*n:3*n], v[3*n:4*n]
		f.u, f.p, f.v, f.q = v[4*n:5*n], v[5*n:6*n], v[6*n:7*n], v[7*n:8*n]
		f.beta = v[8*n : 9*n]
	}
	s.full = f
}

// giveBack returns the call's sogFull to the pool.
func (s *SOGSVR) giveBack() {
	sogFullPool.put(s.max, s.full)
	s.full = nil
}

// unpack writes K̃, computed from the atoms (m(m+1)/2 kernel values), and
// AᵀA unpacked into the call's sogFull and returns it. O(m²·d).
func (s *SOGSVR) unpack() *sogFull {
	f, m := s.full, s.m
	for i := range m {
		off := sogAt(i, 0)
		for j := range i + 1 {
			var kv float64
			if s.kmat != nil {
				kv = s.kmat[off+j]
			} else {
				kv = s.kern.Eval(s.atom(j), s.atom(i)) + s.lam2 // gram(i, j)
			}
			av := s.ata[off+j]
			f.k[i*m+j], f.k[j*m+i] = kv, kv
			f.ata[i*m+j], f.ata[j*m+i] = av, av
		}
	}
	return f
}

func sogVec(x []float64) blas64.Vector { return blas64.Vector{N: len(x), Inc: 1, Data: x} }

// sogSyr adds αaaᵀ to the leading m×m block of a packed symmetric matrix
// ap, m = len(a). O(m²).
func sogSyr(alpha float64, a, ap []float64) {
	for i, ai := range a {
		floats.AddScaled(ap[sogAt(i, 0):sogPacked(i+1)], alpha*ai, a[:i+1])
	}
}

func sogAllFinite(x []float64) bool {
	for _, v := range x {
		if !isFinite(v) {
			return false
		}
	}
	return true
}

func sogDot(x, y []float64) float64 {
	var r float64
	for i, v := range x {
		r += v * y[i]
	}
	return r
}

func sogMaxAbs(x []float64) float64 {
	var r float64
	for _, v := range x {
		r = max(r, math.Abs(v))
	}
	return r
}
