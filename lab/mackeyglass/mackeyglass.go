// Package mackeyglass generates the Mackey-Glass chaotic time series, a
// standard benchmark for one-step-ahead forecasting (it is one of the series
// of Ma, Theiler and Perkins 2003, section 5).
//
// How the series is made, so that it can be reproduced elsewhere:
//
//  1. The delay differential equation
//     dx/dt = a·x(t−τ)/(1 + x(t−τ)^10) − b·x(t)
//     with a = 0.2, b = 0.1, τ = 17 (the defaults, see [Config]).
//  2. Constant initial history x(t) = 1.2 for −τ ≤ t ≤ 0.
//  3. Classical 4th-order Runge-Kutta with a fixed step dt = 0.1, so that
//     τ/dt = 170 grid steps. The solution is stored on this fine grid. The
//     delayed value at a grid point is read from the grid; the delayed value
//     at the RK4 half step t+dt/2 − τ, which falls midway between two grid
//     points, is the cubic Hermite interpolant of the stored values and
//     derivatives at those two points, x = (x₀+x₁)/2 + dt·(x′₀−x′₁)/8, which
//     keeps the method 4th-order accurate. Inside the initial history the
//     derivative is 0.
//  4. The grid is sampled every 1 time unit (every 10th step): sample k is
//     x(k) for k = 0, 1, 2, ….
//  5. The first 1000 samples (t = 0 … 999), the transient from the constant
//     history to the attractor, are discarded; Generate returns x(1000),
//     x(1001), ….
//
// The computation uses only float64 additions, multiplications, divisions
// and math.Pow with an integral exponent, in a fixed order: the output is
// deterministic.
package mackeyglass

import (
	"fmt"
	"math"
)

// Config parameterises the series. The zero value gives the standard
// chaotic series described in the package documentation.
type Config struct {
	// A is the production coefficient a; 0 means 0.2.
	A float64
	// B is the decay coefficient b; 0 means 0.1.
	B float64
	// Tau is the delay τ in time units; 0 means 17. Tau/Dt must be a
	// positive integer (within 1e-9).
	Tau float64
	// Dt is the Runge-Kutta step; 0 means 0.1. 1/Dt must be an integer
	// (within 1e-9), so that the series can be sampled every time unit.
	Dt float64
	// Initial is the constant history x(t) for −τ ≤ t ≤ 0; 0 means 1.2.
	Initial float64
	// Transient is the number of leading unit-time samples discarded;
	// 0 means 1000 and a negative value discards none.
	Transient int
}

// withDefaults returns c with its zero fields replaced by the defaults.
func (c Config) withDefaults() Config {
	if c.A == 0 {
		c.A = 0.2
	}
	if c.B == 0 {
		c.B = 0.1
	}
	if c.Tau == 0 {
		c.Tau = 17
	}
	if c.Dt == 0 {
		c.Dt = 0.1
	}
	if c.Initial == 0 {
		c.Initial = 1.2
	}
	switch {
	case c.Transient == 0:
		c.Transient = 1000
	case c.Transient < 0:
		c.Transient = 0
	}
	return c
}

// steps returns v/dt as an integer, or an error if it is not integral.
func steps(name string, v, dt float64) (int, error) {
	r := v / dt
	n := math.Round(r)
	if n < 1 || math.Abs(r-n) > 1e-9 {
		return 0, fmt.Errorf("mackeyglass: %s/Dt = %v/%v is not a positive integer", name, v, dt)
	}
	return int(n), nil
}

// Generate returns n consecutive unit-time samples of the Mackey-Glass
// series made as the package documentation describes, after cfg.Transient
// discarded samples. It panics if n is negative or cfg is invalid (a
// non-integral Tau/Dt or 1/Dt, or a negative A, B, Tau or Dt): both are
// programmer errors.
//
// O((Transient+n)/Dt) time and O((Transient+n)/Dt) memory.
func Generate(n int, cfg Config) []float64 {
	if n < 0 {
		panic(fmt.Sprintf("mackeyglass: negative length %d", n))
	}
	c := cfg.withDefaults()
	if c.A < 0 || c.B < 0 || c.Tau < 0 || c.Dt < 0 {
		panic(fmt.Sprintf("mackeyglass: negative parameter in %+v", cfg))
	}
	d, err := steps("Tau", c.Tau, c.Dt)
	if err != nil {
		panic(err)
	}
	perUnit, err := steps("1", 1, c.Dt)
	if err != nil {
		panic(err)
	}
	total := c.Transient + n
	if total == 0 {
		return []float64{}
	}
	last := (total - 1) * perUnit // last grid step needed

	// Grid index k (0 ≤ k ≤ last) is time k·dt, stored at x[k+d]; the d
	// entries before it are the initial history on −τ ≤ t < 0.
	x := make([]float64, last+1+d)
	dx := make([]float64, last+1+d) // derivative on the grid; 0 in the history
	for i := 0; i <= d; i++ {
		x[i] = c.Initial
	}
	f := func(xt, xd float64) float64 {
		return c.A*xd/(1+math.Pow(xd, 10)) - c.B*xt
	}
	// half returns the delayed value at grid position j+1/2 (storage index).
	half := func(j int) float64 {
		if j+1 <= d { // both ends in the constant history
			return c.Initial
		}
		return (x[j]+x[j+1])/2 + c.Dt*(dx[j]-dx[j+1])/8
	}
	h := c.Dt
	dx[d] = f(x[d], x[0])
	for k := 0; k < last; k++ {
		i := k + d // storage index of time k·dt
		xd0 := x[i-d]
		xdh := half(i - d)
		xd1 := x[i-d+1]
		xi := x[i]
		k1 := f(xi, xd0)
		k2 := f(xi+h/2*k1, xdh)
		k3 := f(xi+h/2*k2, xdh)
		k4 := f(xi+h*k3, xd1)
		x[i+1] = xi + h/6*(k1+2*k2+2*k3+k4)
		dx[i+1] = f(x[i+1], xd1)
	}
	out := make([]float64, n)
	for s := range out {
		out[s] = x[(c.Transient+s)*perUnit+d]
	}
	return out
}
