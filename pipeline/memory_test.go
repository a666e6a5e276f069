package pipeline

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"

	"github.com/forecastd/forecastd/svr"
)

// loadSeries is the series cmd/forecastd-load publishes: a sine of period 40
// points between 30 and 70 plus Gaussian noise σ = 2, phase per series, one
// point a second (so the default seasonal lags, a day and a week, are out of
// reach and hold no history).
func loadSeries(r *rand.Rand, k, n int) []float64 {
	v := make([]float64, n)
	ph := 2 * math.Pi * float64(k%40) / 40
	for i := range v {
		v[i] = 50 + 20*math.Sin(2*math.Pi*float64(i)/40+ph) + 2*r.NormFloat64()
	}
	return v
}

// liveHeap returns the bytes of live heap after two collections.
func liveHeap() uint64 {
	var ms runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// memPart is one component's share of a warm series, in bytes per series.
type memPart struct {
	name  string
	bytes float64
}

// seriesMemory makes n series of cfg, pushes points values of loadSeries to
// each, and returns the live heap per series, then what each component
// holds, measured by releasing the components one at a time and reading the
// heap the collector gives back: an accounting that follows the code, since
// it asks the runtime and not a formula.
func seriesMemory(tb testing.TB, cfg Config, n, points int, spacing time.Duration) (total float64, parts []memPart, modelBytes float64) {
	r := rand.New(rand.NewPCG(1, 2))
	vals := make([][]float64, n)
	for k := range vals {
		vals[k] = loadSeries(r, k, points)
	}
	keys := make([]string, n)
	for k := range keys {
		keys[k] = fmt.Sprintf("load.s%05d", k)
	}
	h0 := liveHeap()
	p0 := svr.PooledBytes()
	m := make(map[string]*Series, n)
	for k := range n {
		s, err := newSeries(keys[k], &cfg) // one config for all, as a Runner's rule
		if err != nil {
			tb.Fatal(err)
		}
		m[keys[k]] = s
	}
	for k := range n {
		s := m[keys[k]]
		for i, v := range vals[k] {
			if _, err := s.Push(Point{Time: at(0).Add(time.Duration(i) * spacing), Value: v}); err != nil {
				tb.Fatal(err)
			}
		}
	}
	// The regressor's own accounting, where it has one (svr.AOSVR's, checked
	// against the heap by svr's TestAOSVRMemoryParts).
	type parted interface {
		MemoryParts() []svr.MemPart
		Sizes() (s, e, r int)
		Len() int
	}
	var sS, sE, sN float64
	var aparts []svr.MemPart
	for _, s := range m {
		if a, ok := s.model.reg.(parted); ok {
			for i, p := range a.MemoryParts() {
				if i == len(aparts) {
					aparts = append(aparts, svr.MemPart{Name: p.Name})
				}
				aparts[i].Bytes += p.Bytes
			}
			ns, ne, _ := a.Sizes()
			sS, sE, sN = sS+float64(ns), sE+float64(ne), sN+float64(a.Len())
		}
		modelBytes += float64(s.ModelBytes())
	}
	tb.Logf("AOSVR per series: n %.1f, |S| %.1f, |E| %.1f", sN/float64(n), sS/float64(n), sE/float64(n))
	for _, p := range aparts {
		tb.Logf("    AOSVR %-60s %8.0f B", p.Name, float64(p.Bytes)/float64(n))
	}
	modelBytes /= float64(n)
	h1 := liveHeap()
	runtime.KeepAlive(vals) // allocated before h0: live through h1 too
	// The shared pools are the process's, bounded whatever the number of
	// series (svr.PooledBytes): what they gained during the run is not the
	// series' (they outlive them, so the release below does not see it).
	p1 := svr.PooledBytes()
	total = (float64(h1) - float64(h0) - float64(p1-p0)) / float64(n)
	tb.Logf("shared AOSVR pools: %d B in all, %+d B during the run (%.0f B per series here, not counted)", p1, p1-p0, float64(p1-p0)/float64(n))
	prev := liveHeap() // the inputs, live at h0 and h1, are dead now: not the series'

	release := func(name string, f func(s *Series)) {
		for _, s := range m {
			f(s)
		}
		h := liveHeap()
		parts = append(parts, memPart{name, (float64(prev) - float64(h)) / float64(n)})
		prev = h
	}
	release("forecasts ahead (horizon)", func(s *Series) { s.horizon = nil; s.thresholds = nil })
	release("regressor and its forgetting window (handles)", func(s *Series) { s.model = nil })
	release("change features (value ring for lags, levels)", func(s *Series) { s.changes = nil })
	release("conformal residual window", func(s *Series) { s.conformal = nil })
	release("combiner and guard", func(s *Series) { s.comb, s.guard = nil, nil })
	release("delay embedding, scaler, warm-up", func(s *Series) { s.delay, s.scaler, s.warmup = nil, nil, nil })
	release("Series struct, its input buffers, key, map entry", func(s *Series) {})
	clear(m)
	m = nil
	h := liveHeap()
	parts[len(parts)-1].bytes = (float64(prev) - float64(h)) / float64(n)
	return total, parts, modelBytes
}

// BenchmarkSeriesMemory reports the live heap of a series of the default
// configuration (AOSVR W = 100, target change, combined) on the load tool's
// series after 1 point (cold: a publisher's new series), 30 points and 400
// points (warm: the window full), and where it goes. Run it once:
//
//	go test ./pipeline -run '^$' -bench SeriesMemory -benchtime 1x -v
func BenchmarkSeriesMemory(b *testing.B) {
	const n = 400
	for _, points := range []int{1, 30, 400} {
		b.Run(fmt.Sprint("points=", points), func(b *testing.B) {
			for b.Loop() {
				total, parts, mb := seriesMemory(b, DefaultConfig(), n, points, time.Second)
				b.ReportMetric(total, "B/series")
				b.ReportMetric(mb, "model-B/series")
				for _, p := range parts {
					b.Logf("%-70s %8.0f B", p.name, p.bytes)
				}
				b.Logf("%-70s %8.0f B (ModelBytes %0.f)", "total live heap per series", total, mb)
			}
		})
	}
}

// BenchmarkSeriesMemory5m is BenchmarkSeriesMemory on points 5 minutes
// apart, NAB's spacing: the daily (288 points) and weekly (2016 points)
// seasonal lags are in reach, and the change features keep up to the last
// 2017 values for them; after 30 points (young) and 2100 (warm).
func BenchmarkSeriesMemory5m(b *testing.B) {
	const n = 100
	for _, points := range []int{30, 2100} {
		b.Run(fmt.Sprint("points=", points), func(b *testing.B) {
			for b.Loop() {
				total, parts, mb := seriesMemory(b, DefaultConfig(), n, points, 5*time.Minute)
				b.ReportMetric(total, "B/series")
				b.ReportMetric(mb, "model-B/series")
				for _, p := range parts {
					b.Logf("%-70s %8.0f B", p.name, p.bytes)
				}
				b.Logf("%-70s %8.0f B (ModelBytes %0.f)", "total live heap per series", total, mb)
			}
		})
	}
}

// TestSeriesMemoryAccounting checks that the release-by-component
// accounting adds up to the whole: nothing is counted twice or missed.
func TestSeriesMemoryAccounting(t *testing.T) {
	if testing.Short() {
		t.Skip("measures the heap of 300 warm series")
	}
	// 300 series, so that the runtime's own allocations of the run (a few KB,
	// whatever the series) stay well within the 1 % asked.
	total, parts, _ := seriesMemory(t, DefaultConfig(), 300, 200, time.Second)
	var sum float64
	for _, p := range parts {
		sum += p.bytes
	}
	if math.Abs(sum-total) > 0.01*total {
		t.Fatalf("components add up to %.0f B per series, the whole is %.0f B", sum, total)
	}
}

// BenchmarkSeriesMemoryKinds is BenchmarkSeriesMemory's warm series for
// each regressor at its default (AOSVR; SOG-SVR, a dictionary of 16;
// NORMA, 100 terms) and at the larger bounds SOG-SVR and NORMA once had
// (24 atoms, 1 000 terms). 1 200 points fill every kind's bound, and the
// calibration windows. Run it once:
//
//	go test ./pipeline -run '^$' -bench SeriesMemoryKinds -benchtime 1x -v
func BenchmarkSeriesMemoryKinds(b *testing.B) {
	for _, c := range []struct {
		name string
		set  func(*Config)
	}{
		{"aosvr", func(*Config) {}},
		{"sogsvr", func(c *Config) { c.Kind = SOGSVR }},
		{"sogsvr/dict=24", func(c *Config) { c.Kind, c.SOG.MaxDict = SOGSVR, 24 }},
		{"norma", func(c *Config) { c.Kind = NORMA }},
		{"norma/tau=1000", func(c *Config) { c.Kind, c.NORMA.Tau = NORMA, 1000 }},
	} {
		b.Run(c.name, func(b *testing.B) {
			cfg := DefaultConfig()
			c.set(&cfg)
			for b.Loop() {
				total, parts, mb := seriesMemory(b, cfg, 400, 1200, time.Second)
				b.ReportMetric(total, "B/series")
				b.ReportMetric(mb, "model-B/series")
				for _, p := range parts {
					b.Logf("%-70s %8.0f B", p.name, p.bytes)
				}
			}
		})
	}
}

// BenchmarkSeriesMemoryHorizon: the live heap of a warm default series
// (points 5 minutes apart, 2100 of them) forecasting H = 1, 12, 48 and
// 336 steps ahead: what the steps cost is their anchor steps'
// calibrations and pending forecasts, growing with log H.
func BenchmarkSeriesMemoryHorizon(b *testing.B) {
	for _, h := range []int{1, 12, 48, 336} {
		b.Run(fmt.Sprint("H=", h), func(b *testing.B) {
			cfg := DefaultConfig()
			cfg.Horizon = h
			for b.Loop() {
				total, parts, _ := seriesMemory(b, cfg, 20, 2100, 5*time.Minute)
				b.ReportMetric(total, "B/series")
				for _, p := range parts {
					b.Logf("%-70s %8.0f B", p.name, p.bytes)
				}
			}
		})
	}
}
