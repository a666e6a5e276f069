package svr

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/forecastd/forecastd/lab/dataset"
	"github.com/forecastd/forecastd/lab/mackeyglass"
)

// mackeyGlassSamples is the benchmark series of the issue: Mackey-Glass
// τ = 17, embedded with B = 5.
func mackeyGlassSamples(n int) ([][]float64, []float64) {
	return dataset.Embed(dataset.Scaled(mackeyglass.Generate(n+5, mackeyglass.Config{})), 5)
}

// BenchmarkAOSVRStep measures one step of a sliding window: forget the
// oldest sample, learn the next one (Mackey-Glass τ=17, B=5, RBF γ=1,
// C=10). It reports the median, mean and 99th percentile of the step time,
// allocations per step and the bytes of model state.
func BenchmarkAOSVRStep(b *testing.B) {
	xs, ys := mackeyGlassSamples(6000)
	for _, eps := range []float64{0.1, 0.01} {
		for _, w := range []int{100, 200, 500, 1000} {
			b.Run(fmt.Sprintf("W=%d/eps=%g", w, eps), func(b *testing.B) {
				m, err := NewAOSVR(AOSVRConfig{Dim: 5, Kernel: RBF{Gamma: 1}, C: 10, Epsilon: eps, Capacity: w})
				if err != nil {
					b.Fatal(err)
				}
				for i := range w {
					if err := m.Learn(xs[i], ys[i]); err != nil {
						b.Fatal(err)
					}
				}
				// Warm the scratch buffers and the margin-set column pool.
				next := w
				step := func() {
					if err := m.ForgetOldest(); err != nil {
						b.Fatal(err)
					}
					if err := m.Learn(xs[next], ys[next]); err != nil {
						b.Fatal(err)
					}
					next++
					if next == len(xs) {
						next = 0
					}
				}
				for range 2 * w {
					step()
				}
				times := make([]time.Duration, 0, 1<<16)
				b.ReportAllocs()
				b.ResetTimer()
				for b.Loop() {
					t0 := time.Now()
					step()
					if len(times) < cap(times) {
						times = append(times, time.Since(t0))
					}
				}
				b.StopTimer()
				slices.Sort(times)
				var sum time.Duration
				for _, d := range times {
					sum += d
				}
				b.ReportMetric(float64(times[len(times)/2].Nanoseconds()), "median-ns/step")
				b.ReportMetric(float64(sum.Nanoseconds())/float64(len(times)), "mean-ns/step")
				b.ReportMetric(float64(times[len(times)*99/100].Nanoseconds()), "p99-ns/step")
				b.ReportMetric(float64(m.StateBytes()), "state-bytes")
				s, e, _ := m.Sizes()
				b.ReportMetric(float64(s), "|S|")
				b.ReportMetric(float64(e), "|E|")
			})
		}
	}
}

// BenchmarkAOSVRReplace measures one step of a sliding window as a full
// window.Window takes it, by one Replace (Mackey-Glass τ=17, B=5, RBF γ=1,
// C=10, W=100), over 1 model or 256 taking turns, with the margin set's
// kernel columns kept between calls (the default column cache holds
// them all) or computed again at every call that needs them (a cache of
// 0 bytes).
func BenchmarkAOSVRReplace(b *testing.B) {
	xs, ys := mackeyGlassSamples(6000)
	const w = 100
	for _, eps := range []float64{0.1, 0.01} {
		for _, models := range []int{1, 256} {
			for _, keep := range []bool{false, true} {
				b.Run(fmt.Sprintf("eps=%g/models=%d/cached=%v", eps, models, keep), func(b *testing.B) {
					if !keep {
						defer SetColumnCache(ColumnCache().Limit)
						SetColumnCache(0)
					}
					ms := make([]*AOSVR, models)
					next := make([]int, models)
					for k := range ms {
						m, err := NewAOSVR(AOSVRConfig{Dim: 5, Kernel: RBF{Gamma: 1}, C: 10, Epsilon: eps, Capacity: w})
						if err != nil {
							b.Fatal(err)
						}
						next[k] = (37 * k) % (len(xs) - w)
						for i := range w {
							if err := m.Learn(xs[next[k]+i], ys[next[k]+i]); err != nil {
								b.Fatal(err)
							}
						}
						next[k] += w
						ms[k] = m
					}
					turn := 0
					step := func() {
						k := turn % models
						turn++
						m := ms[k]
						old, _ := m.Oldest()
						if _, err := m.Replace(old, xs[next[k]], ys[next[k]]); err != nil {
							b.Fatal(err)
						}
						if next[k]++; next[k] == len(xs) {
							next[k] = 0
						}
					}
					for range 2 * models {
						step()
					}
					b.ReportAllocs()
					for b.Loop() {
						step()
					}
					b.ReportMetric(float64(ms[0].StateBytes()), "state-bytes")
				})
			}
		}
	}
}
