package ahead

import "math"

// cleaner keeps one-off outliers out of the seasonal forecasters' view of
// the history, as the robust fits of STL keep them out of its seasonal
// profile (Cleveland et al., "STL: A Seasonal-Trend Decomposition
// Procedure Based on Loess", J. Official Statistics 6, 1990, section 2.3):
// without it a spike or a dip repeats a day and a week later in every
// seasonal path. A value is an outlier when it is more than cleanK mean
// absolute one-step errors from the combination's forecast of it and from
// the values a short and a long period before it (a spike that recurs
// every period is the shape, not an outlier); the view then sees it
// winsorised at cleanK errors from the forecast. A run of outliers on one
// side longer than half the short period is a change of level, not an
// outlier: its corrections are dropped and the view sees it as it was.
//
// Corrections are few: at most maxCorrections are kept, newest last, each
// the index of its value and the amount taken off; the oldest goes when a
// new one needs its place or falls out of the reach of the history.
//
// Cost per value O(1), per lookup O(1) without a correction in reach and
// O(maxCorrections) with; memory O(maxCorrections).
type cleaner struct {
	sigma float64 // mean |one-step error| of the combination
	n     uint32  // errors seen for sigma
	run   int     // outliers in a row, signed by their side
	corr  []correction
}

// correction is one outlier's: the view sees value t as y − d.
type correction struct {
	t uint64
	d float64
}

const (
	cleanK         = 6
	cleanRate      = 0.02
	cleanStart     = 24
	maxCorrections = 32
)

// observe decides on the value of index t, y, forecast as yhat one step
// before, with the values p1 and p2 before it (raw) where the history
// holds them (NaN where not); reach is how far back the view is read.
func (c *cleaner) observe(t uint64, y, yhat, back1, back2 float64, p1 int, reach int) {
	// Corrections beyond reach are of no more use.
	for len(c.corr) > 0 && c.corr[0].t+uint64(reach) < t {
		c.corr = c.corr[1:]
	}
	r := y - yhat
	if math.IsNaN(r) || math.IsInf(r, 0) {
		return
	}
	lim := cleanK * c.sigma
	out := c.n >= cleanStart && c.sigma > 0 && math.Abs(r) > lim &&
		!(math.Abs(y-back1) <= lim) && !(math.Abs(y-back2) <= lim)
	if out {
		side := 1
		if r < 0 {
			side = -1
		}
		if c.run*side < 0 {
			c.run = 0
		}
		c.run += side
		if abs(c.run) > max(1, p1/2) { // a new level: keep it as it is
			c.dropRun(t, abs(c.run)-1)
			out = false
		}
	} else {
		c.run = 0
	}
	if out {
		w := yhat + math.Copysign(lim, r)
		if len(c.corr) == maxCorrections {
			copy(c.corr, c.corr[1:])
			c.corr = c.corr[:maxCorrections-1]
		}
		c.corr = append(c.corr, correction{t: t, d: y - w})
		r = math.Copysign(lim, r)
	}
	e := math.Abs(r)
	if c.n < cleanStart {
		c.n++
		c.sigma += (e - c.sigma) / float64(c.n)
	} else {
		c.sigma += cleanRate * (math.Min(e, lim) - c.sigma)
	}
}

// dropRun forgets the corrections of the k values before t.
func (c *cleaner) dropRun(t uint64, k int) {
	for len(c.corr) > 0 && c.corr[len(c.corr)-1].t+uint64(k) >= t {
		c.corr = c.corr[:len(c.corr)-1]
	}
}

// delta returns the amount the view takes off the value of index t.
func (c *cleaner) delta(t uint64) float64 {
	if len(c.corr) == 0 || t < c.corr[0].t || t > c.corr[len(c.corr)-1].t {
		return 0
	}
	for i := len(c.corr) - 1; i >= 0; i-- {
		if c.corr[i].t == t {
			return c.corr[i].d
		}
		if c.corr[i].t < t {
			break
		}
	}
	return 0
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// view is a History with the cleaner's corrections: what the seasonal
// forecasters see.
type view struct {
	raw History
	c   *cleaner
	t   uint64 // the index of raw.At(0)
}

func (v view) At(k int) float64 { return v.raw.At(k) - v.c.delta(v.t-uint64(k)) }
func (v view) Held() int        { return v.raw.Held() }
