//go:build libsvm

package svr

import (
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/forecastd/forecastd/lab/dataset"
	"github.com/forecastd/forecastd/svr/internal/libsvm"
)

// santaFeSamples returns l consecutive delay vectors (B = 5) of the scaled
// Santa Fe laser series, from sample 300 on, and their targets.
func santaFeSamples(l int) ([][]float64, []float64) {
	xs, ys := dataset.Embed(dataset.Scaled(dataset.MustLoad("santafe_laser_a").Values), 5)
	return xs[300 : 300+l], ys[300 : 300+l]
}

// libsvmLOO retrains LIBSVM on the l−1 other samples for each sample and
// predicts it: the leave-one-out the AOSVR paper's Fig. 6 times.
func libsvmLOO(tb testing.TB, xs [][]float64, ys []float64, p libsvm.Params) []float64 {
	tb.Helper()
	l := len(xs)
	pred := make([]float64, l)
	ox := make([][]float64, 0, l-1)
	oy := make([]float64, 0, l-1)
	for i := range xs {
		ox = append(append(ox[:0], xs[:i]...), xs[i+1:]...)
		oy = append(append(oy[:0], ys[:i]...), ys[i+1:]...)
		mod, err := libsvm.Train(ox, oy, p)
		if err != nil {
			tb.Fatal(err)
		}
		pred[i] = mod.Predict(xs[i])
		mod.Free()
	}
	return pred
}

// TestLeaveOneOutMatchesLIBSVM compares the leave-one-out predictions with
// LIBSVM retrained on the other l−1 samples at -e 1e-12, on the Santa Fe
// series at the paper's parameters (ε as LIBSVM rounds it to float32).
// The tolerance is libsvmTol: LIBSVM caches the kernel in single
// precision.
func TestLeaveOneOutMatchesLIBSVM(t *testing.T) {
	for _, eps := range []float64{0.1, 0.01} {
		t.Run(fmt.Sprintf("eps=%g", eps), func(t *testing.T) {
			xs, ys := santaFeSamples(100)
			e := float64(float32(eps))
			res, err := LeaveOneOut(AOSVRConfig{Dim: 5, Kernel: RBF{Gamma: 1}, C: 10, Epsilon: e}, xs, ys)
			if err != nil {
				t.Fatal(err)
			}
			want := libsvmLOO(t, xs, ys, libsvm.Params{Gamma: 1, C: 10, Epsilon: eps, Tol: 1e-12})
			var worst float64
			for i := range xs {
				d := math.Abs(res.Pred[i] - want[i])
				worst = math.Max(worst, d)
				if !(d <= libsvmTol) {
					t.Errorf("sample %d: leave-one-out %v, LIBSVM %v", i, res.Pred[i], want[i])
				}
			}
			t.Logf("%d of %d samples unlearnt; max |Δ| vs LIBSVM %.3g", res.Unlearnt, len(xs), worst)
		})
	}
}

// BenchmarkLOO times, in one run, the exact leave-one-out of AOSVR
// (LeaveOneOut) and of LIBSVM retrained on the l−1 other samples for each
// sample (in process, through cgo, at LIBSVM's default tolerance 1e-3),
// on l delay vectors of the scaled Santa Fe laser series (B = 5, RBF
// γ = 1, C = 10), as in the AOSVR paper's Fig. 6. It reports the medians
// of both and the ratio of LIBSVM's to AOSVR's median. Run with
//
//	apt-get install -y libsvm-dev
//	go test -tags libsvm -run '^$' -bench LOO ./svr
func BenchmarkLOO(b *testing.B) {
	for _, eps := range []float64{0.1, 0.01} {
		for _, l := range []int{50, 100, 200, 400} {
			b.Run(fmt.Sprintf("l=%d/eps=%g", l, eps), func(b *testing.B) {
				xs, ys := santaFeSamples(l)
				cfg := AOSVRConfig{Dim: 5, Kernel: RBF{Gamma: 1}, C: 10, Epsilon: eps}
				p := libsvm.Params{Gamma: 1, C: 10, Epsilon: eps}
				var aosvr, lib []time.Duration
				var sv int
				b.ReportAllocs()
				for b.Loop() {
					t0 := time.Now()
					res, err := LeaveOneOut(cfg, xs, ys)
					if err != nil {
						b.Fatal(err)
					}
					aosvr = append(aosvr, time.Since(t0))
					sv = res.Unlearnt
					t0 = time.Now()
					libsvmLOO(b, xs, ys, p)
					lib = append(lib, time.Since(t0))
				}
				med := func(d []time.Duration) float64 {
					slices.Sort(d)
					return float64(d[len(d)/2].Nanoseconds())
				}
				a, d := med(aosvr), med(lib)
				b.ReportMetric(a, "aosvr-loo-ns")
				b.ReportMetric(d, "libsvm-loo-ns")
				b.ReportMetric(d/a, "libsvm/aosvr")
				b.ReportMetric(float64(sv), "svs")
			})
		}
	}
}
