package main

import (
	"fmt"
	"io/fs"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/forecastd/forecastd/pipeline"
)

// BenchmarkHistoryNABWarmVsCold reports, for every real NAB stream of 15 days
// or more, the MAE of the one-step forecasts of its 15th day by a series
// warmed from the 14 days before (Series.Prime, what [history] does) and
// by a series started cold on that day (as without [history]), on the
// points both forecast, at the stream's own spacing with the default
// model. BENCHMARKS.md's table is its output:
//
//	go test ./cmd/forecastd -run '^$' -bench HistoryNABWarmVsCold -benchtime 1x -v
//
// A report, not a check, so a benchmark: it needs the whole corpus.
func BenchmarkHistoryNABWarmVsCold(b *testing.B) {
	for b.Loop() {
		historyNABWarmVsCold(b)
	}
}

func historyNABWarmVsCold(t testing.TB) {
	nabStream(t, "realKnownCause/nyc_taxi.csv") // skips without the corpus
	var files []string
	filepath.WalkDir(nabDir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".csv") && strings.HasPrefix(filepath.Base(filepath.Dir(p)), "real") {
			files = append(files, p)
		}
		return nil
	})
	var b strings.Builder
	fmt.Fprintf(&b, "\n| stream | spacing | live points | both forecast | MAE warm | MAE cold | warm/cold |\n|---|---|---|---|---|---|---|\n")
	n, better := 0, 0
	var sumRatio float64
	for _, f := range files {
		rel, _ := filepath.Rel(nabDir, f)
		r := nabStream(t, rel)
		t0 := r.times[0]
		if r.times[len(r.times)-1].Sub(t0) < 15*24*time.Hour {
			continue
		}
		cut, end := t0.Add(14*24*time.Hour), t0.Add(15*24*time.Hour)
		var past, live []pipeline.Point
		for i, tm := range r.times {
			p := pipeline.Point{Time: tm, Value: r.values[i]}
			switch {
			case tm.Before(cut):
				past = append(past, p)
			case tm.Before(end):
				live = append(live, p)
			}
		}
		warm := oneStep(t, past, live)
		cold := oneStep(t, nil, live)
		var aw, ac float64
		both := 0
		for i := range live {
			if math.IsNaN(warm[i]) || math.IsNaN(cold[i]) {
				continue
			}
			aw += math.Abs(warm[i] - live[i].Value)
			ac += math.Abs(cold[i] - live[i].Value)
			both++
		}
		if both == 0 {
			continue
		}
		aw, ac = aw/float64(both), ac/float64(both)
		ratio := aw / ac
		n++
		sumRatio += ratio
		if aw < ac {
			better++
		}
		fmt.Fprintf(&b, "| %s | %v | %d | %d | %.4g | %.4g | %.2f |\n", strings.TrimSuffix(rel, ".csv"), r.times[1].Sub(r.times[0]), len(live), both, aw, ac, ratio)
	}
	if n == 0 {
		t.Fatal("no NAB stream of 15 days")
	}
	fmt.Fprintf(&b, "\n%d streams: warm lower on %d; mean warm/cold %.2f\n", n, better, sumRatio/float64(n))
	t.Log(b.String())
}

// oneStep pushes live after priming a default series with past, and
// returns the one-step forecast of each live point (NaN: none).
func oneStep(t testing.TB, past, live []pipeline.Point) []float64 {
	t.Helper()
	s, err := pipeline.New("s", pipeline.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	s.Prime(past)
	out := make([]float64, len(live))
	for i, p := range live {
		out[i] = math.NaN()
		res, err := s.Push(p)
		if err == nil && res.HasOutcome {
			out[i] = res.Outcome.Forecast.Value
		}
	}
	return out
}
