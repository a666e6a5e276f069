package main

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestNABCommand: `forecastd nab DIR` on one synthetic file (a noisy daily
// cycle at 5 min with a spike at point 1500, labelled [1450, 1550]) finds
// the window, and says so in text and JSON; a missing windows file and
// extra arguments are errors.
func TestNABCommand(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "synthetic"), 0o755)
	t0 := time.Date(2014, 4, 1, 0, 0, 0, 0, time.UTC)
	at := func(i int) string { return t0.Add(time.Duration(i) * 5 * time.Minute).Format("2006-01-02 15:04:05") }
	rng := rand.New(rand.NewPCG(1, 1))
	var b strings.Builder
	b.WriteString("timestamp,value\n")
	for i := 0; i < 2000; i++ {
		v := 50 + 10*math.Sin(2*math.Pi*float64(i)/288) + rng.NormFloat64()
		if i == 1500 {
			v += 80
		}
		fmt.Fprintf(&b, "%s,%.3f\n", at(i), v)
	}
	os.WriteFile(filepath.Join(dir, "synthetic", "spike.csv"), []byte(b.String()), 0o644)
	ws := fmt.Sprintf(`{"synthetic/spike.csv": [["%s.000000", "%s.000000"]]}`, at(1450), at(1550))
	os.WriteFile(filepath.Join(dir, "anomaly_windows.json"), []byte(ws), 0o644)

	out, errOut, code := cli(t, "nab", dir)
	if code != 0 || !strings.Contains(out, "1 files, 1 windows") || !strings.Contains(out, "detected 1, missed 0") {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	out, _, code = cli(t, "nab", "--files", dir)
	if code != 0 || !regexp.MustCompile(`(?m)^synthetic/spike\.csv +1 +1 +0 +\d+$`).MatchString(out) {
		t.Fatalf("--files: exit %d\n%s", code, out)
	}
	out, _, code = cli(t, "nab", "--json", dir)
	var res struct {
		Files  int
		Events struct{ TP, FN int }
		ByFile []struct {
			File             string
			Windows          int
			Detected, Missed int
		} `json:"by_file"`
	}
	if err := json.Unmarshal([]byte(out), &res); code != 0 || err != nil || res.Files != 1 || res.Events.TP != 1 ||
		len(res.ByFile) != 1 || res.ByFile[0].File != "synthetic/spike.csv" || res.ByFile[0].Windows != 1 || res.ByFile[0].Detected != 1 {
		t.Fatalf("exit %d, %v: %s", code, err, out)
	}
	if _, errOut, code := cli(t, "nab", t.TempDir()); code != 1 || !strings.Contains(errOut, "anomaly_windows.json") {
		t.Errorf("no windows file: exit %d, %s", code, errOut)
	}
	// The [model] keys are flags: a detector that never opens an event
	// (threshold beyond any score, extremes off) detects nothing; a bad
	// value is a usage error naming the key.
	out, errOut, code = cli(t, "nab", "--anomaly_threshold", "1e12", "--anomaly_extreme_quiet", "0s", dir)
	if code != 0 || !strings.Contains(out, "detected 0, missed 1") {
		t.Fatalf("--anomaly_threshold 1e12: exit %d\n%s%s", code, out, errOut)
	}
	if _, errOut, code := cli(t, "nab", "--anomaly_surprise", "-1", dir); code != 2 || !strings.Contains(errOut, "surprise") {
		t.Errorf("--anomaly_surprise -1: exit %d, %s", code, errOut)
	}
	if _, _, code := cli(t, "nab", dir, dir); code != 2 {
		t.Errorf("two directories: exit %d, want 2", code)
	}
}
