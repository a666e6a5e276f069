package runner

import (
	"context"
	"fmt"
	"runtime/metrics"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/forecastd/forecastd/pipeline"
)

// cpuTime is the process' user and system CPU time so far.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkPrime is the warm start of one series with the default
// configuration from 14 days at 1 min (20 160 points), on a ladder of
// lengths: the CPU a new series costs before its first live point.
func BenchmarkPrime(b *testing.B) {
	for _, days := range []int{1, 7, 14} {
		pts := dailyPoints(days*1440, time.Minute)
		b.Run(time.Duration(days*24*int(time.Hour)).String(), func(b *testing.B) {
			b.ReportAllocs()
			cpu0 := cpuTime(b)
			for b.Loop() {
				s, err := pipeline.New("s", pipeline.DefaultConfig())
				if err != nil {
					b.Fatal(err)
				}
				if n := s.Prime(pts); n != len(pts) {
					b.Fatalf("primed %d of %d", n, len(pts))
				}
			}
			// The process' CPU (the collector's included) per warm start.
			b.ReportMetric((cpuTime(b)-cpu0).Seconds()/float64(b.N), "cpu-s/op")
		})
	}
}

// latencySink records when the hot series' forecasts are made.
type latencyOutputs struct {
	hot  string
	mu   sync.Mutex
	seen map[int64]time.Time // by the forecast's origin point's time
}

func (o *latencyOutputs) Open(key string, _ pipeline.Config, _ *Input) pipeline.Sink {
	if key != o.hot {
		return discardSink{}
	}
	return o
}

func (o *latencyOutputs) Forecast(_ string, f pipeline.Forecast) error {
	now := time.Now()
	o.mu.Lock()
	o.seen[f.Origin.UnixNano()] = now
	o.mu.Unlock()
	return nil
}

func (o *latencyOutputs) Outcome(string, pipeline.Outcome) error { return nil }

// BenchmarkHistoryBurstLatency: 10 000 new series arrive at once, cold or
// each warmed from 64 points of past (4 queries at once), while a warm
// series goes on receiving points: its point→forecast latency, p50 and
// p99. "none" is the same stream without the burst: the floor the
// machine allows; "cold-elsewhere" the cold burst with every new series
// on the other shard: what the creations on the hot series' own shard
// cost it. A measurement, not a bound: the machine is shared.
func BenchmarkHistoryBurstLatency(b *testing.B) {
	const nNew, nHot = 10_000, 2000
	past := dailyPoints(64+1, time.Minute)
	h := &pastOf{pts: map[string][]pipeline.Point{}}
	for i := range nNew {
		h.pts[fmt.Sprint("new", i)] = past[:64]
	}
	hotPts := dailyPoints(200+nHot, time.Second)
	for _, c := range []struct {
		name      string
		n         int
		hc        HistoryConfig
		elsewhere bool
	}{{"none", 0, HistoryConfig{}, false}, {"cold", nNew, HistoryConfig{}, false},
		{"cold-elsewhere", nNew, HistoryConfig{}, true}, {"warm", nNew, HistoryConfig{Source: h, Rate: 1e6}, false}} {
		b.Run(c.name, func(b *testing.B) { burst(b, c.hc, past, hotPts, c.n, nHot, c.elsewhere) })
	}
}

func burst(b *testing.B, hc HistoryConfig, past, hotPts []pipeline.Point, nNew, nHot int, elsewhere bool) {
	for b.Loop() {
		out := &latencyOutputs{hot: "hot", seen: map[int64]time.Time{}}
		r, err := NewRunner(RunnerConfig{Shards: 2, Default: pipeline.DefaultConfig(), Outputs: out, QueueSize: 65536,
			History: hc})
		if err != nil {
			b.Fatal(err)
		}
		for _, p := range hotPts[:200] { // warm before the burst
			r.Submit(context.Background(), Input{Key: "hot", Point: p})
		}
		for r.Stats().Processed < 200 {
			time.Sleep(time.Millisecond)
		}
		keys := make([]string, 0, nNew)
		for i := 0; len(keys) < nNew; i++ {
			if k := fmt.Sprint("new", i); !elsewhere || r.shardOf(k) != r.shardOf("hot") {
				keys = append(keys, k)
			}
		}
		sent := make([]time.Time, nHot)
		hist0 := readHists()
		done := make(chan struct{})
		go func() {
			defer close(done)
			for _, k := range keys {
				r.Submit(context.Background(), Input{Key: k, Point: past[64]})
			}
		}()
		for i, p := range hotPts[200:] {
			sent[i] = time.Now()
			r.Submit(context.Background(), Input{Key: "hot", Point: p})
			if i%4 == 0 {
				time.Sleep(100 * time.Microsecond) // a stream, not a burst
			}
		}
		<-done
		hist1 := readHists()
		r.Close(context.Background())
		var lat []time.Duration
		for i, p := range hotPts[200:] {
			if t, ok := out.seen[p.Time.UnixNano()]; ok {
				lat = append(lat, t.Sub(sent[i]))
			}
		}
		slices.Sort(lat)
		// No point is lost: every one is processed, and each of the hot
		// series' makes its forecast.
		if rs := r.Stats(); rs.Processed != uint64(200+nHot+nNew) || len(lat) != nHot {
			b.Fatalf("%d points processed of %d, %d forecasts of the hot series of %d", rs.Processed, 200+nHot+nNew, len(lat), nHot)
		}
		st := r.HistoryStats()
		b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
		b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
		b.ReportMetric(float64(st.Warmed), "warmed")
		// The longest a goroutine waited runnable, and the longest
		// stop of the world, during the burst: a scheduling delay
		// or a collector's pause, told apart from the pipeline's own.
		b.ReportMetric(maxDelta(hist0[0], hist1[0])*1e6, "sched-max-µs")
		b.ReportMetric(maxDelta(hist0[1], hist1[1])*1e6, "stw-max-µs")
	}
}

// readHists reads the runtime's histograms of scheduling latency and of
// stops of the world.
func readHists() [2]*metrics.Float64Histogram {
	s := []metrics.Sample{{Name: "/sched/latencies:seconds"}, {Name: "/sched/pauses/total/gc:seconds"}}
	metrics.Read(s)
	return [2]*metrics.Float64Histogram{s[0].Value.Float64Histogram(), s[1].Value.Float64Histogram()}
}

// maxDelta is the lower bound of the highest bucket of b that gained a
// count since a: the longest event between the two reads, within a
// bucket's width.
func maxDelta(a, b *metrics.Float64Histogram) float64 {
	for i := len(b.Counts) - 1; i >= 0; i-- {
		if b.Counts[i] > a.Counts[i] {
			return b.Buckets[i]
		}
	}
	return 0
}
