package embedding

import (
	"errors"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
)

func newChanges(t *testing.T, spec ChangeSpec) *Changes {
	t.Helper()
	c, err := NewChanges(spec)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestChangesInputsByHand: the input vector and target of a short series,
// computed by hand from the definitions in the Changes doc.
func TestChangesInputsByHand(t *testing.T) {
	c := newChanges(t, ChangeSpec{Dim: 2, LevelRates: []float64{0.5}, Seasons: 1})
	if err := c.SetSeasons([]int{3}); err != nil {
		t.Fatal(err)
	}
	xs := []float64{10, 12, 11, 15, 13}
	for _, x := range xs {
		c.Push(x)
	}
	// changes 2, −1, 4, −2: the scale is their mean |·| (start), 2.25
	if s := c.Scale(); s != 2.25 {
		t.Fatalf("scale %v, want 2.25", s)
	}
	// level: 10 → 11 → 11 → 13 → 13
	if l := c.Level(0); l != 13 {
		t.Fatalf("level %v, want 13", l)
	}
	if c.Len() != 5 || !c.Ready() {
		t.Fatalf("Len %d, Ready %v", c.Len(), c.Ready())
	}
	got := make([]float64, c.Len())
	c.Input(got)
	s := 2.25
	want := []float64{
		(13 - 15) / s, (15 - 11) / s, // the last two changes, newest first
		(13 - 13) / s, // distance from the level
		(11 - 13) / s, // x(t+1−P) − x(t), P = 3: x(t−2) = 11
		(11 - 12) / s, // x(t+1−P) − x(t−P) = x(t−2) − x(t−3)
	}
	for i := range want {
		if math.Abs(got[i]-want[i]) > 1e-15 {
			t.Fatalf("input %v, want %v", got, want)
		}
	}
	if v, ok := c.Seasonal(0); !ok || v != 11 {
		t.Fatalf("seasonal naive %v %v, want 11", v, ok)
	}
	if y := c.Target(14); math.Abs(y-1/s) > 1e-15 {
		t.Fatalf("target %v, want %v", y, 1/s)
	}
	if f := c.Unscale(1 / s); math.Abs(f-14) > 1e-12 {
		t.Fatalf("unscale %v, want 14", f)
	}
}

// TestChangesScaleFree: the inputs and targets of a·x + b equal those of x
// (a > 0), to rounding: the model's units do not depend on the series'.
func TestChangesScaleFree(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	spec := ChangeSpec{Dim: 4, LevelRates: []float64{0.05, 0.5}, Seasons: 2}
	a := newChanges(t, spec)
	b := newChanges(t, spec)
	for _, c := range []*Changes{a, b} {
		if err := c.SetSeasons([]int{24, 0}); err != nil {
			t.Fatal(err)
		}
	}
	ia, ib := make([]float64, a.Len()), make([]float64, b.Len())
	x := 0.0
	for i := range 2000 {
		x += r.NormFloat64() + 3*math.Sin(float64(i)/4)
		if i%300 == 7 {
			x += 50 // a level shift
		}
		if a.Ready() {
			if ya, yb := a.Target(x), b.Target(1e6*x-3e7); math.Abs(ya-yb) > 1e-6 {
				t.Fatalf("point %d: targets %v and %v", i, ya, yb)
			}
		}
		a.Push(x)
		b.Push(1e6*x - 3e7)
		if !a.Ready() {
			continue
		}
		a.Input(ia)
		b.Input(ib)
		for k := range ia {
			if math.Abs(ia[k]-ib[k]) > 1e-6 {
				t.Fatalf("point %d: input %d is %v and %v", i, k, ia[k], ib[k])
			}
			if math.Abs(ia[k]) > DefaultClip {
				t.Fatalf("input %v beyond the clip", ia[k])
			}
		}
	}
}

// TestChangesConstantAndSpike: a constant series has scale 1 and zero
// inputs; a spike moves the scale by a bounded amount (winsorised) and the
// inputs stay within the clip.
func TestChangesConstantAndSpike(t *testing.T) {
	c := newChanges(t, ChangeSpec{Dim: 3, LevelRates: []float64{0.2}})
	x := make([]float64, c.Len())
	for range 50 {
		c.Push(7)
	}
	c.Input(x)
	if c.Scale() != 1 || x[0] != 0 || x[3] != 0 {
		t.Fatalf("constant series: scale %v, input %v", c.Scale(), x)
	}
	d := newChanges(t, ChangeSpec{Dim: 3})
	for i := range 100 {
		d.Push(float64(i % 2)) // changes of 1
	}
	before := d.Scale()
	d.Push(1e12)
	if after := d.Scale(); after > before*(1+DefaultScaleRate*winsor)+1e-12 {
		t.Fatalf("one spike moved the scale from %v to %v", before, after)
	}
	d.Input(x[:d.Len()])
	if x[0] != DefaultClip {
		t.Fatalf("spike's change input %v, want the clip %v", x[0], float64(DefaultClip))
	}
}

// TestChangesSeasonsLate: seasons set after values were pushed keep the
// history: the result equals seasons set from the start.
func TestChangesSeasonsLate(t *testing.T) {
	spec := ChangeSpec{Dim: 2, Seasons: 1}
	early := newChanges(t, spec)
	late := newChanges(t, spec)
	if err := early.SetSeasons([]int{5}); err != nil {
		t.Fatal(err)
	}
	for i := range 40 {
		v := float64(i*i%17) + 0.5*float64(i)
		early.Push(v)
		late.Push(v)
		if i == 2 {
			if err := late.SetSeasons([]int{5}); err != nil {
				t.Fatal(err)
			}
		}
		if !early.Ready() {
			continue
		}
		a, b := make([]float64, early.Len()), make([]float64, late.Len())
		early.Input(a)
		late.Input(b)
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("point %d: %v with seasons from the start, %v set late", i, a, b)
		}
	}
	if err := late.SetSeasons([]int{5}); !errors.Is(err, ErrBadConfig) {
		t.Fatalf("second SetSeasons: %v", err)
	}
	if err := newChanges(t, spec).SetSeasons([]int{MaxSeason + 1}); !errors.Is(err, ErrBadConfig) {
		t.Fatalf("too long a period: %v", err)
	}
}

