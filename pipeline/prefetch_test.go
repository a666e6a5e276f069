package pipeline

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// Prefetch changes nothing: series of every kind, stepped with Prefetch
// called on each (and on others, and on nil) between their points, give
// the same results, to the bit, as series stepped without.
func TestPrefetchChangesNothing(t *testing.T) {
	plain := DefaultConfig()
	plain.Target = TargetLevel
	sog := DefaultConfig()
	sog.Kind = SOGSVR
	norma := DefaultConfig()
	norma.Kind = NORMA
	cfgs := []Config{DefaultConfig(), plain, sog, norma}
	const n = 400
	r := rand.New(rand.NewPCG(3, 4))
	vals := loadSeries(r, 1, n)
	var a, b []*Series
	for _, cfg := range cfgs {
		a = append(a, mustNew(t, cfg))
		b = append(b, mustNew(t, cfg))
	}
	var none *Series
	for j := range n {
		for k := range cfgs {
			p := Point{Time: at(j), Value: vals[j]}
			ra, ea := a[k].Push(p)
			b[k].Prefetch()
			b[(k+1)%len(b)].Prefetch()
			none.Prefetch()
			rb, eb := b[k].Push(p)
			if ga, gb := fmt.Sprintf("%+v %v", ra, ea), fmt.Sprintf("%+v %v", rb, eb); ga != gb {
				t.Fatalf("config %d, point %d: with Prefetch %s, without %s", k, j, gb, ga)
			}
		}
	}
}
