package main

import (
	"time"

	"github.com/forecastd/forecastd/sources"
)

// The configuration's typed values: each is parsed once, when the file is
// decoded (encoding.TextUnmarshaler), and keeps the text it was written
// as, for messages and for comparing configurations; the zero value is
// "not set" (the key's default applies).

// Duration is a duration key, a string like "30s" or "1h" (Go's
// time.ParseDuration).
type Duration struct {
	D    time.Duration
	Text string // as written; "" when not set
}

// UnmarshalText parses a duration; the error is time's ("invalid
// duration …").
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return err
	}
	*d = Duration{D: v, Text: string(b)}
	return nil
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

// DataFormat is [input] data_format: json, influx or value (default
// json).
type DataFormat struct {
	F    sources.Format // 0 when not set
	Text string
}

// UnmarshalText parses a data format (sources.ParseFormat).
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
