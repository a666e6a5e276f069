package sources

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/forecastd/forecastd/pipeline"
)

// checkDecoded asserts the decoder contract on any input: every accepted
// point is finite, keyed and in the window; no point means an error; every
// error carries a known reason and a message.
func checkDecoded(t *testing.T, d *Decoder, pts []KeyedPoint, err error, recv time.Time) {
	t.Helper()
	if len(pts) == 0 && err == nil {
		t.Fatal("no point and no error")
	}
	for _, p := range pts {
		if math.IsNaN(p.Value) || math.IsInf(p.Value, 0) {
			t.Fatalf("accepted non-finite value %v", p.Value)
		}
		if p.Key == "" {
			t.Fatal("accepted a point without a key")
		}
		if p.NoTime && !p.Time.Equal(recv) {
			t.Fatalf("NoTime point has time %v, want %v", p.Time, recv)
		}
		if !recv.IsZero() && (p.Time.Before(recv.Add(-d.cfg.MaxPast)) || p.Time.After(recv.Add(d.cfg.MaxFuture))) {
			t.Fatalf("accepted time %v outside the window around %v", p.Time, recv)
		}
		if !p.NoTime && !pipeline.InTimeRange(p.Time) {
			t.Fatalf("accepted time %v, outside the times forecastd computes with", p.Time)
		}
		if err := pipeline.CheckKey(p.Key); err != nil {
			t.Fatalf("accepted key %q: %v", p.Key, err)
		}
	}
	n := 0
	EachParseError(err, func(pe *ParseError) {
		n++
		if pe.Reason == 0 || pe.Reason >= reasonEnd {
			t.Fatalf("error without a valid reason: %v", pe)
		}
		if pe.Error() == "" {
			t.Fatal("empty error message")
		}
	})
	if err != nil && n == 0 {
		t.Fatalf("error %v is not a ParseError", err)
	}
	// Bounds (issue #11): keys, points, the cache and the message.
	if len(pts) > d.cfg.MaxPoints {
		t.Fatalf("%d points, more than MaxPoints %d", len(pts), d.cfg.MaxPoints)
	}
	for _, p := range pts {
		if len(p.Key) > d.cfg.MaxKeyLen {
			t.Fatalf("accepted a key of %d bytes, MaxKeyLen %d", len(p.Key), d.cfg.MaxKeyLen)
		}
	}
	if d.CacheBytes() > d.cfg.MaxKeyBytes {
		t.Fatalf("cache holds %d bytes, MaxKeyBytes %d", d.CacheBytes(), d.cfg.MaxKeyBytes)
	}
	if err != nil && len(err.Error()) > 4096 {
		t.Fatalf("error message of %d bytes", len(err.Error()))
	}
}

// smallBounds returns cfg with bounds a fuzzer reaches.
func smallBounds(cfg DecoderConfig) DecoderConfig {
	cfg.MaxKeyLen, cfg.MaxPoints, cfg.MaxKeyBytes = 12, 3, 600
	return cfg
}

