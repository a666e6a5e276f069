package main

import (
	"strings"
	"testing"
	"time"

	"github.com/forecastd/forecastd/internal/config"
)

// TestDurationsWithDays: durations take days and weeks ("7d", "1w"), as
// seasons does, besides Go's syntax ("1.5h").
func TestDurationsWithDays(t *testing.T) {
	cfg, err := config.Load(writeConfig(t, `
[input]
subjects = ["a"]
max_past = "7d"
[pipeline]
idle_ttl = "1d12h"
[model]
anomaly_surprise_window = "1w"
anomaly_extreme_quiet = "1.5h"
`), config.DaemonChecks)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Input.MaxPast.D != 7*24*time.Hour || cfg.Pipeline.IdleTTL.D != 36*time.Hour {
		t.Errorf("max_past %v, idle_ttl %v", cfg.Input.MaxPast.D, cfg.Pipeline.IdleTTL.D)
	}
	pc, err := cfg.Model.Config()
	if err != nil {
		t.Fatal(err)
	}
	if pc.Anomaly.SurpriseWindow != 7*24*time.Hour || pc.Anomaly.ExtremeQuiet != 90*time.Minute {
		t.Errorf("anomaly_surprise_window %v, anomaly_extreme_quiet %v", pc.Anomaly.SurpriseWindow, pc.Anomaly.ExtremeQuiet)
	}
	if _, err := config.Load(writeConfig(t, "[input]\nsubjects = [\"a\"]\nmax_past = \"7x\"\n"), config.DaemonChecks); err == nil || !strings.Contains(err.Error(), `input.max_past`) {
		t.Errorf("7x: %v", err)
	}
}

// TestCheckConfigHelp: check-config -h prints its usage and exits 0,
// instead of looking for a file named -h.
func TestCheckConfigHelp(t *testing.T) {
	for _, arg := range []string{"-h", "--help"} {
		out, errOut, code := cli(t, "check-config", arg)
		if code != 0 || !strings.Contains(errOut, "usage: forecastd check-config FILE") || strings.Contains(errOut+out, "no such file") {
			t.Errorf("check-config %s: exit %d\nstdout %s\nstderr %s", arg, code, out, errOut)
		}
	}
	if _, errOut, code := cli(t, "check-config"); code != 2 || !strings.Contains(errOut, "usage") {
		t.Errorf("check-config without FILE: exit %d, %s", code, errOut)
	}
}

// TestCheckConfigRulesWithModelError: a [[rules]] problem is reported
// beside [model]'s, not hidden by it.
func TestCheckConfigRulesWithModelError(t *testing.T) {
	_, errOut, code := cli(t, "check-config", writeConfig(t, `
[input]
subjects = ["a"]
[model]
c = "abc"
kind = "bogus"
[[rules]]
match = "x*"
epsilon = -2.0
[[rules]]
match = "{x"
`))
	for _, want := range []string{"model.c", "model.kind", `rules[0] (match "x*"): epsilon`, "rules[1].match", "4 problems"} {
		if code != 1 || !strings.Contains(errOut, want) {
			t.Errorf("exit %d, no %q in:\n%s", code, want, errOut)
		}
	}
}
