package ahead

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// hist is a History over a growing slice, newest last.
type hist struct{ v []float64 }

func (h *hist) At(k int) float64 { return h.v[len(h.v)-1-k] }
func (h *hist) Held() int        { return len(h.v) }

// shape returns a day of 24 values (a load curve) and a weekly factor:
// days 5 and 6 of each week are lower.
func shape(t int) float64 {
	hr := float64(t % 24)
	v := 100 + 30*math.Sin(2*math.Pi*(hr-8)/24) + 10*math.Sin(4*math.Pi*hr/24)
	if d := (t / 24) % 7; d >= 5 {
		v -= 25
	}
	return v
}

// run pushes n values of gen into a Forecaster of horizon H with periods
// 24 and 168, forecasting after each, and returns it and its history.
func run(t *testing.T, H, n int, gen func(i int) float64) (*Forecaster, *hist) {
	t.Helper()
	f, err := New(Config{Horizon: H, Coverage: 0.95})
	if err != nil {
		t.Fatal(err)
	}
	f.SetPeriods(24, 168, nil)
	h := &hist{}
	for i := range n {
		h.v = append(h.v, gen(i))
		f.Push(h)
		f.Forecast(h, 1, nil)
	}
	return f, h
}

func TestNewRefusesBadConfig(t *testing.T) {
	for _, c := range []Config{
		{Horizon: 1, Coverage: 0.9},
		{Horizon: MaxHorizon + 1, Coverage: 0.9},
		{Horizon: 12, Coverage: 0},
		{Horizon: 12, Coverage: 1},
		{Horizon: 12, Coverage: 0.9, Window: 1},
	} {
		if _, err := New(c); !errors.Is(err, ErrBadConfig) {
			t.Errorf("New(%+v) = %v, want ErrBadConfig", c, err)
		}
	}
}

func TestNormPeriods(t *testing.T) {
	for _, c := range [][4]int{{24, 168, 24, 168}, {168, 24, 24, 168}, {0, 24, 24, 0}, {24, 0, 24, 0}, {1, 24, 24, 0}, {24, 24, 24, 0}, {0, 0, 0, 0}} {
		if a, b := normPeriods(c[0], c[1]); a != c[2] || b != c[3] {
			t.Errorf("normPeriods(%d, %d) = %d, %d, want %d, %d", c[0], c[1], a, b, c[2], c[3])
		}
	}
}

// TestRepeatingShapeFollowed: on a series that repeats a daily and weekly
// shape with small noise, the path reproduces the shape at every step
// (mean absolute error over the path at most seasonal naive's), and no
// step differs from its neighbour by more than the series' largest change
// between two values.
func TestRepeatingShapeFollowed(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	gen := func(i int) float64 { return shape(i) + r.NormFloat64() }
	const H, n = 48, 24 * 7 * 5
	f, h := run(t, H, n, gen)
	maxStep := 0.0
	for i := 1; i < len(h.v); i++ {
		maxStep = math.Max(maxStep, math.Abs(h.v[i]-h.v[i-1]))
	}
	var mae, snaive float64
	path := f.Path()
	for k := 1; k <= H; k++ {
		want := shape(n - 1 + k)
		mae += math.Abs(path[k-1] - want)
		snaive += math.Abs(h.At(24*((k+23)/24)-k) - want)
		if k > 1 && math.Abs(path[k-1]-path[k-2]) > maxStep {
			t.Errorf("step %d: the path moves %.3g from step %d, more than the series' largest change %.3g", k, path[k-1]-path[k-2], k-1, maxStep)
		}
	}
	if mae > snaive {
		t.Errorf("path MAE against the shape %.3g, seasonal naive's %.3g", mae/H, snaive/H)
	}
	if mae/H > 1.5 {
		t.Errorf("path MAE against the shape %.3g, more than the noise makes likely", mae/H)
	}
}

// TestWeekendCarried: the steps of a weekend forecast from a Friday are
// the weekend's shape, not a weekday's.
func TestWeekendCarried(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	gen := func(i int) float64 { return shape(i) + 0.5*r.NormFloat64() }
	// Six weeks, ending at the end of day 4 of the week (a Friday).
	n := 24*7*5 + 24*5
	f, _ := run(t, 48, n, gen)
	for k := 1; k <= 48; k++ {
		if got, want := f.Path()[k-1], shape(n-1+k); math.Abs(got-want) > 6 {
			t.Errorf("step %d (day %d): %.1f, the shape is %.1f", k, ((n-1+k)/24)%7, got, want)
		}
	}
}

