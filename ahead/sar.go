package ahead

import (
	"math"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/lapack/lapack64"
)

// sar is an autoregression on seasonal differences, the regression form
// of a seasonal ARIMA(p, 0, 0)(P, 1, 0) model (Box, Jenkins, Reinsel and
// Ljung, "Time Series Analysis", 5th ed., 2015, chapter 9):
//
//	z(t) = y(t) − y(t−d)
//	z(t) = c + Σ_l φ_l·z(t−l) + e(t)    for l in lags
//
// with d a seasonal period (or 1), lags the short lags 1…p and longer
// seasonal ones. A fit starts once the history reaches its longest lag
// (fitted on fewer lags, a seasonal autoregression forecast worse than
// without it on the short NAB streams). The coefficients are fitted by exponentially weighted
// ridge least squares over the samples seen: A = Σ λ^(t−s)·x·xᵀ and
// b = Σ λ^(t−s)·x·z are kept and w solves (A + ρ·I)·w = b, so that a
// series whose dynamics drift is followed with a memory of 1/(1−λ)
// samples. The forecast h steps ahead is recursive: z of the steps
// between the origin and t+h are the forecasts' own, and
// ŷ(t+h) = ŷ(t+h−d) + ẑ(t+h), so that far ahead the path repeats the
// last period plus the level the differences carry, as seasonal naive
// does with a drift.
//
// Each ẑ is clipped to ±zClip mean |z| so that a fit that happens to be
// explosive cannot leave the series' range within the horizon.
//
// Cost per sample O(k²) (k = 1 + len(lags)); per forecast O(k³) for the
// solve and O(H·k) for the path; memory O(k²). No allocation once made.
type sar struct {
	d    int
	lags []int
	k    int
	a    []float64 // k×k, row-major, symmetric
	b    []float64 // k
	x    []float64 // scratch: one sample's features
	w    []float64 // the coefficients of the last solve
	// zabs is the exponentially weighted mean |z|, the clip's unit.
	zabs float64
	// n counts the samples learned.
	n int

	// reg is the solve's workspace, A + ρ·I and then its Cholesky factor
	// (LAPACK's dpotrf and dpotrs through lapack64, which work in place;
	// mat.Cholesky would also estimate the condition number, with
	// workspace that allocates on every call).
	reg []float64
}

// sarForget is λ, the weight of a sample one sample older: a memory of
// 1/(1−λ) = 1 000 samples, six weeks of hours.
const sarForget = 1 - 1.0/1000

// sarRidge is ρ relative to the mean diagonal of A: enough to keep the
// solve defined on a flat stretch, too little to bias a fit on a few
// hundred samples.
const sarRidge = 1e-3

// zClip bounds a forecast difference in mean |z|, averaged at the rate
// zRate (a memory of 50 samples).
const (
	zClip = 6
	zRate = 0.02
)

// sarMinSamples is the samples a fit needs before it forecasts: a few
// per coefficient.
const sarMinSamples = 48

// newSAR returns the autoregression on differences at d with the short
// lags 1…p and the seasonal lags long.
func newSAR(d, p int, long ...int) *sar {
	lags := make([]int, 0, p+len(long))
	for l := 1; l <= p; l++ {
		lags = append(lags, l)
	}
	lags = append(lags, long...)
	k := 1 + len(lags)
	return &sar{d: d, lags: lags, k: k,
		a: make([]float64, k*k), b: make([]float64, k), x: make([]float64, k), w: make([]float64, k),
		reg: make([]float64, k*k)}
}

// span is how far back a sample reaches: z(t−l) for the longest lag l
// needs y(t−l−d).
func (s *sar) span() int {
	m := 0
	for _, l := range s.lags {
		m = max(m, l)
	}
	return m + s.d
}

// z returns z(t−k) from the history, 0 beyond it.
func (s *sar) z(hist view, k int) float64 {
	if k+s.d >= hist.Held() {
		return 0
	}
	return hist.At(k) - hist.At(k+s.d)
}

// learn adds the sample that ends at the newest value of hist, if the
// history reaches back far enough.
func (s *sar) learn(hist view) {
	if hist.Held() <= s.span() {
		return
	}
	z := s.z(hist, 0)
	s.x[0] = 1
	for i, l := range s.lags {
		s.x[i+1] = s.z(hist, l)
	}
	if s.n == 0 {
		s.zabs = math.Abs(z)
	} else {
		s.zabs += zRate * (math.Abs(z) - s.zabs)
	}
	k := s.k
	for i := range k {
		xi := s.x[i]
		row := s.a[i*k : i*k+k]
		for j := range k {
			row[j] = sarForget*row[j] + xi*s.x[j]
		}
		s.b[i] = sarForget*s.b[i] + xi*z
	}
	s.n++
}

// ready reports whether the fit forecasts.
func (s *sar) ready(hist view) bool {
	return s.n >= sarMinSamples && hist.Held() > s.span()
}

// solve fits w; false if the system is not positive definite or the fit
// is not finite.
func (s *sar) solve() bool {
	k := s.k
	tr := 0.0
	for i := range k {
		tr += s.a[i*k+i]
	}
	rho := sarRidge*tr/float64(k) + 1e-12
	copy(s.reg, s.a)
	for i := range k {
		s.reg[i*k+i] += rho
	}
	t, ok := lapack64.Potrf(blas64.Symmetric{Uplo: blas.Upper, N: k, Stride: k, Data: s.reg})
	if !ok {
		return false
	}
	copy(s.w, s.b)
	lapack64.Potrs(t, blas64.General{Rows: k, Cols: 1, Stride: 1, Data: s.w})
	for _, w := range s.w {
		if math.IsNaN(w) || math.IsInf(w, 0) {
			clear(s.w)
			return false
		}
	}
	return true
}

// path writes the forecasts of steps 1…len(out) into out. zs is scratch
// of len(out).
func (s *sar) path(hist view, out, zs []float64) {
	if !s.solve() {
		clear(s.w)
	}
	lim := zClip * s.zabs
	for h := 1; h <= len(out); h++ {
		z := s.w[0]
		for i, l := range s.lags {
			j := h - l // the step whose z is the lag: > 0 a forecast
			if j > 0 {
				z += s.w[i+1] * zs[j-1]
			} else {
				z += s.w[i+1] * s.z(hist, -j)
			}
		}
		z = math.Max(-lim, math.Min(lim, z))
		zs[h-1] = z
		j := h - s.d
		base := 0.0
		if j > 0 {
			base = out[j-1]
		} else {
			base = hist.At(-j)
		}
		out[h-1] = base + z
	}
}
