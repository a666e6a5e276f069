package pipeline

import (
	"errors"
	"fmt"
	"strconv"
	"time"
	"unicode/utf8"
)

// MinTime and MaxTime bound the time of a point, as the sources refuse
// any other at intake: a time is computed with as nanoseconds since the
// Unix epoch in an int64 (Time.UnixNano: InfluxDB's timestamps, the
// buckets of a step), which holds 1677-09-21 to 2262-04-11; the bounds
// leave room below for a bucket's start before its first point, and
// above for forecasts up to MaxAhead past the newest point.
var (
	MinTime = time.Date(1700, 1, 1, 0, 0, 0, 0, time.UTC)
	MaxTime = time.Date(2200, 1, 1, 0, 0, 0, 0, time.UTC)
)

// MaxAhead is how far past MaxTime a forecast's time (a point's time plus
// horizon·step) can reach and still be a time in nanoseconds since the
// epoch in an int64.
const MaxAhead = 62 * 365 * 24 * time.Hour

// InTimeRange reports whether t lies in [MinTime, MaxTime].
func InTimeRange(t time.Time) bool { return !t.Before(MinTime) && !t.After(MaxTime) }

// ErrBadKey is what CheckKey's errors are (errors.Is).
var ErrBadKey = errors.New("pipeline: series key not allowed")

// seriesKeyError is a refusal of CheckKey: its message says why and what
// to do.
type seriesKeyError struct{ msg string }

func (e *seriesKeyError) Error() string        { return e.msg }
func (e *seriesKeyError) Is(target error) bool { return target == ErrBadKey }

// CheckKey returns nil if key can name a series that points arrive for,
// else an error that is ErrBadKey (errors.Is) and says why and what to
// do. Every encoding of the keys it accepts is then injective: the
// checkpoint file's name, InfluxDB's tag series_key, the messages'
// Nats-Msg-Id, and the key of every series a Resolution rule adds. A key
// is refused if it holds:
//
//   - a control character (U+0000 to U+001F, U+007F): line protocol
//     writes a newline, tab, carriage return or form feed in a tag as a
//     backslash and a letter, which a key may hold itself, and a NATS
//     header cannot carry CR or LF;
//   - a backslash at its end: line protocol cannot end a tag with one,
//     which the InfluxDB sink writes "%5C" instead, which a key may hold
//     itself;
//   - '@' and a duration at its end ("@1m0s", "@5m", "@1d"): the name
//     of the series a Resolution rule adds (ResolutionKey) and of its
//     forecasts' message ids.
//
// It does not allocate unless it refuses key. O(len(key)).
func CheckKey[K ~string | ~[]byte](key K) error {
	at := -1
	for i := 0; i < len(key); i++ {
		switch c := key[i]; {
		case c < 0x20 || c == 0x7f:
			return &seriesKeyError{fmt.Sprintf("series key %s holds the control character %s, which InfluxDB and NATS headers cannot keep apart from other names: remove control characters from the series' name",
				quoteKey(key), strconv.QuoteRune(rune(c)))}
		case c == '@':
			at = i
		}
	}
	if len(key) > 0 && key[len(key)-1] == '\\' {
		return &seriesKeyError{fmt.Sprintf("series key %s ends in a backslash, which InfluxDB's line protocol cannot carry: remove it from the series' name",
			quoteKey(key))}
	}
	if at >= 0 && isResolutionSuffix(key[at+1:]) {
		return &seriesKeyError{fmt.Sprintf("series key %s ends in %q, as the series that [[resolutions]] add are named: rename the series (a key may not end in '@' and a duration)",
			quoteKey(key), string(key[at:]))}
	}
	return nil
}

// quoteKey quotes key for an error message, cut to 64 bytes at a UTF-8
// boundary, followed by its length when cut.
func quoteKey[K ~string | ~[]byte](key K) string {
	const max = 64
	if len(key) <= max {
		return strconv.Quote(string(key))
	}
	n := max
	for n > 0 && !utf8.RuneStart(key[n]) {
		n--
	}
	return strconv.Quote(string(key[:n])) + "…(" + strconv.Itoa(len(key)) + " bytes)"
}

// isResolutionSuffix reports whether s is a duration as a step can be
// written, in Go's syntax or Prometheus' (time.Duration.String's "1m0s",
// "1.5s", "500µs"; "5m", "1d12h", "1w", "1y"): an optional sign, then one
// or more numbers (digits and '.') each followed by unit letters among
// n, s, u, µ, μ, m, h, d, w and y. It accepts every such text, and some
// that are no duration ("1mm"): it errs towards refusing a key.
func isResolutionSuffix[K ~string | ~[]byte](s K) bool {
	i := 0
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		i++
	}
	groups := 0
	for i < len(s) {
		digits := 0
		for i < len(s) && (s[i] >= '0' && s[i] <= '9' || s[i] == '.') {
			if s[i] != '.' {
				digits++
			}
			i++
		}
		if digits == 0 {
			return false
		}
		units := 0
		for i < len(s) {
			if n := unitLetter(s, i); n > 0 {
				i += n
				units++
				continue
			}
			break
		}
		if units == 0 {
			return false
		}
		groups++
	}
	return groups > 0
}

// unitLetter returns the length of the duration unit letter at s[i] (1,
// or 2 for µ and μ), 0 if there is none.
func unitLetter[K ~string | ~[]byte](s K, i int) int {
	switch s[i] {
	case 'n', 's', 'u', 'm', 'h', 'd', 'w', 'y':
		return 1
	case 0xc2: // µ, U+00B5
		if i+1 < len(s) && s[i+1] == 0xb5 {
			return 2
		}
	case 0xce: // μ, U+03BC
		if i+1 < len(s) && s[i+1] == 0xbc {
			return 2
		}
	}
	return 0
}

// ResolutionKey is the key of the series forecasting key at step, added
// by a Resolution rule (the key of its state and its sink's series).
func ResolutionKey(key string, step time.Duration) string { return key + "@" + step.String() }

// Tag is one source tag of a series (an InfluxDB tag), unescaped: the
// sources decode them, the sinks write them.
type Tag struct {
	Key, Value string
}
