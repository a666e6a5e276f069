package window

import "github.com/forecastd/forecastd/internal/prefetch"

// Prefetch asks the CPU to start loading the window and its model's
// state (see internal/prefetch), if the model has a Prefetch method.
func (w *Window) Prefetch() {
	prefetch.Head(w.xs)
	prefetch.Head(w.ys)
	prefetch.Head(w.ids)
	if p, ok := w.m.(interface{ Prefetch() }); ok {
		p.Prefetch()
	}
}
