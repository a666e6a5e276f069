package nab

import (
	"reflect"
	"testing"

	"github.com/forecastd/forecastd/pipeline"
)

// TestRunConcurrent: files run at once score as they do one at a time,
// each by a series and a detector of its own (the race pass runs this).
func TestRunConcurrent(t *testing.T) {
	const dir = "../../testdata/nab"
	ws := map[string][]Window{"nyc_taxi.csv": nil, "ec2_cpu_utilization_77c1ca.csv": nil, "exchange-4_cpc_results.csv": nil}
	one, err := Run(dir, ws, pipeline.DefaultConfig(), func() Detector { return Events{} }, 1)
	if err != nil {
		t.Fatal(err)
	}
	par, err := Run(dir, ws, pipeline.DefaultConfig(), func() Detector { return Events{} }, 3)
	if err != nil {
		t.Fatal(err)
	}
	if len(one) != len(ws) || !reflect.DeepEqual(one, par) {
		t.Fatalf("scores differ run one at a time (%d files) and three at once", len(one))
	}
}
