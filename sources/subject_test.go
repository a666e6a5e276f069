package sources

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestDecodeOutputSubjectTooLong: with OutputSubjectLen set, a point
// whose output subject would exceed MaxOutputSubjectLen is refused
// (subject_too_long), the payload's other points kept; without it,
// nothing is checked.
func TestDecodeOutputSubjectTooLong(t *testing.T) {
	outLen := func(subject, measurement, field string) int {
		return len("forecast.anomaly.") + len(subject) + len(measurement) + len(field) + 2
	}
	long := "metrics." + strings.Repeat("abcdefghi.", 350) + "x"
	recv := time.Unix(1_700_000_000, 0)
	for _, c := range []struct {
		name    string
		format  Format
		subject string
		payload string
		keys    []string
		reasons []Reason
	}{
		{"influx long measurement", FormatInflux, "metrics.a",
			strings.Repeat("m", 4000) + " v=1 1700000000000000000\ncpu v=2 1700000000000000000",
			[]string{"cpu v"}, []Reason{ReasonSubjectTooLong}},
		{"influx long subject", FormatInflux, long, strings.Repeat("m", 600) + " v=1 1700000000000000000", nil, []Reason{ReasonSubjectTooLong}},
		{"json long subject", FormatJSON, long + strings.Repeat(".y", 300), `[{"value":1},{"value":2}]`, nil, []Reason{ReasonSubjectTooLong, ReasonSubjectTooLong}},
		{"json short", FormatJSON, "metrics.a", `{"value":1}`, []string{"metrics.a"}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			dec, err := NewDecoder(DecoderConfig{Format: c.format, OutputSubjectLen: outLen, MaxOutputSubjectLen: 4000, MaxPast: -1, MaxFuture: -1, MaxKeyLen: MaxMaxKeyLen})
			if err != nil {
				t.Fatal(err)
			}
			pts, err := dec.Decode(nil, c.subject, []byte(c.payload), recv)
			var keys []string
			for _, p := range pts {
				keys = append(keys, p.Key)
			}
			if !slices.Equal(keys, c.keys) || !slices.Equal(reasonsOf(err), c.reasons) {
				t.Fatalf("keys %q, reasons %v (%v); want %q, %v", keys, reasonsOf(err), err, c.keys, c.reasons)
			}
			if c.reasons != nil && !errors.Is(err, ErrSubjectTooLong) {
				t.Fatalf("errors.Is(%v, ErrSubjectTooLong) is false", err)
			}
			if err != nil && len(err.Error()) > 2000 {
				t.Fatalf("error of %d bytes: the subject is not cut", len(err.Error()))
			}
			// Without the check the same payload decodes whole.
			plain, _ := NewDecoder(DecoderConfig{Format: c.format, MaxPast: -1, MaxFuture: -1, MaxKeyLen: MaxMaxKeyLen})
			all, _ := plain.Decode(nil, c.subject, []byte(c.payload), recv)
			if len(all) != len(pts)+len(c.reasons) {
				t.Fatalf("%d points without the check, %d with it and %d refused", len(all), len(pts), len(c.reasons))
			}
		})
	}
}
