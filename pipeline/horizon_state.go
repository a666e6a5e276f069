package pipeline

import (
	"fmt"
	"math"
	"slices"
)

// HorizonState is the state of the steps 2…H of a series forecasting H > 1
// points ahead (SeriesState.Horizon): each step's interval calibration and
// combination, and the forecasts of the last H points still waiting for
// their actuals.
type HorizonState struct {
	// Steps are steps 2…H, at index h−2.
	Steps []HorizonStep
	// Pending are the forecasts of the last H points, oldest first (the
	// last is the newest point's, whose steps are the pending forecast's
	// path).
	Pending []HorizonSlot
}

// HorizonStep is one step's calibration: the residuals (in running
// scales) of its last forecasts, oldest first, and its level α_t; and, with
// Config.Combine, its combination's and guard's state.
type HorizonStep struct {
	Residuals      []float64
	Alpha          float64
	Combine, Guard *CombinerState
}

// HorizonSlot is what one point forecast for its steps 2…H: the running
// scale and its value (scaled) at the time, per step h ≥ 2 the forecasters'
// values (N per step, at Candidates[(h−2)·N:]), the combination before the
// guard, the forecast (scaled) and the interval's half-width (−1: none), and
// the published steps 1…H. Valid is false for a point that forecast
// nothing (the other fields are then empty).
type HorizonSlot struct {
	Valid        bool
	Scale, Value float64
	Candidates   []float64
	Combined     []float64
	Forecasts    []float64
	HalfWidths   []float64
	Steps        []Step
}

// state returns a deep copy of z's state.
func (z *horizon) state() *HorizonState {
	st := &HorizonState{Steps: make([]HorizonStep, z.h-1), Pending: make([]HorizonSlot, z.h)}
	for h := 2; h <= z.h; h++ {
		c := z.conf[h-1]
		hs := HorizonStep{Residuals: c.residuals(), Alpha: c.alpha}
		if z.n > 0 {
			hs.Combine, hs.Guard = z.comb[h-1].state(), z.guard[h-1].state()
		}
		st.Steps[h-2] = hs
	}
	for i := range z.h {
		sl := &z.slots[(z.pos+1+i)%z.h] // oldest first
		if !sl.valid {
			continue
		}
		st.Pending[i] = HorizonSlot{Valid: true, Scale: sl.scale, Value: sl.v,
			Candidates: slices.Clone(sl.cand), Combined: slices.Clone(sl.comb), Forecasts: slices.Clone(sl.yhat),
			HalfWidths: slices.Clone(sl.half), Steps: slices.Clone(sl.steps)}
	}
	return st
}

// restore sets z's state from st, checking that it fits.
func (z *horizon) restore(st *HorizonState) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: horizon: "+format, append([]any{ErrBadState}, args...)...)
	}
	if len(st.Steps) != z.h-1 || len(st.Pending) != z.h {
		return bad("%d steps and %d pending points for a horizon of %d", len(st.Steps), len(st.Pending), z.h)
	}
	for k, hs := range st.Steps {
		if (hs.Combine != nil) != (z.n > 0) || (hs.Guard != nil) != (z.n > 0) {
			return bad("step %d: combination state present %v, combine %v", k+2, hs.Combine != nil, z.n > 0)
		}
	}
	for i, sl := range st.Pending {
		if !sl.Valid {
			continue
		}
		if !(sl.Scale > 0) || math.IsInf(sl.Scale, 0) || !isFinite(sl.Value) {
			return bad("pending point %d: scale %v, value %v", i, sl.Scale, sl.Value)
		}
		if len(sl.Candidates) != (z.h-1)*z.n || len(sl.Combined) != z.h-1 || len(sl.Forecasts) != z.h-1 || len(sl.HalfWidths) != z.h-1 || len(sl.Steps) != z.h {
			return bad("pending point %d: %d forecasters' values, %d combined, %d forecasts, %d half-widths, %d steps for a horizon of %d with %d forecasters",
				i, len(sl.Candidates), len(sl.Combined), len(sl.Forecasts), len(sl.HalfWidths), len(sl.Steps), z.h, z.n)
		}
		for k := range z.h - 1 {
			if !isFinite(sl.Forecasts[k]) || !isFinite(sl.Combined[k]) || !(sl.HalfWidths[k] >= -1) || math.IsInf(sl.HalfWidths[k], 0) {
				return bad("pending point %d step %d: forecast %v, combined %v, half-width %v", i, k+2, sl.Forecasts[k], sl.Combined[k], sl.HalfWidths[k])
			}
		}
		for k, v := range sl.Candidates {
			if !isFinite(v) {
				return bad("pending point %d: forecaster value %d is %v", i, k, v)
			}
		}
		for k, s := range sl.Steps {
			if s.Horizon != k+1 {
				return bad("pending point %d: step %d has horizon %d", i, k+1, s.Horizon)
			}
		}
	}
	// Checked: now set, so that a bad state leaves nothing half-restored
	// that matters (the series is discarded on error anyway).
	for k, hs := range st.Steps {
		if err := z.conf[k+1].restore(hs.Residuals, hs.Alpha); err != nil {
			return fmt.Errorf("horizon step %d: %w", k+2, err)
		}
		if z.n > 0 {
			if err := z.comb[k+1].restore(hs.Combine); err != nil {
				return fmt.Errorf("horizon step %d: %w", k+2, err)
			}
			if err := z.guard[k+1].restore(hs.Guard); err != nil {
				return fmt.Errorf("horizon step %d: %w", k+2, err)
			}
		}
	}
	z.pos = z.h - 1 // the newest slot; Pending[i] goes to slot i
	for i, p := range st.Pending {
		sl := &z.slots[i]
		sl.valid = p.Valid
		if !p.Valid {
			continue
		}
		sl.scale, sl.v = p.Scale, p.Value
		copy(sl.cand, p.Candidates)
		copy(sl.comb, p.Combined)
		copy(sl.yhat, p.Forecasts)
		copy(sl.half, p.HalfWidths)
		copy(sl.steps, p.Steps)
	}
	if last := &z.slots[z.pos]; last.valid {
		copy(z.path, last.steps)
	}
	return nil
}
