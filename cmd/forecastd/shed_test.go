package main

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/forecastd/forecastd/pipeline"
	"github.com/forecastd/forecastd/runner"
	"github.com/forecastd/forecastd/sources"
)

// gateOutputs holds the shard that creates the series "blocker" in Open
// until open is closed; other series' sinks take everything.
type gateOutputs struct{ open chan struct{} }

func (o gateOutputs) Open(key string, _ pipeline.Config, _ *runner.Input) pipeline.Sink {
	if key == "blocker" {
		<-o.open
	}
	return discardSink{}
}

type discardSink struct{}

func (discardSink) Forecast(string, pipeline.Forecast) error { return nil }
func (discardSink) Outcome(string, pipeline.Outcome) error   { return nil }

// TestDeliverShedsNewSeriesUnderBacklog: while the core NATS client's
// buffer is filling (backlog above shedBacklog), a point that would make
// a new series is dropped at once, and counted, when its shard cannot
// take it, so that the reading goroutine goes on to the series already
// held; a held series' point waits for its shard instead, and is not
// lost. Nothing here depends on how fast anything runs: the shard is
// held, creating the series "blocker", until the test lets it go.
func TestDeliverShedsNewSeriesUnderBacklog(t *testing.T) {
	open := make(chan struct{})
	r, err := runner.NewRunner(runner.RunnerConfig{Shards: 1, QueueSize: 1, Default: pipeline.DefaultConfig(), Outputs: gateOutputs{open}, IdleTTL: -1})
	if err != nil {
		t.Fatal(err)
	}
	d := &daemon{runner: r}
	high := func() float64 { return 1 }
	d.backlog.Store(&high)
	t0 := time.Unix(1_700_000_000, 0)
	msg := func(key string, i int) *sources.Message {
		return sources.NewMessage(key, []sources.KeyedPoint{{Key: key, Time: t0.Add(time.Duration(i) * time.Second), Value: float64(i % 3)}})
	}
	ctx := context.Background()
	d.deliver(ctx, msg("held", 0))
	for r.Stats().Processed < 1 { // a bound only against a hang: the test's timeout
		time.Sleep(time.Millisecond)
	}
	d.deliver(ctx, msg("blocker", 0)) // the shard takes it, and waits in Open
	// New series' points: the slow lane holds one; the rest are shed at
	// once, each counted.
	const news = 20
	for i := range news {
		d.deliver(ctx, msg(fmt.Sprintf("new%d", i), 0))
	}
	if st := r.Stats(); st.DroppedQueueFull < news-2 {
		t.Fatalf("%d of %d new series' points shed under the backlog while their shard was held, want at least %d", st.DroppedQueueFull, news, news-2)
	}
	shed := r.Stats().DroppedQueueFull
	// A held series' point waits for the shard, even under the backlog.
	heldDone := make(chan struct{})
	go func() {
		defer close(heldDone)
		for i := 1; i < 5; i++ {
			d.deliver(ctx, msg("held", i))
		}
	}()
	close(open)
	<-heldDone
	if err := r.Close(ctx); err != nil {
		t.Fatal(err)
	}
	st := r.Stats()
	if st.DroppedQueueFull != shed || st.Processed+st.DroppedQueueFull != st.Submitted || st.DroppedClosed != 0 || st.DroppedShutdown != 0 {
		t.Fatalf("stats %+v: the held series' points processed, every point processed or shed", st)
	}
}
