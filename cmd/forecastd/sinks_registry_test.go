package main

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/forecastd/forecastd/sinks"
)

// toyKind is a sink kind registered by this file alone: the daemon opens
// it, hands it every record, serves its metrics and closes it at
// shutdown, with no change to the command's code. It opens only while a
// test wants it (toyWanted), so that the other tests' daemons are as
// before.
type toyKind struct{}

var toyWanted atomic.Pointer[toySink]

func init() { sinks.Register(toyKind{}) }

func (toyKind) Name() string { return "toy" }

func (toyKind) Open(_ context.Context, env sinks.Env) (sinks.Sink, error) {
	s := toyWanted.Load()
	if s == nil {
		return nil, nil
	}
	s.log = env.Logger != nil
	return s, nil
}

// toySink counts what it is given, and refuses it after Close.
type toySink struct {
	mu                  sync.Mutex
	forecasts, outcomes map[string]int
	closes, flushes     int
	log                 bool
}

var toyWritten = sinks.NewDesc(sinks.MetricWritten, "toy")

func (s *toySink) Write(r sinks.Record) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closes > 0 {
		return sinks.ErrClosed
	}
	switch r.Kind {
	case sinks.KindForecast:
		s.forecasts[r.Series]++
	case sinks.KindOutcome:
		s.outcomes[r.Series]++
	}
	return nil
}

func (s *toySink) Flush(context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.flushes++
	return nil
}

func (s *toySink) Close(context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closes++
	return nil
}

func (s *toySink) Describe(ch chan<- *prometheus.Desc) { ch <- toyWritten }

func (s *toySink) Collect(ch chan<- prometheus.Metric) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, c := range s.forecasts {
		n += c
	}
	for _, c := range s.outcomes {
		n += c
	}
	ch <- prometheus.MustNewConstMetric(toyWritten, prometheus.CounterValue, float64(n))
}

func (s *toySink) count(series string) (forecasts, outcomes int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.forecasts[series], s.outcomes[series]
}

// TestRegisteredSinkDaemonPath: a sink kind registered by a test file
// goes through the daemon's whole path: opened at start beside NATS, fed
// every series' forecasts and outcomes (the same forecasts NATS
// publishes), its metrics on /metrics beside the built-in sinks' under
// the shared names, closed once at shutdown. Not parallel: toyWanted
// opens it in the daemons started meanwhile.
func TestRegisteredSinkDaemonPath(t *testing.T) {
	toy := &toySink{forecasts: map[string]int{}, outcomes: map[string]int{}}
	toyWanted.Store(toy)
	t.Cleanup(func() { toyWanted.Store(nil) })

	rd := startDaemon(t, `
[nats]
servers = ["127.0.0.1:0"]
embedded = true

[input]
subjects = ["toy.>"]

[http]
listen = "127.0.0.1:0"

[model]
kind = "norma"
dim = 3
`, nil)
	if got := sinkOf[*toySink](rd.d); got != toy || !toy.log {
		t.Fatalf("the daemon's toy sink %p, want %p opened with a logger", got, toy)
	}
	nc := connectTest(t, rd.d.embedded.ClientURL())
	col := collect(t, nc, "forecast.>")
	waitSubscribed(t, rd.d.embedded, "toy.>")
	const n = 60
	t0 := time.Now().Add(-time.Hour).Truncate(time.Second)
	for i := range n {
		if err := nc.Publish("toy.a", fmt.Appendf(nil, `{"time":%d,"value":%v}`, t0.Add(time.Duration(i)*time.Second).Unix(), float64(i%5))); err != nil {
			t.Fatal(err)
		}
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	natsOut := sinkOf[*sinks.NATS](rd.d)
	waitFor(t, 20*time.Second, "every point processed and its forecast published", func() bool {
		f, _ := toy.count("toy.a")
		return rd.d.runner.Stats().Processed == n && f > 0 && uint64(f) == natsOut.Stats().Published && col.count("toy.a") == f
	})
	f, o := toy.count("toy.a")
	if o != f-1 {
		t.Errorf("toy sink got %d forecasts and %d outcomes, want an outcome for every forecast but the last", f, o)
	}
	m := scrape(t, rd.d.httpAddr.String())
	if got := m[`forecastd_records_written_total{sink="toy"}`]; got != float64(f+o) {
		t.Errorf(`records_written_total{sink="toy"} = %v, want %d`, got, f+o)
	}
	if got := m[`forecastd_records_written_total{sink="nats"}`]; got != float64(f) {
		t.Errorf(`records_written_total{sink="nats"} = %v beside the toy's, want %d`, got, f)
	}
	if _, err := rd.stop(t); err != nil {
		t.Fatalf("stop: %v\n%s", err, rd.logs)
	}
	toy.mu.Lock()
	defer toy.mu.Unlock()
	if toy.closes != 1 {
		t.Errorf("toy sink closed %d times, want 1", toy.closes)
	}
}
