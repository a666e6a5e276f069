package pipeline

import (
	"encoding/binary"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// rawPoints returns n raw points a random 1–20 s apart from t0, with
// values of a counter that resets now and then (for rate) or noise.
func rawPoints(seed uint64, n int, t0 time.Time, counter bool) []Point {
	r := rand.New(rand.NewPCG(seed, 1))
	out := make([]Point, n)
	t, c := t0, 0.0
	for i := range out {
		t = t.Add(time.Duration(1+r.IntN(20)) * time.Second)
		v := r.NormFloat64() * 10
		if counter {
			c += float64(r.IntN(100))
			if r.IntN(200) == 0 {
				c = float64(r.IntN(10)) // a reset
			}
			v = c
		}
		out[i] = Point{t, v}
	}
	return out
}

// TestBucketsAgainstDefinition: every aggregate of every bucket equals
// its definition recomputed from the raw points of the bucket (and, for
// rate, the point before it), buckets start at multiples of the step
// from the epoch (before the epoch too), and an empty bucket makes no
// point.
func TestBucketsAgainstDefinition(t *testing.T) {
	for _, t0 := range []time.Time{time.Date(2024, 5, 1, 12, 0, 7, 0, time.UTC), time.Unix(-3600*5-13, 0)} {
		for agg := AggMean; agg <= AggRate; agg++ {
			for _, step := range []time.Duration{time.Minute, 5 * time.Minute, time.Hour} {
				pts := rawPoints(uint64(agg)+uint64(step), 3000, t0, agg == AggRate)
				if agg == AggRate || agg == AggSum {
					// gaps: empty buckets
					for i := 1000; i < len(pts); i++ {
						pts[i].Time = pts[i].Time.Add(3 * step)
					}
				}
				ts := make([]time.Time, len(pts))
				vs := make([]float64, len(pts))
				for i, p := range pts {
					ts[i], vs[i] = p.Time, p.Value
				}
				gt, gv, dropped, err := Resample(ts, vs, step, agg)
				if err != nil || dropped != 0 {
					t.Fatal(err, dropped)
				}
				// The definition, bucket by bucket.
				var wt []time.Time
				var wv []float64
				for i := 0; i < len(pts); {
					start := pts[i].Time.Truncate(step)
					if pts[i].Time.Before(start) { // Truncate rounds toward zero before the epoch
						start = start.Add(-step)
					}
					if start.UnixNano()%int64(step) != 0 {
						t.Fatalf("bucket start %v not aligned", start)
					}
					j := i
					for j < len(pts) && pts[j].Time.Before(start.Add(step)) {
						j++
					}
					b := pts[i:j]
					var v float64
					switch agg {
					case AggMean, AggSum:
						for _, p := range b {
							v += p.Value
						}
						if agg == AggMean {
							v /= float64(len(b))
						}
					case AggMin, AggMax:
						v = b[0].Value
						for _, p := range b {
							if agg == AggMin {
								v = math.Min(v, p.Value)
							} else {
								v = math.Max(v, p.Value)
							}
						}
					case AggLast:
						v = b[len(b)-1].Value
					case AggCount:
						v = float64(len(b))
					case AggRate:
						prev, from := pts[max(i-1, 0)], b
						if i == 0 { // no point before: from the first
							if len(b) < 2 {
								i = j
								continue
							}
							from = b[1:]
						}
						for _, p := range from {
							d := p.Value - prev.Value
							if d < 0 {
								d = p.Value
							}
							v += d
							prev = p
						}
						v /= b[len(b)-1].Time.Sub(prev0(pts, i)).Seconds()
					}
					wt, wv = append(wt, start), append(wv, v)
					i = j
				}
				if len(gt) != len(wt) {
					t.Fatalf("%v %v: %d buckets, want %d", agg, step, len(gt), len(wt))
				}
				for k := range gt {
					if !gt[k].Equal(wt[k]) || math.Abs(gv[k]-wv[k]) > 1e-9*math.Max(1, math.Abs(wv[k])) {
						t.Fatalf("%v %v bucket %d: %v %v, want %v %v", agg, step, k, gt[k], gv[k], wt[k], wv[k])
					}
				}
			}
		}
	}
}

// TestBucketsDrops: a point for a closed bucket is dropped (ErrLate), one
// not after the newest in the open bucket too (ErrOutOfOrder), and a
// non-finite value (ErrNonFinite), each leaving the open bucket as it was.
func TestBucketsDrops(t *testing.T) {
	b, err := NewBuckets(time.Minute, AggMean)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	add := func(s int, v float64) (Point, bool, error) {
		return b.Add(Point{t0.Add(time.Duration(s) * time.Second), v})
	}
	for _, s := range []int{0, 10, 20} {
		if _, ok, err := add(s, float64(s)); ok || err != nil {
			t.Fatal(ok, err)
		}
	}
	p, ok, err := add(65, 1)
	if !ok || err != nil || p.Value != 10 || !p.Time.Equal(t0) {
		t.Fatalf("closed %v %v %v, want the mean 10 at %v", p, ok, err, t0)
	}
	before := b.State()
	for _, c := range []struct {
		s    int
		v    float64
		want error
	}{{30, 1, ErrLate}, {65, 2, ErrOutOfOrder}, {62, 2, ErrOutOfOrder}, {70, math.NaN(), ErrNonFinite}, {70, math.Inf(1), ErrNonFinite}} {
		if _, ok, err := add(c.s, c.v); ok || !errors.Is(err, c.want) {
			t.Errorf("point at %d s = %v: %v %v, want %v", c.s, c.v, ok, err, c.want)
		}
	}
	if b.State() != before {
		t.Fatalf("a dropped point changed the bucket: %+v, was %+v", b.State(), before)
	}
	end, open := b.OpenEnd()
	if !open || !end.Equal(t0.Add(2*time.Minute)) {
		t.Fatalf("open bucket ends %v %v", end, open)
	}
	if p, ok := b.Close(); !ok || p.Value != 1 || !p.Time.Equal(t0.Add(time.Minute)) {
		t.Fatalf("Close = %v %v", p, ok)
	}
	if _, ok := b.Close(); ok {
		t.Fatal("closed twice")
	}
	if _, err := NewBuckets(0, AggMean); err == nil {
		t.Fatal("a zero step accepted")
	}
	if _, err := ParseAggregate("median"); err == nil {
		t.Fatal("an unknown aggregate accepted")
	}
	for a := AggMean; a <= AggRate; a++ {
		if got, err := ParseAggregate(a.String()); err != nil || got != a {
			t.Fatalf("ParseAggregate(%q) = %v, %v", a.String(), got, err)
		}
	}
}

// TestSeriesStepEqualsResampled: a series with a step fed raw points
// forecasts exactly what a series at the raw spacing of the step forecasts
// from the same points aggregated by Resample (the backtest's path), and a
// checkpoint taken in the middle of a bucket restores the bucket.
func TestSeriesStepEqualsResampled(t *testing.T) {
	t0 := time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC)
	pts := rawPoints(3, 20000, t0, false)
	for i := range pts {
		pts[i].Value += 50 + 20*math.Sin(2*math.Pi*float64(pts[i].Time.Unix()%3600)/3600)
	}
	cfg := DefaultConfig()
	cfg.Horizon = 6
	cfg.Step = time.Minute
	stepped := mustNew(t, cfg)
	plain := cfg
	plain.Step, plain.Interval = 0, time.Minute
	ref := mustNew(t, plain)
	var want []Forecast
	ts := make([]time.Time, len(pts))
	vs := make([]float64, len(pts))
	for i, p := range pts {
		ts[i], vs[i] = p.Time, p.Value
	}
	bt, bv, _, _ := Resample(ts, vs, time.Minute, AggMean)
	for i := range bt[:len(bt)-1] { // the last bucket is still open in the stepped series
		res, err := ref.Push(Point{bt[i], bv[i]})
		if err != nil {
			t.Fatal(err)
		}
		if res.HasForecast {
			f := res.Forecast
			f.Path = append([]Step(nil), f.Path...)
			want = append(want, f)
		}
	}
	var got []Forecast
	for i, p := range pts {
		if i == len(pts)/2 { // a checkpoint mid-bucket
			st, err := stepped.Export()
			if err != nil {
				t.Fatal(err)
			}
			if st.Bucket == nil || !st.Bucket.Open {
				t.Fatal("no open bucket in the state")
			}
			if stepped, err = Restore(stepped.Key(), cfg, st); err != nil {
				t.Fatal(err)
			}
		}
		res, err := stepped.Push(p)
		if err != nil {
			t.Fatal(err)
		}
		if res.HasForecast {
			f := res.Forecast
			f.Path = append([]Step(nil), f.Path...)
			got = append(got, f)
		}
	}
	if len(got) != len(want) || len(got) < 200 {
		t.Fatalf("%d forecasts with a step, %d from the resampled points", len(got), len(want))
	}
	for i := range got {
		if !sameForecast(got[i], want[i]) || !slices.EqualFunc(got[i].Path, want[i].Path, sameStep) {
			t.Fatalf("forecast %d: %+v, want %+v", i, got[i], want[i])
		}
	}
	// The open bucket closes by its grace, not before.
	end, ok := stepped.BucketDue(0)
	if !ok {
		t.Fatal("no open bucket")
	}
	if _, ok, _ := stepped.CloseBucket(end.Add(-time.Nanosecond), 0); ok {
		t.Fatal("closed before its end")
	}
	res, ok, err := stepped.CloseBucket(end.Add(time.Second), time.Second)
	if !ok || err != nil || !res.HasForecast {
		t.Fatalf("CloseBucket: %+v %v %v", res, ok, err)
	}
	last, _ := ref.Push(Point{bt[len(bt)-1], bv[len(bv)-1]})
	if !sameForecast(res.Forecast, last.Forecast) {
		t.Fatalf("the grace-closed bucket forecast %+v, want %+v", res.Forecast, last.Forecast)
	}
	if s := stepped.Stats(); s.Late != 0 {
		t.Fatalf("late %d", s.Late)
	}
	if _, err := stepped.Push(pts[len(pts)-1]); !errors.Is(err, ErrLate) || stepped.Stats().Late != 1 {
		t.Fatalf("a point of the closed bucket: %v, late %d", err, stepped.Stats().Late)
	}
}

