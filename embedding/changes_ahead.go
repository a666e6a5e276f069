package embedding

// InputAhead writes into x (length Len()) the input vector the Changes
// would make if the values ahead[0], …, ahead[k−1] (forecasts of x(t+1),
// …, x(t+k)) had been pushed after the newest value x(t), without changing
// the receiver: the recursive multi-step strategy (Taieb et al., "A review
// and comparison of strategies for multi-step ahead time series forecasting
// based on the NN5 forecasting competition", Expert Systems with
// Applications 39, 2012, section 2.1), where a one-step model's forecasts
// are fed back as its inputs. With k = 0 it is [Changes.Input].
//
// The scale stays s(t): a forecast carries no news of variability, and the
// targets of a recursion must share the unit of the model that made them.
// The levels move toward the forecast values as Push would move them (their
// steps winsorised at the scale each push would make); the
// lagged and seasonal entries read the forecasts where they reach past
// x(t), the history before. It must be Ready, and every ahead value
// finite. O(Len() + k·len(LevelRates)) time, no allocation.
func (c *Changes) InputAhead(x []float64, ahead []float64) {
	var a Ahead
	a.levels = x[c.spec.Dim : c.spec.Dim+len(c.spec.LevelRates)] // x holds them until they become inputs
	c.ResetAhead(&a)
	c.inputAhead(x, ahead, &a)
}

// Ahead is the state of a recursion's levels and scale after the values
// ahead fed so far: InputAheadFrom carries it from one step of a path to
// the next, so that a path of H steps costs O(H) level updates instead of
// O(H²). Its zero value is ready for ResetAhead.
type Ahead struct {
	levels []float64
	sc     scaleState
	prev   float64
	k      int // ahead values applied
}

// ResetAhead starts a at the newest value, for a new path. It allocates
// the levels the first time only.
func (c *Changes) ResetAhead(a *Ahead) {
	if len(a.levels) != len(c.levels) {
		a.levels = make([]float64, len(c.levels))
	}
	copy(a.levels, c.levels)
	a.sc, a.prev, a.k = scaleState{c.scale, c.nScale, c.sumAbs}, c.at(0), 0
}

// InputAheadFrom is InputAhead for the steps of one path in turn: a was
// reset (ResetAhead) at the path's origin and has been given prefixes of
// the same ahead values since; it writes exactly what InputAhead writes,
// applying only the values not yet applied. O(Len() + new values ×
// len(LevelRates)), no allocation.
func (c *Changes) InputAheadFrom(x []float64, ahead []float64, a *Ahead) {
	if len(ahead) == 0 {
		c.Input(x)
		return
	}
	c.inputAhead(x, ahead, a)
}

func (c *Changes) inputAhead(x []float64, ahead []float64, a *Ahead) {
	k := len(ahead)
	if k == 0 {
		c.Input(x)
		return
	}
	// v returns the value j steps before x(t+k).
	v := func(j int) float64 {
		if j < k {
			return ahead[k-1-j]
		}
		return c.at(j - k)
	}
	s := c.Scale()
	clip := c.spec.Clip
	f := func(d float64) float64 { return max(-clip, min(clip, d/s)) }
	// The levels move as Push moves them: their steps winsorised at the
	// scale each push would make (the inputs' unit stays s(t)); the scale
	// is stepped once per ahead value for all of them.
	for _, y := range ahead[a.k:] {
		a.sc, a.prev = a.sc.next(y, a.prev, c.spec.ScaleRate), y
		for j, r := range c.spec.LevelRates {
			a.levels[j] = nextLevel(a.levels[j], y, r, a.sc.scale, false)
		}
	}
	a.k = k
	now := ahead[k-1]
	i := 0
	for j := range c.spec.Dim {
		if j+1-k >= c.held { // past the history kept (k > ring): no change
			x[i] = 0
		} else {
			x[i] = f(v(j) - v(j+1))
		}
		i++
	}
	for j, l := range a.levels {
		x[i+j] = f(now - l)
	}
	i += len(a.levels)
	for j := range c.spec.Seasons {
		x[i], x[i+1] = 0, 0
		if p := c.period(j); p > 0 && p-k < c.held { // x(t+k−P) is known or forecast
			x[i] = f(v(p-1) - now)
			x[i+1] = f(v(p-1) - v(p))
		}
		i += 2
	}
}

// SeasonalAhead returns the seasonal naive forecast of x(t+h), h ≥ 1, for
// the k-th seasonal period P: the last value at the same phase,
// x(t+h−P·⌈h/P⌉), and whether the history reaches back that far. With
// h = 1 it is [Changes.Seasonal]. O(1).
func (c *Changes) SeasonalAhead(k, h int) (float64, bool) {
	p := c.period(k)
	if p == 0 {
		return 0, false
	}
	j := p*((h+p-1)/p) - h // steps before x(t)
	if j >= c.held {
		return 0, false
	}
	return c.at(j), true
}

// SeasonalCycles is the number of past cycles whose values at the same
// phase SeasonalMedianAhead takes the median of, when the history holds
// them: a week of daily cycles.
const SeasonalCycles = 7

// SeasonalMedianAhead returns a seasonal forecast of x(t+h), h ≥ 1, for
// the k-th seasonal period P that no single unusual cycle can move: the
// median of the last m values at the same phase, x(t+h−r·P) for
// r = ⌈h/P⌉ … ⌈h/P⌉+m−1, m the largest odd number ≤ [SeasonalCycles]
// whose values the history holds (1: SeasonalAhead's value), and whether
// the history reaches back one cycle. With a week of history, a daily
// period has 7 and a weekly one 1. O(SeasonalCycles²), no allocation.
func (c *Changes) SeasonalMedianAhead(k, h int) (float64, bool) {
	p := c.period(k)
	if p == 0 {
		return 0, false
	}
	j := p*((h+p-1)/p) - h // steps before x(t) of the newest value at x(t+h)'s phase
	if j >= c.held {
		return 0, false
	}
	m := SeasonalCycles | 1
	for m > 1 && j+(m-1)*p >= c.held {
		m -= 2
	}
	var buf [SeasonalCycles | 1]float64
	v := buf[:m]
	for r := range v {
		v[r] = c.at(j + r*p)
	}
	return median(v), true
}
