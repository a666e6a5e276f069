package telemetry

import (
	"log/slog"
	"time"

	"github.com/forecastd/forecastd/runner"
)

// LogWarmStart logs, every period (0: DefaultDropLogEvery) and once more
// when stop is closed, one Info line of what warm start did since the
// last one, if anything: the series that learned their past and its
// points, those that started cold, by reason, and the points of the past
// dropped; then returns. A warm start is otherwise seen only on /metrics,
// and a line per series would be one per new series at Info.
func LogWarmStart(log *slog.Logger, every time.Duration, stop <-chan struct{}, stats func() runner.HistoryStats) {
	if every <= 0 {
		every = DefaultDropLogEvery
	}
	var last runner.HistoryStats
	report := func() {
		st := stats()
		warmed, points := st.Warmed-last.Warmed, st.Points-last.Points
		attrs := []any{"warmed", warmed, "points", points}
		cold := uint64(0)
		for _, r := range runner.ColdReasons {
			if n := st.Cold[r] - last.Cold[r]; n > 0 {
				cold += n
				attrs = append(attrs, "cold_"+r, n)
			}
		}
		dropped := uint64(0)
		for _, r := range runner.HistoryDropReasons {
			if n := st.Dropped[r] - last.Dropped[r]; n > 0 {
				dropped += n
				attrs = append(attrs, "dropped_"+r, n)
			}
		}
		if warmed+cold+dropped > 0 {
			log.Info("warm start from history", append(attrs, "waiting", st.Waiting, "warmed_total", st.Warmed)...)
		}
		last = st
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			report()
		case <-stop:
			report()
			return
		}
	}
}
