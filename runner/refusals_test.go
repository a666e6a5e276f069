package runner

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/forecastd/forecastd/pipeline"
)

// TestRunnerCountsOverflow: a bucket whose sum is beyond float64 is
// counted by the runner (points_dropped_total{reason="overflow"}), the
// buckets around it forecast as before.
func TestRunnerCountsOverflow(t *testing.T) {
	rc := newRecorder()
	cfg := pipeline.DefaultConfig()
	cfg.Step, cfg.Aggregate = time.Minute, pipeline.AggSum
	r, err := NewRunner(RunnerConfig{Shards: 1, QueueSize: 8, Default: cfg, Outputs: rc, IdleTTL: -1})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Unix(1_700_000_040, 0)
	for i := range 40 {
		v := float64(i % 7)
		if i == 20 || i == 21 {
			v = 1e308 // one bucket of two: beyond float64
		}
		if err := r.Submit(context.Background(), Input{Key: "s", Point: pipeline.Point{Time: t0.Add(time.Duration(i) * 30 * time.Second), Value: v}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if st := r.Stats(); st.Overflow != 1 {
		t.Fatalf("Overflow = %d, want 1", st.Overflow)
	}
}

// TestRunnerImplausibleSettled: a point a series refuses as implausible
// is settled without error (a redelivery would be refused the same, and
// would count towards a change of level) and counted.
func TestRunnerImplausibleSettled(t *testing.T) {
	rc := newRecorder()
	r, err := NewRunner(RunnerConfig{Shards: 1, QueueSize: 8, Default: pipeline.DefaultConfig(), Outputs: rc})
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
		if err := r.Submit(context.Background(), Input{Key: "s", Point: pipeline.Point{Time: last.t, Value: v}, Msg: last}); err != nil {
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
