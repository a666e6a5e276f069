package svr

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/forecastd/forecastd/lab/dataset"
)

// looTol bounds the difference between a leave-one-out prediction and the
// prediction of an AOSVR trained afresh on the other samples, relative to
// 1 + |prediction|: both are the exact solution up to rounding.
const looTol = 1e-8

// looProblem is a seeded random regression problem.
func looProblem(seed uint64, l, d int) ([][]float64, []float64) {
	rng := rand.New(rand.NewPCG(seed, uint64(l*d)))
	xs := make([][]float64, l)
	ys := make([]float64, l)
	for i := range xs {
		xs[i] = randVec(rng, d)
		ys[i] = math.Sin(3*xs[i][0]) + 0.5*xs[i][d-1] + 0.2*rng.NormFloat64()
	}
	return xs, ys
}

// bruteLOO trains a fresh AOSVR on every sample but i and predicts xs[i].
func bruteLOO(t testing.TB, cfg AOSVRConfig, xs [][]float64, ys []float64, i int) (pred float64, nfree int) {
	t.Helper()
	m, _, err := trainAll(cfg, xs, ys, i)
	if err != nil {
		t.Fatalf("brute force without %d: %v", i, err)
	}
	p, err := m.Predict(xs[i])
	if err != nil {
		t.Fatal(err)
	}
	s, _, _ := m.Sizes()
	return p, s
}

// TestLeaveOneOutMatchesRetraining compares every leave-one-out prediction
// with an AOSVR trained from scratch on the other l−1 samples, over a
// ladder of sizes, C and ε, and checks that the model the procedure leaves
// is the model on all samples.
func TestLeaveOneOutMatchesRetraining(t *testing.T) {
	for _, l := range []int{2, 3, 10, 40, 80} {
		for _, c := range []float64{0.3, 10, 1e3} {
			for _, eps := range []float64{0, 0.05, 0.3} {
				t.Run(fmt.Sprintf("l=%d/C=%g/eps=%g", l, c, eps), func(t *testing.T) {
					t.Parallel()
					xs, ys := looProblem(uint64(l)*7919+uint64(c*10)+uint64(eps*100), l, 3)
					cfg := AOSVRConfig{Dim: 3, Kernel: RBF{Gamma: 1}, C: c, Epsilon: eps}
					res, m, err := leaveOneOut(cfg, xs, ys)
					if err != nil {
						t.Fatal(err)
					}
					if res.Retrained != 0 {
						t.Errorf("%d samples retrained after a numerical failure", res.Retrained)
					}
					var worst float64
					differ, skipped := 0, 0
					full := fresh(t, cfg, xs, ys)
					for i := range xs {
						want, nfree := bruteLOO(t, cfg, xs, ys, i)
						d := math.Abs(res.Pred[i]-want) / (1 + math.Abs(want))
						if nfree == 0 {
							// No free support vector: b is only bounded,
							// and any value in its interval is a solution.
							skipped++
							continue
						}
						worst = math.Max(worst, d)
						if !(d <= looTol) {
							t.Errorf("sample %d: leave-one-out %v, retrained %v (rel. diff %.3g)", i, res.Pred[i], want, d)
						}
						if f, _ := full.Predict(xs[i]); math.Abs(f-want) > 1e-6 {
							differ++
						}
					}
					t.Logf("%d support vectors unlearnt; worst rel. diff %.3g; %d predictions differ from the full model's; %d with a bias not unique", res.Unlearnt, worst, differ, skipped)
					if l >= 10 && skipped > l/2 {
						t.Errorf("%d of %d comparisons skipped", skipped, l)
					}
					if l >= 10 && res.Unlearnt > 0 && differ == 0 {
						t.Errorf("every leave-one-out prediction equals the full model's: the test could not fail")
					}
					checkKKT(t, m, "after leave-one-out")
					if m.Len() != l {
						t.Fatalf("model holds %d samples, want %d", m.Len(), l)
					}
					sameModel(t, m, full, l)
				})
			}
		}
	}
}

