package pipeline

import (
	"fmt"
	"math"
	"slices"
)

// HorizonState is the state of the steps 2…H of a series forecasting H > 1
// points ahead (SeriesState.Horizon): each anchor step's interval
// calibration and combination, and the anchor steps' forecasts still
// waiting for their actuals.
type HorizonState struct {
	// Steps are the anchor steps' (horizonAnchors of H), in increasing h.
	Steps []HorizonStep
	// Pending are the anchor steps' waiting forecasts: anchor by anchor,
	// each anchor's ⌊a/e⌋+1 places in order (e = ⌈a/16⌉, the spacing of the
	// origins it scores), a place holding the forecast made at the origin
	// o ≤ Point, o > Point − a, o a multiple of e with ⌊o/e⌋ at that place
	// modulo the places, when valid.
	Pending []HorizonSlot
	// Point counts the points the series' horizon has seen. It is 0 in
	// states written before the anchor steps (one calibration per step
	// 2…H, H pending paths): those are not restored (the steps'
	// calibrations start again), since their steps are not the anchors'.
	Point uint64
}

// HorizonStep is one anchor step's calibration: the residuals (in running
// scales) of its last forecasts, oldest first, and its level α_t; and, with
// Config.Combine, its combination's and guard's state.
type HorizonStep struct {
	Residuals      []float64
	Alpha          float64
	Combine, Guard *CombinerState
}

// HorizonSlot is one anchor step's forecast waiting for its actual: the
// running scale and the origin's value (scaled) at the time, the
// forecasters' values (N), the combination before the guard, the forecast
// (scaled) and the interval's half-width (−1: none), one each, and the
// published step. Valid is false for an empty place (the other fields are
// then empty).
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
	st := &HorizonState{Steps: make([]HorizonStep, len(z.anchors)), Point: z.t}
	for i := range z.anchors {
		an := &z.anchors[i]
		hs := HorizonStep{Residuals: an.conf.residuals(), Alpha: an.conf.alpha}
		if z.n > 0 {
			hs.Combine, hs.Guard = an.comb.state(), an.guard.state()
		}
		st.Steps[i] = hs
		for k := range an.pending {
			p := &an.pending[k]
			if !p.valid {
				st.Pending = append(st.Pending, HorizonSlot{})
				continue
			}
			st.Pending = append(st.Pending, HorizonSlot{Valid: true, Scale: p.scale, Value: p.v,
				Candidates: slices.Clone(p.candidates), Combined: []float64{p.comb}, Forecasts: []float64{p.yhat},
				HalfWidths: []float64{p.half}, Steps: []Step{p.step}})
		}
	}
	return st
}

// places returns the number of pending places of all anchors.
func (z *horizon) places() int {
	n := 0
	for i := range z.anchors {
		n += len(z.anchors[i].pending)
	}
	return n
}

// restore sets z's state from st, checking that it fits. A state of the
// layout before anchor steps is not restored: z stays as it is (new).
func (z *horizon) restore(st *HorizonState) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: horizon: "+format, append([]any{ErrBadState}, args...)...)
	}
	if len(st.Steps) != len(z.anchors) || len(st.Pending) != z.places() {
		if st.Point == 0 && len(st.Steps) == z.h-1 && len(st.Pending) == z.h {
			return nil // one calibration per step, as before anchors: start again
		}
		return bad("%d steps and %d pending places for a horizon of %d (%d anchor steps, %d places)", len(st.Steps), len(st.Pending), z.h, len(z.anchors), z.places())
	}
	for k, hs := range st.Steps {
		if (hs.Combine != nil) != (z.n > 0) || (hs.Guard != nil) != (z.n > 0) {
			return bad("anchor step %d: combination state present %v, combine %v", z.anchors[k].step, hs.Combine != nil, z.n > 0)
		}
	}
	j := 0
	for i := range z.anchors {
		an := &z.anchors[i]
		for range an.pending {
			sl := &st.Pending[j]
			j++
			if !sl.Valid {
				continue
			}
			if !(sl.Scale > 0) || math.IsInf(sl.Scale, 0) || !isFinite(sl.Value) {
				return bad("pending forecast %d: scale %v, value %v", j-1, sl.Scale, sl.Value)
			}
			if len(sl.Candidates) != z.n || len(sl.Combined) != 1 || len(sl.Forecasts) != 1 || len(sl.HalfWidths) != 1 || len(sl.Steps) != 1 {
				return bad("pending forecast %d: %d forecasters' values, %d combined, %d forecasts, %d half-widths, %d steps, want %d and one each",
					j-1, len(sl.Candidates), len(sl.Combined), len(sl.Forecasts), len(sl.HalfWidths), len(sl.Steps), z.n)
			}
			if !isFinite(sl.Forecasts[0]) || !isFinite(sl.Combined[0]) || !(sl.HalfWidths[0] >= -1) || math.IsInf(sl.HalfWidths[0], 0) {
				return bad("pending forecast %d: forecast %v, combined %v, half-width %v", j-1, sl.Forecasts[0], sl.Combined[0], sl.HalfWidths[0])
			}
			for k, v := range sl.Candidates {
				if !isFinite(v) {
					return bad("pending forecast %d: forecaster value %d is %v", j-1, k, v)
				}
			}
			if sl.Steps[0].Horizon != an.step {
				return bad("pending forecast %d: step %d for anchor step %d", j-1, sl.Steps[0].Horizon, an.step)
			}
		}
	}
	// Checked: now set, so that a bad state leaves nothing half-restored
	// that matters (the series is discarded on error anyway).
	for k, hs := range st.Steps {
		an := &z.anchors[k]
		if err := an.conf.restore(hs.Residuals, hs.Alpha); err != nil {
			return fmt.Errorf("horizon anchor step %d: %w", an.step, err)
		}
		if z.n > 0 {
			if err := an.comb.restore(hs.Combine); err != nil {
				return fmt.Errorf("horizon anchor step %d: %w", an.step, err)
			}
			if err := an.guard.restore(hs.Guard); err != nil {
				return fmt.Errorf("horizon anchor step %d: %w", an.step, err)
			}
		}
	}
	z.t = st.Point
	j = 0
	for i := range z.anchors {
		an := &z.anchors[i]
		e, L := uint64(an.every), uint64(len(an.pending))
		for k := range an.pending {
			sl := &st.Pending[j]
			j++
			p := &an.pending[k]
			p.valid = false
			if !sl.Valid {
				continue
			}
			// The origin of place k: the multiple of e at or below the
			// newest point whose ⌊o/e⌋ is k modulo the places.
			m := z.t / e
			m -= (m + L - uint64(k)%L) % L
			o := m * e
			if o+uint64(an.step) <= z.t || m > z.t/e { // scored already, or no such origin
				continue
			}
			p.valid, p.origin, p.scale, p.v = true, o, sl.Scale, sl.Value
			copy(p.candidates, sl.Candidates)
			p.comb, p.yhat, p.half, p.step = sl.Combined[0], sl.Forecasts[0], sl.HalfWidths[0], sl.Steps[0]
		}
	}
	return nil
}
