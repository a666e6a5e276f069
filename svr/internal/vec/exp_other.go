//go:build !amd64

package vec

const useVector = false

func exp4s(dst, x *float64, n int) { panic("vec: no vector code") }

func sum4s(dst, base *float64, n int, b float64, a []float64, cols [][]float64) {
	panic("vec: no vector code")
}
