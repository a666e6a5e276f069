package backtest

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/forecastd/forecastd/pipeline"
)

// daily returns n points every 30 minutes of a noisy daily cycle.
func daily(seed uint64, n int) Data {
	r := rand.New(rand.NewPCG(seed, 1))
	d := Data{Times: make([]time.Time, n), Secs: make([]float64, n), Values: make([]float64, n)}
	t0 := time.Unix(1.7e9, 0)
	for i := range n {
		d.Times[i] = t0.Add(time.Duration(i) * 30 * time.Minute)
		d.Secs[i] = float64(d.Times[i].Unix())
		d.Values[i] = 100 + 30*math.Sin(2*math.Pi*float64(i)/48) + 5*r.NormFloat64()
	}
	return d
}

// TestRunScoresEveryStep: a run with H = 3 hands OnRow every row it keeps,
// in order of target point then step; its step-1 figures are those of a
// run with H = 1; and Steps' MAE, baselines and coverage are recomputed
// from the rows and the values by hand (persistence at h: y[i−h]; seasonal
// naive at h: y[i−48], h ≤ 48).
func TestRunScoresEveryStep(t *testing.T) {
	data := daily(1, 48*8)
	cfg := pipeline.DefaultConfig()
	cfg.Horizon = 3
	var seen []Row
	o := Options{ScoreFrom: 0.5, OnRow: func(r Row) error { seen = append(seen, r); return nil }}
	res, err := Run("s", cfg, data, o)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(seen) != fmt.Sprint(res.Rows) { // NaN scores: not ==
		t.Fatalf("OnRow saw %d rows, the result keeps %d", len(seen), len(res.Rows))
	}
	for k := 1; k < len(res.Rows); k++ {
		a, b := res.Rows[k-1], res.Rows[k]
		if b.Index < a.Index || b.Index == a.Index && b.Horizon <= a.Horizon || b.Index < res.Start {
			t.Fatalf("rows %+v, %+v out of order or before %d", a, b, res.Start)
		}
	}
	cfg1 := cfg
	cfg1.Horizon = 1
	one, err := Run("s", cfg1, data, Options{ScoreFrom: 0.5})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(one.Rows, res.StepRows(1)) || one.AE != res.AE || one.N != res.N || one.Covered != res.Covered {
		t.Fatalf("step 1 with H=3 differs from H=1: %d and %d rows, AE %v and %v", len(res.StepRows(1)), len(one.Rows), res.AE, one.AE)
	}

	s := res.Steps(data)
	if s.SnaivePeriod != 48 {
		t.Fatalf("seasonal period %d, want 48", s.SnaivePeriod)
	}
	for h := 1; h <= 3; h++ {
		var ae, pae, sae float64
		var n, ni, cov int
		for _, r := range res.StepRows(h) {
			n++
			ae += math.Abs(r.Actual - r.Forecast)
			pae += math.Abs(r.Actual - data.Values[r.Index-h])
			sae += math.Abs(r.Actual - data.Values[r.Index-48])
			if !math.IsNaN(r.Lower) {
				ni++
				if r.Lower <= r.Actual && r.Actual <= r.Upper {
					cov++
				}
			}
		}
		want := []float64{ae / float64(n), pae / float64(n), sae / float64(n), float64(cov) / float64(ni)}
		got := []float64{float64(s.MAE[h-1]), float64(s.PersistenceMAE[h-1]), float64(s.Snaive[h-1]), float64(s.Coverage[h-1])}
		if s.N[h-1] != n || !slices.Equal(got, want) {
			t.Errorf("step %d: %d rows, MAE, persistence, seasonal naive, coverage %v; by hand %d, %v", h, s.N[h-1], got, n, want)
		}
		if !(got[0] < got[1] && got[0] < got[2]) {
			t.Errorf("step %d: MAE %v not below persistence %v and seasonal naive %v on a noisy daily cycle", h, got[0], got[1], got[2])
		}
	}
	sum := Summarize(res, data)
	if sum.Horizon != 3 || len(sum.MAEByHorizon) != 3 || float64(sum.MAEByHorizon[0]) != float64(sum.MAE) {
		t.Fatalf("summary %+v", sum)
	}
	if one := Summarize(one, data); one.Horizon != 0 || one.MAEByHorizon != nil {
		t.Fatalf("H=1 summary has by-horizon fields: %+v", one)
	}
}

// TestSummarizeBenchByStep: the by-step geo-means and pooled coverage of
// two series' reports are those computed by hand from their reports.
func TestSummarizeBenchByStep(t *testing.T) {
	cfg := pipeline.DefaultConfig()
	cfg.Horizon = 2
	o := Options{ScoreFrom: 0.5}
	var reps []SeriesReport
	for k := range 2 {
		r := Score(k, "s", "f", cfg, daily(uint64(k+5), 48*6), 0, o)
		if r.Status != StatusScored || len(r.MAEvsPersistenceByHorizon) != 2 {
			t.Fatalf("report %+v", r)
		}
		reps = append(reps, r)
	}
	sum := SummarizeBench(o, cfg, reps)
	for h := range 2 {
		g := math.Sqrt(float64(reps[0].MAEvsPersistenceByHorizon[h] * reps[1].MAEvsPersistenceByHorizon[h]))
		if d := math.Abs(float64(sum.MAEvsPersistenceByHorizon[h].GeoMean) - g); d > 1e-12 {
			t.Errorf("step %d: geo-mean %v, by hand %v", h+1, sum.MAEvsPersistenceByHorizon[h].GeoMean, g)
		}
		c := float64(reps[0].coveredByHorizon[h]+reps[1].coveredByHorizon[h]) / float64(reps[0].intervalsByHorizon[h]+reps[1].intervalsByHorizon[h])
		if float64(sum.CoverageByHorizon[h]) != c {
			t.Errorf("step %d: pooled coverage %v, by hand %v", h+1, sum.CoverageByHorizon[h], c)
		}
	}
	if sum.MAEvsPersistenceByHorizon[0].GeoMean != sum.MAEvsPersistence.GeoMean {
		t.Errorf("step 1's geo-mean %v is not the one-step %v", sum.MAEvsPersistenceByHorizon[0].GeoMean, sum.MAEvsPersistence.GeoMean)
	}
}
