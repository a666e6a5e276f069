package sinks

import (
	"strconv"
	"strings"
	"time"
)

// StepText writes a step as a user writes it: whole days as "1d", else
// Go's duration without its zero units ("5m", "1h", "1h30m", "90s").
func StepText(d time.Duration) string {
	if d > 0 && d%(24*time.Hour) == 0 {
		return strconv.FormatInt(int64(d/(24*time.Hour)), 10) + "d"
	}
	s := d.String()
	s, _ = strings.CutSuffix(s, "m0s")
	if strings.HasSuffix(d.String(), "m0s") {
		s += "m"
	}
	s, _ = strings.CutSuffix(s, "h0m")
	if strings.HasSuffix(d.String(), "h0m0s") {
		s += "h"
	}
	return s
}
