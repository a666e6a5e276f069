package anomaly

import (
	"math"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"
)

// BenchmarkDetector is the detector's cost per point, on a noisy daily
// cycle with a burst of deviations now and then, for a debounce window
// of 1, 2 and 64 points: the default detector of forecastd (its
// pipeline.DefaultAnomaly, inlined: a leaf does not import pipeline) with
// open_k = open_n = n.
func BenchmarkDetector(b *testing.B) {
	for _, n := range []int{1, 2, 64} {
		b.Run("open_n="+strconv.Itoa(n), func(b *testing.B) {
			d, err := NewDetector(Config{Threshold: 3, K: n, N: n, M: 10, StepFloor: 1, Surprise: 1.4,
				SurpriseWindow: 25 * time.Hour, ExtremeQuiet: 48 * time.Hour, ExtremeMargin: 0.1, Seasonal: 6, SeasonalRun: 8})
			if err != nil {
				b.Fatal(err)
			}
			const m = 1 << 12
			ys, refs := make([]float64, m), make([]float64, m)
			rng := rand.New(rand.NewPCG(1, 2))
			for i := range ys {
				ys[i] = 10*math.Sin(2*math.Pi*float64(i)/288) + rng.NormFloat64()
				if i%500 < 5 {
					ys[i] += 20
				}
				refs[i] = 10*math.Sin(2*math.Pi*float64(i)/288) + rng.NormFloat64()
			}
			at := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
			i := 0
			b.ReportAllocs()
			for b.Loop() {
				k := i % m
				yhat := 10 * math.Sin(2*math.Pi*float64(k)/288)
				d.ObserveSeasonal(at.Add(time.Duration(i)*5*time.Minute), ys[k], yhat, yhat-2, yhat+2, refs[k])
				i++
			}
		})
	}
}
