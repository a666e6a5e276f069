package pipeline

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// Aggregate is how a [Buckets] turns the raw points of a bucket into one.
type Aggregate uint8

// The aggregates, as InfluxDB's aggregateWindow and Telegraf name them.
const (
	AggMean  Aggregate = iota // the mean of the bucket's values
	AggMin                    // the least
	AggMax                    // the greatest
	AggLast                   // the value of the bucket's latest point
	AggSum                    // the sum
	AggCount                  // the number of points
	// AggRate is a counter's non-negative per-second rate: the increase
	// over the bucket divided by the seconds it took, from the last
	// point before the bucket to the bucket's last point. A decrease is a
	// counter reset, not a drop: the counter restarted from 0, so the
	// increase is the new value (as Prometheus' rate counts it).
	AggRate
)

var aggNames = [...]string{"mean", "min", "max", "last", "sum", "count", "rate"}

// String returns the aggregate's configuration name.
func (a Aggregate) String() string {
	if int(a) < len(aggNames) {
		return aggNames[a]
	}
	return fmt.Sprintf("Aggregate(%d)", a)
}

// ParseAggregate returns the aggregate named s ("" is mean).
func ParseAggregate(s string) (Aggregate, error) {
	if s == "" {
		return AggMean, nil
	}
	for i, n := range aggNames {
		if n == s {
			return Aggregate(i), nil
		}
	}
	return 0, fmt.Errorf("aggregate %q: want one of mean, min, max, last, sum, count, rate", s)
}

// ErrLate is wrapped by the error for a raw point older than the bucket
// open now: its bucket was closed (and forecast from), so it is dropped
// and counted.
var ErrLate = errors.New("pipeline: point for a closed bucket")

// Buckets aggregates a series' raw points into buckets of Step aligned on
// the Unix epoch, as InfluxDB's aggregateWindow (and InfluxQL's GROUP BY
// time) makes them: the bucket of t starts at ⌊t/Step⌋·Step, and its point
// is dated by that start. A bucket closes when a point of a later bucket
// arrives, or when its owner calls Close (the daemon does after a grace
// period past the bucket's end). A bucket without points is no point: a
// gap, which the series handles as any gap.
//
// A mean, a sum and a rate add up values (increases) that may exceed
// float64 together: the sum is kept scaled by a power of two once it would
// (a mean of two 1e308 is 1e308), bit for bit the plain sum until then. A
// bucket whose sum or rate is itself beyond float64 makes no point: it is
// counted (Overflowed).
//
// O(1) time per point and memory per series; no allocation. Not safe for
// concurrent use.
type Buckets struct {
	step time.Duration
	agg  Aggregate

	open       bool
	start      int64 // the open bucket's start, Unix ns
	n          int   // raw points in the open bucket
	acc        float64
	shift      int   // AggMean, AggSum, AggRate: the sum is acc·2^shift
	lastT      int64 // the newest raw point's time, Unix ns (any bucket)
	haveLast   bool
	lastV      float64 // its value
	rateFromNs int64   // AggRate: the time the open bucket's increase is counted from
	rateOK     bool    // AggRate: the open bucket has an increase (a point before it)
	closedEnd  int64   // the end of the last bucket closed, Unix ns (0: none)
	overflowed uint64  // buckets whose value was beyond float64
}

// NewBuckets returns an empty Buckets of step (> 0) and agg.
func NewBuckets(step time.Duration, agg Aggregate) (*Buckets, error) {
	if step <= 0 {
		return nil, fmt.Errorf("step must be positive, got %v", step)
	}
	if int(agg) >= len(aggNames) {
		return nil, fmt.Errorf("unknown aggregate %d", agg)
	}
	return &Buckets{step: step, agg: agg}, nil
}

// Step returns the buckets' width.
func (b *Buckets) Step() time.Duration { return b.step }

// OpenEnd returns the end of the open bucket, and false if none is open.
func (b *Buckets) OpenEnd() (time.Time, bool) {
	if !b.open {
		return time.Time{}, false
	}
	return time.Unix(0, b.start+int64(b.step)), true
}

// bucketOf returns the start of t's bucket in Unix ns, rounding down for
// times before the epoch too.
func (b *Buckets) bucketOf(ns int64) int64 {
	s := int64(b.step)
	q := ns / s
	if ns%s < 0 {
		q--
	}
	return q * s
}

// Add takes the raw point p. If p belongs to a later bucket than the open
// one, the open bucket is closed and returned (ok) and p opens the next.
// A point before the open bucket, or not after the newest point, is
// dropped with an error wrapping ErrLate or ErrOutOfOrder; a NaN or Inf
// value with one wrapping ErrNonFinite. Nothing changes on an error.
func (b *Buckets) Add(p Point) (closed Point, ok bool, err error) {
	if math.IsNaN(p.Value) || math.IsInf(p.Value, 0) {
		return Point{}, false, fmt.Errorf("%w: %v at %v", ErrNonFinite, p.Value, p.Time)
	}
	ns := p.Time.UnixNano()
	start := b.bucketOf(ns)
	if b.open && start < b.start || b.closedEnd != 0 && ns < b.closedEnd {
		return Point{}, false, fmt.Errorf("%w: %v is in the bucket of %v, closed", ErrLate, p.Time, time.Unix(0, start).UTC())
	}
	if b.haveLast && ns <= b.lastT {
		return Point{}, false, fmt.Errorf("%w: %v is not after %v", ErrOutOfOrder, p.Time, time.Unix(0, b.lastT))
	}
	if b.open && start > b.start {
		closed, ok = b.Close()
	}
	if !b.open {
		b.open, b.start, b.n, b.acc, b.shift, b.rateOK = true, start, 0, 0, 0, false
	}
	b.addValue(ns, p.Value)
	return closed, ok, nil
}

