package svr

import (
	"fmt"
	"slices"
)

// SOGSVRState is the learned state of a [SOGSVR], for checkpoints. Matrices
// are m×m, row-major. K is K̃ as the atoms give it: a model that computes
// K̃ (MaxDict ≤ 16) checks only its shape and that it is finite, one that
// keeps it takes it. The configuration is not part of it: a state is
// imported into a model built with the same SOGSVRConfig.
type SOGSVRState struct {
	Dim     int         // input length
	Atoms   [][]float64 // the dictionary x̃_1..x̃_m
	K       []float64   // K̃, homogenised
	KInv    []float64   // (K̃ + γI)⁻¹
	AtA     []float64   // AᵀA, weighted
	AtY     []float64   // Aᵀy, weighted
	AtE     []float64   // Aᵀe, weighted
	AStar   []float64   // α̃*
	Alpha   []float64   // α̃
	Weight  float64     // weight of the latest sample in the sums
	Learned int64       // samples learned
	Evicted int64       // atoms evicted
}

// Export returns a deep copy of the model's state. O(m² + m·d); it
// allocates.
func (s *SOGSVR) Export() SOGSVRState {
	m := s.m
	st := SOGSVRState{
		Dim: s.dim, Atoms: make([][]float64, m),
		K: make([]float64, 0, m*m), KInv: make([]float64, 0, m*m), AtA: make([]float64, 0, m*m),
		AtY: slices.Clone(s.aty[:m]), AtE: slices.Clone(s.ate[:m]),
		AStar: slices.Clone(s.astar[:m]), Alpha: slices.Clone(s.alpha[:m]),
		Weight: s.wt, Learned: s.learned, Evicted: s.evictions,
	}
	for i := range m {
		st.Atoms[i] = slices.Clone(s.atom(i))
		for k := range m {
			st.K = append(st.K, s.gram(i, k))
			st.KInv = append(st.KInv, s.kinv[sogAt(i, k)])
			st.AtA = append(st.AtA, s.ata[sogAt(i, k)])
		}
	}
	return st
}

// Import replaces the model's state by st, which the model does not
// retain. Predictions and learning then continue exactly as they would
// have in the exporting model, provided both were built with the same
// configuration. It returns an error wrapping ErrBadInput, leaving the
// model unchanged, if st does not fit the model (dimension, more atoms
// than MaxDict, inconsistent lengths, NaN or Inf). O(m² + m·d).
func (s *SOGSVR) Import(st SOGSVRState) error {
	m := len(st.Atoms)
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: sog-svr: import: %s", ErrBadInput, fmt.Sprintf(format, args...))
	}
	switch {
	case st.Dim != s.dim:
		return bad("state has dimension %d, model %d", st.Dim, s.dim)
	case m > s.max:
		return bad("state has %d atoms, model holds at most %d", m, s.max)
	case len(st.K) != m*m || len(st.KInv) != m*m || len(st.AtA) != m*m:
		return bad("matrices are not %d×%d", m, m)
	case len(st.AtY) != m || len(st.AtE) != m || len(st.AStar) != m || len(st.Alpha) != m:
		return bad("vectors do not have length %d", m)
	case !(st.Weight > 0) || !isFinite(st.Weight) || st.Learned < 0 || st.Evicted < 0:
		return bad("weight %v, counts %d, %d", st.Weight, st.Learned, st.Evicted)
	}
	for i, a := range st.Atoms {
		if err := checkVector(a, s.dim); err != nil {
			return fmt.Errorf("sog-svr: import: atom %d: %w", i, err)
		}
	}
	for _, v := range [][]float64{st.K, st.KInv, st.AtA, st.AtY, st.AtE, st.AStar, st.Alpha} {
		if !sogAllFinite(v) {
			return bad("NaN or Inf in the state")
		}
	}
	for i := range m {
		copy(s.atom(i), st.Atoms[i])
		row := sogAt(i, 0)
		if s.kmat != nil {
			copy(s.kmat[row:row+i+1], st.K[i*m:i*m+i+1]) // the lower triangle
		}
		copy(s.kinv[row:row+i+1], st.KInv[i*m:i*m+i+1])
		copy(s.ata[row:row+i+1], st.AtA[i*m:i*m+i+1])
		s.aty[i], s.ate[i] = st.AtY[i], st.AtE[i]
		s.astar[i], s.alpha[i] = st.AStar[i], st.Alpha[i]
	}
	s.m, s.wt, s.learned, s.evictions = m, st.Weight, st.Learned, st.Evicted
	return nil
}
