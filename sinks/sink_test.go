package sinks

import (
	"context"
	"github.com/forecastd/forecastd/internal/config/schema"
	"github.com/forecastd/forecastd/internal/natsconn"
	"github.com/nats-io/nats.go"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/forecastd/forecastd/internal/testserver/influxtest"
)

// The built-in kinds come first, in order; a bad or taken name is a
// programmer's error.
func TestRegister(t *testing.T) {
	ks := Kinds()
	if len(ks) < 2 || ks[0].Name() != "nats" || ks[1].Name() != "influxdb" {
		t.Fatalf("kinds %v, want nats and influxdb first", ks)
	}
	for _, name := range []string{"nats", "", "Toy", "a-b"} {
		func() {
			defer func() {
				if r := recover(); r == nil || !strings.Contains(r.(string), "sinks: Register") {
					t.Errorf("Register(%q): recovered %v, want a panic", name, r)
				}
			}()
			Register(namedKind(name))
		}()
	}
}

type namedKind string

func (k namedKind) Name() string                          { return string(k) }
func (namedKind) Open(context.Context, Env) (Sink, error) { return nil, nil }

// Opened as the daemon opens them: nats on the connection given, influxdb
// only with its config (and prepared); their collectors and the gate's go
// in one registry (names shared by sink, same help), and report the
// sinks' Stats.
func TestKindsOpenAndCollect(t *testing.T) {
	t.Parallel()
	ns := runNATS(t, server.Options{})
	srv := influxtest.Shared(t, influxtest.Options{})
	out := &natsconn.Reopen{Name: "nats output", URL: ns.ClientURL(), Options: NATSOptions(0), Log: slog.New(slog.DiscardHandler)}
	if err := out.Connect(func(*nats.Conn) error { return nil }); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(out.Close)
	env := Env{Logger: slog.New(slog.DiscardHandler), NATS: out, Redelivers: true}
	ctx := ctxTimeout(t, 20*time.Second)
	if s, err := (influxKind{}).Open(ctx, env); s != nil || err != nil {
		t.Fatalf("influxdb without its config: %v, %v; want none", s, err)
	}
	if s, err := (natsKind{}).Open(ctx, Env{}); s != nil || err != nil {
		t.Fatalf("nats without a connection: %v, %v; want none", s, err)
	}
	env.Config = &NATSConfig{SubjectPrefix: "fc"}
	s, err := (natsKind{}).Open(ctx, env)
	if err != nil {
		t.Fatal(err)
	}
	n := s.(*NATS)
	if n.prefix != "fc" || !n.cfg.RefuseWhileClosed || n.cfg.ConfirmEvery != DefaultConfirmEvery {
		t.Errorf("nats sink: prefix %q, refuse while closed %v, confirm every %v; want fc, true (the input redelivers) and %v", n.prefix, n.cfg.RefuseWhileClosed, n.cfg.ConfirmEvery, DefaultConfirmEvery)
	}
	env.Config = &InfluxConfig{URL: srv.URL, Bucket: srv.Bucket, FlushInterval: schema.Dur(time.Hour)}
	s, err = (influxKind{}).Open(ctx, env)
	if err != nil {
		t.Fatal(err)
	}
	in := s.(*Influx)
	gate := NewGate()
	ss := &SeriesSink{Model: "aosvr", Subject: "x", Gate: gate, Out: Tee{n, in}}
	for i := range 5 {
		if err := ss.Forecast("s", forecastRec("s", "x", i, true).Forecast); err != nil {
			t.Fatal(err)
		}
	}
	if err := in.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if err := n.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	fams := gather(t, gate, n, in)
	for _, c := range []struct {
		name, sink string
		want       float64
	}{
		{"forecastd_records_written_total", "nats", float64(n.Stats().Published)},
		{"forecastd_records_written_total", "influxdb", float64(in.Stats().Written)},
		{"forecastd_buffer_size", "influxdb", 0},
	} {
		if got := metricValue(t, fams, c.name, "sink="+c.sink); got != c.want || c.name == "forecastd_records_written_total" && got != 5 {
			t.Errorf("%s{sink=%s} = %v, want %v (5 written)", c.name, c.sink, got, c.want)
		}
	}
	metric(t, fams, "forecastd_records_dropped_total", "sink=influxdb", "reason="+DropRejected)
	metric(t, fams, "forecastd_records_dropped_total", "sink=nats", "reason="+DropBufferFull)
	problems, err := testutil.CollectAndLint(in)
	if err != nil {
		t.Fatal(err)
	}
	more, err := testutil.CollectAndLint(n)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range append(problems, more...) {
		t.Errorf("%s: %s", p.Metric, p.Text)
	}
	if err := in.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := n.Close(ctx); err != nil {
		t.Fatal(err)
	}
}
