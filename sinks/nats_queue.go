package sinks

import (
	"context"
	"fmt"
)

// queued is one message in the sink's queue: subject, id and body as
// appendKept writes them, and what names it in an error; or, with msg
// nil, a barrier (Flush), closed when publishLoop reaches it.
type queued struct {
	msg     *[]byte
	what    string
	barrier chan struct{}
}

// publishLoop publishes the queued messages in order until Close closes
// the queue.
func (s *NATS) publishLoop() {
	defer close(s.drained)
	sc := s.pool.Get().(*natsScratch)
	defer s.pool.Put(sc)
	for q := range s.queue {
		if q.msg == nil {
			close(q.barrier)
			continue
		}
		nextKept(*q.msg, sc)
		s.qpool.Put(q.msg)
		_ = s.send(sc, q.what) // a refusal is counted
	}
}

// enqueue queues a copy of sc for publishLoop, or returns ErrClosed once
// Close has closed the queue.
func (s *NATS) enqueue(sc *natsScratch, what string) error {
	b := s.qpool.Get().(*[]byte)
	*b = appendKept((*b)[:0], sc)
	s.qmu.RLock()
	defer s.qmu.RUnlock()
	if s.closed.Load() {
		s.qpool.Put(b)
		return ErrClosed
	}
	s.queue <- queued{msg: b, what: what}
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
