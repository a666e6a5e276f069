package pipeline

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/forecastd/forecastd/anomaly/threshold"
)

// filling returns n points of a line rising by slope per point with
// Gaussian noise of sd (seeded).
func filling(n int, slope, sd float64) []float64 {
	r := rand.New(rand.NewPCG(7, 8))
	v := make([]float64, n)
	for i := range v {
		v[i] = slope*float64(i) + sd*r.NormFloat64()
	}
	return v
}

func thresholdConfig(h int, ts ...threshold.Config) Config {
	cfg := DefaultConfig()
	cfg.Horizon = h
	cfg.Interval = time.Second
	cfg.Thresholds = ts
	return cfg
}

// TestThresholdETAFilling: on a line rising by 1 a point, a threshold 12
// above the last value is crossed about 12 steps ahead (at probability
// ½, the path's own crossing; at 0.9 later, never earlier), below the
// line at once, and one out of reach not at all; an event opened on the
// way, and none closed.
func TestThresholdETAFilling(t *testing.T) {
	const n = 600
	v := filling(n, 1, 0.3)
	top := float64(n-1) + 12
	cfg := thresholdConfig(24,
		threshold.Config{Value: top, Direction: threshold.Above, Probability: 0.5},
		threshold.Config{Value: top, Direction: threshold.Above, Probability: 0.9},
		threshold.Config{Value: -100, Direction: threshold.Below},
		threshold.Config{Value: top + 1000, Direction: threshold.Above})
	s := mustNew(t, cfg)
	var last []threshold.Observation
	opened := make([]int, 4)
	for i, x := range v {
		r, err := s.Push(Point{Time: at(i), Value: x})
		if err != nil {
			t.Fatal(err)
		}
		if !r.HasForecast {
			continue
		}
		if len(r.Forecast.Thresholds) != 4 {
			t.Fatalf("point %d: %d observations", i, len(r.Forecast.Thresholds))
		}
		for k, o := range r.Forecast.Thresholds {
			switch o.Event {
			case threshold.Opened:
				opened[k]++
			case threshold.Closed:
				t.Errorf("point %d: threshold %d closed", i, k)
			}
		}
		last = r.Forecast.Thresholds
	}
	half, high, below, far := last[0], last[1], last[2], last[3]
	if !half.Crossing || half.Step < 10 || half.Step > 14 {
		t.Errorf("p=0.5: crossing %v at step %d, want about 12", half.Crossing, half.Step)
	}
	if half.ETA != time.Duration(half.Step)*time.Second || !half.At.Equal(at(n-1).Add(half.ETA)) {
		t.Errorf("p=0.5: ETA %v at %v for step %d", half.ETA, half.At, half.Step)
	}
	if !(half.Probability >= 0.5) || math.Abs(half.Forecast-top) > 2 {
		t.Errorf("p=0.5: probability %v, forecast %v at the crossing (threshold %v)", half.Probability, half.Forecast, top)
	}
	if !high.Crossing || high.Step < half.Step || !(high.Probability >= 0.9) {
		t.Errorf("p=0.9: crossing %v at step %d (p=0.5's %d), probability %v", high.Crossing, high.Step, half.Step, high.Probability)
	}
	if below.Crossing || !(below.Probability < 1e-6) {
		t.Errorf("below −100: crossing %v, probability %v", below.Crossing, below.Probability)
	}
	if far.Crossing || far.Step != 0 || !(far.Probability < 0.5) {
		t.Errorf("out of reach: crossing %v at step %d, probability %v", far.Crossing, far.Step, far.Probability)
	}
	if opened[0] != 1 || opened[1] != 1 || opened[2] != 0 || opened[3] != 0 {
		t.Errorf("events opened per threshold: %v, want [1 1 0 0]", opened)
	}
}

// TestThresholdOneStep: with H = 1 the threshold is watched at step 1,
// from the series' own calibration.
func TestThresholdOneStep(t *testing.T) {
	v := filling(300, 1, 0.3)
	s := mustNew(t, thresholdConfig(1, threshold.Config{Value: 290, Direction: threshold.Above, Open: 1}))
	rs := run(t, s, v)
	o := rs[len(rs)-1].Forecast.Thresholds[0]
	if !o.Crossing || o.Step != 1 || o.Event != threshold.None {
		t.Errorf("step 1: crossing %v at step %d, event %v; want step 1 and the event open already", o.Crossing, o.Step, o.Event)
	}
}

