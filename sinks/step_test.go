package sinks

import (
	"testing"
	"time"
)

func TestStepText(t *testing.T) {
	for d, want := range map[time.Duration]string{
		5 * time.Minute:                  "5m",
		time.Hour:                        "1h",
		90 * time.Minute:                 "1h30m",
		24 * time.Hour:                   "1d",
		7 * 24 * time.Hour:               "7d",
		10 * time.Second:                 "10s",
		90 * time.Second:                 "1m30s",
		2*time.Hour + 30*time.Second:     "2h0m30s",
		36 * time.Hour:                   "36h",
		time.Hour + 500*time.Millisecond: "1h0m0.5s",
	} {
		if got := StepText(d); got != want {
			t.Errorf("StepText(%v) = %q, want %q", d, got, want)
		}
	}
}
