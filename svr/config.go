package svr

import (
	"errors"
	"fmt"
	"math"
)

// FieldError is one invalid field of a model's configuration struct
// (AOSVRConfig, SOGSVRConfig, NORMAConfig), named by its Go name: the
// package knows no configuration file, so a caller that has keys maps
// Field to its own (pipeline's model registry does). Every constructor
// reports its configuration's problems as the errors.Join of one
// *FieldError per invalid field, all at once; each wraps ErrBadConfig.
type FieldError struct {
	// Model is the model's name: "aosvr", "sogsvr" or "norma".
	Model string
	// Field is the Go name of the invalid field ("Tau"), or of two
	// fields joined by "·" when their combination is invalid
	// ("Lambda·Eta").
	Field string
	// Problem says what is wrong: "must be at least 1, got 0".
	Problem string
}

func (e *FieldError) Error() string {
	return fmt.Sprintf("%v: %s: %s %s", ErrBadConfig, e.Model, e.Field, e.Problem)
}

// Unwrap returns ErrBadConfig.
func (e *FieldError) Unwrap() error { return ErrBadConfig }

// fieldErrors collects the FieldErrors of one model's configuration.
type fieldErrors struct {
	model string
	errs  []error
}

func (f *fieldErrors) add(field, format string, args ...any) {
	f.errs = append(f.errs, &FieldError{Model: f.model, Field: field, Problem: fmt.Sprintf(format, args...)})
}

// kernel adds a FieldError for an invalid kernel in field.
func (f *fieldErrors) kernel(field string, k Kernel) {
	if err := validKernel(k); err != nil {
		msg := err.Error()
		if p := ErrBadConfig.Error() + ": "; len(msg) > len(p) && msg[:len(p)] == p {
			msg = msg[len(p):]
		}
		f.add(field, "is invalid: %s", msg)
	}
}

func (f *fieldErrors) err() error { return errors.Join(f.errs...) }

// Validate returns nil if NewAOSVR accepts c, or the join of one
// *FieldError per invalid field. O(1).
func (c AOSVRConfig) Validate() error {
	f := fieldErrors{model: "aosvr"}
	if c.Dim < 1 {
		f.add("Dim", "must be at least 1, got %d", c.Dim)
	}
	if c.Kernel != nil {
		f.kernel("Kernel", c.Kernel)
	}
	if !(c.C > 0) || math.IsInf(c.C, 0) {
		f.add("C", "must be positive and finite, got %v", c.C)
	}
	if !(c.Epsilon >= 0) || math.IsInf(c.Epsilon, 0) {
		f.add("Epsilon", "must be ≥ 0 and finite, got %v", c.Epsilon)
	}
	if c.Capacity < 0 {
		f.add("Capacity", "must not be negative, got %d", c.Capacity)
	}
	return f.err()
}

// WithDefaults returns c with its zero fields replaced by the defaults.
func (c SOGSVRConfig) WithDefaults() SOGSVRConfig {
	if c.Kernel == nil {
		c.Kernel = RBF{Gamma: 1}
	}
	if c.Lambda == 0 {
		c.Lambda = SOGDefaultLambda
	}
	if c.Nu == 0 {
		c.Nu = SOGDefaultNu
	}
	if c.C == 0 {
		c.C = SOGDefaultC
	}
	if c.MaxDict == 0 {
		c.MaxDict = SOGDefaultMaxDict
	}
	if c.Forget == 0 {
		c.Forget = SOGDefaultForget
	}
	if c.Steps == 0 {
		c.Steps = SOGDefaultSteps
	}
	return c
}

// Validate returns nil if NewSOGSVR accepts c (its zero fields taking
// their defaults), or the join of one *FieldError per invalid field. O(1):
// it allocates no dictionary.
func (c SOGSVRConfig) Validate() error {
	c = c.WithDefaults()
	f := fieldErrors{model: "sogsvr"}
	if c.Dim < 1 {
		f.add("Dim", "must be at least 1, got %d", c.Dim)
	}
	f.kernel("Kernel", c.Kernel)
	if !(c.Lambda > 0) || math.IsInf(c.Lambda, 0) {
		f.add("Lambda", "must be positive and finite, got %v", c.Lambda)
	}
	if !(c.Nu > 0) || math.IsInf(c.Nu, 0) {
		f.add("Nu", "must be positive and finite, got %v", c.Nu)
	}
	if !(c.Ridge >= 0) || math.IsInf(c.Ridge, 0) {
		f.add("Ridge", "must be ≥ 0 and finite, got %v", c.Ridge)
	}
	if !(c.C > 0) {
		f.add("C", "must be positive, got %v", c.C)
	}
	if !(c.Epsilon >= 0) || math.IsInf(c.Epsilon, 0) {
		f.add("Epsilon", "must be ≥ 0 and finite, got %v", c.Epsilon)
	}
	if c.MaxDict < 1 || c.MaxDict > SOGMaxDictLimit {
		f.add("MaxDict", "must be between 1 and %d, got %d", SOGMaxDictLimit, c.MaxDict)
	}
	if c.OnFull != SOGReplace && c.OnFull != SOGProject {
		f.add("OnFull", "is not a known policy: %v", c.OnFull)
	}
	if !(c.Forget > 0 && c.Forget <= 1) {
		f.add("Forget", "must lie in (0, 1], got %v", c.Forget)
	}
	if c.Steps < 1 || c.Steps > 1000 {
		f.add("Steps", "must be between 1 and 1000, got %d", c.Steps)
	}
	return f.err()
}

// SOGMaxDictLimit is the largest dictionary cap SOGSVRConfig.MaxDict may
// set: every buffer is allocated to the cap up front, O(MaxDict²) memory.
const SOGMaxDictLimit = 1 << 14

// Validate returns nil if NewNORMA accepts c (its zero fields taking their
// defaults), or the join of one *FieldError per invalid field. O(1).
func (c NORMAConfig) Validate() error { return c.WithDefaults().validate() }