// prev0 returns the time a rate's increase in the bucket starting at
// raw point i is counted from: the point before it, or its own first.
func prev0(pts []Point, i int) time.Time { return pts[max(i-1, 0)].Time }

// TestBucketsBeyondFloat64: values whose sum is beyond float64 made a
// bucket Inf, which vanished with no counter moving. The mean of values
// near ±1e308 is computed (a sum scaled by a power of two), as is a rate
// from −1e308 to 1e308; a sum, or a rate over a short time, whose value
// itself is beyond float64 makes no point and is counted (Overflowed).
// A checkpoint taken with the sum scaled restores it.
func TestBucketsBeyondFloat64(t *testing.T) {
	const max = math.MaxFloat64
	t0 := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		name   string
		agg    Aggregate
		values []float64
		spaced time.Duration
		want   float64 // NaN: no point, counted
	}{
		{"mean of two 1e308", AggMean, []float64{1e308, 1e308}, time.Second, 1e308},
		{"mean of MaxFloat64", AggMean, []float64{max, max, max}, time.Second, max},
		{"mean across the range", AggMean, []float64{max, max, -max, 3}, time.Second, (max/4 + max/4 - max/4) + 0.75},
		{"mean scaled twice", AggMean, []float64{max, max, max, max, max, -max, -max, -max}, time.Second, max / 4},
		{"sum back in range", AggSum, []float64{1e308, 1e308, -1e308}, time.Second, 1e308},
		{"sum beyond", AggSum, []float64{1e308, 1e308}, time.Second, math.NaN()},
		{"rate from -1e308 to 1e308", AggRate, []float64{-1e308, 1e308}, 10 * time.Second, 2e307},
		{"rate beyond", AggRate, []float64{0, 1e308}, time.Millisecond, math.NaN()},
		{"rate after a reset", AggRate, []float64{1e308, 5, 1e308}, 10 * time.Second, (1e308 - 5 + 5) / 20},
	} {
		t.Run(c.name, func(t *testing.T) {
			b, err := NewBuckets(time.Hour, c.agg)
			if err != nil {
				t.Fatal(err)
			}
			half := len(c.values) / 2
			for i, v := range c.values {
				if i == half { // through a checkpoint, halfway
					st := b.State()
					b, _ = NewBuckets(time.Hour, c.agg)
					if err := b.SetState(st); err != nil {
						t.Fatal(err)
					}
				}
				if _, ok, err := b.Add(Point{Time: t0.Add(time.Duration(i) * c.spaced), Value: v}); err != nil || ok {
					t.Fatalf("Add %v: %v, %v", v, ok, err)
				}
			}
			p, ok := b.Close()
			if math.IsNaN(c.want) {
				if ok || b.Overflowed() != 1 {
					t.Fatalf("point %v (%v), Overflowed %d: want none, counted", p.Value, ok, b.Overflowed())
				}
				return
			}
			if !ok || math.Abs(p.Value-c.want) > 1e-15*math.Abs(c.want) || b.Overflowed() != 0 {
				t.Fatalf("point %v (%v), Overflowed %d: want %v", p.Value, ok, b.Overflowed(), c.want)
			}
		})
	}
}

