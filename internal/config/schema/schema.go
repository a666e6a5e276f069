// Package schema holds what the components' configuration tables share:
// the typed values a key may hold (Duration, ByteSize), each parsed once
// when the file is decoded and keeping the text it was written as, for
// messages and for comparing configurations.
//
// A component declares its table as a struct in its own package: each
// key one field, its `toml` tag the key, its `doc` tag what the key does
// (the reference, docs/configuration.md, and the flags are generated
// from it), an `arg` tag naming a flag's value where there is a flag.
// The zero value of a field is "not set": the component's defaults
// apply, which its WithDefaults method fills in (the reference shows
// them from it), and its Validate method returns every problem at once,
// each error beginning with the key it names, relative to the table.
// Package config composes the tables into the file.
package schema

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/common/model"
)

// Duration is a duration key, a string like "30s", "1h" or "7d"
// (ParseDuration). The zero value is "not set".
type Duration struct {
	D    time.Duration
	Text string // as written; "" when not set
}

// Dur returns d as a set Duration, written as a person would: "30s",
// "1h", "7d".
func Dur(d time.Duration) Duration { return Duration{D: d, Text: DurationText(d)} }

// DurationText writes d as a person would: whole days as "7d", else Go's
// form without its trailing zero units ("1h", "1h30m", "90s" as "1m30s").
func DurationText(d time.Duration) string {
	const day = 24 * time.Hour
	if d >= day && d%day == 0 {
		return strconv.FormatInt(int64(d/day), 10) + "d"
	}
	s := d.String()
	if t, ok := strings.CutSuffix(s, "m0s"); ok {
		s = t + "m"
	}
	if t, ok := strings.CutSuffix(s, "h0m"); ok {
		s = t + "h"
	}
	return s
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

// Positive returns the problem of a duration key that must be positive
// (or, with allowZero, may be "0s"): "" if it is not set or is.
func (d Duration) Positive(allowZero bool) string {
	if d.IsSet() && (d.D < 0 || d.D == 0 && !allowZero) {
		return fmt.Sprintf("must be positive, got %q", d.Text)
	}
	return ""
}

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

// Errors collects the problems of one table, each naming its key.
type Errors []error

// Add records a problem of key.
func (e *Errors) Add(key, format string, args ...any) {
	*e = append(*e, fmt.Errorf("%s: %s", key, fmt.Sprintf(format, args...)))
}

// Ceiling records a problem of key if n exceeds max (the limits of
// docs/operations.md, "Limits").
func (e *Errors) Ceiling(key string, n, max int) {
	if n > max {
		e.Add(key, "%d exceeds the ceiling of %d (docs/operations.md \"Limits\")", n, max)
	}
}

// Table records a problem of the table itself, not of one key.
func (e *Errors) Table(format string, args ...any) {
	*e = append(*e, &TableError{fmt.Errorf(format, args...)})
}

// TableError is a problem of a table as a whole ("max_key_len and
// max_points must not be negative"), told after the table's name.
type TableError struct{ Err error }

func (e *TableError) Error() string { return e.Err.Error() }
func (e *TableError) Unwrap() error { return e.Err }

// Prefixed records err's leaves (an errors.Join), each a problem of a key
// of table ("nats": "nats.servers[0]: …") or of table itself
// (TableError: "input: …").
func (e *Errors) Prefixed(table string, err error) {
	for _, x := range Unjoin(err) {
		var te *TableError
		if errors.As(x, &te) {
			*e = append(*e, fmt.Errorf("%s: %w", table, x))
		} else {
			*e = append(*e, fmt.Errorf("%s.%w", table, x))
		}
	}
}

// Unjoin flattens a tree of joined errors into its leaves.
func Unjoin(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, Unjoin(e)...)
		}
		return out
	}
	return []error{err}
}
