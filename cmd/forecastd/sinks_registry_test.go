package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/forecastd/forecastd/internal/config"
	"github.com/forecastd/forecastd/sinks"
)

// toyKind is a sink kind registered by this file alone, with settings of
// its own ([output.toy], toyConfig): check-config reads and checks its
// table, the reference documents it, and the daemon opens the sink when
// the table is present, hands it every record, serves its metrics and
// closes it at shutdown, with no change to the command's code or to
// internal/config.
type toyKind struct{}

// toyWanted is the sink the next daemon with [output.toy] opens.
var toyWanted atomic.Pointer[toySink]

func init() { sinks.Register(toyKind{}) }

func (toyKind) Name() string   { return "toy" }
func (toyKind) Doc() string    { return "If present, records are counted by the toy sink." }
func (toyKind) NewConfig() any { return new(toyConfig) }

func (toyKind) Open(_ context.Context, env sinks.Env) (sinks.Sink, error) {
	cfg, _ := env.Config.(*toyConfig)
	if cfg == nil {
		return nil, nil // no [output.toy]
	}
	s := toyWanted.Load()
	if s == nil {
		return nil, errors.New("no toy sink wanted")
	}
	s.log = env.Logger != nil
	s.cfg = *cfg
	return s, nil
}

// toyConfig is [output.toy].
type toyConfig struct {
	// Only: the sink counts the records of the series whose key starts
	// with it.
	Only string `toml:"only" doc:"count the records of the series whose key starts with this (required)"`
	// Limit bounds the records counted (0: none).
	Limit int `toml:"limit" doc:"records counted at most (0: no limit)"`
}

// Validate reports a missing prefix and a negative limit, each naming its
// key.
func (c *toyConfig) Validate() error {
	var errs []error
	if c.Only == "" {
		errs = append(errs, errors.New("only: required"))
	}
	if c.Limit < 0 {
		errs = append(errs, fmt.Errorf("limit: must not be negative, got %d", c.Limit))
	}
	return errors.Join(errs...)
}

// toySink counts what it is given, and refuses it after Close.
type toySink struct {
	mu                  sync.Mutex
	cfg                 toyConfig
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
	if !strings.HasPrefix(r.Series, s.cfg.Only) || s.cfg.Limit > 0 && s.total() >= s.cfg.Limit {
		return nil
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

// total is the records counted; s.mu is held.
func (s *toySink) total() int {
	n := 0
	for _, c := range s.forecasts {
		n += c
	}
	for _, c := range s.outcomes {
		n += c
	}
	return n
}

func (s *toySink) count(series string) (forecasts, outcomes int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.forecasts[series], s.outcomes[series]
}

// TestRegisteredSinkConfig: the toy sink's table is decoded and checked
// as the built-in sinks' are, each problem on its key's line, and
// documented in the reference.
func TestRegisteredSinkConfig(t *testing.T) {
	p := writeConfig(t, "[input]\nsubjects = [\"a\"]\n\n[output.toy]\nlimit = -1\nonl = \"x\"\n")
	_, err := config.Load(p)
	for _, want := range []string{
		p + ":4: output.toy.only: required",
		p + ":5: output.toy.limit: must not be negative, got -1",
		p + `:6: unknown key "output.toy.onl" (did you mean "only"?)`,
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	ref := string(config.Reference())
	for _, want := range []string{"## [output.toy]\n\nIf present, records are counted by the toy sink.", "| `limit` | integer | `0` | records counted at most (0: no limit) |"} {
		if !strings.Contains(ref, want) {
			t.Errorf("the reference lacks %q", want)
		}
	}
}

// TestRegisteredSinkDaemonPath: a sink kind registered by a test file
// goes through the daemon's whole path: opened at start beside NATS when
// its table is present, given its settings, fed every series' forecasts
// and outcomes (the same forecasts NATS publishes), its metrics on
// /metrics beside the built-in sinks' under the shared names, closed once
// at shutdown.
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

[output.toy]
only = "toy.a"
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
		for _, subject := range []string{"toy.a", "toy.b"} {
			if err := nc.Publish(subject, fmt.Appendf(nil, `{"time":%d,"value":%v}`, t0.Add(time.Duration(i)*time.Second).Unix(), float64(i%5))); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	natsOut := sinkOf[*sinks.NATS](rd.d)
	waitFor(t, 20*time.Second, "every point processed and its forecast published", func() bool {
		f, _ := toy.count("toy.a")
		return rd.d.runner.Stats().Processed == 2*n && f > 0 && uint64(2*f) == natsOut.Stats().Published && col.count("toy.a") == f
	})
	if f, o := toy.count("toy.b"); f+o > 0 {
		t.Errorf("toy sink counted %d records of toy.b, whose key does not start with its only", f+o)
	}
	f, o := toy.count("toy.a")
	if o != f-1 {
		t.Errorf("toy sink got %d forecasts and %d outcomes, want an outcome for every forecast but the last", f, o)
	}
	m := scrape(t, rd.d.httpAddr.String())
	if got := m[`forecastd_records_written_total{sink="toy"}`]; got != float64(f+o) {
		t.Errorf(`records_written_total{sink="toy"} = %v, want %d`, got, f+o)
	}
	if got := m[`forecastd_records_written_total{sink="nats"}`]; got != float64(2*f) {
		t.Errorf(`records_written_total{sink="nats"} = %v beside the toy's, want %d`, got, 2*f)
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
