package anomaly

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestLikelihoodAgainstRecomputation compares the running likelihood with
// one recomputed from scratch over the stored history at every point.
func TestLikelihoodAgainstRecomputation(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, sz := range []struct{ w, s, m int }{{2, 1, 2}, {10, 3, 5}, {50, 10, 20}, {200, 1, 200}} {
		l, err := NewLikelihood(sz.w, sz.s, sz.m)
		if err != nil {
			t.Fatal(err)
		}
		var mapped, means []float64
		for i := 0; i < 1000; i++ {
			s := rng.ExpFloat64()
			if rng.IntN(50) == 0 {
				s *= 100
			}
			got := l.Update(s)
			mapped = append(mapped, s/(1+s))
			lo := max(0, len(mapped)-sz.s)
			avg := 0.0
			for _, v := range mapped[lo:] {
				avg += v
			}
			avg /= float64(len(mapped) - lo)
			want := 0.5
			h := means[max(0, len(means)-sz.w):]
			if len(h) >= sz.m {
				mu, v := 0.0, 0.0
				for _, x := range h {
					mu += x
				}
				mu /= float64(len(h))
				for _, x := range h {
					v += (x - mu) * (x - mu)
				}
				sigma := math.Max(math.Sqrt(v/float64(len(h))), MinSigma)
				want = 1 - 0.5*math.Erfc((avg-mu)/sigma/math.Sqrt2)
			}
			means = append(means, avg)
			if math.Abs(got-want) > 1e-9 {
				t.Fatalf("window %d short %d point %d: likelihood %v, recomputed %v", sz.w, sz.s, i, got, want)
			}
		}
	}
}

// TestLikelihoodRisesOnAnomaly: after a long quiet stretch a burst of large
// scores is near-certainly anomalous, while a quiet stretch is not.
func TestLikelihoodRisesOnAnomaly(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	l, _ := NewLikelihood(500, 5, 50)
	var quietMax float64
	for i := 0; i < 2000; i++ {
		p := l.Update(rng.Float64() * 0.8)
		if i > 600 {
			quietMax = math.Max(quietMax, p)
		}
	}
	var p float64
	for i := 0; i < 5; i++ {
		p = l.Update(20)
	}
	if p < 0.99999 || quietMax > 0.9999 {
		t.Fatalf("likelihood %v on the burst (want > 0.99999), at most %v before (want < 0.9999)", p, quietMax)
	}
	if LogLikelihood(p) < 0.5 || LogLikelihood(0.5) > 0.05 {
		t.Fatalf("LogLikelihood(%v) = %v, LogLikelihood(0.5) = %v", p, LogLikelihood(p), LogLikelihood(0.5))
	}
	if _, err := NewLikelihood(5, 10, 2); err == nil {
		t.Error("short > window accepted")
	}
}