// TestChangesStateRoundTrip: a Changes restored from State goes on exactly
// as the original, across a restart; bad states are refused and leave the
// receiver fresh.
func TestChangesStateRoundTrip(t *testing.T) {
	spec := ChangeSpec{Dim: 3, LevelRates: []float64{0.1}, Seasons: 2}
	for _, cut := range []int{0, 1, 4, 12, 60} {
		a := newChanges(t, spec)
		_ = a.SetSeasons([]int{7, 0})
		r := rand.New(rand.NewPCG(3, uint64(cut)))
		vals := make([]float64, 100)
		for i := range vals {
			vals[i] = r.NormFloat64()
		}
		for i := range cut {
			a.Push(vals[i])
			if i == 30 {
				a.Restart()
			}
		}
		b := newChanges(t, spec)
		if err := b.SetState(a.State()); err != nil {
			t.Fatalf("cut %d: %v", cut, err)
		}
		for i := cut; i < len(vals); i++ {
			a.Push(vals[i])
			b.Push(vals[i])
			if a.Ready() != b.Ready() || a.Scale() != b.Scale() {
				t.Fatalf("cut %d, point %d: diverged", cut, i)
			}
			if a.Ready() {
				x, y := make([]float64, a.Len()), make([]float64, b.Len())
				a.Input(x)
				b.Input(y)
				if !reflect.DeepEqual(x, y) {
					t.Fatalf("cut %d, point %d: inputs %v and %v", cut, i, x, y)
				}
			}
		}
	}
	a := newChanges(t, spec)
	for i := range 20 {
		a.Push(float64(i))
	}
	good := a.State()
	for name, corrupt := range map[string]func(*ChangesState){
		"nan_value":   func(s *ChangesState) { s.Values[0] = math.NaN() },
		"neg_scale":   func(s *ChangesState) { s.Scale = -1 },
		"run_above_n": func(s *ChangesState) { s.Run = s.N + 1 },
		"levels":      func(s *ChangesState) { s.Levels = append(s.Levels, 1) },
		"values":      func(s *ChangesState) { s.Values = append(s.Values, make([]float64, 50)...) },
		"season":      func(s *ChangesState) { s.Seasons = []int{1, 0} },
	} {
		st := a.State()
		st.Values = append([]float64(nil), good.Values...)
		corrupt(&st)
		b := newChanges(t, spec)
		if err := b.SetState(st); !errors.Is(err, ErrBadState) {
			t.Errorf("%s: err = %v, want ErrBadState", name, err)
		}
		if b.n != 0 || b.seasons != nil {
			t.Errorf("%s: a refused state changed the receiver", name)
		}
	}
}

