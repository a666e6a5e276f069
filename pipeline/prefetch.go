package pipeline

import (
	"github.com/forecastd/forecastd/internal/prefetch"
	"github.com/forecastd/forecastd/svr"
)

// Prefetch asks the CPU to start loading what the series' next point
// reads: its own struct, the parts it points to and the first lines of
// their arrays, its model's included (see internal/prefetch). It changes
// nothing. A caller stepping many series calls it on the next one before
// pushing the current one's point: a series out of the CPU's caches
// costs a trip to memory for each of its parts, which then overlap the
// current point's work instead of stalling the next one's. nil is
// ignored.
func (s *Series) Prefetch() {
	if s == nil {
		return
	}
	prefetch.Object(s)
	prefetch.Object(s.model)
	prefetch.Object(s.delay)
	prefetch.Object(s.scaler)
	prefetch.Object(s.warmup)
	prefetch.Object(s.conformal)
	prefetch.Object(s.detector)
	prefetch.Object(s.changes)
	prefetch.Object(s.comb)
	prefetch.Object(s.guard)
	prefetch.Head(s.train)
	prefetch.Head(s.input)
	if c := s.conformal; c != nil {
		prefetch.Head(c.sorted)
		prefetch.Head(c.seq16)
		prefetch.Head(c.seq32)
	}
	for _, c := range [...]*combiner{s.comb, s.guard} {
		if c != nil {
			prefetch.Head(c.loss)
			prefetch.Head(c.w)
			prefetch.Head(c.f)
		}
	}
	s.changes.Prefetch()
	s.delay.Prefetch()
	s.warmup.Prefetch()
	if s.model == nil {
		return
	}
	if p, ok := s.model.reg.(interface{ Prefetch() }); ok {
		p.Prefetch()
	}
}

// SetPools has the series' model lend its call buffers to p (see
// svr.Pools; nil: the process's), if its kind lends any (AOSVR does). A
// caller stepping many series on one goroutine gives them one Pools. It
// must not be called concurrently with another method.
func (s *Series) SetPools(p *svr.Pools) {
	if s == nil || s.model == nil {
		return
	}
	if m, ok := s.model.reg.(interface{ SetPools(*svr.Pools) }); ok {
		m.SetPools(p)
	}
}
