package nab

import (
	"math"
	"os"
	"testing"

	"github.com/forecastd/forecastd/pipeline"
)

// everyPoint fires at every point outside its forecast's interval: the
// naive detector the default's debouncing must beat.
type everyPoint struct{}

func (everyPoint) Outcome(o pipeline.Outcome) float64 {
	if s := o.Anomaly.Score; s > 1 && !math.IsNaN(s) {
		return 1
	}
	return 0
}

// TestSharedCorpus runs the default detector over the 41 NAB files: it
// must score well above the null detector (0) and above firing at every
// point outside the interval, keep most of what its parts gained (72.0
// measured; 31.9 without the step floor, the surprise, the extremes and
// the seasonal runs), and score above the same detector without the
// seasonal runs (64.7), without the debounce (two points in a row
// outside: 69.6) and without the extremes' margin (70.1). The figures
// themselves are reported in BENCHMARKS.md, from `forecastd nab`.
func TestSharedCorpus(t *testing.T) {
	const dir = "../../testdata/nabcorpus"
	ws, err := LoadWindows(dir + "/anomaly_windows.json")
	if os.IsNotExist(err) && os.Getenv("CI") != "true" {
		t.Skip("shared NAB data not present")
	}
	if err != nil {
		t.Fatal(err)
	}
	if testing.Short() {
		t.Skip("runs 41 files")
	}
	files, err := Run(dir, ws, pipeline.DefaultConfig(), func() Detector { return Events{} }, 2)
	if err != nil {
		t.Fatal(err)
	}
	def, err := At(files, Standard, EventThreshold)
	if err != nil {
		t.Fatal(err)
	}
	naive, err := Run(dir, ws, pipeline.DefaultConfig(), func() Detector { return everyPoint{} }, 2)
	if err != nil {
		t.Fatal(err)
	}
	nv, err := At(naive, Standard, 0.5)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("default: %+v", def)
	t.Logf("every point outside: %+v", nv)
	if def.Score < 70 || def.Score <= nv.Score || def.TP+def.FN != 69 {
		t.Errorf("default detector scores %.1f (%d windows), every point outside %.1f", def.Score, def.TP+def.FN, nv.Score)
	}
	for _, c := range []struct {
		name string
		set  func(*pipeline.Config)
	}{
		{"without seasonal runs", func(c *pipeline.Config) { c.Anomaly.Seasonal = 0 }},
		{"without the debounce", func(c *pipeline.Config) { c.Anomaly.K, c.Anomaly.N = 1, 1 }},
		{"without the extremes' margin", func(c *pipeline.Config) { c.Anomaly.ExtremeMargin = 0 }},
	} {
		cfg := pipeline.DefaultConfig()
		c.set(&cfg)
		files, err := Run(dir, ws, cfg, func() Detector { return Events{} }, 2)
		if err != nil {
			t.Fatal(err)
		}
		r, err := At(files, Standard, EventThreshold)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %+v", c.name, r)
		if r.Score >= def.Score {
			t.Errorf("%s: %.1f, not below the default's %.1f", c.name, r.Score, def.Score)
		}
	}
}
