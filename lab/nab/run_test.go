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
// point outside the interval, keep most of what the step floor, the
// surprise, the extremes and the seasonal runs gained (66.5 measured; 31.9
// without any of them), and score above the same detector without the
// seasonal runs (60.5). The figures themselves are reported in
// BENCHMARKS.md, from `forecastd nab`.
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
	cfg := pipeline.DefaultConfig()
	cfg.Anomaly.Seasonal = 0
	plain, err := Run(dir, ws, cfg, func() Detector { return Events{} }, 2)
	if err != nil {
		t.Fatal(err)
	}
	ns, err := At(plain, Standard, EventThreshold)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("default: %+v", def)
	t.Logf("without seasonal runs: %+v", ns)
	t.Logf("every point outside: %+v", nv)
	if def.Score < 64 || def.Score <= nv.Score || def.Score <= ns.Score || def.TP+def.FN != 69 {
		t.Errorf("default detector scores %.1f (%d windows), without seasonal runs %.1f, every point outside %.1f",
			def.Score, def.TP+def.FN, ns.Score, nv.Score)
	}
}
