package pipeline_test

import (
	"math"
	"testing"
	"time"

	"github.com/forecastd/forecastd/pipeline"
)

type countingObserver struct {
	n     int
	total time.Duration
}

func (c *countingObserver) ObserveUpdate(d time.Duration) { c.n++; c.total += d }

// TestUpdateObserver: the observer hears of every model update, and of
// nothing else, with a positive duration.
func TestUpdateObserver(t *testing.T) {
	obs := &countingObserver{}
	cfg := pipeline.DefaultConfig()
	cfg.Observer = obs
	s, err := pipeline.New("obs", cfg)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Unix(1700000000, 0)
	for i := range 400 {
		p := pipeline.Point{Time: t0.Add(time.Duration(i) * time.Second), Value: math.Sin(float64(i) / 7)}
		if _, err := s.Push(p); err != nil {
			t.Fatal(err)
		}
	}
	st := s.Stats()
	if st.Updates == 0 || uint64(obs.n) != st.Updates+st.LearnErrors {
		t.Fatalf("observer heard %d updates, series made %d (+%d refused)", obs.n, st.Updates, st.LearnErrors)
	}
	if obs.total <= 0 {
		t.Fatalf("total update time %v", obs.total)
	}
	if st.UpdateNanos != 0 {
		t.Fatalf("UpdateNanos = %d without MeasureUpdates", st.UpdateNanos)
	}
}
