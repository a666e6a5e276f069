package ahead

import "math"

// score scores the forecast made for the value of count t, y; cands are
// the anchor's slots' candidate forecasts.
func (an *anchor) score(t uint64, y float64, cands []float32, alpha float64) (Scored, bool) {
	if t <= uint64(an.step) {
		return Scored{}, false
	}
	o := t - uint64(an.step)
	if o%uint64(an.every) != 0 {
		return Scored{}, false
	}
	k := int((o / uint64(an.every)) % uint64(len(an.pending)))
	p := &an.pending[k]
	if !p.valid || p.origin != o {
		return Scored{}, false
	}
	p.valid = false
	n := len(cands) / len(an.pending)
	for c, v := range cands[k*n : (k+1)*n] {
		if math.IsNaN(float64(v)) {
			continue
		}
		e := math.Min(math.Abs(y-float64(v))/p.scale, lossClip)
		if an.scored[c] == 0 {
			an.mse[c], an.abs[c] = e*e, e
		} else {
			b := max(an.beta, 1/float64(an.scored[c]+1)) // a running mean first
			an.mse[c] = b*an.mse[c] + (1-b)*e*e
			an.abs[c] = b*an.abs[c] + (1-b)*e
		}
		if an.scored[c] < math.MaxUint32 {
			an.scored[c]++
		}
	}
	for i, v := range p.top {
		an.guard[i] = guardBeta*an.guard[i] + math.Min(math.Abs(y-v)/p.scale, guardLossClip)
	}
	e := math.Min(math.Abs(y-p.comb)/p.scale, residualClip)
	norm := math.NaN()
	if p.unit > 0 {
		norm = e / p.unit
	}
	if p.half >= 0 {
		miss := 0.0
		if e > p.half {
			miss = 1
		}
		an.q = math.Max(0, an.q+intervalRate*(miss-alpha))
	}
	b := max(1-float64(an.every)/maeMemory, 1/float64(an.nErr+1)) // a running mean first
	an.mae = b*an.mae + (1-b)*e
	if an.nErr < math.MaxUint32 {
		an.nErr++
	}
	return Scored{Step: an.step, Label: p.label, Forecast: p.comb, HalfWidth: p.half, Scale: p.scale, norm: norm}, true
}

// weigh sets w to the anchor's weights for the candidates available.
func (an *anchor) weigh(avail *[maxCands]bool, w *weights) {
	// The average: inverse mean squared errors.
	var sw float64
	for c := range w.avg {
		w.avg[c] = 0
		if avail[c] && an.scored[c] >= minScored {
			w.avg[c] = 1 / max(an.mse[c], 1e-12)
			sw += w.avg[c]
		}
	}
	w.hasAvg = normalize(w.avg[:], sw)
	// The selection: relative mean absolute errors.
	lo := math.Inf(1)
	for c := range an.abs {
		if avail[c] && an.scored[c] >= minScored {
			lo = math.Min(lo, an.abs[c])
		}
	}
	sw = 0
	for c := range w.sel {
		w.sel[c] = 0
		if avail[c] && an.scored[c] >= minScored {
			w.sel[c] = math.Exp(-selectEta * (an.abs[c]/max(lo, 1e-12) - 1))
			sw += w.sel[c]
		}
	}
	w.hasSel = normalize(w.sel[:], sw)
}

// guarded returns step h's weighing of the guard's members by their
// losses interpolated between the anchors lo and hi at λ. The losses, not
// the weights, are interpolated: persistence's error is far from linear
// in the step (as small a period ahead as seasonal naive's, large in
// between), and weights that favour it at a period's anchor must not
// spread to the steps around it.
func (f *Forecaster) guarded(h int, lo, hi *anchor, lam float64) float64 {
	var g [nTop]float64
	least := math.Inf(1)
	for k := range g {
		g[k] = (1-lam)*lo.guard[k] + lam*hi.guard[k]
		least = math.Min(least, g[k])
	}
	if !(least > 0) || math.IsInf(least, 0) { // no loss yet: the average
		return f.wk.top[topAverage][h-1]
	}
	var v, sw float64
	for k := range g {
		w := math.Exp(-guardEta * (g[k]/least - 1))
		sw += w
		v += w * f.wk.top[k][h-1]
	}
	return v / sw
}

// weights are an anchor's weights of the candidates in one forecast: the
// average's and the selection's, each only if it has any.
type weights struct {
	avg, sel       [maxCands]float64
	hasAvg, hasSel bool
}

// normalize divides w by its sum sw; false (w left) if sw is not a
// positive finite number.
func normalize(w []float64, sw float64) bool {
	if !(sw > 0) || math.IsInf(sw, 0) {
		return false
	}
	for i := range w {
		w[i] /= sw
	}
	return true
}

// mix returns step h's combination by the weights interpolated between
// two anchors' (lo, hi at λ), or, when either has none, the mean of the
// candidates available (last if none is).
func (f *Forecaster) mix(h int, ok bool, lo, hi *[maxCands]float64, lam, last float64) float64 {
	var v, sw float64
	if ok {
		for c := range f.n {
			if w := (1-lam)*lo[c] + lam*hi[c]; w > 0 {
				v += w * f.wk.cand[c][h-1]
				sw += w
			}
		}
	} else {
		for c := range f.n {
			if f.avail[c] {
				v += f.wk.cand[c][h-1]
				sw++
			}
		}
	}
	if !(sw > 0) || math.IsNaN(v) || math.IsInf(v, 0) {
		return last
	}
	return v / sw
}

// halfWidth returns the anchor's interval half-width in scales, −1
// while too few forecasts were scored.
func (f *Forecaster) halfWidth(an *anchor) float64 {
	if an.nErr < minScored {
		return -1
	}
	return an.q * an.mae
}

// around returns the anchors of step h ≥ 1 and its place between them:
// ih at or above h, il below it (or ih itself), lam = (h − lo)/(hi − lo)
// (0 on an anchor; step 1 takes the first anchor's).
func (f *Forecaster) around(h int) (il, ih int, lam float64) {
	if h < 2 {
		return 0, 0, 0
	}
	ih = int(f.anchorAt[h-2])
	il = ih
	if hi := f.anchors[ih].step; hi != h {
		il = ih - 1
		lo := f.anchors[il].step
		lam = float64(h-lo) / float64(hi-lo)
	}
	return il, ih, lam
}
