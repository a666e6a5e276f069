package main

import (
	"io"
	"log/slog"
	"regexp"
	"strings"
	"testing"

	"github.com/forecastd/forecastd/internal/cmdline"
	"github.com/forecastd/forecastd/internal/replay"
)

// TestFlagStyle: every flag of every subcommand, as its -h lists it, is
// named in snake_case, as the configuration's keys are (--score_from
// beside --anomaly_close_m); -h lists no deprecated alias.
func TestFlagStyle(t *testing.T) {
	style := regexp.MustCompile(`^[a-z][a-z0-9]*(_[a-z0-9]+)*$`)
	flagLine := regexp.MustCompile(`(?m)^  -([A-Za-z0-9_-]+)(?: |$)`)
	for _, sub := range []string{"run", "replay", "check-config", "backtest", "tune", "nab"} {
		_, errOut, _ := cli(t, sub, "-h")
		names := flagLine.FindAllStringSubmatch(errOut, -1)
		if len(names) == 0 && sub != "check-config" {
			t.Errorf("%s -h lists no flag:\n%s", sub, errOut)
		}
		for _, m := range names {
			if !style.MatchString(m[1]) {
				t.Errorf("%s: flag -%s is not snake_case", sub, m[1])
			}
		}
		if strings.Contains(errOut, cmdline.DeprecatedUsage) {
			t.Errorf("%s -h lists a deprecated alias:\n%s", sub, errOut)
		}
	}
}

// TestFlagDashedAliases: the dashed spellings of before still set their
// flags (backtest's and tune's: lab).
func TestFlagDashedAliases(t *testing.T) {
	r, err := parseRunFlags([]string{"--log-level", "debug"}, io.Discard)
	if err != nil || r.logLevel != slog.LevelDebug {
		t.Errorf("run --log-level debug: %v, %v", r, err)
	}
	rp, err := replay.ParseFlags([]string{"--log-level", "warn", "--time-column", "when", "f.csv"}, io.Discard, defaultConfigPath)
	if err != nil || rp.LogLevel != slog.LevelWarn || rp.TimeColumn != "when" {
		t.Errorf("replay: %+v, %v", rp, err)
	}
}
