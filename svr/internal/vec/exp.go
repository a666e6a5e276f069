// Package vec holds the vector loops of the AOSVR model's hot path, four
// float64 lanes at a time where the CPU allows, each giving exactly the
// bits of the scalar Go code it replaces: the model's forecasts must not
// change with the CPU path taken.
//
// Exps is math.Exp over a slice. An RBF kernel column is one exponential
// a sample, and computing them one call at a time was a quarter of the
// default model's CPU. No library gives a vectorised exponential whose
// results are math.Exp's to the bit, so Exps repeats, lane by lane, the
// operations of the Go runtime's amd64 exponential (math/exp_amd64.s, its
// FMA path): the same constants, the same fused multiply-adds in the same
// order. A slice holding an input outside the range where that code
// takes its plain path (|x| > 700, NaN) goes to math.Exp whole.
//
// SumScaled is a sum of scaled columns, each element's terms added in the
// order of the scalar loop, without fused multiply-adds (Go does not fuse
// x += a*b on amd64).
//
// Where the CPU lacks AVX2 and FMA, or on other architectures, each
// function runs its scalar loop.
package vec

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
