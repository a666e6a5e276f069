package anomaly

import (
	"fmt"
	"math"
)

// Likelihood turns a series' anomaly scores into an anomaly likelihood:
// how improbable the mean of the last Short scores is under a normal
// distribution fitted to the means seen over the last Window points, as in
// Ahmad, Lavin, Purdy and Agha, "Unsupervised real-time anomaly detection
// for streaming data" (Neurocomputing 262, 2017), section 4.2: eq. 3–5 fit
// μ and σ over the window, eq. 6 the likelihood L = 1 − Q((μ̃ − μ)/σ), Q the
// normal tail. Scores are first mapped into [0, 1) by s/(1+s) (1 on the
// bound becomes ½), so that the fit is not ruled by a few huge scores.
//
// O(1) time per point (running sums, recomputed exactly once per Window
// points against drift), O(Window + Short) memory allocated once.
type Likelihood struct {
	hist       []float64 // ring of the last Window short means
	short      []float64 // ring of the last Short mapped scores
	nh, ns     int       // points in each ring (≤ its length)
	ih, is     int       // next slot of each ring
	sum, sumsq float64   // over hist
	ssum       float64   // over short
	since      int       // points since the sums were recomputed
	minHist    int
}

// MinSigma floors the fitted σ (in mapped-score units), so that a series
// whose scores have been constant does not call every change improbable.
const MinSigma = 0.01

// NewLikelihood returns a likelihood over a history of window points and a
// short mean of short points, 1 ≤ short ≤ window. It reports ½ (no
// evidence) until minHist points, 2 ≤ minHist ≤ window, have been seen.
func NewLikelihood(window, short, minHist int) (*Likelihood, error) {
	if short < 1 || window < short || minHist < 2 || minHist > window {
		return nil, fmt.Errorf("%w: likelihood window %d, short %d, min history %d: want 1 ≤ short ≤ window and 2 ≤ min history ≤ window",
			ErrBadConfig, window, short, minHist)
	}
	return &Likelihood{hist: make([]float64, window), short: make([]float64, short), minHist: minHist}, nil
}

// Update adds a score and returns the likelihood that the recent scores
// are anomalous, in [0, 1]. A NaN score (no interval) is skipped and
// returns ½.
func (l *Likelihood) Update(score float64) float64 {
	if math.IsNaN(score) {
		return 0.5
	}
	m := score / (1 + score)
	if math.IsInf(score, 1) {
		m = 1
	}
	if l.ns == len(l.short) {
		l.ssum -= l.short[l.is]
	} else {
		l.ns++
	}
	l.short[l.is] = m
	l.ssum += m
	l.is = (l.is + 1) % len(l.short)
	avg := l.ssum / float64(l.ns)

	// The likelihood of avg against the history before it.
	p := 0.5
	if l.nh >= l.minHist {
		n := float64(l.nh)
		mu := l.sum / n
		v := l.sumsq/n - mu*mu
		sigma := max(math.Sqrt(max(v, 0)), MinSigma)
		z := (avg - mu) / sigma
		p = 1 - 0.5*math.Erfc(z/math.Sqrt2) // 1 − Q(z)
	}

	if l.nh == len(l.hist) {
		old := l.hist[l.ih]
		l.sum -= old
		l.sumsq -= old * old
	} else {
		l.nh++
	}
	l.hist[l.ih] = avg
	l.sum += avg
	l.sumsq += avg * avg
	l.ih = (l.ih + 1) % len(l.hist)
	if l.since++; l.since >= len(l.hist) {
		l.since, l.sum, l.sumsq = 0, 0, 0
		for _, h := range l.hist[:l.nh] {
			l.sum += h
			l.sumsq += h * h
		}
	}
	return p
}

// LogLikelihood maps a likelihood onto [0, 1] by log(1 − L)/log(10⁻¹⁰),
// spreading the values near 1 where thresholds lie: 0.5 for L = 1 − 10⁻⁵,
// 1 for L ≥ 1 − 10⁻¹⁰ (HTM's log-likelihood for NAB).
func LogLikelihood(l float64) float64 {
	return min(1, math.Log(1.0000000001-l)/math.Log(1e-10))
}
