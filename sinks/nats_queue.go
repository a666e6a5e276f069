package sinks

import (
	"context"
	"fmt"
)

// queued is one message in the sink's queue, in a scratch of the sink's
// pool that publishLoop gives back, and what names it in an error; or,
// with sc nil, a barrier (Flush), closed when publishLoop reaches it.
type queued struct {
	sc      *natsScratch
	what    string
	barrier chan struct{}
}

// publishLoop publishes the queued messages in order until Close closes
// the queue.
func (s *NATS) publishLoop() {
	defer close(s.drained)
	for q := range s.queue {
		if q.sc == nil {
			close(q.barrier)
			continue
		}
		_ = s.send(q.sc, q.what) // a refusal is counted
		s.pool.Put(q.sc)
	}
}

// enqueue queues sc's message for publishLoop, or returns ErrClosed once
// Close has closed the queue. The message's bytes go with a scratch of
// the pool, without a copy: sc is left that scratch's spare buffers.
func (s *NATS) enqueue(sc *natsScratch, what string) error {
	q := s.pool.Get().(*natsScratch)
	q.body, sc.body = sc.body, q.body[:0]
	q.subj, sc.subj = sc.subj, q.subj[:0]
	q.id, sc.id = sc.id, q.id[:0]
	s.qmu.RLock()
	defer s.qmu.RUnlock()
	if s.closed.Load() {
		s.pool.Put(q)
		return ErrClosed
	}
	s.queue <- queued{sc: q, what: what}
	return nil
}

// drain returns once publishLoop has published what was queued before,
// or ctx's error; at once without a queue or once it is closed (Close
// waits for the rest).
func (s *NATS) drain(ctx context.Context) error {
	if s.queue == nil {
		return nil
	}
	b := make(chan struct{})
	s.qmu.RLock()
	if s.closed.Load() {
		s.qmu.RUnlock()
		return nil
	}
	select {
	case s.queue <- queued{barrier: b}:
		s.qmu.RUnlock()
	case <-ctx.Done():
		s.qmu.RUnlock()
		return fmt.Errorf("sinks: nats: flush: %w", ctx.Err())
	}
	select {
	case <-b:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("sinks: nats: flush: %w", ctx.Err())
	}
}
