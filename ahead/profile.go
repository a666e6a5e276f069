package ahead

// profile is a seasonal decomposition kept online: one or two seasonal
// profiles, each the exponentially weighted mean, per phase, of the
// values' deviations from a centred moving average over its period (the
// classical decomposition's estimate; Hyndman and Athanasopoulos,
// "Forecasting: Principles and Practice", 3rd ed., 2021, section 3.4),
// and a level that exponentially smooths the deseasonalised values:
//
//	T_P(j)  = the centred moving average of period P at j (2×P for
//	          even P), known P/2 values after j
//	s₁(j)   ← s₁ + γ₁·(y(j) − T_p₁(j) − s₂(j) − s₁)      at j = t − ⌊p₁/2⌋
//	s₂(j)   ← s₂ + γ₂·(y(j) − T_p₂(j) − s₁(j) − s₂)      at j = t − ⌊p₂/2⌋
//	ℓ(t)    = ℓ(t−1) + α·(y(t) − s₁(t) − s₂(t) − ℓ(t−1))
//	ŷ(t+h)  = ℓ(t) + s₁(t+h) + s₂(t+h)
//
// The profiles are estimated against the moving averages, not against
// the level (as Holt-Winters' are), so that a level quick enough to follow
// the series cannot take the shape into itself and leave the profiles to
// learn it over weeks. The moving average of the long period is of the
// values themselves: over a whole long period the short profile sums to
// a constant.
//
// A profile keeps at most maxBins values: a longer period's phases share a
// bin (a week of 5-minute points in 336 half-hours), each value moving its
// bin by the rate divided by the values a bin takes per cycle. A bin's
// rate starts as a running mean (1/n for its n-th value) and falls to its
// constant; the level is the running mean of the values until the short
// profile has them.
//
// Cost per value O(1) (the moving averages are running sums, made afresh
// from the history once a long period so that rounding cannot build up),
// per step O(1); memory O(bins).
type profile struct {
	p, bins [2]int
	s       [2][]float64
	cnt     [2][]uint16 // values a bin has taken, saturating
	level   float64
	n       uint64     // values pushed
	sum     [2]float64 // the last p values' sum (p + 1 for an even p)
}

// The rates: the level follows a deseasonalised value within a few
// points; a short profile averages about ten days, a long one about five
// weeks.
const (
	profAlpha  = 0.3
	profGamma1 = 0.1
	profGamma2 = 0.2
	maxBins    = 336
)

func newProfile(p1, p2 int) *profile {
	pr := &profile{}
	for i, p := range [2]int{p1, p2} {
		if p <= 0 {
			continue
		}
		b := min(p, maxBins)
		pr.p[i], pr.bins[i] = p, b
		pr.s[i] = make([]float64, b)
		pr.cnt[i] = make([]uint16, b)
	}
	return pr
}

// bin returns the bin of the value of index t in profile i.
func (pr *profile) bin(i int, t uint64) int { return int(t%uint64(pr.p[i])) * pr.bins[i] / pr.p[i] }

// at returns profile i's value at index t (0 without it).
func (pr *profile) at(i int, t uint64) float64 {
	if pr.p[i] == 0 {
		return 0
	}
	return pr.s[i][pr.bin(i, t)]
}

// width is the values the running sum of profile i spans: p, or p + 1
// for the 2×p average of an even p.
func (pr *profile) width(i int) int { return pr.p[i] + 1 - pr.p[i]%2 }

// push learns the newest value of v.
func (pr *profile) push(v view) {
	t := pr.n
	pr.n++
	y := v.At(0)
	held := v.Held()
	for i := range pr.p {
		if pr.p[i] == 0 {
			continue
		}
		w := pr.width(i)
		if t%uint64(16*w) == 0 || held <= w { // afresh
			pr.sum[i] = 0
			for k := range min(w, held) {
				pr.sum[i] += v.At(k)
			}
		} else {
			pr.sum[i] += y - v.At(w)
		}
		if held < w || pr.n < uint64(w) {
			continue
		}
		// The value at the middle of the sum, j = t − p/2, and its trend.
		half := pr.p[i] / 2
		trend := pr.sum[i] / float64(pr.p[i])
		if pr.p[i]%2 == 0 { // the 2×p average: the ends weigh half
			trend = (pr.sum[i] - (v.At(0)+v.At(w-1))/2) / float64(pr.p[i])
		}
		j := t - uint64(half)
		b := pr.bin(i, j)
		c := pr.cnt[i][b]
		if c < 1<<16-1 {
			c++
			pr.cnt[i][b] = c
		}
		per := float64(pr.p[i]) / float64(pr.bins[i]) // values a bin takes per cycle
		gamma := profGamma1
		if i == 1 {
			gamma = profGamma2
		}
		r := max(gamma/per, 1/float64(c))
		pr.s[i][b] += r * (v.At(half) - trend - pr.at(1-i, j) - pr.s[i][b])
	}
	a := y - pr.at(0, t) - pr.at(1, t)
	rate := profAlpha
	if pr.cnt[0] == nil || pr.n <= uint64(pr.width(0)) {
		rate = 1 / float64(pr.n)
	}
	pr.level += rate * (a - pr.level)
}

// ready reports whether the short profile has had a whole cycle.
func (pr *profile) ready() bool {
	return pr.p[0] > 0 && pr.n >= uint64(pr.width(0)+pr.p[0])
}

// path writes ŷ(t+h), h = 1…len(out), into out.
func (pr *profile) path(out []float64) {
	for h := range out {
		t := pr.n + uint64(h)
		out[h] = pr.level + pr.at(0, t) + pr.at(1, t)
	}
}
