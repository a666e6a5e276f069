package lab

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/forecastd/forecastd/anomaly/threshold"
	"github.com/forecastd/forecastd/internal/keyglob"
	"github.com/forecastd/forecastd/pipeline"
)

// countThresholdEvents runs values through a default series with horizon
// h and the threshold th, and returns the events it opened and how many
// times the series itself went beyond the threshold from short of it.
func countThresholdEvents(t testing.TB, r *recorded, h int, th threshold.Config) (opened, crossings int) {
	t.Helper()
	cfg := pipeline.DefaultConfig()
	cfg.Horizon = h
	cfg.Thresholds = []threshold.Config{th}
	s, err := pipeline.New("x", cfg)
	if err != nil {
		t.Fatal(err)
	}
	beyond := func(v float64) bool {
		if th.Direction == threshold.Above {
			return v >= th.Value
		}
		return v <= th.Value
	}
	for i, v := range r.values {
		if i > 0 && beyond(v) && !beyond(r.values[i-1]) {
			crossings++
		}
		res, err := s.Push(pipeline.Point{Time: r.times[i], Value: v})
		if err != nil {
			continue // dropped points are counted by the pipeline
		}
		if res.HasForecast && res.Forecast.Thresholds[0].Event == threshold.Opened {
			opened++
		}
	}
	return opened, crossings
}

// BenchmarkThresholdCounts prints the threshold
// events the default threshold settings raise on the Telegraf capture
// (percentages used above 90, available below 10, idle CPU below 5,
// 48 s ahead at its 1 s) and on
// the NAB real streams (above each stream's 99th percentile, 12 points
// ahead), beside the times each series itself crossed the threshold
// (BENCHMARKS.md "Alerts before the threshold").
//
//	go test ./lab -run '^$' -bench ThresholdCounts -benchtime 1x -v
func BenchmarkThresholdCounts(b *testing.B) {
	for b.Loop() {
		thresholdCounts(b)
	}
}

func thresholdCounts(t testing.TB) {
	series, err := readInflux("../testdata/telegraf/capture.lp", false)
	if err != nil {
		t.Fatal(err)
	}
	keys := slices.Sorted(func(yield func(string) bool) {
		for k := range series {
			if !yield(k) {
				return
			}
		}
	})
	pct, err := keyglob.Compile("* *_percent")
	if err != nil {
		t.Fatal(err)
	}
	idle, err := keyglob.Compile("cpu,* usage_idle")
	if err != nil {
		t.Fatal(err)
	}
	var total, totalCross, watched int
	for _, k := range keys {
		var th threshold.Config
		switch {
		case strings.HasSuffix(k, " available_percent"):
			th = threshold.Config{Value: 10, Direction: threshold.Below}
		case idle.Match(k):
			th = threshold.Config{Value: 5, Direction: threshold.Below}
		case pct.Match(k):
			th = threshold.Config{Value: 90, Direction: threshold.Above}
		default:
			continue
		}
		watched++
		o, c := countThresholdEvents(t, series[k], 48, th)
		total += o
		totalCross += c
		if o > 0 || c > 0 {
			fmt.Printf("telegraf %-60s %s: %d opened, %d crossings\n", k, th, o, c)
		}
	}
	fmt.Printf("telegraf: %d series watched, %d events opened, %d crossings\n", watched, total, totalCross)

	files, _ := filepath.Glob("/work/shared/data/nab/real*/*.csv")
	total, totalCross = 0, 0
	for _, f := range files {
		r, err := readSeries(f, "value", "", false)
		if err != nil {
			t.Fatal(err)
		}
		v := slices.Clone(r.values)
		slices.Sort(v)
		p99 := v[len(v)*99/100]
		o, c := countThresholdEvents(t, r, 12, threshold.Config{Value: p99, Direction: threshold.Above})
		total += o
		totalCross += c
		name := strings.TrimSuffix(filepath.Base(f), ".csv")
		fmt.Printf("nab %-45s above %-10.4g %4d points/day %3d opened, %3d crossings\n", name, p99, int(24*time.Hour/medianSpacing(r.times)), o, c)
	}
	fmt.Printf("nab: %d streams, %d events opened, %d crossings\n", len(files), total, totalCross)
}

func medianSpacing(ts []time.Time) time.Duration {
	d := make([]time.Duration, 0, len(ts))
	for i := 1; i < len(ts); i++ {
		d = append(d, ts[i].Sub(ts[i-1]))
	}
	slices.Sort(d)
	if len(d) == 0 || d[len(d)/2] <= 0 {
		return time.Second
	}
	return d[len(d)/2]
}
