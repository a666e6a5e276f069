package svr

import "github.com/forecastd/forecastd/internal/prefetch"

// Prefetch asks the CPU to start loading what the model's next call
// reads first: its per-sample arrays, the margin set's kernel columns
// and R. It changes nothing (internal/prefetch). A caller that knows
// which model it steps next calls it before the current one's step.
func (a *AOSVR) Prefetch() {
	prefetch.Head(a.x)
	prefetch.Head(a.y)
	prefetch.Head(a.theta)
	prefetch.Head(a.h)
	prefetch.Head(a.set)
	prefetch.Head(a.spos)
	prefetch.Head(a.ids)
	prefetch.Head(a.s)
	prefetch.Head(a.r)
	prefetch.Head(a.xsuf)
	prefetch.Head(a.cols)
	for _, c := range a.cols {
		prefetch.Head(c)
	}
}
