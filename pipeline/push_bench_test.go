package pipeline

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/forecastd/forecastd/svr"
)

// BenchmarkDefaultPushMany pushes the load tool's series (loadSeries)
// round robin through n warm series of the default configuration, as a
// daemon's shard does: the cost of a point with many models in memory
// (their buffers out of cache, shared pools in use).
func BenchmarkDefaultPushMany(b *testing.B) {
	for _, n := range []int{1, 1000} {
		b.Run(fmt.Sprint("series=", n), func(b *testing.B) {
			const points = 4000
			ss, vals := loadMany(b, rand.New(rand.NewPCG(1, 2)), n, points)
			i := 0
			push := func() {
				k, j := i%n, i/n
				if _, err := ss[k].Push(Point{Time: at(j), Value: vals[k][j%points]}); err != nil {
					b.Fatal(err)
				}
				i++
			}
			for range 150 * n { // warm: the windows full
				push()
			}
			b.ReportAllocs()
			for b.Loop() {
				push()
			}
		})
	}
}

// loadMany returns n series of the default configuration and, for each,
// points of the load tool's series (loadSeries).
func loadMany(b *testing.B, r *rand.Rand, n, points int) ([]*Series, [][]float64) {
	ss := make([]*Series, n)
	vals := make([][]float64, n)
	for k := range ss {
		ss[k] = mustNew(b, DefaultConfig())
		vals[k] = loadSeries(r, k, points)
	}
	return ss, vals
}

// BenchmarkConformalAdd is the cost of one residual added to a full
// calibration window of the default 200 and the next quantile read.
func BenchmarkConformalAdd(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	vals := make([]float64, 4096)
	for i := range vals {
		vals[i] = math.Abs(r.NormFloat64())
	}
	c := newConformal(DefaultIntervalWindow, DefaultCoverage, DefaultIntervalAdapt)
	for i := range 2 * DefaultIntervalWindow {
		c.add(vals[i])
	}
	i := 0
	for b.Loop() {
		c.add(vals[i&4095])
		c.quantile()
		i++
	}
}

// BenchmarkDefaultPushPrefetch is BenchmarkDefaultPushMany over 20 000
// series taken in a random order, as a daemon's shards meet them, with
// and without prefetching the next series' state (Series.Prefetch) before
// each push, as a shard does: the cost of a point whose series is out of
// the CPU's caches, and what prefetching takes off it. Its set-up pushes
// 2.6 million points first (about a minute).
func BenchmarkDefaultPushPrefetch(b *testing.B) {
	const n, points = 20000, 600
	svr.SetColumnCache(1 << 40) // the daemon's default: every model's columns kept
	defer svr.SetColumnCache(svr.DefaultColumnCache)
	r := rand.New(rand.NewPCG(1, 2))
	ss, vals := loadMany(b, r, n, points)
	order := r.Perm(n)
	i := 0
	prefetch := false
	push := func() {
		k, j := order[i%n], i/n
		if prefetch {
			ss[order[(i+1)%n]].Prefetch()
		}
		if _, err := ss[k].Push(Point{Time: at(j), Value: vals[k][j%points]}); err != nil {
			b.Fatal(err)
		}
		i++
	}
	for range 130 * n { // warm: the windows full
		push()
	}
	for _, p := range []bool{false, true, false, true} { // alternated: the machine drifts
		b.Run(fmt.Sprint("prefetch=", p), func(b *testing.B) {
			prefetch = p
			b.ReportAllocs()
			for b.Loop() {
				push()
			}
		})
	}
}
