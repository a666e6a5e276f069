package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestReadmeSantaFeFigures: the MAE figures of the Santa Fe laser that the
// docs give (docs/design.md against the paper's setup, docs/backtest.md
// against tune's choice) are what backtest prints now, the default's one
// figure wherever it is given; and neither the README, the docs,
// BENCHMARKS.md nor config.example.toml speaks of issues, a word that
// means nothing to a user.
func TestReadmeSantaFeFigures(t *testing.T) {
	read := func(f string) string {
		t.Helper()
		b, err := os.ReadFile(filepath.Join("../..", f))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	design, backtest := read("docs/design.md"), read("docs/backtest.md")
	const file = "../../testdata/series/santafe_laser_a.csv"
	mae := func(args ...string) string {
		t.Helper()
		return fmt.Sprintf("%.1f", num(t, backtestJSON(t, append(args, file)...), "mae"))
	}
	def := mae()
	figures := regexp.MustCompile(`default's (\d+\.\d)`).FindAllStringSubmatch(design+backtest, -1)
	if len(figures) < 2 {
		t.Fatalf("the docs give the default's MAE %d times, want the two places", len(figures))
	}
	for _, f := range figures {
		if f[1] != def {
			t.Errorf("docs: the default's MAE %s; backtest prints %s", f[1], def)
		}
	}
	tuned := []string{"--c", "30", "--epsilon", "0.1", "--gamma", "0.03"}
	for _, c := range []struct{ doc, text, want string }{
		{"docs/backtest.md", backtest, "`--c 30 --epsilon 0.1 --gamma 0.03`, cuts the backtest MAE from\nthe default's " + def + " to " + mae(tuned...)},
		{"docs/backtest.md", backtest, "and to " + mae(append(tuned, "--seasons", "")...) + " with `--seasons \"\"`"},
		{"docs/design.md", design, "MAE " + mae("--target", "level", "--scale", "warmup:100", "--window", "200", "--gamma", "1", "--c", "10", "--epsilon", "0.1",
			"--seasons", "", "--combine=false") + " against the\ndefault's " + def},
	} {
		if !strings.Contains(c.text, c.want) {
			t.Errorf("%s does not say %q", c.doc, c.want)
		}
	}
	docs, err := filepath.Glob("../../docs/*.md")
	if err != nil || len(docs) == 0 {
		t.Fatalf("docs/*.md: %v, %d files", err, len(docs))
	}
	for _, f := range append(docs, "../../README.md", "../../BENCHMARKS.md", "../../config.example.toml") {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if m := regexp.MustCompile(`(?im)\bissues?\b[^\n]*|(?:^|[\s(])#\d+\b`).FindString(string(b)); m != "" {
			t.Errorf("%s speaks of an issue: %q", f, m)
		}
	}
}
