package pipeline

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// TestValidateReach: a step or interval whose product with the horizon
// reaches past MaxReach is refused, naming both keys; at the bound, every
// step of a forecast made in 2026 is dated after its origin and within
// UnixNano's range.
func TestValidateReach(t *testing.T) {
	for _, c := range []struct {
		name    string
		step    time.Duration
		iv      time.Duration
		horizon int
		bad     string
	}{
		{"step 9000h × 336", 9000 * time.Hour, 0, 336, "step 9000h × horizon 336"},
		{"interval 1000000h × 2", 0, 1e6 * time.Hour, 2, "interval 1000000h × horizon 2"},
		{"step alone over the bound", MaxReach + time.Hour, 0, 1, "step"},
		{"step at the bound", MaxReach / 336, 0, 336, ""},
		{"interval at the bound, horizon 0", 0, MaxReach, 0, ""},
	} {
		cfg := DefaultConfig()
		cfg.Step, cfg.Interval, cfg.Horizon = c.step, c.iv, c.horizon
		err := cfg.Validate()
		switch {
		case c.bad == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.bad != "" && (!errors.Is(err, ErrBadConfig) || !strings.Contains(err.Error(), c.bad) || !strings.Contains(err.Error(), "lower")):
			t.Errorf("%s: %v, want an error naming %q", c.name, err, c.bad)
		}
	}

	cfg := DefaultConfig()
	cfg.Interval, cfg.Horizon = MaxReach/MaxHorizon, MaxHorizon
	s := mustNew(t, cfg)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var last Forecast
	for i := range 40 {
		r, err := s.Push(Point{Time: t0.Add(time.Duration(i) * time.Minute), Value: float64(i % 7)})
		if err != nil {
			t.Fatal(err)
		}
		if r.HasForecast {
			last = r.Forecast
		}
	}
	if len(last.Path) != MaxHorizon {
		t.Fatalf("path of %d steps, want %d", len(last.Path), MaxHorizon)
	}
	for _, st := range last.Path {
		if !st.Time.After(last.Origin) || !time.Unix(0, st.Time.UnixNano()).Equal(st.Time) {
			t.Fatalf("step %d dated %v for an origin %v (UnixNano %d)", st.Horizon, st.Time, last.Origin, st.Time.UnixNano())
		}
	}
}
