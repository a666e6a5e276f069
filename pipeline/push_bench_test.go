package pipeline

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// BenchmarkDefaultPushMany pushes the load tool's series (loadSeries)
// round robin through n warm series of the default configuration, as a
// daemon's shard does: the cost of a point with many models in memory
// (their buffers out of cache, shared pools in use).
func BenchmarkDefaultPushMany(b *testing.B) {
	for _, n := range []int{1, 1000} {
		b.Run(fmt.Sprint("series=", n), func(b *testing.B) {
			const points = 4000
			r := rand.New(rand.NewPCG(1, 2))
			ss := make([]*Series, n)
			vals := make([][]float64, n)
			for k := range ss {
				ss[k] = mustNew(b, DefaultConfig())
				vals[k] = loadSeries(r, k, points)
			}
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
