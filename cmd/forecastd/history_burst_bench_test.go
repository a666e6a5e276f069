package main

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/forecastd/forecastd/internal/testserver/influxtest"
	"github.com/nats-io/nats.go"
)

// BenchmarkHistoryBurstEndToEnd is a burst of new series through the
// daemon's real parts: its embedded NATS server, [history] read from a
// real InfluxDB (which also receives the forecasts), 2 shards. 10 000
// new series, each with 64 points of past in InfluxDB, send their first
// live point at once, in messages of 1 000 lines as Telegraf batches
// them, while a warm series on its own subject sends a point every
// 500 µs until every new series is warmed (and at least 2 000 points).
// It reports that series' latency from its point's publication to its
// forecast's arrival (on fc.hot.hot.v), p50, p99 and max; every point
// must be processed and every new series warmed from its whole past.
// "none" is the same stream without the burst; the others differ in
// [history] rate. A measurement, not a bound: the daemon, InfluxDB and
// this client share the machine.
//
//	go test ./cmd/forecastd -run '^$' -bench HistoryBurstEndToEnd -benchtime 1x -count 2
func BenchmarkHistoryBurstEndToEnd(b *testing.B) {
	influx := influxtest.Shared(b, influxtest.Options{})
	for _, c := range []struct {
		name  string
		n     int
		extra string
	}{{"none", 0, ""}, {"default", 10_000, ""}, {"rate=500", 10_000, "rate = 500\n"}, {"unpaced", 10_000, "rate = 1000000\n"}} {
		b.Run(c.name, func(b *testing.B) { burstEndToEnd(b, influx, c.n, c.extra) })
	}
}

func burstEndToEnd(b *testing.B, influx *influxtest.Server, nNew int, extra string) {
	const past, hotWarm, hotMin, batch = 64, 200, 2000, 1000
	round := 0
	for b.Loop() {
		round++
		meas := fmt.Sprintf("burst%d_%d", time.Now().UnixNano(), round)
		t0 := time.Now().Add(-12 * time.Hour).Truncate(time.Minute)
		var lines strings.Builder
		for s := range nNew {
			for i := range past {
				fmt.Fprintf(&lines, "%s,host=h%d v=%v %d\n", meas, s, float64(i%13+s%7), t0.Add(time.Duration(i)*time.Minute).UnixNano())
			}
			if (s+1)%500 == 0 || s == nNew-1 {
				influx.Write(b, lines.String())
				lines.Reset()
			}
		}

		cfg := historyDaemonConfig(influx.URL, influx.Database, extra)
		cfg = strings.Replace(cfg, "step = \"1h\"\naggregate = \"max\"\nstep_grace = \"1000h\"\n", "", 1)
		cfg = strings.Replace(cfg, `subjects = ["telegraf"]`, `subjects = ["telegraf", "hot"]`, 1)
		rd := startDaemon(b, cfg, nil)
		waitSubscribed(b, rd.d.embedded, "hot")
		nc := connectTest(b, rd.d.embedded.ClientURL())

		// The hot series' forecasts, by their origin point's time.
		var mu sync.Mutex
		arrived := map[int64]time.Time{}
		sub, err := nc.Subscribe("fc.hot.>", func(m *nats.Msg) {
			now := time.Now()
			var p published
			if json.Unmarshal(m.Data, &p) != nil {
				return
			}
			mu.Lock()
			arrived[p.Origin.UnixNano()] = now
			mu.Unlock()
		})
		if err != nil {
			b.Fatal(err)
		}
		if err := sub.SetPendingLimits(-1, -1); err != nil {
			b.Fatal(err)
		}
		hotAt := t0.Add(past * time.Minute)
		hot := func(i int) (time.Time, []byte) {
			at := hotAt.Add(time.Duration(i) * 100 * time.Millisecond)
			return at, fmt.Appendf(nil, "hot,host=hot v=%v %d\n", float64(i%40), at.UnixNano())
		}
		for i := range hotWarm { // warm before the burst
			_, line := hot(i)
			if err := nc.Publish("hot", line); err != nil {
				b.Fatal(err)
			}
		}
		waitFor(b, time.Minute, "the hot series warm", func() bool { return rd.d.runner.Stats().Processed >= hotWarm })
		processed0 := rd.d.runner.Stats().Processed

		var newLines []byte
		burstDone := make(chan struct{})
		start := time.Now()
		go func() {
			defer close(burstDone)
			for s := range nNew {
				newLines = fmt.Appendf(newLines, "%s,host=h%d v=%v %d\n", meas, s, float64(past%13+s%7), hotAt.UnixNano())
				if (s+1)%batch == 0 || s == nNew-1 {
					if err := nc.Publish("telegraf", newLines); err != nil {
						b.Error(err)
						return
					}
					newLines = newLines[:0]
				}
			}
		}()
		type sentPoint struct {
			origin int64
			at     time.Time
		}
		var sent []sentPoint
		deadline := start.Add(5 * time.Minute)
		for i := hotWarm; ; i++ {
			at, line := hot(i)
			sent = append(sent, sentPoint{at.UnixNano(), time.Now()})
			if err := nc.Publish("hot", line); err != nil {
				b.Fatal(err)
			}
			if len(sent) >= hotMin && rd.d.runner.HistoryStats().Warmed >= uint64(nNew) {
				break
			}
			if time.Now().After(deadline) {
				b.Fatalf("%d new series warmed after %v: %+v", rd.d.runner.HistoryStats().Warmed, deadline.Sub(start), rd.d.runner.HistoryStats())
			}
			time.Sleep(500 * time.Microsecond)
		}
		burst := time.Since(start)
		<-burstDone
		for want, end := processed0+uint64(len(sent)+nNew), time.Now().Add(time.Minute); rd.d.runner.Stats().Processed < want; {
			if time.Now().After(end) {
				b.Fatalf("%d points processed of %d: %+v; history %+v\n%s", rd.d.runner.Stats().Processed, want, rd.d.runner.Stats(), rd.d.runner.HistoryStats(), rd.logs)
			}
			time.Sleep(10 * time.Millisecond)
		}
		waitFor(b, time.Minute, "every hot forecast", func() bool {
			mu.Lock()
			defer mu.Unlock()
			_, ok := arrived[sent[len(sent)-1].origin]
			return ok
		})
		rs, hs := rd.d.runner.Stats(), rd.d.runner.HistoryStats()
		if rs.DroppedQueueFull+rs.DroppedShutdown+rs.OutOfOrder != 0 || hs.Warmed != uint64(nNew) || hs.Points != uint64(nNew*past) {
			b.Fatalf("dropped %d/%d, out of order %d; history %+v; want %d series warmed from %d points each",
				rs.DroppedQueueFull, rs.DroppedShutdown, rs.OutOfOrder, hs, nNew, past)
		}
		mu.Lock()
		var lat []time.Duration
		for _, p := range sent {
			if t, ok := arrived[p.origin]; ok {
				lat = append(lat, t.Sub(p.at))
			}
		}
		mu.Unlock()
		if len(lat) != len(sent) {
			b.Fatalf("%d forecasts of the hot series' %d points", len(lat), len(sent))
		}
		slices.Sort(lat)
		b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
		b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
		b.ReportMetric(float64(lat[len(lat)-1].Microseconds()), "max-µs")
		b.ReportMetric(float64(len(lat)), "hot-points")
		b.ReportMetric(burst.Seconds(), "burst-s")
		if nNew > 0 {
			b.ReportMetric(float64(nNew)/burst.Seconds(), "warmed/s")
		}
		rd.stop(b)
	}
}
