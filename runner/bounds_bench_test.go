package runner

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/forecastd/forecastd/pipeline"
)

// wgAck is an Acker that marks a WaitGroup done.
type wgAck struct{ wg *sync.WaitGroup }

func (a wgAck) Done(error) { a.wg.Done() }

// BenchmarkRunnerNewSeries: the cost of a point that starts a new series,
// with room (uncapped) and at max_series = 50 000 (each such point evicts
// the least recently used series first). Issue #11 measured, at
// max_series 50 000, 20 000 refusals in 2.8 s (a scan each, 140 µs)
// against 0.29 s to create them with no cap (15 µs): the eviction must
// cost about what a creation does. One shard, so that ns/op is the
// shard's work.
func BenchmarkRunnerNewSeries(b *testing.B) {
	const full = 50_000
	for _, tc := range []struct {
		name string
		max  int
	}{{"uncapped", 10_000_000}, {"at_max_series_50000", full}} {
		b.Run(tc.name, func(b *testing.B) {
			r, err := NewRunner(RunnerConfig{Shards: 1, MaxSeries: tc.max, IdleTTL: -1, Default: testConfig(), Outputs: discardOutputs{}})
			if err != nil {
				b.Fatal(err)
			}
			defer r.Close(context.Background())
			var wg sync.WaitGroup
			t := time.Unix(1, 0)
			n := 0
			submit := func() {
				wg.Add(1)
				_ = r.Submit(context.Background(), Input{Key: "s" + strconv.Itoa(n), Point: pipeline.Point{Time: t, Value: 1}, Msg: wgAck{&wg}})
				n++
			}
			for range full {
				submit()
			}
			wg.Wait()
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				submit()
			}
			wg.Wait()
			b.StopTimer()
			if st := r.Stats(); st.SeriesActive > int64(tc.max) {
				b.Fatalf("%d series held, max %d", st.SeriesActive, tc.max)
			}
		})
	}
}

type discardOutputs struct{}

func (discardOutputs) Open(string, pipeline.Config, *Input) pipeline.Sink { return discardSink{} }

type discardSink struct{}

func (discardSink) Forecast(string, pipeline.Forecast) error { return nil }
func (discardSink) Outcome(string, pipeline.Outcome) error   { return nil }
