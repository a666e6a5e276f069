package ahead

import (
	"math"
	"slices"
)

// residuals is a rolling window of normalised absolute errors, kept
// sorted, with each one's arrival number so that the oldest is found.
type residuals struct {
	sorted []float64
	seq    []uint32
	next   uint32
	size   int
}

func newResiduals(size int) *residuals {
	return &residuals{size: size, sorted: make([]float64, 0, min(size, 8)), seq: make([]uint32, 0, min(size, 8))}
}

func (r *residuals) reset() { r.sorted, r.seq, r.next = r.sorted[:0], r.seq[:0], 0 }

func (r *residuals) len() int { return len(r.sorted) }

// add adds x, dropping the oldest when full. O(size).
func (r *residuals) add(x float64) {
	if math.IsNaN(x) {
		return
	}
	if len(r.sorted) == r.size {
		oldest, at := r.next-uint32(r.size), -1
		for i, s := range r.seq {
			if s == oldest {
				at = i
				break
			}
		}
		if at < 0 { // cannot happen: the window holds the last size arrivals
			at = 0
		}
		r.sorted = slices.Delete(r.sorted, at, at+1)
		r.seq = slices.Delete(r.seq, at, at+1)
	}
	i, _ := slices.BinarySearch(r.sorted, x)
	r.sorted = slices.Insert(r.sorted, i, x)
	r.seq = slices.Insert(r.seq, i, r.next)
	r.next++
}
