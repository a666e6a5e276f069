package memory

import (
	"runtime/debug"
	"testing"
)

// seriesLimit sizes the series to 90 % of the budget by the heap per
// series held now, raises the bound back as the heap falls, and sets none
// while the series fit.
func TestSeriesLimit(t *testing.T) {
	const mib = 1 << 20
	for _, c := range []struct {
		name                           string
		live, transit, history, budget uint64
		active, current                int64
		maxSeries                      int
		want                           int64
	}{
		{"under the budget, no bound", 50 * mib, 0, 0, 100 * mib, 1000, 0, 100000, 0},
		{"over: 1000 series in 200 MiB, 90 MiB allowed", 200 * mib, 0, 0, 100 * mib, 1000, 0, 100000, 450},
		{"the bound holds at 90 %", 90 * mib, 0, 0, 100 * mib, 450, 450, 100000, 450},
		{"raised as the heap falls", 45 * mib, 0, 0, 100 * mib, 450, 450, 100000, 900},
		{"raised to max_series: no bound", 10 * mib, 0, 0, 100 * mib, 450, 450, 1000, 0},
		{"at least one", 1000 * mib, 0, 0, 100 * mib, 5, 0, 100000, 1},
		{"nothing held: unchanged", 80 * mib, 0, 0, 100 * mib, 0, 7, 100000, 7},
		// 450 series in 90 MiB, and 12 MiB of evicted states waiting to
		// be written: the series do not look dearer (it was 397), and
		// the queue takes its 12 MiB of the 90 (78 MiB: 390 series).
		{"the checkpoint queue is not the series'", 102 * mib, 12 * mib, 0, 100 * mib, 450, 450, 100000, 390},
		{"the checkpoint queue takes at most half", 145 * mib, 100 * mib, 0, 100 * mib, 450, 450, 100000, 450},
		// 1000 series in 50 MiB while history loads hold 150 MiB: the
		// loads neither make the series look dearer nor take their room.
		{"history loads are not the series'", 200 * mib, 0, 150 * mib, 100 * mib, 1000, 0, 100000, 0},
		{"history loads leave the bound as the series set it", 240 * mib, 0, 150 * mib, 100 * mib, 900, 900, 100000, 900},
		{"history and the checkpoint queue", 252 * mib, 12 * mib, 150 * mib, 100 * mib, 450, 450, 100000, 390},
	} {
		if got := SeriesLimit(c.live, c.transit, c.history, c.budget, c.active, c.current, c.maxSeries); got != c.want {
			t.Errorf("%s: %d, want %d", c.name, got, c.want)
		}
	}
}

// setGCPercent sets [pipeline] gc_percent, DefaultGCPercent when absent, and leaves
// the runtime's value alone when GOGC is in the environment.
func TestSetGCPercent(t *testing.T) {
	orig := debug.SetGCPercent(100)
	defer debug.SetGCPercent(orig)
	current := func() int {
		p := debug.SetGCPercent(-1)
		debug.SetGCPercent(p)
		return p
	}
	forty := 40
	for _, c := range []struct {
		name     string
		cfg      *int
		gogc     string
		runtime  int // the value before the call
		want     int
		wantFrom string
	}{
		{"default", nil, "", 100, DefaultGCPercent, "pipeline.gc_percent"},
		{"configured", &forty, "", 100, 40, "pipeline.gc_percent"},
		{"GOGC wins", &forty, "70", 70, 70, "GOGC"},
		{"GOGC=off is kept", nil, "off", -1, -1, "GOGC"},
	} {
		debug.SetGCPercent(c.runtime)
		got, from := SetGCPercent(c.cfg, c.gogc)
		if got != c.want || from != c.wantFrom || current() != c.want {
			t.Errorf("%s: %d from %s, runtime %d; want %d from %s", c.name, got, from, current(), c.want, c.wantFrom)
		}
	}
}
