package telemetry_test

import (
	"testing"
	"time"

	"github.com/forecastd/forecastd/internal/telemetry"
)

// The per-update and per-outcome hooks: a bucket search and atomic adds.

func BenchmarkObserveUpdate(b *testing.B) {
	m := telemetry.New(telemetry.Config{})
	b.ReportAllocs()
	d := 40 * time.Microsecond
	for b.Loop() {
		m.ObserveUpdate(d)
	}
}

// Every shard goroutine observing into the one histogram.
func BenchmarkObserveUpdateParallel(b *testing.B) {
	m := telemetry.New(telemetry.Config{})
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		d := 40 * time.Microsecond
		for pb.Next() {
			m.ObserveUpdate(d)
		}
	})
}

// The reference: the two monotonic clock reads a timed update costs
// (pipeline.Config.MeasureUpdates).
func BenchmarkClockPair(b *testing.B) {
	b.ReportAllocs()
	var sum time.Duration
	for b.Loop() {
		t0 := time.Now()
		sum += time.Since(t0)
	}
	_ = sum
}
