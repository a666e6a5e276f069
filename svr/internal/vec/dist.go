package vec

// rowsInOrder are the row numbers 0, 1, … for SqDists without at.
var rowsInOrder = func() (a [1024]int32) {
	for i := range a {
		a[i] = int32(i)
	}
	return a
}()

// SqDists sets dst[j] = g·s_j, where s_j sums, from 0 and in this order,
// (x_rk − z_k)² for k < len(z) (a subtraction, a multiplication and an
// addition, each rounded) and then tt_k for k < len(tt), over the row r
// = at[j] (j when at is nil) of x, whose rows are len(z) long: for each
// j the bits of
//
//	r := x[at[j]*len(z):][:len(z)]
//	var s float64
//	for k := range z { t := r[k] - z[k]; s += t * t }
//	for _, v := range tt { s += v }
//	dst[j] = g * s
//
// at, when not nil, holds len(dst) rows of x.
func SqDists(dst, x []float64, at []int32, z, tt []float64, g float64) {
	n, d := len(dst), len(z)
	if at != nil {
		at = at[:n]
	}
	done := 0
	if useVector && n >= 8 && d > 0 && (at != nil || n <= len(rowsInOrder)) {
		rows := at
		if rows == nil {
			rows = rowsInOrder[:n]
		}
		done = n &^ 7
		first, last := rows[0], rows[0]
		for _, r := range rows[:done] {
			first, last = min(first, r), max(last, r)
		}
		// Every row the vector code reads is in x: it panics as the
		// scalar loop would, rather than read outside.
		_, _ = x[int(first)*d], x[int(last)*d+d-1]
		var ttp *float64
		if len(tt) > 0 {
			ttp = &tt[0]
		}
		sqdists8(&dst[0], done, &x[0], &rows[0], &z[0], d, ttp, len(tt), g)
	}
	for j := done; j < n; j++ {
		i := j
		if at != nil {
			i = int(at[j])
		}
		r := x[i*d : i*d+d]
		var s float64
		for k, v := range z {
			t := r[k] - v
			s += t * t
		}
		for _, v := range tt {
			s += v
		}
		dst[j] = g * s
	}
}
