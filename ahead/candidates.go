package ahead

// candidates fills the scratch's paths and f.avail for the newest value.
func (f *Forecaster) candidates(hist view, last float64) {
	held := hist.Held()
	naive := func(c Candidate, p int) {
		out := f.wk.cand[c]
		f.avail[c] = false
		switch {
		case p == 0 && c == Naive1:
			for h := range out {
				out[h] = last
			}
		case p > 0 && held >= p:
			for h := 1; h <= f.h; h++ {
				out[h-1] = hist.At(p*((h+p-1)/p) - h)
			}
		default:
			return
		}
		f.avail[c] = true
	}
	naive(Naive1, f.p1)
	naive(Naive2, f.p2)
	f.avail[Median1] = f.p1 > 0 && held >= f.p1
	if f.avail[Median1] {
		var buf [medianCycles]float64
		p := f.p1
		for h := 1; h <= f.h; h++ {
			j := p*((h+p-1)/p) - h // the newest value at step h's phase
			m := medianCycles
			for m > 1 && j+(m-1)*p >= held {
				m--
			}
			if m%2 == 0 {
				m--
			}
			v := buf[:m]
			for r := range v {
				v[r] = hist.At(j + r*p)
			}
			f.wk.cand[Median1][h-1] = median(v)
		}
	}
	for i, ar := range f.ars {
		c := Drift + Candidate(i)
		f.avail[c] = ar != nil && ar.ready(hist)
		if f.avail[c] {
			ar.path(hist, f.wk.cand[c], f.wk.zs)
		}
	}
	f.avail[Profile] = f.prof != nil && f.prof.ready()
	if f.avail[Profile] {
		f.prof.path(f.wk.cand[Profile])
	}
	f.avail[Robust] = held >= 1
	if f.avail[Robust] {
		var buf [robustPoints]float64
		m := min(robustPoints, held)
		if m%2 == 0 {
			m--
		}
		v := buf[:m]
		for r := range v {
			v[r] = hist.raw.At(r)
		}
		r := median(v)
		for h := range f.wk.cand[Robust] {
			f.wk.cand[Robust][h] = r
		}
	}
}

// median sorts v (odd length, a few values) in place and returns its
// middle value. Insertion sort: no allocation.
func median(v []float64) float64 {
	for r := 1; r < len(v); r++ {
		x, i := v[r], r
		for ; i > 0 && x < v[i-1]; i-- {
			v[i] = v[i-1]
		}
		v[i] = x
	}
	return v[len(v)/2]
}
