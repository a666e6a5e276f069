package ahead

import "sync"

// work is one Forecast's scratch: the candidates' paths, the guard's
// members' and the anchors' weights. None of it outlives the call, so the
// Forecasters of a process share a pool of them instead of holding one
// each (6 KB a series at H = 48).
type work struct {
	cand [maxCands][]float64
	top  [nTop][]float64
	zs   []float64
	w    []weights
}

var workPool = sync.Pool{New: func() any { return new(work) }}

// getWork returns a scratch for a horizon h, n candidates and a anchors.
func getWork(h, n, a int) *work {
	wk := workPool.Get().(*work)
	grow := func(b []float64) []float64 {
		if cap(b) < h {
			return make([]float64, h)
		}
		return b[:h]
	}
	for i := range n {
		wk.cand[i] = grow(wk.cand[i])
	}
	for i := range wk.top {
		wk.top[i] = grow(wk.top[i])
	}
	wk.zs = grow(wk.zs)
	if cap(wk.w) < a {
		wk.w = make([]weights, a)
	}
	wk.w = wk.w[:a]
	return wk
}

func (f *Forecaster) putWork() {
	workPool.Put(f.wk)
	f.wk = nil
}
