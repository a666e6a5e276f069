package main

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBacktestHoldout: `backtest --holdout 24 --horizon 24 --step 1h` on
// the NAB files in testdata reports for each series MASE, sMAPE, MSIS and
// coverage beside seasonal naive's, and a summary of their means over the
// series; the text output has the same summary; and the flags it cannot
// take with it are refused, naming the fix.
func TestBacktestHoldout(t *testing.T) {
	m := backtestJSON(t, "--holdout", "24", "--horizon", "24", "--step", "1h", "--coverage", "0.95", "../../testdata/nab")
	files, err := filepath.Glob("../../testdata/nab/*.csv")
	if err != nil || len(files) == 0 {
		t.Fatalf("testdata/nab: %v, %d files", err, len(files))
	}
	series, ok := m["series"].([]any)
	if !ok || len(series) != len(files) {
		t.Fatalf("series %v, want the %d files", m["series"], len(files))
	}
	var sum, sumSn float64
	for _, x := range series {
		s := x.(map[string]any)
		if e, ok := s["error"]; ok {
			t.Fatalf("%v: %v", s["series"], e)
		}
		if p := num(t, s, "mase_period"); p != 24 {
			t.Fatalf("%v: MASE period %v, want 24 (a day of hours)", s["series"], p)
		}
		for _, k := range []string{"mase", "smape", "msis", "coverage", "snaive_mase", "snaive_smape"} {
			if v := num(t, s, k); !(v >= 0) || math.IsInf(v, 0) {
				t.Fatalf("%v: %s = %v", s["series"], k, v)
			}
		}
		if n := len(s["forecast"].([]any)); n != 24 {
			t.Fatalf("%v: %d forecasts, want 24", s["series"], n)
		}
		sum += num(t, s, "mase")
		sumSn += num(t, s, "snaive_mase")
	}
	n := float64(len(series))
	sm := m["summary"].(map[string]any)
	if got := num(t, sm, "mase"); math.Abs(got-sum/n) > 1e-12 {
		t.Fatalf("summary MASE %v, want the mean %v", got, sum/n)
	}
	if got := num(t, sm, "snaive_mase"); math.Abs(got-sumSn/n) > 1e-12 {
		t.Fatalf("summary seasonal naive MASE %v, want the mean %v", got, sumSn/n)
	}
	text := mustCLI(t, "backtest", "--holdout", "24", "--horizon", "24", "--step", "1h", "../../testdata/nab")
	if !strings.Contains(text, fmt.Sprintf("holdout 24: %d series scored of %d", len(files), len(files))) || !strings.Contains(text, "seasonal naive: MASE") {
		t.Fatalf("text output:\n%s", text)
	}
	png := filepath.Join(t.TempDir(), "h.png")
	mustCLI(t, "backtest", "--holdout", "24", "--horizon", "24", "--step", "1h", "--plot", png, "../../testdata/nab/nyc_taxi.csv")
	if b, err := os.ReadFile(png); err != nil || !bytes.HasPrefix(b, []byte("\x89PNG")) {
		t.Fatalf("--plot wrote no PNG: %v", err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--holdout", "24", "--horizon", "24", "--plot", "h.png", "../../testdata/nab"}, "--plot with --holdout takes one series"},
		// Before any table: not a table of NaN with the error in a cell.
		{[]string{"--holdout", "24", "--horizon", "12"}, "--holdout 24 forecasts the 24 held-out points as one path: it needs --horizon 24 or more (the horizon is 12)"},
		{[]string{"--holdout", "48"}, "it needs --horizon 48 or more (the horizon is 1)"},
		{[]string{"--holdout", "24", "--horizon", "24", "--out", "x.csv"}, "--holdout scores the last points only"},
		{[]string{"--holdout", "-1"}, "must not be negative"},
	} {
		var so, se bytes.Buffer
		code := run(append(append([]string{"backtest"}, tc.args...), "../../testdata/nab/nyc_taxi.csv"), &so, &se)
		if code != 2 || so.Len() != 0 || !strings.Contains(se.String(), tc.want) {
			t.Errorf("%v: exit %d, %s%s; want a usage error containing %q and no table", tc.args, code, so.String(), se.String(), tc.want)
		}
	}
	cfg := filepath.Join(t.TempDir(), "f.toml")
	if err := os.WriteFile(cfg, []byte("[model]\nhorizon = 24\n\n[[rules]]\nmatch = \"short*\"\nhorizon = 6\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var so, se bytes.Buffer
	code := run([]string{"backtest", "--config", cfg, "--holdout", "24", "../../testdata/nab/nyc_taxi.csv"}, &so, &se)
	if want := `[[rules]] 0 (match "short*") of --config has horizon 6; give it 24 or more, or pass --horizon 24`; code != 2 || !strings.Contains(se.String(), want) {
		t.Errorf("a rule's short horizon: exit %d, %s%s; want a usage error containing %q", code, so.String(), se.String(), want)
	}
}
