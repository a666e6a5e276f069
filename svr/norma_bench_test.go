package svr_test

import (
	"fmt"
	"testing"

	"github.com/forecastd/forecastd/lab/dataset"
	"github.com/forecastd/forecastd/svr"
)

// benchNORMAStep measures one forecasting step, Predict(X(t)) then
// Learn(X(t), x(t+1)), on the Santa Fe laser series scaled to [−1, 1] and
// embedded with B = 5, cycling through it, on a model that already holds
// its τ terms.
func benchNORMAStep(b *testing.B, cfg svr.NORMAConfig) {
	xs, ys := dataset.Embed(dataset.Scaled(dataset.MustLoad("santafe_laser_a").Values), 5)
	cfg.Dim = 5
	m, err := svr.NewNORMA(cfg)
	if err != nil {
		b.Fatal(err)
	}
	i := 0
	step := func() {
		if _, err := m.Predict(xs[i]); err != nil {
			b.Fatal(err)
		}
		if err := m.Learn(xs[i], ys[i]); err != nil {
			b.Fatal(err)
		}
		if i++; i == len(xs) {
			i = 0
		}
	}
	for m.Len() < m.Config().Tau && m.Steps() < 100_000 {
		step()
	}
	b.ReportAllocs()
	for b.Loop() {
		step()
	}
	b.ReportMetric(float64(m.Len()), "terms")
	b.ReportMetric(float64(m.StateBytes()), "state-bytes")
}

// BenchmarkNORMAStep is the default model (squared loss, RBF γ = 1) on a
// ladder of τ; the default is τ = 1000.
func BenchmarkNORMAStep(b *testing.B) {
	for _, tau := range []int{100, 300, 1000, 3000} {
		b.Run(fmt.Sprintf("tau=%d", tau), func(b *testing.B) {
			benchNORMAStep(b, svr.NORMAConfig{Tau: tau})
		})
	}
}

// BenchmarkNORMAStepLoss is each loss on its defaults (τ = 1000).
func BenchmarkNORMAStepLoss(b *testing.B) {
	for _, loss := range normaLosses {
		b.Run(loss.String(), func(b *testing.B) {
			benchNORMAStep(b, svr.NORMAConfig{Loss: loss})
		})
	}
}

// BenchmarkNORMAStepKernel compares the inline RBF with a kernel called
// through the Kernel interface (τ = 1000).
func BenchmarkNORMAStepKernel(b *testing.B) {
	for _, k := range []svr.Kernel{svr.RBF{Gamma: 1}, svr.Poly{Gamma: 0.2, Degree: 2}} {
		b.Run(k.String(), func(b *testing.B) {
			benchNORMAStep(b, svr.NORMAConfig{Kernel: k})
		})
	}
}
