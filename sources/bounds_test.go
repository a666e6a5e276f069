package sources

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// Issue #11's hostile inputs that reach a decoder, each reproduced.

// A payload's "series" no longer names another subject's series: by
// default the key is the subject, a space and the field (a NATS subject
// holds no space, so no subject's own key can be forged); with
// SeriesAcrossSubjects the field is the key, as before.
func TestDecodeSeriesIdentity(t *testing.T) {
	t.Parallel()
	payload := []byte(`{"series":"sensors.victim","value":1}`)
	d := mustDecoder(t, DecoderConfig{Format: FormatJSON})
	got, err := d.Decode(nil, "sensors.attacker", payload, recv)
	if err != nil {
		t.Fatal(err)
	}
	if got[0].Key != "sensors.attacker sensors.victim" {
		t.Fatalf("key %q: want the sender's subject, a space and the field", got[0].Key)
	}
	victim, _ := d.Decode(nil, "sensors.victim", []byte(`{"value":1}`), recv)
	if victim[0].Key == got[0].Key {
		t.Fatalf("the sender's point has the victim's key %q", victim[0].Key)
	}
	across := mustDecoder(t, DecoderConfig{Format: FormatJSON, Settings: &JSONSettings{SeriesAcrossSubjects: true}})
	got, err = across.Decode(nil, "sensors.attacker", payload, recv)
	if err != nil || got[0].Key != "sensors.victim" {
		t.Fatalf("series_across_subjects: key %q, err %v: want the field", got[0].Key, err)
	}
}

// A series key longer than MaxKeyLen is refused (key_too_long), with a
// short message giving its length, and is never cached; the same for a
// line-protocol field key, refused alone (the line's other fields kept),
// and a subject.
func TestDecodeKeyTooLong(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("k", 1<<20) // 1 MiB
	for _, tc := range []struct {
		name    string
		format  Format
		subject string
		payload string
		points  int
	}{
		{"json series", FormatJSON, "in.a", `{"series":"` + long + `","value":1}`, 0},
		{"json escaped series", FormatJSON, "in.a", `{"series":"\u0041` + long + `","value":1}`, 0},
		{"json subject", FormatJSON, "in." + long, `{"value":1}`, 0},
		{"influx field", FormatInflux, "", "cpu,host=a ok=1," + long + "=2", 1},
		{"influx tag", FormatInflux, "", "cpu,host=" + long + " f=2", 0},
		{"value subject", FormatValue, "in." + long, "1", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d := mustDecoder(t, DecoderConfig{Format: tc.format, MaxPayload: -1})
			got, err := d.Decode(nil, tc.subject, []byte(tc.payload), recv)
			if len(got) != tc.points {
				t.Fatalf("%d points, want %d", len(got), tc.points)
			}
			if !errors.Is(err, ErrKeyTooLong) {
				t.Fatalf("err %v: want key_too_long", err)
			}
			if msg := err.Error(); len(msg) > 400 || !strings.Contains(msg, "1048") {
				t.Fatalf("message of %d bytes, or without the key's length: %.400s", len(msg), msg)
			}
			if n := d.CacheBytes(); tc.points == 0 && n != 0 {
				t.Fatalf("cache holds %d bytes after a refused key", n)
			}
			if n := d.CacheBytes(); n > 4096 {
				t.Fatalf("cache holds %d bytes: the refused key was cached", n)
			}
		})
	}
}

// Issue #11: max_series = 10, then 2 437 messages each with a distinct
// 1 MB key held 3.1 GB in the decoder's cache. Now such keys are refused
// and not cached; keys within MaxKeyLen (here the ceiling, 64 KiB) are
// cached within MaxKeyBytes. Invariant on a random sequence of keys of
// random lengths: the cache never holds more than MaxKeyBytes, and its
// count equals the recomputation over its entries.
func TestDecodeKeyCacheBoundedInBytes(t *testing.T) {
	t.Parallel()
	d := mustDecoder(t, DecoderConfig{Format: FormatJSON, MaxPayload: -1, MaxKeyLen: MaxMaxKeyLen, MaxKeyBytes: 1 << 20})
	rng := rand.New(rand.NewPCG(1, 2))
	var b strings.Builder
	for i := range 2437 {
		n := 1 + rng.IntN(MaxMaxKeyLen+1000)
		b.Reset()
		fmt.Fprintf(&b, `{"series":"%d-%s","value":1}`, i, strings.Repeat("x", n))
		_, err := d.Decode(nil, "", []byte(b.String()), recv)
		if long := n+len(fmt.Sprint(i))+1 > MaxMaxKeyLen; long != errors.Is(err, ErrKeyTooLong) {
			t.Fatalf("key %d of %d bytes: err %v", i, n, err)
		}
		sum := 0
		for _, e := range d.keys {
			sum += e.size()
		}
		if sum != d.CacheBytes() || sum > d.cfg.MaxKeyBytes {
			t.Fatalf("after key %d: cache counts %d bytes, holds %d, limit %d", i, d.CacheBytes(), sum, d.cfg.MaxKeyBytes)
		}
	}
}