func TestIntervalsCoverAtEveryAnchor(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	x := 0.0
	gen := func(i int) float64 {
		x = 0.7*x + r.NormFloat64()*2
		return shape(i) + x
	}
	f, err := New(Config{Horizon: 24, Coverage: 0.9})
	if err != nil {
		t.Fatal(err)
	}
	f.SetPeriods(24, 168, nil)
	h := &hist{}
	hit, n := map[int]int{}, map[int]int{}
	for i := range 20000 {
		h.v = append(h.v, gen(i))
		f.Push(h)
		if i > 3000 {
			for _, s := range f.Scored() {
				if s.HalfWidth < 0 {
					continue
				}
				n[s.Step]++
				if math.Abs(h.At(0)-s.Forecast) <= s.HalfWidth*s.Scale {
					hit[s.Step]++
				}
			}
		}
		f.Forecast(h, 1, nil)
	}
	for _, a := range Anchors(24) {
		if n[a] < 500 {
			t.Fatalf("anchor %d: %d scored", a, n[a])
		}
		if c := float64(hit[a]) / float64(n[a]); math.Abs(c-0.9) > 0.02 {
			t.Errorf("anchor %d: coverage %.3f over %d, want 0.90 ± 0.02", a, c, n[a])
		}
	}
}

// TestScoredAreTheForecasts: every scored forecast is the path's value at
// its step made that many values before, with its label.
func TestScoredAreTheForecasts(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	f, err := New(Config{Horizon: 12, Coverage: 0.9})
	if err != nil {
		t.Fatal(err)
	}
	f.SetPeriods(24, 0, nil)
	h := &hist{}
	paths := map[int][]float64{}
	seen := 0
	for i := range 2000 {
		h.v = append(h.v, shape(i)+r.NormFloat64())
		f.Push(h)
		for _, s := range f.Scored() {
			o := i - s.Step
			if s.Label != int64(o*1000+s.Step) {
				t.Fatalf("value %d: scored step %d labelled %d, want %d", i, s.Step, s.Label, o*1000+s.Step)
			}
			if p := paths[o]; p[s.Step-1] != s.Forecast {
				t.Fatalf("value %d: scored step %d forecast %v, the path of %d said %v", i, s.Step, s.Forecast, o, p[s.Step-1])
			}
			seen++
		}
		f.Forecast(h, 1, func(k int) int64 { return int64(i*1000 + k) })
		paths[i] = slices.Clone(f.Path())
	}
	if seen < 2000 {
		t.Errorf("%d forecasts scored", seen)
	}
}

func TestStateRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	gen := func(i int) float64 {
		v := shape(i) + r.NormFloat64()
		if i%500 == 7 {
			v += 200 // outliers for the cleaner
		}
		return v
	}
	a, h := run(t, 48, 1500, gen)
	st := a.State()
	b, err := New(Config{Horizon: 48, Coverage: 0.95})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.SetState(st); err != nil {
		t.Fatal(err)
	}
	for i := 1500; i < 2500; i++ {
		h.v = append(h.v, gen(i))
		a.Push(h)
		b.Push(h)
		a.Forecast(h, 1, nil)
		b.Forecast(h, 1, nil)
		if !slices.Equal(a.Path(), b.Path()) || !slices.Equal(a.half, b.half) {
			t.Fatalf("value %d: the restored forecaster's path differs", i)
		}
	}
}

