package sinks

import (
	"context"
	"testing"

	"github.com/nats-io/nats-server/v2/server"
)

// BenchmarkNATSWrite: one forecast published through a real in-process
// nats-server (no subscriber), as a shard writes it, and confirmed every
// 1000 as the daemon does every 100 ms: allocations per forecast are the
// sink's and nats.go's.
func BenchmarkNATSWrite(b *testing.B) {
	ns := runNATS(b, server.Options{})
	nc := connect(b, ns.ClientURL())
	s := NewNATS(nc, NATSConfig{})
	r := forecastRec("cpu,host=a usage_idle", "telegraf.cpu", 1, true)
	ctx := context.Background()
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		if err := s.Write(r); err != nil {
			b.Fatal(err)
		}
		if n++; n%1000 == 0 {
			if err := s.Confirm(ctx); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkNATSEncode: the sink's own work per forecast, without the
// client: its body, subject and message id built into the scratch
// buffers, and the message kept until confirmed.
func BenchmarkNATSEncode(b *testing.B) {
	r := forecastRec("cpu,host=a usage_idle", "telegraf.cpu", 1, true)
	sc := &natsScratch{}
	var kept []byte
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		sc.body = appendForecastJSON(sc.body[:0], &r)
		sc.subj = appendSubject(sc.subj[:0], DefaultSubjectPrefix, &r)
		sc.id = appendMsgID(sc.id[:0], r.Series, r.Step, r.Forecast.Time)
		kept = appendKept(kept, sc)
		if n++; n%1000 == 0 {
			kept = kept[:0]
		}
	}
}
