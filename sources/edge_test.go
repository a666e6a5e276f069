package sources

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// edgeCase is one payload of the edge tests: the keys of the points it
// yields and the reasons of its refusals.
type edgeCase struct {
	name    string
	format  Format
	tf      TimeFormat
	subject string
	payload string
	keys    []string
	reasons []Reason
}

func runEdgeCases(t *testing.T, cases []edgeCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := mustDecoder(t, DecoderConfig{Format: c.format, Settings: &JSONSettings{TimeFormat: c.tf}, MaxPast: -1, MaxFuture: -1})
			for range 2 { // the second time with whatever the first cached
				pts, err := d.Decode(nil, c.subject, []byte(c.payload), recv)
				var keys []string
				for _, p := range pts {
					keys = append(keys, p.Key)
				}
				if !slices.Equal(keys, c.keys) || !slices.Equal(reasonsOf(err), c.reasons) {
					t.Fatalf("keys %q, reasons %v (%v); want %q, %v", keys, reasonsOf(err), err, c.keys, c.reasons)
				}
			}
		})
	}
}

// TestDecodeResolutionKeyRefused: a key ending in '@' and a duration is
// the name of the series a [[resolutions]] entry adds (the key, '@' and
// the step: "metrics.a@1m0s") and of its forecasts' message ids
// ("metrics.a@1m@<time>"): a publisher's point under such a key would go
// into that series' model, take its state file, or share its ids. Every
// format refuses it (invalid_key, saying what to do), and only it: the
// other points of the payload, and keys with an '@' that is not followed
// by a duration, are kept.
func TestDecodeResolutionKeyRefused(t *testing.T) {
	t.Parallel()
	ts := `"2023-12-31T23:00:00Z"`
	runEdgeCases(t, []edgeCase{
		{"json subject", FormatJSON, 0, "metrics.a@1m0s", `{"value":1}`, nil, []Reason{ReasonInvalidKey}},
		{"json subject, step as written", FormatJSON, 0, "metrics.a@1m", `{"value":1}`, nil, []Reason{ReasonInvalidKey}},
		{"json subject, days", FormatJSON, 0, "metrics.a@1d", `{"value":1}`, nil, []Reason{ReasonInvalidKey}},
		{"json series", FormatJSON, 0, "in", `[{"series":"a@5m","value":1,"time":` + ts + `},{"series":"b","value":2,"time":` + ts + `}]`,
			[]string{"in b"}, []Reason{ReasonInvalidKey}},
		{"json series escaped", FormatJSON, 0, "in", `{"series":"a\u00401h30m0s","value":1}`, nil, []Reason{ReasonInvalidKey}},
		{"json series microseconds", FormatJSON, 0, "in", `{"series":"a@500µs","value":1}`, nil, []Reason{ReasonInvalidKey}},
		{"value subject", FormatValue, 0, "metrics.a@2h0m0s", `1`, nil, []Reason{ReasonInvalidKey}},
		{"influx field", FormatInflux, 0, "telegraf", "cpu,host=a usage@1m0s=1,idle=2 1704063600000000000",
			[]string{"cpu,host=a idle"}, []Reason{ReasonInvalidKey}},
		{"influx tag is not the end", FormatInflux, 0, "telegraf", "cpu,host=a@1m usage=1 1704063600000000000",
			[]string{"cpu,host=a@1m usage"}, nil},
		{"not a duration", FormatJSON, 0, "in", `[{"series":"user@host","value":1},{"series":"x@10","value":1},{"series":"x@5min","value":1},{"series":"x@","value":1},{"series":"x@1m.b","value":1}]`,
			[]string{"in user@host", "in x@10", "in x@5min", "in x@", "in x@1m.b"}, nil},
	})
}

