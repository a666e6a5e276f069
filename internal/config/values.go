package config

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/common/model"

	"github.com/forecastd/forecastd/sources"
)

// The configuration's typed values: each is parsed once, when the file is
// decoded (encoding.TextUnmarshaler), and keeps the text it was written
// as, for messages and for comparing configurations; the zero value is
// "not set" (the key's default applies).

// Duration is a duration key, a string like "30s", "1h" or "7d"
// (ParseDuration).
type Duration struct {
	D    time.Duration
	Text string // as written; "" when not set
}

// UnmarshalText parses a duration; the error is time's ("invalid
// duration …").
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := ParseDuration(string(b))
	if err != nil {
		return err
	}
	*d = Duration{D: v, Text: string(b)}
	return nil
}

// ParseDuration reads a duration as Go does ("1.5h", "300ms", "-1s"),
// or else as Prometheus does, with days, weeks and years ("7d", "1w",
// "1d12h"; model.ParseDuration, where d is 24h, w 7d and y 365d). Go's
// syntax comes first because Prometheus' has no fractions, signs or µs,
// which configurations written before may hold; an error is Go's.
func ParseDuration(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if err == nil {
		return d, nil
	}
	if md, merr := model.ParseDuration(s); merr == nil {
		return time.Duration(md), nil
	}
	return 0, err
}

// MarshalText returns the text the duration was written as.
func (d Duration) MarshalText() ([]byte, error) { return []byte(d.Text), nil }

// IsSet reports whether the key was given.
func (d Duration) IsSet() bool { return d.Text != "" }

// Or returns d, or def when d is not set or not positive.
func (d Duration) Or(def time.Duration) time.Duration {
	if d.D > 0 {
		return d.D
	}
	return def
}

func (d Duration) String() string { return d.Text }

// ByteSize is a size in bytes written with a binary unit: "512MiB",
// "2GiB", "64KiB", or a plain number of bytes.
type ByteSize struct {
	N    int64
	Text string // as written; "" when not set
}

var byteUnits = []struct {
	suffix string
	mult   int64
}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"B", 1}}

// UnmarshalText parses a size: a non-negative integer, optionally
// followed by B, KiB, MiB, GiB or TiB.
func (b *ByteSize) UnmarshalText(t []byte) error {
	text := strings.TrimSpace(string(t))
	num, mult := text, int64(1)
	for _, u := range byteUnits {
		if n, ok := strings.CutSuffix(text, u.suffix); ok {
			num, mult = strings.TrimSpace(n), u.mult
			break
		}
	}
	v, err := strconv.ParseInt(num, 10, 64)
	if err != nil || v < 0 || v > math.MaxInt64/mult {
		return fmt.Errorf("invalid size %q: want a whole number of bytes, KiB, MiB, GiB or TiB, such as \"512MiB\"", text)
	}
	*b = ByteSize{N: v * mult, Text: string(t)}
	return nil
}

// MarshalText returns the text the size was written as.
func (b ByteSize) MarshalText() ([]byte, error) { return []byte(b.Text), nil }

// IsSet reports whether the key was given.
func (b ByteSize) IsSet() bool { return b.Text != "" }

func (b ByteSize) String() string { return b.Text }

// DataFormat is [input] data_format: the name of a format registered in
// package sources (sources.RegisterFormat), json (the default), influx
// or value among the built-in ones.
type DataFormat struct {
	F    sources.Format // 0 when not set
	Text string
}

// UnmarshalText parses a registered data format (sources.ParseFormat).
func (f *DataFormat) UnmarshalText(b []byte) error {
	v, err := sources.ParseFormat(string(b))
	if err != nil {
		return err
	}
	*f = DataFormat{F: v, Text: string(b)}
	return nil
}

// MarshalText returns the format's name.
func (f DataFormat) MarshalText() ([]byte, error) { return []byte(f.Text), nil }

// Format returns the format, json when not set.
func (f DataFormat) Format() sources.Format {
	if f.F == 0 {
		return sources.FormatJSON
	}
	return f.F
}

func (f DataFormat) String() string { return f.Format().String() }

// TimeFormat is [input] json_time_format: unix, unix_ms, unix_us or
// unix_ns (default unix).
type TimeFormat struct {
	F    sources.TimeFormat
	Text string
}

// UnmarshalText parses a time format (sources.ParseTimeFormat).
func (f *TimeFormat) UnmarshalText(b []byte) error {
	v, err := sources.ParseTimeFormat(string(b))
	if err != nil {
		return err
	}
	*f = TimeFormat{F: v, Text: string(b)}
	return nil
}

// MarshalText returns the format's name.
func (f TimeFormat) MarshalText() ([]byte, error) { return []byte(f.Text), nil }

func (f TimeFormat) String() string { return f.F.String() }

// Defaults of the daemon's tables that the daemon applies (the `default`
// tags of nats.servers and pipeline.shutdown_timeout state them).
const (
	DefaultServer          = "nats://127.0.0.1:4222"
	DefaultShutdownTimeout = 30 * time.Second
)