func TestSetStateRefusesBadState(t *testing.T) {
	a, _ := run(t, 24, 400, shape)
	good := a.State()
	for name, mod := range map[string]func(*State){
		"anchors":  func(s *State) { s.Anchors = s.Anchors[1:] },
		"periods":  func(s *State) { s.P1, s.P2 = 168, 24 },
		"sar sums": func(s *State) { s.ARs[1].A = s.ARs[1].A[1:] },
		"nan":      func(s *State) { s.Anchors[0].MSE[0] = math.NaN() },
		"profile":  func(s *State) { s.Profile.S1 = s.Profile.S1[1:] },
		"window":   func(s *State) { s.Window = append(s.Window, -1) },
		"sar2":     func(s *State) { s.ARs[2] = nil },
	} {
		st := a.State() // a deep copy to spoil
		mod(&st)
		b, _ := New(Config{Horizon: 24, Coverage: 0.95})
		before := b.State()
		if err := b.SetState(st); !errors.Is(err, ErrBadState) {
			t.Errorf("%s: SetState = %v, want ErrBadState", name, err)
		}
		if after := b.State(); after.T != before.T || after.P1 != before.P1 {
			t.Errorf("%s: a refused state changed the forecaster", name)
		}
	}
	b, _ := New(Config{Horizon: 24, Coverage: 0.95})
	if err := b.SetState(good); err != nil {
		t.Errorf("the good state: %v", err)
	}
}

// ring is a History of the last len(v) values.
type ring struct {
	v   []float64
	pos int // where the next value goes
	n   int
}

func (r *ring) push(x float64) {
	r.v[r.pos] = x
	r.pos = (r.pos + 1) % len(r.v)
	r.n = min(r.n+1, len(r.v))
}
func (r *ring) At(k int) float64 { return r.v[(r.pos-1-k+2*len(r.v))%len(r.v)] }
func (r *ring) Held() int        { return r.n }

func TestNoAllocationsOnceWarm(t *testing.T) {
	f, err := New(Config{Horizon: 48, Coverage: 0.95})
	if err != nil {
		t.Fatal(err)
	}
	f.SetPeriods(24, 168, nil)
	h := &ring{v: make([]float64, f.Reach())}
	i := 0
	step := func() {
		v := shape(i)
		if i%300 == 5 {
			v += 500 // an outlier, corrected once the cleaner holds its place
		}
		h.push(v)
		i++
		f.Push(h)
		f.Forecast(h, 1, func(k int) int64 { return int64(i + k) })
	}
	for range 3000 {
		step()
	}
	if n := testing.AllocsPerRun(1000, step); n != 0 {
		t.Errorf("%v allocations a value once warm", n)
	}
}

// TestEvidenceDecides: on a series with a weekly pattern the long
// period's forecasters carry weight a day ahead; on a daily shape whose
// level wanders, last week's values carry next to none.
func TestEvidenceDecides(t *testing.T) {
	for _, tc := range []struct {
		name   string
		gen    func(r *rand.Rand) func(int) float64
		weekly func(c Candidate) bool
		want   bool
	}{
		{"weekly", func(r *rand.Rand) func(int) float64 {
			return func(i int) float64 { return shape(i) + r.NormFloat64() }
		}, func(c Candidate) bool { return c == Naive2 || c == SAR2 }, true},
		{"daily, wandering", func(r *rand.Rand) func(int) float64 {
			level := 0.0
			return func(i int) float64 {
				level += 0.7 * r.NormFloat64()
				return shape(i%(24*5)) + level + 0.5*r.NormFloat64()
			}
		}, func(c Candidate) bool { return c == Naive2 }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(11, 12))
			f, _ := run(t, 48, 24*7*6, tc.gen(r))
			il, ih, lam := f.around(24)
			var lo, hi weights
			f.anchors[il].weigh(&f.avail, &lo)
			f.anchors[ih].weigh(&f.avail, &hi)
			var w float64
			for c := range Candidates {
				if tc.weekly(c) {
					w += (1-lam)*lo.avg[c] + lam*hi.avg[c]
				}
			}
			if tc.want && w < 0.3 || !tc.want && w > 0.1 {
				t.Errorf("the weekly forecasters weigh %.2f a day ahead", w)
			}
		})
	}
}

func BenchmarkForecast48(b *testing.B) {
	f, _ := New(Config{Horizon: 48, Coverage: 0.95})
	f.SetPeriods(24, 168, nil)
	h := &ring{v: make([]float64, f.Reach())}
	i := 0
	step := func() {
		h.push(shape(i))
		i++
		f.Push(h)
		f.Forecast(h, 1, nil)
	}
	for range 3000 {
		step()
	}
	b.ReportAllocs()
	for b.Loop() {
		step()
	}
}
