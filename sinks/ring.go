package sinks

// ring is a bounded FIFO of records that, when full, drops its oldest.
// It is not safe for concurrent use (Influx guards it with its mutex).
type ring struct {
	buf        []Record
	head, size int
}

func newRing(capacity int) ring { return ring{buf: make([]Record, capacity)} }

func (q *ring) len() int { return q.size }

// push appends r; if the ring was full it drops the oldest record first
// and reports it.
func (q *ring) push(r Record) (dropped bool) {
	if q.size == len(q.buf) {
		q.buf[q.head] = Record{}
		q.head = (q.head + 1) % len(q.buf)
		q.size--
		dropped = true
	}
	q.buf[(q.head+q.size)%len(q.buf)] = r
	q.size++
	return dropped
}

// pop moves up to n of the oldest records to dst and returns it.
func (q *ring) pop(dst []Record, n int) []Record {
	for ; n > 0 && q.size > 0; n-- {
		dst = append(dst, q.buf[q.head])
		q.buf[q.head] = Record{}
		q.head = (q.head + 1) % len(q.buf)
		q.size--
	}
	return dst
}
