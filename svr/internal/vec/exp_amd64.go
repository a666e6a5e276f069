package vec

import "golang.org/x/sys/cpu"

// useVector: the runtime's math.Exp takes its FMA path when the CPU has
// AVX and FMA (math/exp_amd64.go); the vector code repeats that path and
// needs AVX2 too.
var useVector = cpu.X86.HasAVX && cpu.X86.HasAVX2 && cpu.X86.HasFMA

// exp4s computes n (a multiple of 4, > 0) exponentials of x into dst;
// lanes outside ±plainRange are left for the caller.
//
//go:noescape
func exp4s(dst, x *float64, n int)

// sum4s is SumScaled over the first n (a multiple of 4, > 0) values.
//
//go:noescape
func sum4s(dst, base *float64, n int, b float64, a []float64, cols [][]float64)

// sqdists8 is SqDists' vector part over its first n (a multiple of 8,
// > 0) rows, all of them given by at (dist.go).
//
//go:noescape
func sqdists8(dst *float64, n int, x *float64, at *int32, z *float64, d int, tt *float64, ntt int, scale float64)
