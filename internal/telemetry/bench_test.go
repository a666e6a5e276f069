package telemetry_test

import (
	"testing"
	"time"

	"github.com/forecastd/forecastd/internal/telemetry"
	"github.com/forecastd/forecastd/pipeline"
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

func BenchmarkObserveAbsError(b *testing.B) {
	m := telemetry.New(telemetry.Config{})
	b.ReportAllocs()
	for b.Loop() {
		m.ObserveAbsError(-0.02)
	}
}

// The daemon's path: an outcome through ScoreSink to a sink doing nothing.
func BenchmarkScoreSinkOutcome(b *testing.B) {
	m := telemetry.New(telemetry.Config{})
	s := m.ScoreSink(&recSink{})
	o := pipeline.Outcome{Forecast: pipeline.Forecast{Scaled: 0.1}, ActualScaled: 0.13}
	b.ReportAllocs()
	for b.Loop() {
		_ = s.Outcome("cpu", o)
	}
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
