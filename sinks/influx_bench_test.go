package sinks

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/forecastd/forecastd/internal/influxtest"
)

// BenchmarkInfluxWrite: forecasts written by parallel goroutines (as the
// shards write them, each its own series) into a sink writing to a real
// influxd: the cost of Write to the shards, the flusher's work running
// beside it on the same cores.
func BenchmarkInfluxWrite(b *testing.B) {
	srv := influxtest.Shared(b, influxtest.Options{})
	s, err := NewInflux(InfluxConfig{URL: srv.URL, Bucket: srv.Bucket, MetricBufferLimit: 100000, FlushInterval: 100 * time.Millisecond})
	if err != nil {
		b.Fatal(err)
	}
	var id atomic.Int64
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		r := forecastRec(fmt.Sprintf("cpu,host=h%d usage_idle", id.Add(1)), "telegraf.cpu", 1, true)
		r.Tags = []Tag{{Key: "cpu", Value: "cpu-total"}, {Key: "host", Value: "h"}}
		for pb.Next() {
			if err := s.Write(r); err != nil {
				b.Fatal(err)
			}
			r.Forecast.Time = r.Forecast.Time.Add(time.Second)
		}
	})
	b.StopTimer()
	if err := s.Close(ctxTimeout(b, time.Minute)); err != nil {
		b.Log(err) // what a slow influxd left: not the benchmark's concern
	}
}

// BenchmarkInfluxEncode: one forecast and its outcome, with source tags,
// encoded as the flusher encodes them for InfluxDB.
func BenchmarkInfluxEncode(b *testing.B) {
	f := forecastRec("cpu,host=a usage_idle", "telegraf.cpu", 1, true)
	f.Tags = []Tag{{Key: "cpu", Value: "cpu-total"}, {Key: "host", Value: "a b"}}
	f.Measurement, f.Field = "cpu", "usage_idle"
	o := outcomeRec(f, 1.5)
	o.Measurement, o.Field = f.Measurement, f.Field
	e := &lineEncoder{measurement: DefaultMeasurement, names: currentTags}
	var buf []byte
	b.ReportAllocs()
	for b.Loop() {
		buf, _ = e.line(buf[:0], &f)
		buf, _ = e.line(buf, &o)
	}
}
