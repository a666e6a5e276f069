package sinks

import (
	"errors"
	"github.com/forecastd/forecastd/internal/config/schema"
	"slices"
	"testing"
	"time"

	"github.com/forecastd/forecastd/internal/testserver/influxtest"
	"github.com/forecastd/forecastd/pipeline"
)

// TestInfluxSeriesKeysDistinct: the keys that pipeline.CheckKey accepts,
// however alike once escaped for line protocol (backslashes before the
// bytes line protocol escapes, "%5C", a backslash and an 'n'), come back
// from a real InfluxDB as series_key values each equal to its key: the
// tag is injective on them, so no series overwrites another's points
// and warm start reads a series' own past. (A key with a newline, or
// ending in a backslash, would not: CheckKey refuses them.)
func TestInfluxSeriesKeysDistinct(t *testing.T) {
	t.Parallel()
	keys := []string{
		`nl\nx`, "nl x", "nl_x", `a%5C`, `a\b`, `a\,b`, "a,b", `a\ b`, "a b", `a\=b`, "a=b", `a\\b`, `\a`,
		`cpu,host=my\ host usage\=x`, `cpu,host=my\\ host usage\=x`, "x@10", "user@host", "ü é", `a"b`, "a'b",
	}
	for _, k := range keys {
		if err := pipeline.CheckKey(k); err != nil {
			t.Fatalf("CheckKey(%q): %v", k, err)
		}
	}
	srv := influxtest.Shared(t, influxtest.Options{})
	s := newInflux(t, InfluxConfig{URL: srv.URL, Bucket: srv.Bucket, Measurement: "keys", MetricBatchSize: 100, FlushInterval: schema.Dur(time.Hour)})
	for i, k := range keys {
		if err := s.Write(forecastRec(k, "in", i, false)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(ctxTimeout(t, 10*time.Second)); err != nil {
		t.Fatal(err)
	}
	if st := s.Stats(); st.Written != uint64(len(keys)) {
		t.Fatalf("stats %+v: want %d written", st, len(keys))
	}
	got := tagValues(t, srv, "keys", TagSeries)
	want := slices.Clone(keys)
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("series_key values %q,\nwant %q", got, want)
	}
}

// TestResolutionMsgIDsNotNameable: a resolution's forecasts carry the
// Nats-Msg-Id <key>@<step>@<time> (the step as StepText writes it), a
// series' own <key>@<time>; the key that would make the second the first,
// <key>@<step>, is refused at intake, so that a JetStream stream's
// duplicate window cannot drop one series' forecasts as the other's.
func TestResolutionMsgIDsNotNameable(t *testing.T) {
	for _, step := range []time.Duration{time.Second, 90 * time.Second, 5 * time.Minute, time.Hour, 90 * time.Minute,
		24 * time.Hour, 7 * 24 * time.Hour, 36 * time.Hour, time.Hour + 500*time.Millisecond} {
		raw := "metrics.a@" + StepText(step)
		if err := pipeline.CheckKey(raw); !errors.Is(err, pipeline.ErrBadKey) {
			t.Errorf("CheckKey(%q) = %v: its ids would be those of metrics.a at %v", raw, err, step)
		}
		a := appendMsgID(nil, raw, "", t0)
		b := appendMsgID(nil, "metrics.a", StepText(step), t0)
		if string(a) != string(b) {
			t.Fatalf("ids %q and %q: the test does not show what it should", a, b)
		}
	}
}

// TestMsgIDNewlines checks that a carriage return or newline in a key
// becomes a space in its Nats-Msg-Id (a header value cannot hold one),
// and that a key without either is copied as it is.
func TestMsgIDNewlines(t *testing.T) {
	at := string(appendTime(nil, t0))
	for key, want := range map[string]string{
		"a\rb\nc":   "a b c@" + at,
		"\n":        " @" + at,
		"metrics.a": "metrics.a@" + at,
		"a\r\n":     "a  @" + at,
	} {
		if got := string(appendMsgID(nil, key, "", t0)); got != want {
			t.Errorf("appendMsgID(%q) = %q, want %q", key, got, want)
		}
	}
}
