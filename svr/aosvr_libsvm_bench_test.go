//go:build libsvm

package svr

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/forecastd/forecastd/svr/internal/libsvm"
)

// BenchmarkAOSVRvsLIBSVM measures, in one run, the AOSVR sliding-window
// step (forget the oldest, learn the next) and a LIBSVM batch retrain on
// the same window (in process, through cgo, at LIBSVM's default tolerance
// 1e-3 and at 1e-9), on Mackey-Glass τ=17, B=5, RBF γ=1, C=10. It reports
// the medians and the ratios of LIBSVM's to AOSVR's median. Run with
//
//	apt-get install -y libsvm-dev
//	go test -tags libsvm -run '^$' -bench AOSVRvsLIBSVM ./svr
func BenchmarkAOSVRvsLIBSVM(b *testing.B) {
	xs, ys := mackeyGlassSamples(8000)
	for _, eps := range []float64{0.1, 0.01} {
		for _, w := range []int{100, 200, 500, 1000} {
			b.Run(fmt.Sprintf("W=%d/eps=%g", w, eps), func(b *testing.B) {
				m, err := NewAOSVR(AOSVRConfig{Dim: 5, C: 10, Epsilon: eps, Capacity: w})
				if err != nil {
					b.Fatal(err)
				}
				lo, next := 0, 0
				for ; next < 3*w; next++ {
					if m.Len() == w {
						_ = m.ForgetOldest()
						lo++
					}
					_ = m.Learn(xs[next], ys[next])
				}
				var online, batchDef, batchTight []time.Duration
				retrain := func(tol float64) time.Duration {
					t0 := time.Now()
					mod, err := libsvm.Train(xs[lo:next], ys[lo:next], libsvm.Params{Gamma: 1, C: 10, Epsilon: eps, Tol: tol})
					d := time.Since(t0)
					if err != nil {
						b.Fatal(err)
					}
					mod.Free()
					return d
				}
				every := max(1, w/50) // LIBSVM is slow: retrain on a sample of the steps
				for i := 0; b.Loop(); i++ {
					t0 := time.Now()
					if err := m.ForgetOldest(); err != nil {
						b.Fatal(err)
					}
					if err := m.Learn(xs[next], ys[next]); err != nil {
						b.Fatal(err)
					}
					online = append(online, time.Since(t0))
					lo++
					next++
					if next == len(xs) {
						b.Fatal("series exhausted: lower -benchtime")
					}
					if i%every == 0 {
						batchDef = append(batchDef, retrain(1e-3))
						batchTight = append(batchTight, retrain(1e-9))
					}
				}
				med := func(d []time.Duration) float64 {
					slices.Sort(d)
					return float64(d[len(d)/2].Nanoseconds())
				}
				a, d, t := med(online), med(batchDef), med(batchTight)
				b.ReportMetric(a, "aosvr-median-ns")
				b.ReportMetric(d, "libsvm-median-ns")
				b.ReportMetric(t, "libsvm-tight-median-ns")
				b.ReportMetric(d/a, "libsvm/aosvr")
				b.ReportMetric(t/a, "libsvm-tight/aosvr")
			})
		}
	}
}
