package statestore

import (
	"errors"
	"testing"
	"time"

	"github.com/forecastd/forecastd/pipeline"
)

// TestBucketScaleRoundTrip: an open bucket whose sum is scaled (two 1e308
// in a mean bucket) is checkpointed with its scale (section 19) and
// restores into a series that closes the bucket at the mean, as the
// uninterrupted series does; a bucket that is not scaled writes no such
// section, and a bad scale is refused.
func TestBucketScaleRoundTrip(t *testing.T) {
	cfg := pipeline.DefaultConfig()
	cfg.Step, cfg.Aggregate = time.Minute, pipeline.AggMean
	t0 := time.Date(2024, 1, 2, 3, 4, 0, 0, time.UTC)
	s, err := pipeline.New("k", cfg)
	if err != nil {
		t.Fatal(err)
	}
	push := func(s *pipeline.Series, i int, v float64) pipeline.Result {
		t.Helper()
		r, err := s.Push(pipeline.Point{Time: t0.Add(time.Duration(i) * 20 * time.Second), Value: v})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	i := 0
	for ; i < 301; i++ { // three points a bucket, the last bucket open with one
		push(s, i, 1e308)
	}
	plain := Encode(export(t, s))
	push(s, i, 1e308) // the open bucket holds two values of 1e308: its sum is scaled
	i++
	st := export(t, s)
	if st.Bucket == nil || st.Bucket.Shift != 1 {
		t.Fatalf("bucket state %+v, want the sum scaled by 2^1", st.Bucket)
	}
	data := Encode(st)
	got, err := Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	if normal(got) != normal(st) {
		t.Fatalf("round trip changed the state:\n got %.400s\nwant %.400s", normal(got), normal(st))
	}
	r, err := pipeline.Restore("k", cfg, got)
	if err != nil {
		t.Fatal(err)
	}
	a, b := push(s, i+1, 1e308), push(r, i+1, 1e308)
	if a.HasOutcome != b.HasOutcome || a.Outcome.Actual != 1e308 || b.Outcome.Actual != 1e308 {
		t.Fatalf("the bucket closed at %v (outcome %v) restored, %v (%v) uninterrupted; want 1e308", b.Outcome.Actual, b.HasOutcome, a.Outcome.Actual, a.HasOutcome)
	}

	unscaled := st
	b0 := *st.Bucket
	b0.Shift, unscaled.Bucket = 0, &b0
	if len(Encode(unscaled)) >= len(data) {
		t.Fatal("the scale is not written apart")
	}
	if p, err := Decode(plain); err != nil || p.Bucket == nil || p.Bucket.Shift != 0 {
		t.Fatalf("a bucket not scaled: %+v, %v", p.Bucket, err)
	}
	for _, shift := range []int{-1, 65} {
		bad := st
		b := *st.Bucket
		b.Shift, bad.Bucket = shift, &b
		if _, err := Decode(Encode(bad)); !errors.Is(err, ErrMalformed) {
			t.Errorf("scale 2^%d: %v, want ErrMalformed", shift, err)
		}
	}
}