// FuzzBuckets feeds any raw points (any float64 bits, any spacing, times
// across int64 nanoseconds' range) through Buckets of every aggregate and
// checks every point it makes: finite, dated at its bucket's start; a
// mean within the bucket's least and greatest value; every closed bucket
// either made a point or was counted (or, for a rate, had no point
// before it). Its state goes through a checkpoint at every tenth point.
//
//	go test -run '^$' -fuzz FuzzBuckets ./pipeline
func FuzzBuckets(f *testing.F) {
	seed := func(vals ...float64) []byte {
		var b []byte
		for i, v := range vals {
			b = binary.LittleEndian.AppendUint32(b, uint32(1+i%3)*1000)
			b = binary.LittleEndian.AppendUint64(b, math.Float64bits(v))
		}
		return b
	}
	f.Add(seed(1, 2, 3, 4, 5, 6), int64(0), uint8(0), uint8(2))
	f.Add(seed(1e308, 1e308, -1e308, math.MaxFloat64, math.MaxFloat64), int64(1.7e18), uint8(0), uint8(1))
	f.Add(seed(-1e308, 1e308, 0, 1e308), int64(-9e18), uint8(6), uint8(0))
	f.Add(seed(math.MaxFloat64, math.MaxFloat64, math.MaxFloat64), int64(9.2e18), uint8(4), uint8(3))
	f.Fuzz(func(t *testing.T, data []byte, start int64, agg uint8, stepSel uint8) {
		steps := []time.Duration{time.Second, time.Minute, time.Hour, 24 * time.Hour}
		step := steps[int(stepSel)%len(steps)]
		a := Aggregate(int(agg) % len(aggNames))
		b, err := NewBuckets(step, a)
		if err != nil {
			t.Fatal(err)
		}
		// Times as the sources let them in, between MinTime and MaxTime.
		span := MaxTime.UnixNano() - MinTime.UnixNano()
		ns := MinTime.UnixNano() + int64(uint64(start)%uint64(span))
		lo, hi := math.Inf(1), math.Inf(-1)
		// check checks what closing the bucket of state open made: p if
		// ok, else nothing for a reason.
		check := func(p Point, ok bool, open BucketState, overflowed uint64) {
			t.Helper()
			if !ok {
				if !(a == AggRate && !open.RateOK) && b.Overflowed() != overflowed+1 {
					t.Fatalf("%v bucket closed without a point, not counted (overflowed %d)", a, b.Overflowed())
				}
				return
			}
			if math.IsNaN(p.Value) || math.IsInf(p.Value, 0) {
				t.Fatalf("%v bucket point %v", a, p.Value)
			}
			if p.Time.UnixNano() != open.Start {
				t.Fatalf("bucket point at %v, its bucket starts at %v", p.Time, time.Unix(0, open.Start).UTC())
			}
			tol := 1e-9 * math.Max(math.Abs(lo), math.Abs(hi)) // the sum's rounding
			if a == AggMean && (p.Value < lo-tol || p.Value > hi+tol) {
				t.Fatalf("mean %v outside [%v, %v]", p.Value, lo, hi)
			}
		}
		for k := 0; len(data) >= 12 && k < 200; k++ {
			dt := int64(binary.LittleEndian.Uint32(data)) * int64(time.Millisecond)
			v := math.Float64frombits(binary.LittleEndian.Uint64(data[4:]))
			data = data[12:]
			if ns > MaxTime.UnixNano()-dt {
				break
			}
			ns += dt
			if k%10 == 9 {
				st := b.State()
				b, _ = NewBuckets(step, a)
				if err := b.SetState(st); err != nil {
					t.Fatalf("restoring a bucket state: %v", err)
				}
			}
			before, overflowed := b.State(), b.Overflowed()
			p, ok, err := b.Add(Point{Time: time.Unix(0, ns), Value: v})
			if err != nil {
				if b.State() != before {
					t.Fatalf("a refused point changed the buckets: %v", err)
				}
				continue
			}
			if before.Open && b.State().Start != before.Start { // the point closed the open bucket
				check(p, ok, before, overflowed)
				lo, hi = math.Inf(1), math.Inf(-1)
			} else if ok {
				t.Fatalf("a point of the open bucket closed it: %+v", p)
			}
			lo, hi = math.Min(lo, v), math.Max(hi, v)
		}
		if open, overflowed := b.State(), b.Overflowed(); open.Open {
			p, ok := b.Close()
			check(p, ok, open, overflowed)
		}
	})
}