// Issue #11: one 1 MiB line-protocol message with 115 964 numeric fields
// created 115 964 series. Now one payload yields at most MaxPoints points
// (so makes at most that many series); the rest is refused, one
// too_many_points error. A JSON array likewise.
func TestDecodeMaxPoints(t *testing.T) {
	t.Parallel()
	var lp strings.Builder
	lp.WriteString("m ")
	for i := 0; lp.Len() < 1<<20-16; i++ {
		if i > 0 {
			lp.WriteByte(',')
		}
		fmt.Fprintf(&lp, "f%d=1", i)
	}
	var js strings.Builder
	js.WriteByte('[')
	for i := range 3 * DefaultMaxPoints {
		if i > 0 {
			js.WriteByte(',')
		}
		fmt.Fprintf(&js, `{"series":"s%d","value":1}`, i)
	}
	js.WriteByte(']')
	for _, tc := range []struct {
		format  Format
		payload string
	}{{FormatInflux, lp.String()}, {FormatJSON, js.String()}} {
		t.Run(tc.format.String(), func(t *testing.T) {
			t.Parallel()
			d := mustDecoder(t, DecoderConfig{Format: tc.format})
			got, err := d.Decode(nil, "in", []byte(tc.payload), recv)
			if len(got) != DefaultMaxPoints {
				t.Fatalf("%d points from a %d-byte payload, want the first %d", len(got), len(tc.payload), DefaultMaxPoints)
			}
			if rs := reasonsOf(err); len(rs) != 1 || rs[0] != ReasonTooManyPoints {
				t.Fatalf("reasons %v, want one too_many_points", rs)
			}
			// Two lines, the second past the limit, are refused whole.
			d2 := mustDecoder(t, DecoderConfig{Format: tc.format, MaxPoints: 2})
			if tc.format == FormatInflux {
				got, err = d2.Decode(nil, "in", []byte("m a=1,b=2,c=3\nm d=4"), recv)
			} else {
				got, err = d2.Decode(nil, "in", []byte(`[{"value":1},{"value":2},{"value":3},{"value":4}]`), recv)
			}
			if rs := reasonsOf(err); len(got) != 2 || len(rs) != 1 || rs[0] != ReasonTooManyPoints {
				t.Fatalf("MaxPoints 2: %d points, reasons %v", len(got), rs)
			}
		})
	}
}

// Issue #11: a 1 MB JSON array of points with bad times made one 4 MB log
// line. The error of such a payload (what the source logs) now lists its
// first errors and how many more, each value cut with its length.
func TestDecodeErrorMessageBounded(t *testing.T) {
	t.Parallel()
	var js strings.Builder
	js.WriteByte('[')
	for i := 0; js.Len() < 1<<20-70000; i++ {
		if i > 0 {
			js.WriteByte(',')
		}
		fmt.Fprintf(&js, `{"time":"%s","value":1}`, strings.Repeat("t", 200))
	}
	js.WriteString(`,{"time":"` + strings.Repeat("y", 60000) + `","value":1}]`)
	d := mustDecoder(t, DecoderConfig{Format: FormatJSON})
	_, err := d.Decode(nil, "in", []byte(js.String()), recv)
	if !errors.Is(err, ErrBadTime) {
		t.Fatalf("err %.200v: want bad_time", err)
	}
	if msg := err.Error(); len(msg) > 2048 || !strings.Contains(msg, "more") || !strings.Contains(msg, "bytes)") {
		t.Fatalf("message of %d bytes for a %d-byte payload: %.3000s", len(msg), js.Len(), msg)
	}
	var pe *ParseError
	if errors.As(err, &pe); pe == nil {
		t.Fatal("no ParseError")
	}
	if got := truncate([]byte(strings.Repeat("é", 100))); got != strings.Repeat("é", 32)+"…(200 bytes)" {
		t.Fatalf("truncate cut a rune or lost the length: %q", got)
	}
}

// Issue #11: one point of a series 59 min in the future made every real
// point of it refused (out of order) for the next hour. The default
// future slack is now a minute: that point is refused; a point 30 s ahead
// is taken. MaxPast: replaying recorded data (older than 7 days) is
// possible with a larger, or no (negative), bound.
func TestDecodeTimeWindow(t *testing.T) {
	t.Parallel()
	d := mustDecoder(t, DecoderConfig{Format: FormatJSON})
	at := func(d *Decoder, off time.Duration) error {
		_, err := d.Decode(nil, "in", fmt.Appendf(nil, `{"time":%d,"value":1}`, recv.Add(off).Unix()), recv)
		return err
	}
	if err := at(d, 59*time.Minute); !errors.Is(err, ErrOutOfRangeTime) {
		t.Fatalf("59 min ahead: %v, want out_of_range_time", err)
	}
	if err := at(d, 30*time.Second); err != nil {
		t.Fatalf("30 s ahead: %v", err)
	}
	year := 365 * 24 * time.Hour
	if err := at(d, -year); !errors.Is(err, ErrOutOfRangeTime) {
		t.Fatalf("a year old by default: %v, want out_of_range_time", err)
	}
	replay := mustDecoder(t, DecoderConfig{Format: FormatJSON, MaxPast: 2 * year})
	if err := at(replay, -year); err != nil {
		t.Fatalf("a year old with max_past 2y: %v", err)
	}
	if err := at(mustDecoder(t, DecoderConfig{Format: FormatJSON, MaxPast: -1}), -10*year); err != nil {
		t.Fatalf("ten years old with no max_past: %v", err)
	}
}
