//go:build !amd64

package vec

const useVector = false

func exp4s(dst, x *float64, n int) { panic("vec: no vector code") }

func sum4s(dst, base *float64, n int, b float64, a []float64, cols [][]float64) {
	panic("vec: no vector code")
}

func sqdists8(dst *float64, n int, x *float64, at *int32, z *float64, d int, tt *float64, ntt int, scale float64) {
	panic("vec: no vector code")
}