// TestDecodeControlCharacterKeyRefused: a series key holding a control
// character, or ending in a backslash, is refused (invalid_key). InfluxDB
// line protocol writes a newline in a tag as a backslash and 'n', which
// another key ("nl\\nx") holds itself, and ends a tag that would end in a
// backslash with "%5C", which another key holds itself: the two series
// would be one series_key, one overwriting the other. The keys that
// looked alike are kept.
func TestDecodeControlCharacterKeyRefused(t *testing.T) {
	t.Parallel()
	runEdgeCases(t, []edgeCase{
		{"json newline", FormatJSON, 0, "in", `[{"series":"nl\nx","value":1},{"series":"nl\\nx","value":2}]`,
			[]string{`in nl\nx`}, []Reason{ReasonInvalidKey}},
		{"json tab, across subjects", FormatJSON, 0, "", `{"series":"a\tb","value":1}`, nil, []Reason{ReasonInvalidKey}},
		{"json DEL", FormatJSON, 0, "in", `{"series":"a` + "\x7f" + `","value":1}`, nil, []Reason{ReasonInvalidKey}},
		{"json trailing backslash", FormatJSON, 0, "in", `[{"series":"a\\","value":1},{"series":"a%5C","value":2},{"series":"a\\b","value":3}]`,
			[]string{"in a%5C", `in a\b`}, []Reason{ReasonInvalidKey}},
		{"json subject", FormatJSON, 0, "in\x01x", `{"value":1}`, nil, []Reason{ReasonInvalidKey}},
		{"value subject", FormatValue, 0, "in\rx", `1`, nil, []Reason{ReasonInvalidKey}},
		{"value subject trailing backslash", FormatValue, 0, `in\`, `1`, nil, []Reason{ReasonInvalidKey}},
	})
	d := mustDecoder(t, DecoderConfig{Format: FormatJSON})
	_, err := d.Decode(nil, "in", []byte(`{"series":"nl\nx","value":1}`), recv)
	if !errors.Is(err, ErrInvalidKey) || !strings.Contains(err.Error(), `"in nl\nx"`) || !strings.Contains(err.Error(), "remove") {
		t.Fatalf("refusal %q: want invalid_key, the key quoted and what to do", err)
	}
	if d.CacheBytes() != 0 {
		t.Fatalf("a refused key was cached (%d bytes)", d.CacheBytes())
	}
}

// TestDecodeTimeOutsideClock: a time before 1678 or after 2262 does not
// fit the int64 nanoseconds forecastd computes with (UnixNano wraps: a
// point of 1650 was bucketed in 2184, and written to InfluxDB dated
// 2234), and one near those ends leaves no room for a bucket's start or
// a forecast ahead: every decoder refuses a time outside
// pipeline.MinTime to MaxTime (bad_time), even with max_past and
// max_future off, and takes those bounds themselves.
func TestDecodeTimeOutsideClock(t *testing.T) {
	t.Parallel()
	runEdgeCases(t, []edgeCase{
		{"json rfc3339 1650", FormatJSON, 0, "in", `[{"time":"1650-06-01T00:00:00Z","value":1},{"time":"2023-12-31T23:00:00Z","value":2}]`,
			[]string{"in"}, []Reason{ReasonBadTime}},
		{"json rfc3339 2300", FormatJSON, 0, "in", `{"time":"2300-01-01T00:00:00Z","value":1}`, nil, []Reason{ReasonBadTime}},
		{"json rfc3339 2250", FormatJSON, 0, "in", `{"time":"2250-01-01T00:00:00Z","value":1}`, nil, []Reason{ReasonBadTime}},
		{"json rfc3339 bounds", FormatJSON, 0, "in", `[{"time":"1700-01-01T00:00:00Z","value":1},{"time":"2200-01-01T00:00:00Z","value":2}]`,
			[]string{"in", "in"}, nil},
		{"json unix_ns 1680", FormatJSON, TimeUnixNs, "in", `{"time":-9000000000000000000,"value":1}`, nil, []Reason{ReasonBadTime}},
		{"json unix exponent 2250", FormatJSON, TimeUnix, "in", `{"time":8.8e9,"value":1}`, nil, []Reason{ReasonBadTime}},
		{"influx 1680", FormatInflux, 0, "telegraf", "cpu a=1 -9000000000000000000\ncpu b=2 1704063600000000000",
			[]string{"cpu b"}, []Reason{ReasonBadTime}},
		{"influx 2250", FormatInflux, 0, "telegraf", "cpu a=1 8836000000000000000", nil, []Reason{ReasonBadTime}},
	})

	d := mustDecoder(t, DecoderConfig{Format: formatToyCSV, MaxPast: -1, MaxFuture: -1})
	old := time.Date(1650, 1, 1, 0, 0, 0, 0, time.UTC)
	if pts, pe := d.AppendPoint(nil, []byte("k"), old, 1, recv); len(pts) != 0 || pe == nil || pe.Reason != ReasonBadTime {
		t.Fatalf("AppendPoint of 1650: %v, %v; want bad_time", pts, pe)
	}

	dir := t.TempDir()
	p := filepath.Join(dir, "old.csv")
	if err := os.WriteFile(p, []byte("time,value\n1650-01-01T00:00:00Z,1\n2024-01-01T00:00:00Z,2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadCSV(p, "value", "", false); err == nil || !strings.Contains(err.Error(), "old.csv:2") {
		t.Fatalf("ReadCSV of a time of 1650: %v, want an error naming its line", err)
	}
	if s, err := ReadCSV(p, "value", "", true); err != nil || s.Skipped != 1 || len(s.Values) != 1 {
		t.Fatalf("ReadCSV skipping a time of 1650: %+v, %v", s, err)
	}
	_, err := NewReplay(ReplayConfig{Decoder: DecoderConfig{Format: FormatJSON},
		Recordings: []Recording{{Name: "old", Points: []KeyedPoint{{Key: "k", Time: old, Value: 1}}}}})
	if !errors.Is(err, ErrBadTime) {
		t.Fatalf("replay of a point of 1650: %v, want bad_time", err)
	}
	_, err = NewReplay(ReplayConfig{Decoder: DecoderConfig{Format: FormatJSON},
		Recordings: []Recording{{Name: "k@1m0s", Points: []KeyedPoint{{Key: "k@1m0s", Time: recv, Value: 1}}}}})
	if !errors.Is(err, ErrInvalidKey) {
		t.Fatalf("replay of a key ending in @1m0s: %v, want invalid_key", err)
	}
}
