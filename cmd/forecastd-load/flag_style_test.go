package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"io"
	"regexp"
	"strings"
	"testing"
)

// TestFlagStyle: forecastd-load's flags are snake_case as forecastd's are,
// -h lists no deprecated spelling, and the dashed spellings of before
// still set their flags.
func TestFlagStyle(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), []string{"-h"}, io.Discard, &out); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("-h: %v", err)
	}
	names := regexp.MustCompile(`(?m)^  -([A-Za-z0-9_-]+)(?: |$)`).FindAllStringSubmatch(out.String(), -1)
	if len(names) < 10 {
		t.Fatalf("-h lists %d flags:\n%s", len(names), out.String())
	}
	style := regexp.MustCompile(`^[a-z][a-z0-9]*(_[a-z0-9]+)*$`)
	for _, m := range names {
		if !style.MatchString(m[1]) {
			t.Errorf("flag -%s is not snake_case", m[1])
		}
	}
	if strings.Contains(out.String(), deprecatedUsage) {
		t.Errorf("-h lists a deprecated spelling:\n%s", out.String())
	}
	err := run(context.Background(), []string{"-subject-prefix", "a.>"}, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "-subject_prefix: invalid") {
		t.Errorf("-subject-prefix a.>: %v, want it refused as -subject_prefix", err)
	}
}