// TestThresholdsLeaveForecastsUnchanged: the forecasts (their paths and
// intervals) of a series with thresholds are those of the same series
// without, on a seasonal series and on a filling one.
func TestThresholdsLeaveForecastsUnchanged(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for name, v := range map[string][]float64{"seasonal": loadSeries(r, 3, 800), "filling": filling(800, 0.5, 1)} {
		t.Run(name, func(t *testing.T) {
			plain := mustNew(t, thresholdConfig(48))
			with := mustNew(t, thresholdConfig(48, threshold.Config{Value: 60, Direction: threshold.Above},
				threshold.Config{Value: 35, Direction: threshold.Below, Probability: 0.8}))
			for i, x := range v {
				a, err := plain.Push(Point{Time: at(i), Value: x})
				if err != nil {
					t.Fatal(err)
				}
				b, err := with.Push(Point{Time: at(i), Value: x})
				if err != nil {
					t.Fatal(err)
				}
				if a.HasForecast && b.Forecast.Thresholds == nil {
					t.Fatalf("point %d: no threshold observations", i)
				}
				b.Forecast.Thresholds = nil
				if x, y := fmt.Sprintf("%+v", a), fmt.Sprintf("%+v", b); x != y {
					t.Fatalf("point %d differs:\n%s\n%s", i, x, y)
				}
			}
		})
	}
}

// TestThresholdAllocatesNothing: a warm series with thresholds allocates
// nothing per point.
func TestThresholdAllocatesNothing(t *testing.T) {
	v := filling(2000, 0.1, 1)
	s := mustNew(t, thresholdConfig(48, threshold.Config{Value: 150, Direction: threshold.Above},
		threshold.Config{Value: -5, Direction: threshold.Below}))
	run(t, s, v[:1500])
	i := 1500
	if a := testing.AllocsPerRun(400, func() {
		if _, err := s.Push(Point{Time: at(i), Value: v[i]}); err != nil {
			t.Fatal(err)
		}
		i++
	}); a != 0 {
		t.Errorf("%v allocations per point", a)
	}
}

// TestThresholdConfig: thresholds need target change; a bad threshold is
// named by its key.
func TestThresholdConfig(t *testing.T) {
	c := PaperConfig()
	c.Thresholds = []threshold.Config{{Value: 1, Direction: threshold.Above, Probability: 2}}
	err := c.Validate()
	if !errors.Is(err, ErrBadConfig) {
		t.Fatalf("err = %v", err)
	}
	for _, want := range []string{`threshold_above needs target = "change"`, "threshold_probability must lie in (0, 1), got 2"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q does not say %q", err, want)
		}
	}
}

// BenchmarkThreshold is the cost of a point of a warm default series at
// H = 48 without thresholds and with one and two; compare in one run
// (BENCHMARKS.md "Alerts before the threshold").
func BenchmarkThreshold(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	v := loadSeries(r, 1, 4000)
	for _, n := range []int{0, 1, 2} {
		b.Run(fmt.Sprint("thresholds=", n), func(b *testing.B) {
			ts := []threshold.Config{{Value: 68, Direction: threshold.Above}, {Value: 32, Direction: threshold.Below}}[:n]
			s := mustNew(b, thresholdConfig(48, ts...))
			i := 0
			push := func() {
				if _, err := s.Push(Point{Time: at(i), Value: v[i%len(v)]}); err != nil {
					b.Fatal(err)
				}
				i++
			}
			for range 600 {
				push()
			}
			b.ReportAllocs()
			for b.Loop() {
				push()
			}
		})
	}
}

