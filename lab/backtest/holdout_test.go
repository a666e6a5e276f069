package backtest

import (
	"errors"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/forecastd/forecastd/pipeline"
)

// TestHoldoutScores: MASE, sMAPE and MSIS as the M4 competition defines
// them, on values worked by hand.
func TestHoldoutScores(t *testing.T) {
	y := []float64{10, 20, 30, 40}
	f := []float64{12, 18, 30, 50}
	// |e| = 2, 2, 0, 10: mean 3.5; scale 2 → 1.75.
	if got := mase(y, f, 2); got != 1.75 {
		t.Errorf("MASE %v, want 1.75", got)
	}
	// 200·|e|/(|y|+|f|): 400/22, 400/38, 0, 2000/90; mean over 4.
	want := (400.0/22 + 400.0/38 + 0 + 2000.0/90) / 4
	if got := smape(y, f); math.Abs(got-want) > 1e-12 {
		t.Errorf("sMAPE %v, want %v", got, want)
	}
	if got := smape([]float64{0}, []float64{0}); got != 0 {
		t.Errorf("sMAPE of 0 against 0: %v, want 0", got)
	}
	lo := []float64{9, 21, 25, 35}
	hi := []float64{11, 25, 35, 45}
	// Widths 2, 4, 10, 10 = 26; y = 20 is below its interval [21, 25] by
	// 1, which costs 2/α·1 = 40 with α = 0.05; the others are inside.
	ms, cov := msis(y, lo, hi, 0.05, 2)
	if want := (26.0 + 40) / 4 / 2; float64(ms) != want || float64(cov) != 0.75 {
		t.Errorf("MSIS %v coverage %v, want %v and 0.75", ms, cov, want)
	}
	if ms, cov := msis(y, []float64{math.NaN(), 0, 0, 0}, hi, 0.05, 2); !math.IsNaN(float64(ms)) || !math.IsNaN(float64(cov)) {
		t.Errorf("MSIS without every interval: %v %v, want NaN", ms, cov)
	}
	for spacing, want := range map[time.Duration]int{time.Hour: 24, 30 * time.Minute: 48, 5 * time.Minute: 288, 24 * time.Hour: 1, 7 * time.Hour: 1, 0: 1} {
		if got := MASEPeriod(spacing); got != want {
			t.Errorf("MASEPeriod(%v) = %d, want %d", spacing, got, want)
		}
	}
}

// TestHoldoutProtocol: the forecast is the path made at the last training
// point, from the training points only (held-out values changed change
// nothing but the actuals), seasonal naive repeats the last cycle, and the
// scale is the training part's mean seasonal difference.
func TestHoldoutProtocol(t *testing.T) {
	const n, h = 24 * 40, 48
	d := Data{}
	t0 := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range n {
		tm := t0.Add(time.Duration(i) * time.Hour)
		d.Times = append(d.Times, tm)
		d.Secs = append(d.Secs, float64(tm.Unix()))
		d.Values = append(d.Values, 100+10*math.Sin(2*math.Pi*float64(i%24)/24)+float64(i%7))
	}
	cfg := pipeline.DefaultConfig()
	cfg.Horizon, cfg.Coverage = h, 0.95
	a, err := Holdout("s", cfg, d, h, 0)
	if err != nil {
		t.Fatal(err)
	}
	if a.Period != 24 || a.Train != n-h || len(a.Forecast) != h {
		t.Fatalf("period %d, train %d, %d steps", a.Period, a.Train, len(a.Forecast))
	}
	// The same from a series run by hand on the training points.
	s, err := pipeline.New("s", cfg)
	if err != nil {
		t.Fatal(err)
	}
	var last pipeline.Forecast
	for i := range n - h {
		res, err := s.Push(pipeline.Point{Time: d.Times[i], Value: d.Values[i]})
		if err != nil {
			t.Fatal(err)
		}
		last = res.Forecast
	}
	for k := range h {
		if a.Forecast[k] != last.Path[k].Value {
			t.Fatalf("step %d: %v, the series' path %v", k+1, a.Forecast[k], last.Path[k].Value)
		}
		if want := d.Values[n-h+k-24*((k+24)/24)]; a.Snaive[k] != want {
			t.Fatalf("seasonal naive at step %d: %v, want %v", k+1, a.Snaive[k], want)
		}
	}
	var sc float64
	for i := 24; i < n-h; i++ {
		sc += math.Abs(d.Values[i] - d.Values[i-24])
	}
	if want := sc / float64(n-h-24); math.Abs(a.Scale-want) > 1e-12 {
		t.Fatalf("scale %v, want %v", a.Scale, want)
	}
	// Held-out values do not reach the forecast.
	d2 := d
	d2.Values = slices.Clone(d.Values)
	for i := n - h; i < n; i++ {
		d2.Values[i] = 1e6
	}
	b, err := Holdout("s", cfg, d2, h, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(a.Forecast, b.Forecast) || !slices.Equal(a.Lower, b.Lower) || b.MASE <= a.MASE {
		t.Fatal("the held-out values changed the forecast, or not the score")
	}
	if _, err := Holdout("s", cfg, d, h+1, 0); !errors.Is(err, ErrHoldout) {
		t.Fatalf("holding out more than the horizon: %v, want ErrHoldout", err)
	}
	if _, err := Holdout("s", cfg, Data{Times: d.Times[:60], Secs: d.Secs[:60], Values: d.Values[:60]}, h, 0); !errors.Is(err, ErrHoldout) {
		t.Fatalf("a series too short: %v, want ErrHoldout", err)
	}
}
