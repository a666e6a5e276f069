package svr

import (
	"fmt"
	"math"
)

// Kernel is a positive semi-definite kernel function k(a, b).
//
// Implementations are small value types; Eval must not retain or modify its
// arguments, and panics if their lengths differ (a programmer error: models
// check input lengths before they reach a kernel).
type Kernel interface {
	// Eval returns k(a, b).
	Eval(a, b []float64) float64
	// Validate reports a parameter that makes the kernel invalid.
	Validate() error
	// String describes the kernel and its parameters, e.g. "rbf(gamma=1)".
	String() string
}

var (
	_ Kernel = RBF{}
	_ Kernel = Poly{}
	_ Kernel = Linear{}
)

// RBF is the Gaussian radial basis function kernel exp(−γ‖a−b‖²).
type RBF struct {
	// Gamma is γ; it must be positive.
	Gamma float64
}

// Eval returns exp(−γ‖a−b‖²). O(len(a)).
func (k RBF) Eval(a, b []float64) float64 {
	b = b[:len(a)]
	var d float64
	for i, v := range a {
		t := v - b[i]
		d += t * t
	}
	return math.Exp(-k.Gamma * d)
}

// Validate reports a non-positive or non-finite γ.
func (k RBF) Validate() error {
	if !(k.Gamma > 0) || math.IsInf(k.Gamma, 0) {
		return fmt.Errorf("%w: rbf kernel gamma must be positive and finite, got %v", ErrBadConfig, k.Gamma)
	}
	return nil
}

func (k RBF) String() string { return fmt.Sprintf("rbf(gamma=%g)", k.Gamma) }

// Poly is the polynomial kernel (γ⟨a,b⟩ + coef0)^degree.
type Poly struct {
	// Gamma scales the inner product; it must be positive.
	Gamma float64
	// Coef0 is added to the scaled inner product; it must be non-negative
	// for the kernel to be positive semi-definite.
	Coef0 float64
	// Degree is the exponent; it must be at least 1.
	Degree int
}

// Eval returns (γ⟨a,b⟩ + coef0)^degree. O(len(a) + log degree).
func (k Poly) Eval(a, b []float64) float64 {
	b = b[:len(a)]
	var d float64
	for i, v := range a {
		d += v * b[i]
	}
	return powi(k.Gamma*d+k.Coef0, k.Degree)
}

// Validate reports a non-positive γ, a negative coef0 or a degree below 1.
func (k Poly) Validate() error {
	switch {
	case !(k.Gamma > 0) || math.IsInf(k.Gamma, 0):
		return fmt.Errorf("%w: poly kernel gamma must be positive and finite, got %v", ErrBadConfig, k.Gamma)
	case !(k.Coef0 >= 0) || math.IsInf(k.Coef0, 0):
		return fmt.Errorf("%w: poly kernel coef0 must be non-negative and finite, got %v", ErrBadConfig, k.Coef0)
	case k.Degree < 1:
		return fmt.Errorf("%w: poly kernel degree must be at least 1, got %d", ErrBadConfig, k.Degree)
	}
	return nil
}

func (k Poly) String() string {
	return fmt.Sprintf("poly(gamma=%g,coef0=%g,degree=%d)", k.Gamma, k.Coef0, k.Degree)
}

// Linear is the linear kernel ⟨a,b⟩.
type Linear struct{}

// Eval returns ⟨a,b⟩. O(len(a)).
func (Linear) Eval(a, b []float64) float64 {
	b = b[:len(a)]
	var d float64
	for i, v := range a {
		d += v * b[i]
	}
	return d
}

// Validate never fails: the linear kernel has no parameters.
func (Linear) Validate() error { return nil }

func (Linear) String() string { return "linear" }

// powi returns x**n for n ≥ 0 by repeated squaring.
func powi(x float64, n int) float64 {
	r := 1.0
	for n > 0 {
		if n&1 == 1 {
			r *= x
		}
		x *= x
		n >>= 1
	}
	return r
}

// validKernel checks a kernel given in a model configuration.
func validKernel(k Kernel) error {
	if k == nil {
		return fmt.Errorf("%w: no kernel", ErrBadConfig)
	}
	return k.Validate()
}
