package svr

import (
	"errors"
	"fmt"
)

// LOO is the result of [LeaveOneOut].
type LOO struct {
	// Pred[i] is the prediction at xs[i] of the ε-SVR trained on every
	// sample but the i-th.
	Pred []float64
	// Unlearnt is the number of samples unlearnt and learnt back: the
	// support vectors of the model on all samples. Every other sample's
	// leave-one-out prediction is the full model's own.
	Unlearnt int
	// Retrained is the number of samples whose leave-one-out model was
	// trained afresh on the other l−1 samples because unlearning or
	// relearning failed numerically (ErrNumerical). Usually 0.
	Retrained int
}

// LeaveOneOut returns the exact leave-one-out predictions of the ε-SVR
// configured by cfg on the samples (xs[i], ys[i]), by the decremental
// algorithm, as section 5.3 of Ma, Theiler and Perkins (2003) proposes: an
// AOSVR is trained once on all l samples; a sample with θ_i = 0 can be
// dropped without changing the solution, so its prediction is the full
// model's f(x_i); every support vector is unlearnt (Remove), predicted,
// and learnt back (Add), which restores the full solution. The
// predictions are those of l batch ε-SVRs each trained on l−1 samples,
// to rounding (where that batch solution's bias is not unique, because it
// has no free support vector, the bias within its feasible interval may
// differ).
//
// Cost: l learns to train, then for each of the m support vectors one
// unlearn and one learn, O(m·(m·d + k·l·|S|)) (see AOSVR), and l
// predictions, O(l·m·d); O(l·(d + |S|) + |S|²) memory. Compared with l
// batch retrainings this saves the l−m retrainings of non-support vectors
// outright and replaces each other retraining by two incremental steps.
//
// cfg.Dim must be the length of every xs[i], and cfg.Capacity is raised to
// l. It panics if len(xs) != len(ys). It returns an error wrapping
// ErrBadInput for fewer than two samples or a bad sample, ErrBadConfig for
// a bad cfg, and ErrNumerical if the model on all samples cannot be
// trained. xs and ys are not retained.
func LeaveOneOut(cfg AOSVRConfig, xs [][]float64, ys []float64) (LOO, error) {
	res, _, err := leaveOneOut(cfg, xs, ys)
	return res, err
}

// leaveOneOut is LeaveOneOut, also returning the model on all samples as
// the procedure leaves it, for tests.
func leaveOneOut(cfg AOSVRConfig, xs [][]float64, ys []float64) (LOO, *AOSVR, error) {
	if len(xs) != len(ys) {
		panic(fmt.Sprintf("svr: LeaveOneOut: %d inputs, %d targets", len(xs), len(ys)))
	}
	l := len(xs)
	if l < 2 {
		return LOO{}, nil, fmt.Errorf("%w: leave-one-out needs at least 2 samples, got %d", ErrBadInput, l)
	}
	cfg.Capacity = max(cfg.Capacity, l)
	m, ids, err := trainAll(cfg, xs, ys, -1)
	if err != nil {
		return LOO{}, nil, err
	}
	// θ of every sample in the full model, by handle.
	st := m.Export()
	theta := make(map[uint64]float64, l)
	for k, id := range st.IDs {
		theta[id] = st.Theta[k]
	}

	res := LOO{Pred: make([]float64, l)}
	var sv []int
	for i, x := range xs {
		if theta[ids[i]] != 0 {
			sv = append(sv, i)
			continue
		}
		// Without sample i every other sample still meets its KKT
		// conditions and Σθ = 0: the full solution is the l−1 one.
		if res.Pred[i], err = m.Predict(x); err != nil {
			return LOO{}, nil, fmt.Errorf("sample %d: %w", i, err)
		}
	}
	res.Unlearnt = len(sv)
	for _, i := range sv {
		p, err := unlearnPredict(m, ids[i], xs[i])
		if err == nil {
			res.Pred[i] = p
			ids[i], err = m.Add(xs[i], ys[i])
			if err == nil {
				continue
			}
			if !errors.Is(err, ErrNumerical) {
				return LOO{}, nil, fmt.Errorf("sample %d: relearn: %w", i, err)
			}
			// The model lacks sample i: train the full model again.
			res.Retrained++
			if m, ids, err = trainAll(cfg, xs, ys, -1); err != nil {
				return LOO{}, nil, err
			}
			continue
		}
		if !errors.Is(err, ErrNumerical) {
			return LOO{}, nil, fmt.Errorf("sample %d: unlearn: %w", i, err)
		}
		// Remove left the model as it was: train the l−1 model afresh.
		res.Retrained++
		mi, _, err := trainAll(cfg, xs, ys, i)
		if err != nil {
			return LOO{}, nil, fmt.Errorf("sample %d: retrain without it: %w", i, err)
		}
		if res.Pred[i], err = mi.Predict(xs[i]); err != nil {
			return LOO{}, nil, fmt.Errorf("sample %d: %w", i, err)
		}
	}
	return res, m, nil
}

// unlearnPredict removes sample id from m and predicts x.
func unlearnPredict(m *AOSVR, id uint64, x []float64) (float64, error) {
	if err := m.Remove(id); err != nil {
		return 0, err
	}
	return m.Predict(x)
}

// trainAll returns a new AOSVR that has learnt every sample but the
// skip-th, in order, and the handle of each sample learnt.
func trainAll(cfg AOSVRConfig, xs [][]float64, ys []float64, skip int) (*AOSVR, []uint64, error) {
	m, err := NewAOSVR(cfg)
	if err != nil {
		return nil, nil, err
	}
	ids := make([]uint64, len(xs))
	for i, x := range xs {
		if i == skip {
			continue
		}
		if ids[i], err = m.Add(x, ys[i]); err != nil {
			return nil, nil, fmt.Errorf("sample %d: learn: %w", i, err)
		}
	}
	return m, ids, nil
}