// TestChangesRingGrowsExactly: a Changes whose ring grows with its values
// gives, push after push, the same inputs, targets and state as one whose
// ring had its full size from the start, over random specs, periods,
// values and restarts; the ring never holds room for more than twice the
// values seen (or Dim + 1) nor more than its size.
func TestChangesRingGrowsExactly(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	for trial := range 60 {
		dim := 1 + r.IntN(6)
		seasons := r.IntN(3)
		spec := ChangeSpec{Dim: dim, LevelRates: []float64{0.05}, Seasons: seasons}
		periods := make([]int, seasons)
		for k := range periods {
			if r.IntN(4) > 0 {
				periods[k] = 2 + r.IntN(300)
			}
		}
		lazy, full := newChanges(t, spec), newChanges(t, spec)
		for _, c := range []*Changes{lazy, full} {
			if err := c.SetSeasons(periods); err != nil {
				t.Fatal(err)
			}
		}
		full.ring = make([]float64, full.size) // the old layout: all at once
		n := 50 + r.IntN(700)
		for i := range n {
			v := 100 * r.NormFloat64()
			if r.IntN(50) == 0 {
				lazy.Restart()
				full.Restart()
			}
			lazy.Push(v)
			full.Push(v)
			if lazy.Ready() != full.Ready() || lazy.Scale() != full.Scale() {
				t.Fatalf("trial %d, point %d: ready %v/%v, scale %v/%v", trial, i, lazy.Ready(), full.Ready(), lazy.Scale(), full.Scale())
			}
			if lazy.Ready() {
				a, b := make([]float64, lazy.Len()), make([]float64, full.Len())
				lazy.Input(a)
				full.Input(b)
				if !reflect.DeepEqual(a, b) || lazy.Target(v+1) != full.Target(v+1) {
					t.Fatalf("trial %d (dim %d, periods %v), point %d: inputs %v, want %v", trial, dim, periods, i, a, b)
				}
			}
			if l := len(lazy.ring); l > lazy.size || l > max(2*(i+1), dim+1) {
				t.Fatalf("trial %d, point %d: ring of %d for %d values (size %d)", trial, i, l, i+1, lazy.size)
			}
		}
		if !reflect.DeepEqual(lazy.State(), full.State()) {
			t.Fatalf("trial %d: states differ", trial)
		}
	}
}

// TestMedian checks Changes.Median against the median recomputed from the
// values pushed: for random n and lengths (fewer values held than n, the
// ring wrapped or not), the median of the largest odd count ≤ n of the
// newest values; and that a one-point spike does not move it.
func TestMedian(t *testing.T) {
	rng := rand.New(rand.NewPCG(51, 52))
	for trial := 0; trial < 500; trial++ {
		c := newChanges(t, ChangeSpec{Dim: 1 + rng.IntN(6)})
		var xs []float64
		for range 1 + rng.IntN(40) {
			x := math.Round(rng.NormFloat64() * 10)
			xs = append(xs, x)
			c.Push(x)
		}
		n := 1 + rng.IntN(15)
		held := min(len(xs), c.spec.Dim+1) // the ring keeps Dim+1 values without seasons
		m := min(n, held)
		if m%2 == 0 {
			m--
		}
		last := slices.Clone(xs[len(xs)-m:])
		slices.Sort(last)
		if got := c.Median(n); got != last[m/2] {
			t.Fatalf("trial %d: Median(%d) of %v (held %d) = %v, want %v", trial, n, xs, held, got, last[m/2])
		}
	}
	c := newChanges(t, ChangeSpec{Dim: 5})
	for _, x := range []float64{10, 11, 10, 1e9, 11} {
		c.Push(x)
	}
	if got := c.Median(5); got != 11 {
		t.Errorf("after a spike: %v, want 11", got)
	}
}
