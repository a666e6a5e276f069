package embedding

import "math"

// DetectLen is the number of values a series' seasonal periods are
// detected from (see [DetectPeriods]) when its spacing gives none: three
// cycles of the longest period detectable, a week of hours.
const DetectLen = 3 * maxDetectLag

// detectLag is the lag of the changes whose autocorrelation
// DetectPeriods reads: x(t) − x(t−4) keeps a slow cycle (a day of hours)
// that one-step changes bury in noise, and removes a trend or a level
// shift; the changes of noise are correlated only up to this lag, so
// periods are looked for beyond it.
const detectLag = 4

// maxDetectLag is the longest period DetectPeriods looks for.
const maxDetectLag = 170

// Thresholds of DetectPeriods, on the autocorrelation of the changes.
const (
	// detectMin is the least autocorrelation at a period's lag (and half
	// of it at twice the lag) for the period to count: white noise's
	// autocorrelations over DetectLen values stay within ±0.09 (two
	// standard errors, 2/√509).
	detectMin = 0.2
	// detectLonger is how much higher than the first period's smaller
	// multiples a multiple must correlate to be the second period.
	detectLonger = 0.05
)

// DetectPeriods returns up to n seasonal periods of the series x (oldest
// first), in points, found in the autocorrelation r(k) of its changes
// over detectLag points, x(t) − x(t−4):
//
//   - the first is the lag k > detectLag whose multiples correlate best on
//     average (r(k) ≥ detectMin and r(2k) ≥ detectMin/2), or the
//     shortest divisor of it that does nearly as well: the cycle's
//     fundamental rather than a neighbour or a multiple;
//   - the second, if n ≥ 2, is the multiple m·k (m ≥ 3) with the highest
//     unbiased autocorrelation, above the mean of the multiples below it
//     by detectLonger: a week of hours over a day, say.
//
// Lags reach at most min(len(x)/3, 170) (the first period half that). It
// returns nil if x has no cycle.
// O(len(x)·170) time; it allocates the changes (len(x) floats).
func DetectPeriods(x []float64, n int) []int {
	if n < 1 || len(x) < 16 {
		return nil
	}
	r, u, maxLag, ok := autocorrelations(x)
	if !ok {
		return nil
	}
	p := firstPeriod(r, maxLag)
	if p == 0 {
		return nil
	}
	out := []int{p}
	if n >= 2 {
		if q := longerPeriod(u, p, maxLag); q > 0 {
			out = append(out, q)
		}
	}
	return out
}

// autocorrelations returns the autocorrelation of x's changes over
// detectLag points at the lags 1 to maxLag+1: r the usual (biased)
// estimate, which shrinks long lags toward 0 as their sums have fewer
// pairs; u the unbiased one, which compares a long lag with a short one
// on equal terms. ok is false when the changes do not vary or are too
// few.
func autocorrelations(x []float64) (r, u []float64, maxLag int, ok bool) {
	lag := detectLag
	d := make([]float64, len(x)-lag)
	var mean float64
	for i := range d {
		d[i] = x[i+lag] - x[i]
		mean += d[i]
	}
	mean /= float64(len(d))
	var v float64
	for i := range d {
		d[i] -= mean
		v += d[i] * d[i]
	}
	if !(v > 0) || math.IsInf(v, 0) {
		return nil, nil, 0, false
	}
	maxLag = min(len(d)/3, maxDetectLag)
	if maxLag < 4 {
		return nil, nil, 0, false
	}
	r, u = make([]float64, maxLag+2), make([]float64, maxLag+2)
	for k := 1; k <= maxLag+1; k++ {
		var s float64
		for i := k; i < len(d); i++ {
			s += d[i] * d[i-k]
		}
		r[k] = s / v
		u[k] = r[k] * float64(len(d)) / float64(len(d)-k)
	}
	return r, u, maxLag, true
}

// firstPeriod returns the lag that maximises the comb c(k), the mean of r
// over the multiples of k: a cycle's lag and its multiples all correlate,
// where a lag next to it drifts off them. It must correlate itself, and
// be confirmed by its double. Of a period and its multiples (which comb
// nearly as well), the shortest within 0.9 is taken. 0: none.
func firstPeriod(r []float64, maxLag int) int {
	comb := func(k int) float64 {
		if r[k] < detectMin || r[2*k] < detectMin/2 {
			return math.Inf(-1)
		}
		var c float64
		m := maxLag / k
		for j := 1; j <= m; j++ {
			c += r[j*k]
		}
		return c / float64(m)
	}
	p, best := 0, math.Inf(-1)
	for k := detectLag + 1; 2*k <= maxLag; k++ {
		if c := comb(k); c > best {
			p, best = k, c
		}
	}
	if p == 0 {
		return 0
	}
	for m := p / (detectLag + 1); m >= 2; m-- {
		if p%m == 0 && comb(p/m) >= 0.9*best {
			return p / m
		}
	}
	return p
}

// longerPeriod returns the multiple of the period p (beyond its double)
// that correlates most, by the unbiased estimate u, above the mean of the
// multiples below it by detectLonger (the weekend differs from the
// weekdays) and at least as well as the lags beside it; 0: none.
func longerPeriod(u []float64, p, maxLag int) int {
	q, uq := 0, math.Inf(-1)
	var sum float64 // u over the multiples below k
	for m := 1; m*p <= maxLag; m++ {
		k := m * p
		if m >= 3 && u[k]-sum/float64(m-1) >= detectLonger && u[k] > uq && u[k] >= u[k-1] && u[k] >= u[k+1] {
			q, uq = k, u[k]
		}
		sum += u[k]
	}
	return q
}
