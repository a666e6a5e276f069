package main

import (
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestReadmeSantaFeFigures: the README's MAE figures of the Santa Fe laser
// are what backtest prints now, the default's one figure wherever it is
// given; and neither README nor config.example.toml speaks of issues, a
// word that means nothing to a user.
func TestReadmeSantaFeFigures(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	const file = "../../testdata/series/santafe_laser_a.csv"
	mae := func(args ...string) string {
		t.Helper()
		return fmt.Sprintf("%.1f", num(t, backtestJSON(t, append(args, file)...), "mae"))
	}
	def := mae()
	figures := regexp.MustCompile(`default's (\d+\.\d)`).FindAllStringSubmatch(readme, -1)
	if len(figures) < 2 {
		t.Fatalf("the README gives the default's MAE %d times, want the two places", len(figures))
	}
	for _, f := range figures {
		if f[1] != def {
			t.Errorf("README: the default's MAE %s; backtest prints %s", f[1], def)
		}
	}
	tuned := []string{"--c", "30", "--epsilon", "0.1", "--gamma", "0.03"}
	for _, want := range []string{
		"`--c 30 --epsilon 0.1 --gamma 0.03`, cuts the backtest MAE from\nthe default's " + def + " to " + mae(tuned...),
		"and to " + mae(append(tuned, "--seasons", "")...) + " with `--seasons \"\"`",
		"MAE " + mae("--target", "level", "--scale", "warmup:100", "--window", "200", "--gamma", "1", "--c", "10", "--epsilon", "0.1",
			"--seasons", "", "--combine=false") + " against the\ndefault's " + def,
	} {
		if !strings.Contains(readme, want) {
			t.Errorf("README does not say %q", want)
		}
	}
	for _, f := range []string{"../../README.md", "../../config.example.toml"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if m := regexp.MustCompile(`(?i)\bissues?\b[^\n]*`).FindString(string(b)); m != "" {
			t.Errorf("%s speaks of an issue: %q", f, m)
		}
	}
}
