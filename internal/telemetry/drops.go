package telemetry

import (
	"log/slog"
	"time"

	"github.com/forecastd/forecastd/runner"
	"github.com/forecastd/forecastd/sources"
)

// DefaultDropLogEvery is how often LogDrops logs what was dropped since
// the last time: at most one line per reason per period.
const DefaultDropLogEvery = 10 * time.Second

// dropReason is a way for a point or message to be lost before a
// forecast, how to count it, and what a person can do about it.
type dropReason struct {
	reason, what, fix string
	count             func(sources.Stats, runner.RunnerStats) uint64
}

// dropReasons are the drops the sinks do not log themselves (the InfluxDB
// sink logs its own; the source logs the first refused message of each
// second, whatever its reason).
var dropReasons = []dropReason{
	{"out_of_order", "points dropped: not after their series' previous point",
		"a series' points must come in time order, each time once: look for two publishers of one series, or a publisher that resends",
		func(_ sources.Stats, r runner.RunnerStats) uint64 { return r.OutOfOrder }},
	{"queue_full", "points dropped: their shard's queue was full (for a new series' point on core NATS: its shard's queue of new series)",
		"the models cannot keep up: fewer series, a lighter [model], or more CPU ([pipeline] queue_size only absorbs bursts); new series shed under a flood keep the held ones' points",
		func(_ sources.Stats, r runner.RunnerStats) uint64 { return r.DroppedQueueFull }},
	{"slow_consumer", "messages dropped by the NATS client: forecastd read them too slowly",
		"the models cannot keep up, or a burst exceeded the client's buffer: see queue_full",
		func(s sources.Stats, _ runner.RunnerStats) uint64 { return s.Dropped }},
	{"late", "points dropped: for a bucket of their series' step already closed",
		"a publisher sends points later than [model] step_grace after their bucket's end: raise step_grace, or look for a delayed publisher",
		func(_ sources.Stats, r runner.RunnerStats) uint64 { return r.Late }},
	{"implausible", "points dropped: a value implausibly far from its series' last (beyond a million times its scale)",
		"look for a publisher sending garbage (±1e308, a wrong unit); three such values in a row that agree are taken as a new level",
		func(_ sources.Stats, r runner.RunnerStats) uint64 { return r.Implausible }},
	{"overflow", "bucket points dropped: the sum or rate of a bucket was beyond float64",
		"look for a publisher sending garbage (values near ±1e308); [model] aggregate = \"mean\" never overflows, and a rate's points should be more than a second apart",
		func(_ sources.Stats, r runner.RunnerStats) uint64 { return r.Overflow }},
	{"refused_input", "messages refused: no point could be decoded (forecastd_parse_errors_total says why)",
		"check what publishes on the subject against [input] data_format",
		func(s sources.Stats, _ runner.RunnerStats) uint64 { return s.Refused }},
}

// dropLogger logs, for each reason, the drops since its last line.
type dropLogger struct {
	log  *slog.Logger
	last []uint64
}

func newDropLogger(log *slog.Logger) *dropLogger {
	return &dropLogger{log: log, last: make([]uint64, len(dropReasons))}
}

// report logs one Warn line per reason whose count grew since the last
// report.
func (l *dropLogger) report(src sources.Stats, run runner.RunnerStats) {
	for i, r := range dropReasons {
		n := r.count(src, run)
		if n > l.last[i] {
			l.log.Warn(r.what, "reason", r.reason, "dropped", n-l.last[i], "dropped_total", n, "fix", r.fix)
			l.last[i] = n
		}
	}
}

// LogDrops logs, every period (0: DefaultDropLogEvery) and once more
// when stop is closed, one Warn line per reason whose count grew, then
// returns: what was lost, how many, and what to do about it.
func LogDrops(log *slog.Logger, every time.Duration, stop <-chan struct{}, src func() sources.Stats, run func() runner.RunnerStats) {
	if every <= 0 {
		every = DefaultDropLogEvery
	}
	l := newDropLogger(log)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			l.report(src(), run())
		case <-stop:
			l.report(src(), run())
			return
		}
	}
}
