package ahead

import (
	"math"
	"math/rand/v2"
	"testing"
)

// refProfile is the decomposition written out from its equations, the
// moving averages summed afresh at every value.
type refProfile struct {
	p, bins [2]int
	s, c    [2][]float64
	level   float64
	y       []float64
}

func newRef(p1, p2 int) *refProfile {
	r := &refProfile{}
	for i, p := range [2]int{p1, p2} {
		if p > 0 {
			r.p[i], r.bins[i] = p, min(p, maxBins)
			r.s[i], r.c[i] = make([]float64, r.bins[i]), make([]float64, r.bins[i])
		}
	}
	return r
}

func (r *refProfile) bin(i, j int) int { return (j % r.p[i]) * r.bins[i] / r.p[i] }

func (r *refProfile) at(i, j int) float64 {
	if r.p[i] == 0 {
		return 0
	}
	return r.s[i][r.bin(i, j)]
}

// trend is the centred moving average of period p at j: 2×p for even p.
func (r *refProfile) trend(p, j int) float64 {
	if p%2 == 1 {
		var s float64
		for k := j - p/2; k <= j+p/2; k++ {
			s += r.y[k]
		}
		return s / float64(p)
	}
	s := (r.y[j-p/2] + r.y[j+p/2]) / 2
	for k := j - p/2 + 1; k < j+p/2; k++ {
		s += r.y[k]
	}
	return s / float64(p)
}

func (r *refProfile) push(y float64) {
	r.y = append(r.y, y)
	t := len(r.y) - 1
	gammas := [2]float64{profGamma1, profGamma2}
	for i := range r.p {
		p := r.p[i]
		if p == 0 || t < p-p%2 {
			continue
		}
		j := t - p/2
		b := r.bin(i, j)
		r.c[i][b]++
		per := float64(p) / float64(r.bins[i])
		r.s[i][b] += max(gammas[i]/per, 1/r.c[i][b]) * (r.y[j] - r.trend(p, j) - r.at(1-i, j) - r.s[i][b])
	}
	rate := profAlpha
	if len(r.y) <= r.p[0]+1-r.p[0]%2 {
		rate = 1 / float64(len(r.y))
	}
	r.level += rate * (y - r.at(0, t) - r.at(1, t) - r.level)
}

// TestProfileEquations: the profile's paths are those of the equations
// computed with the moving averages summed afresh, over short and long
// periods of both parities and a long period of shared bins.
func TestProfileEquations(t *testing.T) {
	for _, ps := range [][2]int{{4, 12}, {5, 0}, {7, 21}, {24, 168}, {2*maxBins + 10, 0}} {
		pr, ref := newProfile(ps[0], ps[1]), newRef(ps[0], ps[1])
		r := rand.New(rand.NewPCG(uint64(ps[0]), uint64(ps[1])))
		h := &hist{}
		n := 4 * (ps[0] + ps[1])
		for i := range n {
			y := 10 + float64(i%ps[0]) + 0.01*float64(i) + r.NormFloat64()
			if ps[1] > 0 {
				y += 2 * float64((i/ps[0])%(ps[1]/ps[0]))
			}
			h.v = append(h.v, y)
			pr.push(view{raw: h, c: &cleaner{}, t: uint64(i)})
			ref.push(y)
			if i%7 != 0 && i != n-1 {
				continue
			}
			out := make([]float64, 6)
			pr.path(out)
			for k := 1; k <= 6; k++ {
				want := ref.level + ref.at(0, i+k) + ref.at(1, i+k)
				if math.Abs(out[k-1]-want) > 1e-9*(1+math.Abs(want)) {
					t.Fatalf("periods %v, value %d, step %d: %v, the equations give %v", ps, i, k, out[k-1], want)
				}
			}
		}
	}
}

// TestProfileFollowsShape: on a noiseless daily and weekly shape, the
// profile forecasts within 4 (5 % of the shape's swing of 90) after
// three weeks, at every step of two days.
func TestProfileFollowsShape(t *testing.T) {
	pr := newProfile(24, 168)
	h := &hist{}
	n := 24 * 7 * 4
	for i := range n {
		h.v = append(h.v, shape(i))
		pr.push(view{raw: h, c: &cleaner{}, t: uint64(i)})
	}
	out := make([]float64, 48)
	pr.path(out)
	for k := range out {
		if d := math.Abs(out[k] - shape(n+k)); d > 4 {
			t.Errorf("step %d: %.2f, the shape is %.2f", k+1, out[k], shape(n+k))
		}
	}
}
