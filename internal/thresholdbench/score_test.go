package thresholdbench

import (
	"os"
	"strconv"
	"testing"

	"github.com/forecastd/forecastd/anomaly/threshold"
)

// TestTable prints the table on the generated set with THRESHOLDBENCH=1
// (THRESHOLDBENCH_P, _OPEN, _CLOSE override the threshold's settings).
func TestTable(t *testing.T) {
	if os.Getenv("THRESHOLDBENCH") == "" {
		t.Skip("THRESHOLDBENCH not set")
	}
	th := threshold.Config{}
	if v, err := strconv.ParseFloat(os.Getenv("THRESHOLDBENCH_P"), 64); err == nil {
		th.Probability = v
	}
	if v, err := strconv.Atoi(os.Getenv("THRESHOLDBENCH_OPEN")); err == nil {
		th.Open = v
	}
	if v, err := strconv.Atoi(os.Getenv("THRESHOLDBENCH_CLOSE")); err == nil {
		th.Close = v
	}
	ms := Methods(DefaultModel(), th)
	if os.Getenv("THRESHOLDBENCH") == "forecastd" {
		ms = ms[:1]
	}
	rows, err := Run(ms, Generate(3))
	if err != nil {
		t.Fatal(err)
	}
	WriteTable(os.Stdout, rows)
}
