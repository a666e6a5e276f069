package ahead

import (
	"math"
	"math/rand/v2"
	"testing"
)

// feedCleaner observes vals with a forecast of the shape (the value a
// period before, as clean), and returns the corrections made.
func feedCleaner(vals []float64, p1 int) *cleaner {
	c := &cleaner{}
	for i, y := range vals {
		yhat := 0.0
		b1, b2 := math.NaN(), math.NaN()
		if i >= p1 {
			yhat = vals[i-p1] - c.delta(uint64(i-p1))
			b1 = vals[i-p1]
		}
		c.observe(uint64(i), y, yhat, b1, b2, p1, 10*p1)
	}
	return c
}

func TestCleanerCorrectsOneOffs(t *testing.T) {
	const p = 24
	r := rand.New(rand.NewPCG(1, 2))
	vals := make([]float64, 20*p)
	for i := range vals {
		vals[i] = 10*math.Sin(2*math.Pi*float64(i)/p) + r.NormFloat64()*0.3
	}
	spike := 15*p + 5
	vals[spike] += 100
	c := feedCleaner(vals, p)
	if d := c.delta(uint64(spike)); d < 90 {
		t.Errorf("the spike of 100 is corrected by %v", d)
	}
	for i := range vals {
		if i != spike && c.delta(uint64(i)) != 0 {
			t.Errorf("value %d corrected by %v", i, c.delta(uint64(i)))
		}
	}
}

func TestCleanerKeepsRecurringSpikes(t *testing.T) {
	const p = 24
	vals := make([]float64, 20*p)
	for i := range vals {
		vals[i] = 1 + 0.01*float64(i%3)
		if i%p == 13 {
			vals[i] = 50 // every day at the same hour: the shape
		}
	}
	c := feedCleaner(vals, p)
	for i := 2 * p; i < len(vals); i++ {
		if d := c.delta(uint64(i)); d != 0 {
			t.Fatalf("value %d of a daily spike corrected by %v", i, d)
		}
	}
}

func TestCleanerKeepsLevelShifts(t *testing.T) {
	const p = 24
	r := rand.New(rand.NewPCG(3, 4))
	vals := make([]float64, 20*p)
	for i := range vals {
		vals[i] = 10*math.Sin(2*math.Pi*float64(i)/p) + r.NormFloat64()*0.3
		if i >= 10*p {
			vals[i] += 80 // a new level
		}
	}
	c := feedCleaner(vals, p)
	for i := 10 * p; i < len(vals); i++ {
		if d := c.delta(uint64(i)); d != 0 {
			t.Errorf("value %d after the shift corrected by %v", i, d)
		}
	}
}

func TestCleanerBounded(t *testing.T) {
	const p = 24
	c := &cleaner{sigma: 1, n: cleanStart}
	for i := range 10000 {
		y := 0.0
		if i%3 == 0 {
			y = 1000 // isolated outliers, one every three values
		}
		c.observe(uint64(i), y, 0, 0.5*y+1, math.NaN(), p, 10*p)
		if len(c.corr) > maxCorrections {
			t.Fatalf("%d corrections held", len(c.corr))
		}
	}
	for i := 1; i < len(c.corr); i++ {
		if c.corr[i].t <= c.corr[i-1].t {
			t.Fatalf("corrections out of order at %d", i)
		}
	}
}