func FuzzDecodeJSON(f *testing.F) {
	for _, s := range []string{
		`{"time":"2023-12-31T23:00:00Z","value":1.5}`,
		`{"time":1704063600.25,"value":-3e2,"series":"a.b"}`,
		`[{"value":1},{"value":2,"time":1704063600123}]`,
		`{"value":null}`, `{"value":"1"}`, `{"series":"\u0041","value":1}`,
		`{"x":{"y":[1,2,{"z":null}]},"value":1e308}`, `{"value":1e400}`,
		`{"time":-1.5e9,"value":0}`, `[]`, `[5]`, ``, `{`,
		// Times and values at their limits, and keys no series may have.
		`{"time":"1650-01-01T00:00:00Z","value":1}`, `{"time":"1700-01-01T00:00:00Z","value":1}`,
		`{"time":"2200-01-01T00:00:00Z","value":1}`, `{"time":"2262-04-12T00:00:00Z","value":1}`,
		`{"time":"0001-01-01T00:00:00Z","value":1}`, `{"time":9.3e9,"value":1}`, `{"time":-9.3e9,"value":1}`,
		`[{"value":1.7976931348623157e308},{"value":-1.7976931348623157e308},{"value":5e-324},{"value":1e-400}]`,
		`[{"series":"a@1m0s","value":1},{"series":"nl
x","value":1},{"series":"nl\nx","value":1},{"series":"a\","value":1}]`,
	} {
		f.Add([]byte(s), uint8(0))
	}
	f.Add([]byte(`{"time":1704063600000000000,"value":1}`), uint8(TimeUnixNs))
	f.Add([]byte(`[{"time":-9223372036854775808,"value":1},{"time":9223372036854775807,"value":1}]`), uint8(TimeUnixNs))
	f.Add([]byte(`{"time":-7258118400000,"value":1}`), uint8(TimeUnixMs))
	f.Fuzz(func(t *testing.T, payload []byte, tf uint8) {
		cfg := DecoderConfig{Format: FormatJSON, Settings: &JSONSettings{TimeFormat: TimeFormat(tf % 4)}}
		for _, d := range []*Decoder{mustDecoder(t, cfg), mustDecoder(t, smallBounds(cfg))} {
			for _, r := range []time.Time{recv, {}} {
				pts, err := d.DecodeJSON(nil, "subj", payload, r)
				checkDecoded(t, d, pts, err, r)
				if len(pts) > 0 && !json.Valid(payload) {
					t.Fatalf("accepted invalid JSON %q", payload)
				}
				for _, p := range pts {
					if p.Key != "subj" && !strings.HasPrefix(p.Key, "subj ") {
						t.Fatalf("key %q does not start with the subject: another subject's series", p.Key)
					}
				}
			}
		}
	})
}

func FuzzDecodeInflux(f *testing.F) {
	for _, l := range strings.Split(telegrafBatch, "\n") {
		f.Add([]byte(l), uint8(0))
	}
	f.Add([]byte(telegrafBatch), uint8(0))
	for _, s := range []string{
		`my\ meas\,x,tag\ key=va\,l\=ue field\ k\=y=2 1704063600000000000`,
		"cpu f=1\ncpu,host f=2\n# c\ncpu g=3 1704063600",
		`cpu s="x\"y",b=t,i=-5i,u=5u,f=.5e1`, "cpu f=99999999999999999999i", "cpu f=1 -99",
		// Times and values at their limits, and keys no series may have.
		"cpu f=1 -9223372036854775808\ncpu f=2 9223372036854775807\ncpu f=3 -8520336000000000000",
		"cpu f=1.7976931348623157e308,g=-1.7976931348623157e308,h=5e-324,u=18446744073709551615u",
		"cpu,host=a f@1m0s=1,g@5m=2,h@host=3\ncpu,host=a\\ f=1",
	} {
		f.Add([]byte(s), uint8(3))
	}
	precs := []time.Duration{time.Nanosecond, time.Microsecond, time.Millisecond, time.Second}
	f.Fuzz(func(t *testing.T, payload []byte, prec uint8) {
		cfg := DecoderConfig{Format: FormatInflux, InfluxPrecision: precs[prec%4]}
		if prec&4 != 0 {
			cfg = smallBounds(cfg)
		}
		d := mustDecoder(t, cfg)
		for _, r := range []time.Time{recv, {}} {
			pts, err := d.DecodeInflux(nil, payload, r)
			checkDecoded(t, d, pts, err, r)
			for _, p := range pts {
				if p.Measurement == "" || p.Field == "" || !strings.HasSuffix(p.Key, " "+string(appendEscaped(nil, []byte(p.Field), true))) {
					t.Fatalf("bad parts %+v", p)
				}
				for i := 1; i < len(p.Tags); i++ {
					if p.Tags[i-1].Key > p.Tags[i].Key {
						t.Fatalf("tags not sorted: %v", p.Tags)
					}
				}
			}
		}
	})
}

func FuzzDecodeValue(f *testing.F) {
	for _, s := range []string{"42", " -1.5e3\n", "NaN", "inf", "1e400", "0x1p-2", "1_0", "", "abc", "1 2",
		"1.7976931348623157e308", "-1.7976931348623157e308", "5e-324", "1e-400"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, payload []byte) {
		d := mustDecoder(t, DecoderConfig{Format: FormatValue})
		pts, err := d.DecodeValue(nil, "subj", payload, recv)
		checkDecoded(t, d, pts, err, recv)
		if len(pts) > 1 {
			t.Fatalf("%d points from one value", len(pts))
		}
	})
}
