package pipeline

import (
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
