package svr

import (
	"errors"
	"fmt"
	"math"
)

// Regressor is an online regressor: it learns one sample at a time and
// predicts the target of a new input.
//
// Implementations never retain x after a call returns, and a call that
// returns an error leaves the model unchanged.
type Regressor interface {
	// Learn updates the model with the sample (x, y).
	Learn(x []float64, y float64) error
	// Predict returns the model's estimate of y for x.
	Predict(x []float64) (float64, error)
	// Dim is the length every input vector must have.
	Dim() int
}

// Forgetter is a Regressor that can unlearn the oldest sample it holds,
// so that it can be kept over a sliding window.
type Forgetter interface {
	Regressor
	// ForgetOldest removes the oldest stored sample from the model, as if
	// it had never been learned. It returns ErrEmpty when there is none.
	ForgetOldest() error
	// Len is the number of samples the model holds.
	Len() int
}

var (
	// ErrBadInput is wrapped by every error about a sample or input vector
	// (wrong length, NaN or Inf).
	ErrBadInput = errors.New("svr: bad input")
	// ErrBadConfig is wrapped by every error about a model's configuration.
	ErrBadConfig = errors.New("svr: bad configuration")
	// ErrEmpty is returned when a sample is to be removed from an empty model.
	ErrEmpty = errors.New("svr: model holds no samples")
	// ErrNotFound is returned for a sample handle the model does not hold.
	ErrNotFound = errors.New("svr: no such sample")
	// ErrNumerical is wrapped by errors of a numerical breakdown. The model
	// that returns it has been restored to its state before the call.
	ErrNumerical = errors.New("svr: numerical failure")
)

// checkVector reports whether x has length dim and only finite values.
func checkVector(x []float64, dim int) error {
	if len(x) != dim {
		return fmt.Errorf("%w: input has length %d, model expects %d", ErrBadInput, len(x), dim)
	}
	for i, v := range x {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("%w: x[%d] is %v", ErrBadInput, i, v)
		}
	}
	return nil
}

// checkSample validates a training sample.
func checkSample(x []float64, y float64, dim int) error {
	if err := checkVector(x, dim); err != nil {
		return err
	}
	if math.IsNaN(y) || math.IsInf(y, 0) {
		return fmt.Errorf("%w: target is %v", ErrBadInput, y)
	}
	return nil
}

// isFinite reports whether v is neither NaN nor ±Inf.
func isFinite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
