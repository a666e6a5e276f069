package pipeline

import (
	"fmt"

	"github.com/forecastd/forecastd/ahead"
)

// state returns a deep copy of z's state.
func (z *horizon) state() *ahead.State {
	st := z.fc.State()
	return &st
}

// restore replaces z's state with st (from state, of a horizon of the same
// H). nil starts the steps' forecasters and calibration afresh (a state
// file written before them); a state that does not fit is refused,
// leaving z unchanged.
func (z *horizon) restore(st *ahead.State) error {
	if st == nil {
		return nil
	}
	if err := z.fc.SetState(*st); err != nil {
		return fmt.Errorf("%w: horizon: %w", ErrBadState, err)
	}
	return nil
}
