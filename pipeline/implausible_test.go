package pipeline

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// TestImplausibleValuesRefused: ten alternating ±1e308 points (finite) in
// a noisy sine must not blind the series' intervals: they are refused and
// counted, and the intervals of the points after them are as wide as
// before (they widened about 10¹¹ times for 40 points when they were
// learned). A real change of level, however large, is taken after a few
// points that agree with each other.
func TestImplausibleValuesRefused(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	s := mustNew(t, DefaultConfig())
	t0 := time.Unix(1_700_000_000, 0)
	i := 0
	width := func(n int, level float64) (w float64) {
		t.Helper()
		for range n {
			res, err := s.Push(Point{Time: t0.Add(time.Duration(i) * time.Second), Value: level + math.Sin(float64(i)/5) + 0.1*rng.NormFloat64()})
			i++
			if errors.Is(err, ErrImplausible) && level != 0 {
				continue // a change of level: taken after a few points
			}
			if err != nil {
				t.Fatal(err)
			}
			if res.HasForecast && res.Forecast.HasInterval() {
				w = max(w, res.Forecast.Upper-res.Forecast.Lower)
			}
		}
		return w
	}
	width(300, 0)
	before := width(50, 0)
	for k := range 10 {
		v := math.MaxFloat64
		if k%2 == 1 {
			v = -v
		}
		_, err := s.Push(Point{Time: t0.Add(time.Duration(i) * time.Second), Value: v})
		i++
		if !errors.Is(err, ErrImplausible) {
			t.Fatalf("point %d = %v: %v, want ErrImplausible", k, v, err)
		}
	}
	if n := s.Stats().Implausible; n != 10 {
		t.Fatalf("Implausible = %d, want 10", n)
	}
	after := width(40, 0)
	if before <= 0 || after > 10*before {
		t.Fatalf("interval width %g before the ±1e308 points, %g after", before, after)
	}

	// A change of level of 10⁹ times the series' scale is real after
	// maxImplausibleRun points: the series forecasts at the new level.
	width(maxImplausibleRun+60, 1e9)
	res, err := s.Push(Point{Time: t0.Add(time.Duration(i) * time.Second), Value: 1e9})
	if err != nil || !res.HasForecast || math.Abs(res.Forecast.Value-1e9) > 1e3 {
		t.Fatalf("after a change of level to 1e9: forecast %+v, %v", res.Forecast, err)
	}
}

// TestRunnerImplausibleSettled: a point a series refuses as implausible
// is settled without error (a redelivery would be refused the same, and
// would count towards a change of level) and counted.
func TestRunnerImplausibleSettled(t *testing.T) {
	rc := newRecorder()
	r, err := NewRunner(RunnerConfig{Shards: 1, QueueSize: 8, Default: DefaultConfig(), Outputs: rc})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Unix(1_700_000_000, 0)
	var last *ack
	for i := range 201 {
		v := math.Sin(float64(i) / 5)
		if i == 200 {
			v = 1e300
		}
		last = &ack{rc: rc, key: "s", t: t0.Add(time.Duration(i) * time.Second), errc: make(chan error, 1)}
		if err := r.Submit(context.Background(), Input{Key: "s", Point: Point{Time: last.t, Value: v}, Msg: last}); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := <-last.errc; err != nil {
		t.Fatalf("the implausible point settled with %v, want nil", err)
	}
	if n := r.Stats().Implausible; n != 1 {
		t.Fatalf("Implausible = %d, want 1", n)
	}
}