// add adds v to the sum acc·2^shift, raising shift (halving acc, which
// is exact for so large an acc) while the sum would overflow; with shift
// 0 it is acc += v.
func (b *Buckets) add(v float64) {
	x := math.Ldexp(v, -b.shift)
	for {
		if sum := b.acc + x; !math.IsInf(sum, 0) {
			b.acc = sum
			return
		}
		b.shift++
		b.acc /= 2
		x = math.Ldexp(v, -b.shift)
	}
}

func (b *Buckets) addValue(ns int64, v float64) {
	switch b.agg {
	case AggMean, AggSum:
		b.add(v)
	case AggMin:
		if b.n == 0 || v < b.acc {
			b.acc = v
		}
	case AggMax:
		if b.n == 0 || v > b.acc {
			b.acc = v
		}
	case AggLast:
		b.acc = v
	case AggRate:
		if b.haveLast {
			inc := v - b.lastV
			if inc < 0 { // a reset: the counter restarted from 0
				inc = v
			}
			if !b.rateOK {
				b.rateOK, b.rateFromNs = true, b.lastT
			}
			if math.IsInf(inc, 0) { // from below −MaxFloat64/2 to above MaxFloat64/2: in two parts
				b.add(v)
				b.add(-b.lastV)
			} else {
				b.add(inc)
			}
		}
	}
	b.n++
	b.lastT, b.lastV, b.haveLast = ns, v, true
}

// Close closes the open bucket and returns its point, ok false if none was
// open or it holds no value (a rate needs a point before the bucket), or
// if its value is beyond float64 (a sum, or a rate over a short time,
// counted in Overflowed).
func (b *Buckets) Close() (Point, bool) {
	if !b.open {
		return Point{}, false
	}
	b.open, b.closedEnd = false, b.start+int64(b.step)
	v := b.acc
	switch b.agg {
	case AggMean:
		v /= float64(b.n)
	case AggCount:
		v = float64(b.n)
	case AggRate:
		if !b.rateOK {
			return Point{}, false
		}
		v /= float64(b.lastT-b.rateFromNs) / 1e9
	}
	if b.shift > 0 {
		v = math.Ldexp(v, b.shift)
	}
	if math.IsNaN(v) || math.IsInf(v, 0) {
		b.overflowed++
		return Point{}, false
	}
	return Point{Time: time.Unix(0, b.start).UTC(), Value: v}, true
}

// Overflowed returns the number of buckets closed without a point because
// their value (a sum, or a rate) was beyond float64.
func (b *Buckets) Overflowed() uint64 { return b.overflowed }

// BucketState is what a checkpoint keeps of a [Buckets]: the open
// bucket (its start and points, the aggregate so far), the newest raw
// point, where a rate's increase is counted from, and the end of the last
// bucket closed (points before it are late).
type BucketState struct {
	Open      bool
	Start     int64
	N         int
	Acc       float64
	HaveLast  bool
	LastT     int64
	LastV     float64
	RateFrom  int64
	RateOK    bool
	ClosedEnd int64
	Step      time.Duration
	Agg       Aggregate
	// Shift is the power of two the open bucket's sum is scaled by (the
	// sum is Acc·2^Shift), 0 unless the sum would exceed float64.
	Shift int
}

// State returns the open bucket's state.
func (b *Buckets) State() BucketState {
	return BucketState{Open: b.open, Start: b.start, N: b.n, Acc: b.acc, HaveLast: b.haveLast, LastT: b.lastT,
		LastV: b.lastV, RateFrom: b.rateFromNs, RateOK: b.rateOK, ClosedEnd: b.closedEnd, Step: b.step, Agg: b.agg,
		Shift: b.shift}
}

// maxShift bounds BucketState.Shift: a sum of n finite values is below
// n·2^1024, and n < 2^63.
const maxShift = 64

// SetState restores a state of the same step and aggregate.
func (b *Buckets) SetState(s BucketState) error {
	if s.Step != b.step || s.Agg != b.agg {
		return fmt.Errorf("bucket state of step %v and aggregate %v, want %v and %v", s.Step, s.Agg, b.step, b.agg)
	}
	if s.Open && s.N < 1 {
		return errors.New("bucket state: an open bucket without points")
	}
	if s.Shift < 0 || s.Shift > maxShift {
		return fmt.Errorf("bucket state: sum scaled by 2^%d", s.Shift)
	}
	b.open, b.start, b.n, b.acc, b.haveLast, b.lastT, b.lastV, b.rateFromNs, b.rateOK, b.closedEnd, b.shift =
		s.Open, s.Start, s.N, s.Acc, s.HaveLast, s.LastT, s.LastV, s.RateFrom, s.RateOK, s.ClosedEnd, s.Shift
	return nil
}

// Resample aggregates a whole recorded series (times increasing) into
// buckets of step with agg, closing the last bucket at the end; points
// dropped (late, out of order, non-finite) are counted.
func Resample(times []time.Time, values []float64, step time.Duration, agg Aggregate) (ts []time.Time, vs []float64, dropped int, err error) {
	b, err := NewBuckets(step, agg)
	if err != nil {
		return nil, nil, 0, err
	}
	for i := range times {
		p, ok, err := b.Add(Point{Time: times[i], Value: values[i]})
		if err != nil {
			dropped++
			continue
		}
		if ok {
			ts, vs = append(ts, p.Time), append(vs, p.Value)
		}
	}
	if p, ok := b.Close(); ok {
		ts, vs = append(ts, p.Time), append(vs, p.Value)
	}
	return ts, vs, dropped, nil
}