// BenchmarkThresholdObserve is the cost of what a threshold adds to a
// point, alone: observeThresholds on a warm series' newest forecast at
// H = 48, with one threshold the path crosses half-way and one it does
// not (the whole path scanned), beside the point's whole cost
// (push, without thresholds) in the same run.
func BenchmarkThresholdObserve(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	v := loadSeries(r, 1, 4000)
	plain := mustNew(b, thresholdConfig(48))
	s := mustNew(b, thresholdConfig(48, threshold.Config{Value: 68, Direction: threshold.Above}))
	var f Forecast
	for i := range 1200 {
		res, err := s.Push(Point{Time: at(i), Value: v[i]})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := plain.Push(Point{Time: at(i), Value: v[i]}); err != nil {
			b.Fatal(err)
		}
		if res.HasForecast {
			f = res.Forecast
		}
	}
	scale := s.changes.Scale()
	i := 1200
	b.Run("push", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := plain.Push(Point{Time: at(i), Value: v[i%len(v)]}); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
	for _, c := range []struct {
		name  string
		value float64
	}{{"crossing-early", f.Path[24].Value}, {"not-crossing", 1e9}} {
		b.Run("threshold="+c.name, func(b *testing.B) {
			s.thresholds.tr[0], _ = threshold.NewTracker(threshold.Config{Value: c.value, Direction: threshold.Above})
			b.ReportAllocs()
			for b.Loop() {
				s.observeThresholds(&f, scale)
			}
		})
	}
}

// TestThresholdCheckpoint: thresholds are not part of a series' state: a
// checkpoint of a series without them restores into a configuration
// with them (and back), and the restored series forecasts as the one
// that never stopped; the debounce starts again (no event is open after
// a restore).
func TestThresholdCheckpoint(t *testing.T) {
	v := filling(700, 0.5, 0.3)
	th := threshold.Config{Value: 360, Direction: threshold.Above}
	plain := mustNew(t, thresholdConfig(24))
	with := mustNew(t, thresholdConfig(24, th))
	run(t, plain, v[:500])
	run(t, with, v[:500])
	st, err := plain.Export()
	if err != nil {
		t.Fatal(err)
	}
	restored, err := Restore("test", thresholdConfig(24, th), st)
	if err != nil {
		t.Fatal(err)
	}
	opened := 0
	for i := 500; i < len(v); i++ {
		a, err := with.Push(Point{Time: at(i), Value: v[i]})
		if err != nil {
			t.Fatal(err)
		}
		b, err := restored.Push(Point{Time: at(i), Value: v[i]})
		if err != nil {
			t.Fatal(err)
		}
		if b.HasForecast && b.Forecast.Thresholds[0].Event == threshold.Opened {
			opened++
		}
		ca, cb := a.Forecast, b.Forecast
		ca.Thresholds, cb.Thresholds = nil, nil
		if x, y := fmt.Sprintf("%+v", ca), fmt.Sprintf("%+v", cb); x != y {
			t.Fatalf("point %d: restored forecast differs:\n%s\n%s", i, x, y)
		}
	}
	if opened != 1 {
		t.Errorf("%d events opened after the restore, want 1", opened)
	}
	st2, err := with.Export()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Restore("test", thresholdConfig(24), st2); err != nil {
		t.Errorf("a state with thresholds restored without: %v", err)
	}
}

// TestThresholdConstructed: on a constructed path and error
// distributions, the step and probability are those computed by hand.
// Horizon 8; the errors relative to a step's mean error are k/10,
// k = 1…10, and step h's mean error is h, so that step h's quantile
// function is Q_h(u) = h·u; step 1's residuals are k/10. The path falls by
// 1 a step from 10 (step h at 10 − h, running scale 1), the threshold is
// "below 3.5": step h is beyond it by m = h − 6.5, and reaches probability
// p when m ≥ Q_h(2p − 1) = (2p − 1)·h.
func TestThresholdConstructed(t *testing.T) {
	t0 := time.Unix(1000, 0)
	for _, c := range []struct {
		p     float64
		cross bool
		step  int
		prob  float64 // at the step, or at the closest (8)
	}{
		{0.5, true, 7, 1 - (1-0.5/7)/2},  // m = 0.5 ≥ 0 first at 7
		{0.55, true, 8, 1 - (1-1.5/8)/2}, // 0.9h ≥ 6.5 from h = 7.2
		{0.6, false, 0, 1 - (1-1.5/8)/2}, // 0.8h ≥ 6.5 from h = 8.1: beyond the horizon
		{0.3, true, 5, (1 - 1.5/5) / 2},  // m ≥ −0.4h from h = 4.6: step 5, short by 1.5
	} {
		s := mustNew(t, thresholdConfig(8, threshold.Config{Value: 3.5, Direction: threshold.Below, Probability: c.p}))
		z := s.horizon
		unit := make([]float64, 10)
		for k := range unit {
			unit[k] = float64(k+1) / 10
		}
		z.errors = func(h int) ([]float64, float64) { return unit, float64(h) }
		scaled := make([]float64, 8)
		z.scaled = func() []float64 { return scaled }
		for k := 1; k <= 10; k++ {
			s.conformal.add(float64(k) / 10)
		}
		s.pendingHalfWidth = 1
		for h := 1; h <= 8; h++ {
			scaled[h-1] = 10 - float64(h)
			z.path[h-1] = Step{Horizon: h, Time: t0.Add(time.Duration(h) * time.Second), Value: 10 - float64(h), Lower: math.NaN(), Upper: math.NaN()}
		}
		f := Forecast{Origin: t0, Time: t0.Add(time.Second), Value: 9, Scaled: 9, Lower: math.NaN(), Upper: math.NaN(), Path: z.path}
		o := s.observeThresholds(&f, 1)[0]
		if o.Crossing != c.cross || o.Step != c.step || math.Abs(o.Probability-c.prob) > 1e-9 {
			t.Errorf("p=%v: crossing %v at step %d, probability %v; want %v at %d, %v", c.p, o.Crossing, o.Step, o.Probability, c.cross, c.step, c.prob)
		}
		if c.cross && (o.ETA != time.Duration(c.step)*time.Second || o.Forecast != 10-float64(c.step)) {
			t.Errorf("p=%v: ETA %v, forecast %v", c.p, o.ETA, o.Forecast)
		}
	}
}

// TestThresholdNoFlap: a series that sits on its threshold (after a fall
// to it, or noise below it) and square waves around it, of periods 2 to
// 20 points at horizons 1 to 24, make no event stream that flaps faster
// than its debounce: two events of a threshold are at least
// min(threshold_open, threshold_close) forecasts apart, an update is
// rare (a crossing that recedes with the clock, or stays a few steps
// ahead, is not news), and no opened or updated event has a probability
// below threshold_probability. (Before: 190 updates in 195 forecasts on
// the threshold, each at probability 0; 426 in 995 for a period of 4.)
func TestThresholdNoFlap(t *testing.T) {
	type stream struct {
		name string
		h    int
		v    func(i int) float64
	}
	var streams []stream
	for _, h := range []int{2, 12, 48} {
		streams = append(streams,
			stream{fmt.Sprintf("fall then flat, h %d", h), h, func(i int) float64 { return 40 + 0.1*float64(max(0, 200-i)) }},
			stream{fmt.Sprintf("noise then flat, h %d", h), h, func(i int) float64 {
				if i < 200 {
					return 40 - 3*math.Abs(math.Sin(float64(i)*1.7))
				}
				return 40
			}})
	}
	for _, h := range []int{1, 6, 12, 24} {
		for per := 2; per <= 20; per++ {
			streams = append(streams, stream{fmt.Sprintf("square wave of period %d, h %d", per, h), h, func(i int) float64 {
				if i%per >= per/2 {
					return 41
				}
				return 39
			}})
		}
	}
	for _, st := range streams {
		for _, dir := range []threshold.Direction{threshold.Above, threshold.Below} {
			tc := threshold.Config{Value: 40, Direction: dir}.WithDefaults()
			s := mustNew(t, thresholdConfig(st.h, tc))
			last, updates, forecasts := -1, 0, 0
			for i := range 1000 {
				r, err := s.Push(Point{Time: at(i), Value: st.v(i)})
				if err != nil {
					t.Fatal(err)
				}
				if !r.HasForecast {
					continue
				}
				forecasts++
				o := r.Forecast.Thresholds[0]
				if o.Event == threshold.None {
					continue
				}
				if o.Event != threshold.Closed && !(o.Probability >= tc.Probability) {
					t.Fatalf("%s, %v: forecast %d %v at probability %v, below %v", st.name, dir, i, o.Event, o.Probability, tc.Probability)
				}
				if last >= 0 && i-last < min(tc.Open, tc.Close) {
					t.Fatalf("%s, %v: forecast %d %v, %d forecasts after the last event", st.name, dir, i, o.Event, i-last)
				}
				last = i
				if o.Event == threshold.Updated {
					updates++
				}
			}
			if updates > forecasts/100 {
				t.Errorf("%s, %v: %d updates in %d forecasts", st.name, dir, updates, forecasts)
			}
		}
	}
}