// fresh returns an AOSVR trained on every sample.
func fresh(t testing.TB, cfg AOSVRConfig, xs [][]float64, ys []float64) *AOSVR {
	t.Helper()
	m, _, err := trainAll(cfg, xs, ys, -1)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// sameModel checks that got and want predict alike on fresh inputs and at
// the same bias, and have the same support-vector count up to borderline
// samples.
func sameModel(t *testing.T, got, want *AOSVR, seed int) {
	t.Helper()
	rng := rand.New(rand.NewPCG(uint64(seed), 99))
	for k := range 20 {
		x := randVec(rng, got.Dim())
		g, _ := got.Predict(x)
		w, _ := want.Predict(x)
		if d := math.Abs(g - w); !(d <= looTol*(1+math.Abs(w))) {
			t.Errorf("after leave-one-out, prediction %d is %v, the full model's %v", k, g, w)
		}
	}
	gs, ws := got.NumSupport(), want.NumSupport()
	if gs != ws && abs(gs-ws) > got.borderline(1e-7)+want.borderline(1e-7) {
		t.Errorf("after leave-one-out %d support vectors, the full model %d", gs, ws)
	}
}

// TestLeaveOneOutSantaFe runs the leave-one-out on the scaled, embedded
// Santa Fe laser series at the paper's parameters (B = 5, RBF γ = 1,
// C = 10, ε = 0.1) and compares every prediction with retraining.
func TestLeaveOneOutSantaFe(t *testing.T) {
	xs, ys := dataset.Embed(dataset.Scaled(dataset.MustLoad("santafe_laser_a").Values), 5)
	xs, ys = xs[300:400], ys[300:400]
	cfg := AOSVRConfig{Dim: 5, Kernel: RBF{Gamma: 1}, C: 10, Epsilon: 0.1}
	res, m, err := leaveOneOut(cfg, xs, ys)
	if err != nil {
		t.Fatal(err)
	}
	for i := range xs {
		want, _ := bruteLOO(t, cfg, xs, ys, i)
		if d := math.Abs(res.Pred[i]-want) / (1 + math.Abs(want)); !(d <= looTol) {
			t.Errorf("sample %d: leave-one-out %v, retrained %v (rel. diff %.3g)", i, res.Pred[i], want, d)
		}
	}
	checkKKT(t, m, "after leave-one-out")
	sameModel(t, m, fresh(t, cfg, xs, ys), 5)
	t.Logf("%d of %d samples unlearnt", res.Unlearnt, len(xs))
}

func TestLeaveOneOutErrors(t *testing.T) {
	cfg := AOSVRConfig{Dim: 2, C: 1, Epsilon: 0.1}
	xs := [][]float64{{0, 0}, {1, 1}, {2, 2}}
	ys := []float64{0, 1, 2}
	for _, tc := range []struct {
		name string
		cfg  AOSVRConfig
		xs   [][]float64
		ys   []float64
		want error
	}{
		{"one sample", cfg, xs[:1], ys[:1], ErrBadInput},
		{"no samples", cfg, nil, nil, ErrBadInput},
		{"wrong length", cfg, [][]float64{{0, 0}, {1}}, ys[:2], ErrBadInput},
		{"NaN target", cfg, xs, []float64{0, math.NaN(), 1}, ErrBadInput},
		{"bad C", AOSVRConfig{Dim: 2, C: -1}, xs, ys, ErrBadConfig},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := LeaveOneOut(tc.cfg, tc.xs, tc.ys)
			if !errors.Is(err, tc.want) {
				t.Fatalf("error %v, want %v", err, tc.want)
			}
		})
	}
	defer func() {
		if recover() == nil {
			t.Error("no panic on 3 inputs and 2 targets")
		}
	}()
	_, _ = LeaveOneOut(cfg, xs, ys[:2])
}
