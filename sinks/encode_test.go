package sinks

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"testing"
	"time"
	"unicode/utf8"
)

// appendJSONString must agree with encoding/json on what the string
// decodes to, and produce valid JSON, for any input.
func FuzzAppendJSONString(f *testing.F) {
	for _, s := range []string{"", "cpu", `a"b\c`, "tab\there\nnl\r\x00\x1f\x7f", "\xff\xfe", "é€😀", "\u2028\u2029", "a\xc3"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		b := appendJSONString(nil, s)
		if !json.Valid(b) {
			t.Fatalf("invalid JSON %q for %q", b, s)
		}
		var got, want string
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatal(err)
		}
		ref, _ := json.Marshal(s)
		if err := json.Unmarshal(ref, &want); err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Fatalf("%q decodes to %q, encoding/json's to %q", s, got, want)
		}
		if !utf8.Valid(b) {
			t.Fatalf("invalid UTF-8 %q", b)
		}
	})
}

func TestForecastJSONNonFinite(t *testing.T) {
	r := forecastRec("s", "in", 0, true)
	r.Forecast.Value = math.Inf(1)
	var m map[string]any
	b := appendForecastJSON(nil, &r)
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	if m["yhat"] != nil || m["yhat_lower"] != -0.75 || m["yhat_upper"] != 1.75 || m["horizon"] != 1.0 {
		t.Errorf("%s", b)
	}
}

func TestRingDropsOldest(t *testing.T) {
	q := newRing(3)
	var dropped int
	for i := range 5 {
		if q.push(Record{Series: string(rune('a' + i))}) {
			dropped++
		}
	}
	if dropped != 2 || q.len() != 3 {
		t.Fatalf("dropped %d, len %d; want 2, 3", dropped, q.len())
	}
	got := q.pop(nil, 2)
	if len(got) != 2 || got[0].Series != "c" || got[1].Series != "d" || q.len() != 1 {
		t.Fatalf("pop: %v, len %d", got, q.len())
	}
	q.push(Record{Series: "f"})
	q.push(Record{Series: "g"})
	got = q.pop(got[:0], 10)
	if len(got) != 3 || got[0].Series != "e" || got[2].Series != "g" || q.len() != 0 {
		t.Fatalf("pop: %v", got)
	}
}

// appendTime writes what time's layout interpreter writes for timeLayout,
// for any instant and zone: years 0–9999 by its own digits, the others by
// the interpreter.
func FuzzAppendTime(f *testing.F) {
	for _, c := range []struct {
		sec  int64
		nsec int64
		zone int
	}{
		{0, 0, 0}, {1700000000, 123456789, 3600}, {-62135596800, 0, 0}, // 0001-01-01
		{-62167219200, 0, 0}, {-62167219201, 999999999, 0}, // year 0 and the second before it
		{253402300799, 999999999, -7 * 3600}, {253402300800, 0, 0}, // 9999-12-31T23:59:59.999999999Z and 10000
		{951782400, 1, 45 * 60}, // 2000-02-29
	} {
		f.Add(c.sec, c.nsec, c.zone)
	}
	f.Fuzz(func(t *testing.T, sec, nsec int64, zone int) {
		tm := time.Unix(sec, nsec).In(time.FixedZone("z", zone%(18*3600)))
		got := string(appendTime([]byte("x"), tm))
		want := "x" + tm.UTC().Format(timeLayout)
		if got != want {
			t.Fatalf("%d s %d ns (zone %d): %q, want %q", sec, nsec, zone, got, want)
		}
	})
}

// TestAppendTimeRandom compares appendTime with the layout interpreter on
// a million random instants between the years −100 and 10100.
func TestAppendTimeRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	lo, hi := time.Date(-100, 1, 1, 0, 0, 0, 0, time.UTC).Unix(), time.Date(10100, 1, 1, 0, 0, 0, 0, time.UTC).Unix()
	var b []byte
	for range 1_000_000 {
		tm := time.Unix(lo+r.Int64N(hi-lo), r.Int64N(1e9))
		if r.IntN(4) == 0 {
			tm = tm.Truncate(time.Second)
		}
		b = appendTime(b[:0], tm)
		if want := tm.UTC().Format(timeLayout); string(b) != want {
			t.Fatalf("%v: %q, want %q", tm, b, want)
		}
	}
}

// BenchmarkAppendTime is the cost of one of a forecast message's times,
// against the layout interpreter's.
func BenchmarkAppendTime(b *testing.B) {
	tm := time.Date(2026, 11, 26, 7, 45, 12, 345678901, time.UTC)
	buf := make([]byte, 0, 64)
	b.Run("appendTime", func(b *testing.B) {
		for b.Loop() {
			buf = appendTime(buf[:0], tm)
		}
	})
	b.Run("AppendFormat", func(b *testing.B) {
		for b.Loop() {
			buf = tm.UTC().AppendFormat(buf[:0], timeLayout)
		}
	})
}
