package pipeline

import (
	"errors"
	"math"
	"testing"
	"time"
)

// TestCheckKeyResolutionKeys: no key CheckKey accepts is the key of a
// series a Resolution rule adds (ResolutionKey), whatever the step, nor
// ends as one: a publisher cannot name another series' resolution, nor
// take its state file, whose name is the key's.
func TestCheckKeyResolutionKeys(t *testing.T) {
	keys := []string{"metrics.a", "a", "user@host", "x@10", "a@b@c", "cpu,host=a usage", "in nl\\nx", "µ", "a@"}
	steps := []time.Duration{time.Nanosecond, 500 * time.Microsecond, 1500 * time.Millisecond, time.Second, 90 * time.Second,
		time.Minute, 5 * time.Minute, time.Hour, 90 * time.Minute, 24 * time.Hour, 7 * 24 * time.Hour, 9000 * time.Hour, math.MaxInt64}
	for _, k := range keys {
		if err := CheckKey(k); err != nil {
			t.Fatalf("CheckKey(%q): %v", k, err)
		}
		for _, s := range steps {
			rk := ResolutionKey(k, s)
			if err := CheckKey(rk); !errors.Is(err, ErrBadKey) {
				t.Errorf("CheckKey(%q) = %v: a publisher may name the resolution series of %q at %v", rk, err, k, s)
			}
			if err := CheckKey([]byte(rk)); !errors.Is(err, ErrBadKey) {
				t.Errorf("CheckKey([]byte(%q)) = %v", rk, err)
			}
		}
	}
}

// TestCheckKey: the keys refused and why; the keys near them kept.
func TestCheckKey(t *testing.T) {
	for _, c := range []struct {
		key string
		ok  bool
	}{
		{"metrics.a", true}, {"nl\\nx", true}, {"a%5C", true}, {`a\b`, true}, {"a b=c,d", true}, {"ünï", true},
		{"x@5min", true}, {"x@1m.b", true}, {"x@m", true}, {"x@.m", true}, {"x@1m1", true}, {"x@+", true}, {"", true},
		{"nl\nx", false}, {"a\tb", false}, {"a\rb", false}, {"\x00", false}, {"a\x7f", false}, {"a\\", false},
		{"a@1m0s", false}, {"a@5m", false}, {"a@1d", false}, {"a@1d12h", false}, {"a@1w", false}, {"a@1y", false},
		{"a@1.5s", false}, {"a@500µs", false}, {"a@500μs", false}, {"a@-1s", false}, {"a@+2h", false}, {"x@y@1m", false},
	} {
		err := CheckKey(c.key)
		if (err == nil) != c.ok {
			t.Errorf("CheckKey(%q) = %v, want ok %v", c.key, err, c.ok)
		}
		if err != nil && !errors.Is(err, ErrBadKey) {
			t.Errorf("CheckKey(%q) = %v, not ErrBadKey", c.key, err)
		}
	}
	if n := testing.AllocsPerRun(100, func() { _ = CheckKey("cpu,host=a,region=eu-west user@host usage_idle") }); n != 0 {
		t.Errorf("CheckKey of a good key: %v allocations", n)
	}
}

// TestTimeRangeArithmetic: every time between MinTime and MaxTime, and
// MaxAhead past MaxTime, is a time in int64 nanoseconds, and so is the
// start of a bucket a year wide below MinTime.
func TestTimeRangeArithmetic(t *testing.T) {
	for _, tm := range []time.Time{MinTime, MaxTime, MaxTime.Add(MaxAhead), MinTime.Add(-366 * 24 * time.Hour)} {
		if back := time.Unix(0, tm.UnixNano()); !back.Equal(tm) {
			t.Errorf("%v is %v in Unix nanoseconds", tm, back.UTC())
		}
	}
	if !InTimeRange(MinTime) || !InTimeRange(MaxTime) || InTimeRange(MinTime.Add(-1)) || InTimeRange(MaxTime.Add(1)) {
		t.Error("InTimeRange does not hold its bounds")
	}
}
