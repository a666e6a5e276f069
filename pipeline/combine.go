package pipeline

import "math"

// combiner weighs a few forecasters of the same series by their recent
// errors: the exponentially weighted average forecaster (Cesa-Bianchi and
// Lugosi, "Prediction, Learning, and Games", 2006, section 2.1), on
// discounted losses so that it follows a series whose best rule changes.
// Each forecaster i has a discounted cumulative loss
//
//	L_i(t) = β·L_i(t−1) + |y(t) − f_i(t)| / s(t)
//
// (the absolute error in units of the series' running scale s, so that
// the weights do not depend on the series' units), and the forecast is
// Σ w_i·f_i with w_i ∝ exp(−η·L_i). With β = 1 and a loss bounded by B,
// its regret against the best forecaster after T steps is at most
// ln(N)/η + η·T·B²/8 (Theorem 2.2; the absolute loss is convex, so the
// mixture's loss is at most the weighted mean of the losses); discounting
// trades that bound for tracking. Losses are clipped to lossClip so that
// one spike cannot decide the weights for the next 1/(1−β) steps.
//
// O(N) time per forecast and per update; no allocation.
type combiner struct {
	eta, beta float64
	relative  bool      // η applies to L_i / min L (scale-free, unclipped)
	loss      []float64 // L_i
	w         []float64 // the weights of the last forecast
	f         []float64 // the forecasters' last forecasts
}

// Defaults of the combination, chosen on the shared series and the NAB
// real streams (BENCHMARKS.md, "How the default's parts were chosen").
const (
	combineEta  = 0.5
	combineBeta = 0.98
	lossClip    = 50
	guardEta    = 20
	guardBeta   = 0.9995
	// guardLossClip bounds the guard's losses only so that they stay
	// finite whatever the values. Not lower: after a long flat stretch the
	// running scale is tiny, and real errors of 10⁶–10¹⁰ scales happen
	// (NAB's keystroke timings).
	guardLossClip = 1e12
)

func newCombiner(n int) *combiner {
	return &combiner{eta: combineEta, beta: combineBeta, loss: make([]float64, n), w: make([]float64, n), f: make([]float64, n)}
}

// newGuard returns the combiner of the combination and persistence, on
// relative losses: w_i ∝ exp(−η·(L_i / min L − 1)), the losses unclipped
// and discounted slowly (a memory of 1/(1−β) = 2000 points). It keeps the
// forecast from losing to persistence where the rules' small gains in
// quiet stretches are outweighed by their losses in rare bursts, which a
// short memory forgets: on a bursty CPU metric persistence is what wins.
func newGuard() *combiner {
	return &combiner{eta: guardEta, beta: guardBeta, relative: true, loss: make([]float64, 2), w: make([]float64, 2), f: make([]float64, 2)}
}

// forecast returns the combination of the forecasts in c.f (set by the
// caller), remembering the weights.
func (c *combiner) forecast() float64 {
	c.weigh(c.w)
	var sf float64
	for i, w := range c.w {
		sf += w * c.f[i]
	}
	return sf
}

// weigh sets w to the weights of c's losses.
func (c *combiner) weigh(w []float64) { weigh(c.eta, c.relative, c.loss, w) }

// weigh sets w to the weights of the losses by the rule of η and relative,
// summing to 1 (so that no partial sum of the weighted forecasts leaves
// float64 where the forecasts do not).
func weigh(eta float64, relative bool, loss, w []float64) {
	lo := math.Inf(1)
	for _, l := range loss {
		lo = min(lo, l)
	}
	var sw float64
	for i, l := range loss {
		d := l - lo
		if relative {
			d = 0
			if lo > 0 {
				d = l/lo - 1
			}
		}
		w[i] = math.Exp(-eta * d)
		sw += w[i]
	}
	for i := range w {
		w[i] /= sw
	}
}

// mixBetween returns the combination of f with the losses interpolated
// between c's (λ = 0) and d's (λ = 1), both of the same rule and size:
// the weights of a step between two calibrated ones, as if its losses
// had grown linearly between theirs. loss and w are scratch of len(f).
func (c *combiner) mixBetween(d *combiner, lam float64, f, loss, w []float64) float64 {
	for i := range loss {
		loss[i] = (1-lam)*c.loss[i] + lam*d.loss[i]
	}
	weigh(c.eta, c.relative, loss, w)
	var sf float64
	for i := range w {
		sf += w[i] * f[i]
	}
	return sf
}

// update charges each forecaster its error on the actual y, in units of
// the scale s at the time of the forecasts.
func (c *combiner) update(y, s float64) {
	for i, f := range c.f {
		e := math.Abs(y-f) / s
		if c.relative {
			e = min(e, guardLossClip) // finite, for hostile values
		} else {
			e = min(e, lossClip)
		}
		if math.IsNaN(e) {
			e = lossClip
		}
		c.loss[i] = c.beta*c.loss[i] + e
	}
}
