// Package vexp computes math.Exp over a slice, four values at a time where
// the CPU allows, with the same bits as math.Exp for every input.
//
// An RBF kernel column is one exponential a sample, and computing them
// one call at a time was a quarter of the default model's CPU. No
// library gives a vectorised exponential whose results are math.Exp's to
// the bit, and the model's forecasts must not change with the CPU path
// taken, so this package repeats, lane by lane, the operations of the Go
// runtime's amd64 exponential (math/exp_amd64.s, its FMA path): the same
// constants, the same fused multiply-adds in the same order. Any input
// outside the range where that code takes its plain path (|x| > 700, NaN)
// sends the whole slice to math.Exp. Tests hold every result to math.Exp's
// bits; where the CPU lacks AVX2 and FMA, or on other architectures,
// Exps calls math.Exp for each value.
package vexp

import "math"

// Exps sets dst[i] = math.Exp(x[i]) for every i < len(x), the same bits.
// dst must be at least as long as x; it may be x itself.
func Exps(dst, x []float64) {
	dst = dst[:len(x)]
	n := 0
	if useVector && plain(x) {
		n = len(x) &^ 3
		if n > 0 {
			exp4s(&dst[0], &x[0], n)
		}
	}
	for i := n; i < len(x); i++ {
		dst[i] = math.Exp(x[i])
	}
}

// plain reports whether every x is within ±plainRange (none is NaN).
func plain(x []float64) bool {
	for _, v := range x {
		if !(v >= -plainRange && v <= plainRange) {
			return false
		}
	}
	return true
}

// plainRange bounds the inputs the vector code computes: within it the
// runtime's code takes neither its overflow nor its subnormal branch.
const plainRange = 700
