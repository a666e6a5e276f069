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

// nabDirOf writes a NAB directory under dir: for each category, a file
// spike.csv (a noisy daily cycle at 5 min, seeded by its index) with a
// deviation of 80 over the points of its spike, labelled [spike−50,
// spike+50], and the windows file.
func nabDirOf(t *testing.T, dir string, spikes map[string][]int) {
	t.Helper()
	t0 := time.Date(2014, 4, 1, 0, 0, 0, 0, time.UTC)
	at := func(i int) string { return t0.Add(time.Duration(i) * 5 * time.Minute).Format("2006-01-02 15:04:05") }
	var ws []string
	seed := uint64(1)
	for cat, spike := range spikes {
		os.MkdirAll(filepath.Join(dir, cat), 0o755)
		rng := rand.New(rand.NewPCG(seed, 1))
		seed++
		var b strings.Builder
		b.WriteString("timestamp,value\n")
		for i := 0; i < 2000; i++ {
			v := 50 + 10*math.Sin(2*math.Pi*float64(i)/288) + rng.NormFloat64()
			if i >= spike[0] && i <= spike[len(spike)-1] {
				v += 80
			}
			fmt.Fprintf(&b, "%s,%.3f\n", at(i), v)
		}
		os.WriteFile(filepath.Join(dir, cat, "spike.csv"), []byte(b.String()), 0o644)
		ws = append(ws, fmt.Sprintf(`"%s/spike.csv": [["%s.000000", "%s.000000"]]`, cat, at(spike[0]-50), at(spike[0]+50)))
	}
	os.WriteFile(filepath.Join(dir, "anomaly_windows.json"), []byte("{"+strings.Join(ws, ",")+"}"), 0o644)
}

// TestNABCommand: `forecastd nab DIR` on one synthetic file (a noisy daily
// cycle at 5 min with a deviation at points 1500 and 1501, labelled [1450,
// 1550]) finds the window, and says so in text and JSON, under the three
// profiles and by category; a missing windows file and extra arguments
// are errors.
func TestNABCommand(t *testing.T) {
	dir := t.TempDir()
	nabDirOf(t, dir, map[string][]int{"synthetic": {1500, 1501}})

	out, errOut, code := cli(t, "nab", dir)
	if code != 0 || !strings.Contains(out, "1 files, 1 windows") || !strings.Contains(out, "detected 1, missed 0") {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	for _, want := range []string{"standard ", "reward_low_FP_rate ", "reward_low_FN_rate ", "by category"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in\n%s", want, out)
		}
	}
	if !regexp.MustCompile(`(?m)^synthetic +1 +1 +1 +0 +\d+ +\d+\.\d +\d+\.\d +\d+\.\d$`).MatchString(out) {
		t.Errorf("no category row for synthetic in\n%s", out)
	}
	out, _, code = cli(t, "nab", "--files", dir)
	if code != 0 || !regexp.MustCompile(`(?m)^synthetic/spike\.csv +1 +1 +0 +\d+ +-?\d+\.\d+$`).MatchString(out) {
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

// TestNABHoldout: `forecastd nab --holdout --grid …` on two categories,
// each a file with a deviation of two points, and two candidates: events
// on two points in a row outside, or none at all (a threshold beyond any
// score, extremes and seasonal runs off). Each category held out is
// scored with the candidate chosen on the other, the one that detects:
// both held-out scores and their mean are the fitted ones. Text and JSON;
// --grid without --holdout, of a key that is not one, or without values
// is a usage error.
func TestNABHoldout(t *testing.T) {
	dir := t.TempDir()
	nabDirOf(t, dir, map[string][]int{"first": {1500, 1501}, "second": {1300, 1301}})
	args := []string{"nab", "--holdout", "--anomaly_extreme_quiet", "0s", "--anomaly_seasonal", "0",
		"--grid", "anomaly_threshold=1e12,3"}
	out, errOut, code := cli(t, append(args, dir)...)
	if code != 0 || !strings.Contains(out, "2 candidates") || !strings.Contains(errOut, "candidate 2/2: anomaly_threshold=3") {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	for _, cat := range []string{"first", "second"} {
		if !regexp.MustCompile(`(?m)^` + cat + ` +1 +\d+\.\d +\d+\.\d +\d+\.\d +\d+\.\d +anomaly_threshold=3$`).MatchString(out) {
			t.Errorf("no fold for %s choosing anomaly_threshold=3 in\n%s", cat, out)
		}
	}
	out, _, code = cli(t, append(append(args, "--json"), dir)...)
	var res struct {
		Candidates []string
		Folds      []struct {
			Category, Chosen string
			HeldOut          map[string]struct{ Score float64 } `json:"held_out"`
		}
		HeldOutMean map[string]float64 `json:"held_out_mean"`
		Fitted      string
		FittedMean  map[string]float64 `json:"fitted_mean"`
	}
	if err := json.Unmarshal([]byte(out), &res); code != 0 || err != nil {
		t.Fatalf("--json: exit %d, %v\n%s", code, err, out)
	}
	if len(res.Candidates) != 2 || len(res.Folds) != 2 || res.Fitted != "anomaly_threshold=3" || res.Folds[0].Chosen != "anomaly_threshold=3" {
		t.Fatalf("--json: %+v", res)
	}
	for _, p := range []string{"standard", "reward_low_FP_rate", "reward_low_FN_rate"} {
		if res.HeldOutMean[p] <= 50 || math.Abs(res.HeldOutMean[p]-res.FittedMean[p]) > 1e-9 {
			t.Errorf("%s: held-out mean %v, fitted %v; want the same, above 50", p, res.HeldOutMean[p], res.FittedMean[p])
		}
	}
	for _, bad := range [][]string{
		{"nab", "--grid", "anomaly_threshold=2,3", dir},
		{"nab", "--holdout", "--grid", "anomaly_nonsense=2,3", dir},
		{"nab", "--holdout", "--grid", "anomaly_threshold", dir},
		{"nab", "--holdout", "--grid", "anomaly_threshold=two", dir},
	} {
		if _, errOut, code := cli(t, bad...); code != 2 {
			t.Errorf("%q: exit %d, want 2\n%s", bad, code, errOut)
		}
	}
}
