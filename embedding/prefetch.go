package embedding

import "github.com/forecastd/forecastd/internal/prefetch"

// Prefetch asks the CPU to start loading the embedding's values (see
// internal/prefetch); nil is ignored.
func (d *Delay) Prefetch() {
	if d != nil {
		prefetch.Head(d.ring)
	}
}

// Prefetch asks the CPU to start loading the features' values (see
// internal/prefetch); nil is ignored.
func (c *Changes) Prefetch() {
	if c != nil {
		prefetch.Head(c.ring)
		prefetch.Head(c.levels)
		prefetch.Head(c.seasons)
	}
}

// Prefetch asks the CPU to start loading the points held back (see
// internal/prefetch); nil is ignored.
func (w *Warmup[P]) Prefetch() {
	if w != nil {
		prefetch.Head(w.buf)
	}
}
