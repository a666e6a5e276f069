package pipeline

import (
	"syscall"
	"testing"
	"time"
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
				s, err := New("s", DefaultConfig())
				if err != nil {
					b.Fatal(err)
				}
				if n := s.Prime(pts); n != len(pts) {
					b.Fatalf("primed %d of %d", n, len(pts))
				}
			}
			// The process' CPU (the collector's included) per warm start.
			b.ReportMetric((cpuTime(b) - cpu0).Seconds()/float64(b.N), "cpu-s/op")
		})
	}
}
