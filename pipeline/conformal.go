package pipeline

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"unsafe"
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
// Storage: the window's residuals once, ascending (8 B each), with each
// one's arrival number modulo 2¹⁶ (2 B; 2³² for windows over 2¹⁶), by
// which the oldest is found when the window is full, both in one
// allocation (a full window of 200 takes 2 000 B, a 2 048 B size class,
// where two would take 1 792 and 416); it grows by doubling up to the
// window, so that a young series holds what it has seen. add
// costs O(n) (a scan for the oldest, a sorted delete and insert), quantile
// O(1). Neither allocates once the window is full.
type conformal struct {
	sorted   []float64 // the last n residuals, ascending
	seq16    []uint16  // arrival numbers of sorted's entries, window ≤ 2¹⁶
	seq32    []uint32  // the same, window > 2¹⁶ (wide; seq16 unused)
	wide     bool      // window > 2¹⁶
	next     uint32    // arrival number of the next residual
	window   int       // n at most
	coverage float64   // nominal, 1 − α
	alpha    float64   // α_t, the adapted miscoverage level
	rate     float64   // γ
}

// conformalStart is the residuals a calibration window has room for at
// first; it doubles up to the window.
const conformalStart = 8

func newConformal(window int, coverage, rate float64) *conformal {
	return newConformalSeq(window, coverage, rate, window > 1<<16)
}

// newConformalSeq is newConformal with 32-bit arrival numbers if wide (the
// tests exercise both on small windows).
func newConformalSeq(window int, coverage, rate float64, wide bool) *conformal {
	c := &conformal{window: window, wide: wide, coverage: coverage, alpha: 1 - coverage, rate: rate}
	c.reserve(min(window, conformalStart))
	return c
}

// reserve makes room for k ≥ 1 residuals: sorted has capacity k, and its
// arrival numbers (capacity k too) lie after it in the same buffer, so that
// neither can grow into the other.
func (c *conformal) reserve(k int) {
	if k <= cap(c.sorted) {
		return
	}
	size := 2 // bytes of an arrival number
	if c.wide {
		size = 4
	}
	buf := make([]float64, k+(k*size+7)/8)
	n := copy(buf, c.sorted)
	c.sorted = buf[:n:k]
	tail := unsafe.Pointer(&buf[k]) // 8-byte aligned
	if c.wide {
		seq := unsafe.Slice((*uint32)(tail), k)
		c.seq32 = seq[:copy(seq, c.seq32)]
	} else {
		seq := unsafe.Slice((*uint16)(tail), k)
		c.seq16 = seq[:copy(seq, c.seq16)]
	}
}

// reset forgets every residual and the level's adaptation, keeping the
// room made for them.
func (c *conformal) reset() {
	c.sorted, c.seq16, c.seq32 = c.sorted[:0], c.seq16[:0], c.seq32[:0]
	c.alpha = 1 - c.coverage
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
	n := len(c.sorted)
	if n == c.window {
		c.replaceOldest(r)
		return
	}
	if n == cap(c.sorted) {
		c.reserve(min(2*n, c.window))
	}
	i, _ := slices.BinarySearch(c.sorted, r)
	c.sorted = slices.Insert(c.sorted, i, r)
	if c.wide {
		c.seq32 = slices.Insert(c.seq32, i, c.next)
	} else {
		c.seq16 = slices.Insert(c.seq16, i, uint16(c.next))
	}
	c.next++
}

// oldest returns the index in sorted of the residual that arrived first.
// O(n).
func (c *conformal) oldest() int {
	first := c.next - uint32(len(c.sorted))
	if c.wide {
		return slices.Index(c.seq32, first)
	}
	return slices.Index(c.seq16, uint16(first))
}

// replaceOldest puts r in the place of the oldest residual of a full
// window: the entries between the two places move by one, in one copy.
func (c *conformal) replaceOldest(r float64) {
	j := c.oldest()
	i, _ := slices.BinarySearch(c.sorted, r) // r's place with j still there
	if i > j {
		i-- // its place once j is gone
	}
	shift(c.sorted, i, j)
	c.sorted[i] = r
	if c.wide {
		shift(c.seq32, i, j)
		c.seq32[i] = c.next
	} else {
		shift(c.seq16, i, j)
		c.seq16[i] = uint16(c.next)
	}
	c.next++
}

// shift moves s[j]'s neighbours toward it by one so that s[i] is free:
// s[j:i] ← s[j+1:i+1] when i > j, s[i+1:j+1] ← s[i:j] when i < j.
func shift[T any](s []T, i, j int) {
	if i > j {
		copy(s[j:i], s[j+1:i+1])
	} else {
		copy(s[i+1:j+1], s[i:j])
	}
}

// residuals returns the window's residuals, oldest first. O(n).
func (c *conformal) residuals() []float64 {
	n := len(c.sorted)
	out := make([]float64, n)
	first := c.next - uint32(n)
	for i, r := range c.sorted {
		var age uint32
		if c.wide {
			age = c.seq32[i] - first
		} else {
			age = uint32(c.seq16[i] - uint16(first))
		}
		out[age] = r
	}
	return out
}

// restore replaces the calibration window with the residuals rs, oldest
// first, and the level with alpha.
func (c *conformal) restore(rs []float64, alpha float64) error {
	if len(rs) > c.window {
		return fmt.Errorf("%w: %d residuals for an interval window of %d", ErrBadState, len(rs), c.window)
	}
	for i, r := range rs {
		if !(r >= 0) || math.IsInf(r, 0) {
			return fmt.Errorf("%w: residual %d is %v", ErrBadState, i, r)
		}
	}
	if !isFinite(alpha) {
		return fmt.Errorf("%w: interval level α is %v", ErrBadState, alpha)
	}
	order := make([]int, len(rs))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(rs[a], rs[b]) })
	c.reserve(max(len(rs), min(c.window, conformalStart)))
	c.sorted, c.seq16, c.seq32 = c.sorted[:0], c.seq16[:0], c.seq32[:0]
	for _, i := range order {
		c.sorted = append(c.sorted, rs[i])
		if c.wide {
			c.seq32 = append(c.seq32, uint32(i))
		} else {
			c.seq16 = append(c.seq16, uint16(i))
		}
	}
	c.next = uint32(len(rs))
	c.alpha = alpha
	return nil
}

// quantile returns the half-width q of the next interval: the
// ⌈(n+1)(1 − α_t)⌉-th smallest residual, clipped to [1, n]. It returns false
// while the window holds too few residuals for the nominal coverage
// (⌈(n+1)·coverage⌉ > n: 9 residuals at 90 %).
func (c *conformal) quantile() (float64, bool) {
	n := len(c.sorted)
	if int(math.Ceil(float64(n+1)*c.coverage-1e-9)) > n {
		return 0, false
	}
	k := int(math.Ceil(float64(n+1)*(1-c.alpha) - 1e-9))
	k = max(1, min(k, n))
	return c.sorted[k-1], true
}
