package sinks

import (
	"context"
	"fmt"
	"github.com/forecastd/forecastd/internal/config/schema"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkInfluxWrite: forecasts written by parallel goroutines, as the
// shards write them, each its own series, each taking a batch out of the
// buffer after every 1000 forecasts as the flusher does (drainInflux; the
// flusher itself holds one batch, its server unreachable): the cost of a
// record through the buffer, and the writers' contention, without the
// network and without overflow.
func BenchmarkInfluxWrite(b *testing.B) {
	s, err := NewInflux(InfluxConfig{URL: "http://127.0.0.1:1", Bucket: "db", MetricBatchSize: 1000,
		FlushInterval: schema.Dur(time.Hour), RetryInterval: time.Hour, MaxRetryInterval: time.Hour})
	if err != nil {
		b.Fatal(err)
	}
	var id atomic.Int64
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		r := forecastRec(fmt.Sprintf("cpu,host=h%d usage_idle", id.Add(1)), "telegraf.cpu", 1, true)
		r.Tags = []Tag{{Key: "cpu", Value: "cpu-total"}, {Key: "host", Value: "h"}}
		var batch []Record
		for n := 1; pb.Next(); n++ {
			if err := s.Write(r); err != nil {
				b.Fatal(err)
			}
			if n%1000 == 0 {
				batch = drainInflux(s, batch[:0])
			}
		}
	})
	b.StopTimer()
	if st := s.Stats(); st.Dropped != 0 {
		b.Fatalf("%d records dropped: the buffer overflowed", st.Dropped)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	_ = s.Close(ctx) // the flusher's batch: never written
}

// drainInflux takes a batch out of s's buffer as the flusher does.
func drainInflux(s *Influx, batch []Record) []Record {
	s.mu.Lock()
	batch = s.take(batch, 1000)
	s.mu.Unlock()
	clear(batch)
	return batch
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
