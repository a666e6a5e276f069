package pipeline

import (
	"math/rand/v2"
	"testing"
	"time"
)

// Interval, the median of the recent spacings kept as they change, is
// the median of the spacings at every point, irregular and with gaps,
// and after a checkpoint's restore.
func TestIntervalKeptMedian(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	cfg := DefaultConfig()
	cfg.MaxGap = 5
	s := mustNew(t, cfg)
	at := time.Unix(1000, 0)
	for i := range 300 {
		d := time.Duration(1+r.IntN(3)) * time.Second
		if i%50 == 49 {
			d = time.Minute // a gap: not a spacing
		}
		at = at.Add(d)
		if _, err := s.Push(Point{Time: at, Value: r.NormFloat64()}); err != nil {
			t.Fatal(err)
		}
		if got, want := s.Interval(), s.spacingMedian(); got != want {
			t.Fatalf("point %d: Interval %v, median of the spacings %v", i, got, want)
		}
	}
	st, err := s.Export()
	if err != nil {
		t.Fatal(err)
	}
	back, err := Restore(s.Key(), cfg, st)
	if err != nil {
		t.Fatal(err)
	}
	if back.Interval() != s.Interval() || back.Interval() == 0 {
		t.Fatalf("restored Interval %v, want %v", back.Interval(), s.Interval())
	}
}
