package vec

// SumScaled sets dst[i] = base[i] + b, then adds a[k]·cols[k][i] for k in
// order: for each i the bits of
//
//	g := base[i] + b
//	for k := range a { g += a[k] * cols[k][i] }
//	dst[i] = g
//
// dst, base and every column must hold at least len(dst) values; dst may
// be base. One pass over dst, not one a column.
func SumScaled(dst, base []float64, b float64, a []float64, cols [][]float64) {
	n := len(dst)
	base = base[:n]
	cols = cols[:len(a)]
	for _, c := range cols {
		_ = c[:n]
	}
	done := 0
	if useVector && n >= 4 {
		done = n &^ 3
		sum4s(&dst[0], &base[0], done, b, a, cols)
	}
	for i := done; i < n; i++ {
		g := base[i] + b
		for k, c := range cols {
			g += a[k] * c[i]
		}
		dst[i] = g
	}
}
