package pipeline

import (
	"math"
	"slices"
)

// conformal calibrates prediction intervals by split conformal prediction
// over a rolling window (Vovk, Gammerman and Shafer, "Algorithmic Learning
// in a Random World", 2005; Lei et al., "Distribution-free predictive
// inference for regression", JASA 2018, section 2.2): the interval for the
// next forecast ŷ is ŷ ± q, where q is the ⌈(n+1)·coverage⌉-th smallest of
// the absolute one-step residuals |y − ŷ| of the n most recent forecasts.
// Under exchangeable residuals it covers with probability ≥ coverage; a
// rolling window follows residuals whose scale drifts (heteroscedastic or
// non-stationary series), at the price of the exchangeability argument.
//
// The quantile's level adapts as in adaptive conformal inference (Gibbs
// and Candès, "Adaptive conformal inference under distribution shift",
// NeurIPS 2021, eq. 2): after each forecast whose interval missed, the
// miscoverage level α_t moves by γ(α − 1), after each hit by γα, so that the
// long-run miss rate is α whatever the residuals do, with an error bounded
// by (1 + γ)/(γT) after T forecasts. γ = 0 is plain split conformal. The
// level is clipped to the window: at most the largest residual, at least
// the smallest.
//
// Storage is allocated once; add costs O(n) (a sorted insert and delete),
// quantile O(1). Neither allocates.
type conformal struct {
	ring     []float64 // the last n residuals, in arrival order
	sorted   []float64 // the same, ascending
	head, n  int       // ring[head] is the oldest when n == len(ring)
	coverage float64   // nominal, 1 − α
	alpha    float64   // α_t, the adapted miscoverage level
	rate     float64   // γ
}

func newConformal(window int, coverage, rate float64) *conformal {
	return &conformal{
		ring:     make([]float64, window),
		sorted:   make([]float64, 0, window),
		coverage: coverage,
		alpha:    1 - coverage,
		rate:     rate,
	}
}

// feedback adapts the level after a forecast whose interval missed or not.
func (c *conformal) feedback(missed bool) {
	err := 0.0
	if missed {
		err = 1
	}
	c.alpha += c.rate * ((1 - c.coverage) - err)
}

// add records the absolute residual r ≥ 0, forgetting the oldest when the
// window is full. A NaN is ignored.
func (c *conformal) add(r float64) {
	if math.IsNaN(r) {
		return
	}
	if c.n == len(c.ring) {
		old := c.ring[c.head]
		i, _ := slices.BinarySearch(c.sorted, old)
		copy(c.sorted[i:], c.sorted[i+1:])
		c.sorted = c.sorted[:len(c.sorted)-1]
		c.ring[c.head] = r
		c.head++
		if c.head == len(c.ring) {
			c.head = 0
		}
	} else {
		c.ring[c.n] = r
		c.n++
	}
	i, _ := slices.BinarySearch(c.sorted, r)
	c.sorted = c.sorted[:len(c.sorted)+1]
	copy(c.sorted[i+1:], c.sorted[i:])
	c.sorted[i] = r
}

// quantile returns the half-width q of the next interval: the
// ⌈(n+1)(1 − α_t)⌉-th smallest residual, clipped to [1, n]. It returns false
// while the window holds too few residuals for the nominal coverage
// (⌈(n+1)·coverage⌉ > n: 9 residuals at 90 %).
func (c *conformal) quantile() (float64, bool) {
	if int(math.Ceil(float64(c.n+1)*c.coverage-1e-9)) > c.n {
		return 0, false
	}
	k := int(math.Ceil(float64(c.n+1)*(1-c.alpha) - 1e-9))
	k = max(1, min(k, c.n))
	return c.sorted[k-1], true
}
