package sources

import (
	"fmt"
	"strings"
	"testing"
)

func benchDecode(b *testing.B, cfg DecoderConfig, subject, payload string) {
	d := mustDecoder(b, cfg)
	p := []byte(payload)
	var dst []KeyedPoint
	dst, err := d.Decode(dst, subject, p, recv)
	if err != nil {
		b.Fatal(err)
	}
	n := len(dst)
	b.SetBytes(int64(len(p)))
	b.ReportAllocs()
	for b.Loop() {
		dst, _ = d.Decode(dst[:0], subject, p, recv)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/point")
}

func BenchmarkDecodeJSON(b *testing.B) {
	for _, tc := range []struct{ name, payload string }{
		{"rfc3339", `{"time":"2023-12-31T23:00:00.123Z","value":42.125}`},
		{"unix", `{"time":1704063600.123,"value":42.125}`},
		{"series", `{"series":"host01.cpu.user","time":1704063600,"value":42.125,"unit":"%"}`},
		{"array10", "[" + strings.Repeat(`{"time":1704063600,"value":42.125},`, 9) + `{"time":1704063600,"value":1}]`},
	} {
		b.Run(tc.name, func(b *testing.B) {
			benchDecode(b, DecoderConfig{Format: FormatJSON}, "metrics.host01.cpu", tc.payload)
		})
	}
}

func BenchmarkDecodeInflux(b *testing.B) {
	line := "cpu,cpu=cpu-total,host=server01 usage_idle=98.5,usage_user=1.2,usage_system=0.3 1704063600000000000\n"
	var many strings.Builder
	for i := range 100 {
		fmt.Fprintf(&many, "cpu,cpu=cpu%d,host=server01 usage_idle=98.5,usage_user=1.2,usage_system=0.3 1704063600000000000\n", i)
	}
	for _, tc := range []struct{ name, payload string }{
		{"line3fields", line},
		{"telegraf", telegrafBatch},
		{"lines100", many.String()},
	} {
		b.Run(tc.name, func(b *testing.B) {
			d := DecoderConfig{Format: FormatInflux}
			if tc.name == "telegraf" {
				d2 := mustDecoder(b, d)
				_, _ = d2.Decode(nil, "", []byte(tc.payload), recv) // has refused fields
			}
			benchDecodeLax(b, d, tc.payload)
		})
	}
}

// benchDecodeLax is benchDecode for payloads with refused parts.
func benchDecodeLax(b *testing.B, cfg DecoderConfig, payload string) {
	d := mustDecoder(b, cfg)
	p := []byte(payload)
	dst, _ := d.Decode(nil, "", p, recv)
	n := len(dst)
	b.SetBytes(int64(len(p)))
	b.ReportAllocs()
	for b.Loop() {
		dst, _ = d.Decode(dst[:0], "", p, recv)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/point")
}

func BenchmarkDecodeValue(b *testing.B) {
	benchDecode(b, DecoderConfig{Format: FormatValue}, "sensors.t1", "42.125\n")
}

// BenchmarkDecodeRefused: what a refused point costs the decoder, beside
// an accepted one of the same shape (issue #11: a refused point should
// cost about what a decoded one does). A refusal allocates its
// *ParseError and message; it never caches its key.
func BenchmarkDecodeRefused(b *testing.B) {
	long := strings.Repeat("k", 2*DefaultMaxKeyLen)
	for _, tc := range []struct{ name, payload string }{
		{"accepted", `{"series":"host01.cpu.user","time":1704063600,"value":42.125}`},
		{"key_too_long", `{"series":"` + long + `","time":1704063600,"value":42.125}`},
		{"out_of_range_time", `{"series":"host01.cpu.user","time":1804063600,"value":42.125}`},
		{"bad_time", `{"series":"host01.cpu.user","time":"yesterday","value":42.125}`},
	} {
		b.Run(tc.name, func(b *testing.B) {
			d := mustDecoder(b, DecoderConfig{Format: FormatJSON})
			p := []byte(tc.payload)
			var dst []KeyedPoint
			b.SetBytes(int64(len(p)))
			b.ReportAllocs()
			for b.Loop() {
				dst, _ = d.Decode(dst[:0], "metrics.host01", p, recv)
			}
		})
	}
}
