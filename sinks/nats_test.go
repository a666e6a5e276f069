package sinks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/forecastd/forecastd/pipeline"
)

// runNATS starts an in-process nats-server with opts (Port −1 for a free
// one) and shuts it down at cleanup.
func runNATS(t testing.TB, opts server.Options) *server.Server {
	t.Helper()
	if opts.Port == 0 {
		opts.Port = -1
	}
	opts.Host = "127.0.0.1"
	opts.NoLog, opts.NoSigs = true, true
	s, err := server.NewServer(&opts)
	if err != nil {
		t.Fatal(err)
	}
	s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats-server not ready")
	}
	t.Cleanup(func() { s.Shutdown(); s.WaitForShutdown() })
	return s
}

func connect(t testing.TB, url string, opts ...nats.Option) *nats.Conn {
	t.Helper()
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// waitFor polls cond every 10 ms until it holds, failing t after d.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

var t0 = time.Date(2024, 5, 1, 12, 0, 0, 123456789, time.UTC)

func forecastRec(series, subject string, i int, withInterval bool) Record {
	f := pipeline.Forecast{
		Origin: t0.Add(time.Duration(i) * 10 * time.Second),
		Time:   t0.Add(time.Duration(i+1) * 10 * time.Second),
		Value:  float64(i) + 0.25,
		Lower:  math.NaN(),
		Upper:  math.NaN(),
		Scaled: 0.1,
	}
	if withInterval {
		f.Lower, f.Upper = f.Value-1, f.Value+1.5
	}
	return Record{Kind: KindForecast, Series: series, Model: "aosvr", Subject: subject, Forecast: f}
}

func ctxTimeout(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

type body struct {
	Series    string    `json:"series"`
	Model     string    `json:"model"`
	Time      time.Time `json:"time"`
	Origin    time.Time `json:"origin"`
	Horizon   int       `json:"horizon"`
	Yhat      *float64  `json:"yhat"`
	YhatLower *float64  `json:"yhat_lower"`
	YhatUpper *float64  `json:"yhat_upper"`
}

func TestNATSPublish(t *testing.T) {
	srv := runNATS(t, server.Options{})
	sub := connect(t, srv.ClientURL())
	msgs := make(chan *nats.Msg, 16)
	if _, err := sub.ChanSubscribe(">", msgs); err != nil {
		t.Fatal(err)
	}
	if err := sub.Flush(); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name, prefix, subject string
		wantPrefix            string
		queue                 int
	}{
		{"default prefix", "", "sensors.cpu", "forecast", 0},
		{"own prefix", "fc.out", "host1", "fc.out", 0},
		{"queued", "fc.out", "host1", "fc.out", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := NewNATS(connect(t, srv.ClientURL(), NATSOptions(0)...), NATSConfig{SubjectPrefix: tc.prefix, Queue: tc.queue})
			series := `cpu,host=a "usage"` + "\n"
			recs := []Record{forecastRec(series, tc.subject, 0, false), forecastRec(series, tc.subject, 1, true)}
			out := Record{Kind: KindOutcome, Series: series, Subject: tc.subject}
			for _, r := range []Record{recs[0], out, recs[1]} {
				if err := s.Write(r); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.Close(ctxTimeout(t, 5*time.Second)); err != nil {
				t.Fatal(err)
			}
			if err := s.Write(recs[0]); err != ErrClosed {
				t.Errorf("Write after Close: %v, want ErrClosed", err)
			}
			for i, r := range recs {
				var m *nats.Msg
				select {
				case m = <-msgs:
				case <-time.After(5 * time.Second):
					t.Fatalf("message %d not received", i)
				}
				if want := tc.wantPrefix + "." + tc.subject; m.Subject != want {
					t.Errorf("subject %q, want %q", m.Subject, want)
				}
				wantID := `cpu,host=a "usage" @` + r.Forecast.Time.Format("2006-01-02T15:04:05.000000000Z")
				if got := m.Header.Get(nats.MsgIdHdr); got != wantID {
					t.Errorf("Nats-Msg-Id %q, want %q", got, wantID)
				}
				var raw map[string]any
				if err := json.Unmarshal(m.Data, &raw); err != nil {
					t.Fatalf("body %s: %v", m.Data, err)
				}
				if len(raw) != 8 {
					t.Errorf("body has %d keys, want 8: %s", len(raw), m.Data)
				}
				var b body
				if err := json.Unmarshal(m.Data, &b); err != nil {
					t.Fatal(err)
				}
				f := r.Forecast
				if b.Series != series || b.Model != "aosvr" || b.Horizon != 1 ||
					!b.Time.Equal(f.Time) || !b.Origin.Equal(f.Origin) ||
					b.Yhat == nil || *b.Yhat != f.Value {
					t.Errorf("body %s does not match %+v", m.Data, f)
				}
				if !strings.Contains(string(m.Data), `"time":"2024-05-01T12:00:`) {
					t.Errorf("time not RFC 3339 UTC: %s", m.Data)
				}
				if f.HasInterval() {
					if b.YhatLower == nil || b.YhatUpper == nil || *b.YhatLower != f.Lower || *b.YhatUpper != f.Upper {
						t.Errorf("bounds of %s, want %v %v", m.Data, f.Lower, f.Upper)
					}
				} else if b.YhatLower != nil || b.YhatUpper != nil || !strings.Contains(string(m.Data), `"yhat_lower":null,"yhat_upper":null`) {
					t.Errorf("bounds of %s, want null", m.Data)
				}
			}
			select {
			case m := <-msgs:
				t.Errorf("unexpected message %s: %s (outcomes are not published)", m.Subject, m.Data)
			default:
			}
			if st := s.Stats(); st.Published != 2 || st.Errors != 0 {
				t.Errorf("stats %+v, want 2 published", st)
			}
		})
	}
}

func TestNATSJetStreamDeduplicates(t *testing.T) {
	srv := runNATS(t, server.Options{JetStream: true, StoreDir: t.TempDir()})
	nc := connect(t, srv.ClientURL())
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctxTimeout(t, 20*time.Second)
	stream, err := js.CreateStream(ctx, jetstream.StreamConfig{
		Name: "FORECASTS", Subjects: []string{"forecast.>"}, Duplicates: time.Minute, Storage: jetstream.MemoryStorage,
	})
	if err != nil {
		t.Fatal(err)
	}
	s := NewNATS(connect(t, srv.ClientURL(), NATSOptions(0)...), NATSConfig{})
	a, b := forecastRec("cpu", "in.cpu", 0, true), forecastRec("cpu", "in.cpu", 1, true)
	replayed := a
	replayed.Forecast.Value = 99 // a replay may even differ: the id decides
	for _, r := range []Record{a, replayed, b} {
		if err := s.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	// Messages of one connection are stored in order: once b is, the
	// duplicate has been seen.
	var info *jetstream.StreamInfo
	waitFor(t, 10*time.Second, "the stream to hold b", func() bool {
		info, err = stream.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return info.State.LastSeq >= 2
	})
	if info.State.Msgs != 2 || info.State.LastSeq != 2 {
		t.Fatalf("stream has %d messages (last seq %d), want 2: the republished forecast was not de-duplicated",
			info.State.Msgs, info.State.LastSeq)
	}
	m, err := stream.GetMsg(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	var bd body
	if err := json.Unmarshal(m.Data, &bd); err != nil || *bd.Yhat != a.Forecast.Value {
		t.Errorf("first stored message %s (%v), want the original forecast", m.Data, err)
	}
	if st := s.Stats(); st.Published != 3 {
		t.Errorf("published %d, want 3", st.Published)
	}
}

// With the server down, the sink neither blocks nor crashes: it buffers up
// to the reconnect buffer's bound, counts the rest, and what it buffered
// arrives once the server is back.
func TestNATSOutageBounded(t *testing.T) {
	storeDir := t.TempDir()
	opts := server.Options{JetStream: true, StoreDir: storeDir}
	srv := runNATS(t, opts)
	addr := srv.ClientURL()
	ctx := ctxTimeout(t, 60*time.Second)

	jnc := connect(t, addr, nats.MaxReconnects(-1), nats.ReconnectWait(20*time.Millisecond))
	js, err := jetstream.New(jnc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{
		Name: "FORECASTS", Subjects: []string{"forecast.>"}, Duplicates: time.Minute, Storage: jetstream.FileStorage,
	}); err != nil {
		t.Fatal(err)
	}

	const bufSize = 4096
	nc := connect(t, addr, append(NATSOptions(bufSize), nats.ReconnectWait(20*time.Millisecond), nats.ReconnectJitter(0, 0))...)
	s := NewNATS(nc, NATSConfig{})
	if err := s.Write(forecastRec("cpu", "in", 0, true)); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	// A flush means the server has the message, not that the stream has
	// stored it: wait for that, or a loaded machine's shutdown loses it
	// (seen in CI: 16 of 17 held).
	waitFor(t, 10*time.Second, "the stream to store the first message", func() bool {
		str, err := js.Stream(ctx, "FORECASTS")
		if err != nil {
			return false
		}
		info, err := str.Info(ctx)
		return err == nil && info.State.Msgs == 1
	})

	opts.Port = srv.Addr().(*net.TCPAddr).Port
	srv.Shutdown()
	srv.WaitForShutdown()
	waitFor(t, 10*time.Second, "the client to notice", func() bool { return nc.Status() == nats.RECONNECTING })

	const n = 200
	start := time.Now()
	var failed int
	for i := 1; i <= n; i++ {
		if err := s.Write(forecastRec("cpu", "in", i, true)); err != nil {
			failed++
		}
	}
	// A bound to catch writes that wait for the connection, not a measure.
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("%d writes while disconnected took %v", n, d)
	}
	st := s.Stats()
	buffered := int(st.Published) - 1
	t.Logf("while down: %d buffered (%d bytes), %d refused", buffered, st.Buffered, st.BufferFull)
	if buffered <= 0 || failed == 0 || uint64(failed) != st.BufferFull || st.Errors != st.BufferFull || buffered+failed != n {
		t.Fatalf("stats %+v with %d refused of %d: want some buffered, the rest refused and counted", st, failed, n)
	}
	if st.Buffered > bufSize+512 {
		t.Errorf("client buffers %d bytes, bound %d", st.Buffered, bufSize)
	}

	runNATS(t, opts)
	waitFor(t, 10*time.Second, "the sink's connection to reconnect", func() bool { return nc.IsConnected() })
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	// Under -race on a loaded two-core machine the restarted server's
	// JetStream and both clients' reconnects can take seconds; the wait
	// says what the stream held when it gave up.
	var held uint64
	var lastErr error
	deadline := time.Now().Add(25 * time.Second)
	for {
		if str, err := js.Stream(ctx, "FORECASTS"); err != nil {
			lastErr = err
		} else if i, err := str.Info(ctx); err != nil {
			lastErr = err
		} else {
			held, lastErr = i.State.Msgs, nil
			if held >= uint64(1+buffered) {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 25s the stream holds %d messages (last error %v), want %d; sink stats %+v, sink connected %v",
				held, lastErr, 1+buffered, s.Stats(), nc.IsConnected())
		}
		time.Sleep(20 * time.Millisecond)
	}
	str, _ := js.Stream(ctx, "FORECASTS")
	info, err := str.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs != uint64(1+buffered) {
		t.Errorf("stream holds %d messages, want %d (1 before the outage + %d buffered)", info.State.Msgs, 1+buffered, buffered)
	}
}

// No message carries a number that is not finite: the gate of the
// series' sink holds back a forecast whose value is not (and counts it),
// and takes off a bound that is not finite, or half an interval, so that
// the message has both bounds null.
func TestNATSNonFinite(t *testing.T) {
	srv := runNATS(t, server.Options{})
	sub := connect(t, srv.ClientURL())
	msgs := make(chan *nats.Msg, 16)
	if _, err := sub.ChanSubscribe("forecast.>", msgs); err != nil {
		t.Fatal(err)
	}
	if err := sub.Flush(); err != nil {
		t.Fatal(err)
	}
	s := NewNATS(connect(t, srv.ClientURL(), NATSOptions(0)...), NATSConfig{})
	gate := NewGate()
	ss := &SeriesSink{Model: "aosvr", Subject: "x", Gate: gate, Out: s}
	inf := math.Inf(1)
	for i, f := range [][3]float64{
		{inf, 0, 1}, {math.NaN(), 0, 1}, // dropped
		{1, -inf, 1.17e308}, {1, math.NaN(), 2}, {1, 0, inf}, // no interval
		{1, 0, 2},
	} {
		r := forecastRec("s", "x", i, true)
		r.Forecast.Value, r.Forecast.Lower, r.Forecast.Upper = f[0], f[1], f[2]
		if err := ss.Forecast("s", r.Forecast); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(ctxTimeout(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		var m *nats.Msg
		select {
		case m = <-msgs:
		case <-time.After(5 * time.Second):
			t.Fatalf("message %d not received", i)
		}
		var b body
		if err := json.Unmarshal(m.Data, &b); err != nil {
			t.Fatal(err)
		}
		if b.Yhat == nil || *b.Yhat != 1 {
			t.Errorf("message %d: %s, want yhat 1", i, m.Data)
		}
		if i < 3 && (b.YhatLower != nil || b.YhatUpper != nil) {
			t.Errorf("message %d: %s, want both bounds null", i, m.Data)
		}
		if i == 3 && (b.YhatLower == nil || b.YhatUpper == nil) {
			t.Errorf("message %d: %s, want the interval", i, m.Data)
		}
	}
	select {
	case m := <-msgs:
		t.Errorf("unexpected message %s", m.Data)
	case <-time.After(100 * time.Millisecond):
	}
	if st := s.Stats(); st.Published != 4 || st.Errors != 0 {
		t.Errorf("stats %+v, want 4 published", st)
	}
	// {1, 0, inf} has an interval whose upper bound is not finite; the
	// others without one have no interval to take off.
	if f, iv, o := gate.NonFinite(); f != 2 || iv != 2 || o != 0 {
		t.Errorf("gate counted %d forecasts, %d intervals, %d outcomes; want 2, 2, 0", f, iv, o)
	}
}

// Close of a sink whose connection has never connected, with nothing
// unsent, returns at once: there is nothing to flush.
func TestNATSCloseNotConnected(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "nats://" + ln.Addr().String()
	ln.Close()
	nc := connect(t, url, append(NATSOptions(0), nats.RetryOnFailedConnect(true))...)
	s := NewNATS(nc, NATSConfig{})
	start := time.Now()
	if err := s.Close(ctxTimeout(t, time.Minute)); err != nil {
		t.Errorf("Close: %v", err)
	}
	// Not a measure: a Close that waited for a flush would wait for the
	// context's minute.
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("Close took %v, want at once", d)
	}
}

// TestNATSReplaceRepublishesUnconfirmed: the server closes the sink's
// connection (a publish line beyond its limit) while forecasts are in the
// client's buffer; those, and the ones written while the connection is
// closed, are published on the connection Replace installs. Confirm
// forgets what the server has; with RefuseWhileClosed a forecast written
// while the connection is closed is refused instead.
func TestNATSReplaceRepublishesUnconfirmed(t *testing.T) {
	for _, tc := range []struct {
		refuse bool
		queue  int
	}{{false, 0}, {true, 0}, {false, 3}} {
		refuse := tc.refuse
		t.Run(fmt.Sprintf("refuse=%v,queue=%d", refuse, tc.queue), func(t *testing.T) {
			ns := runNATS(t, server.Options{})
			sub := connect(t, ns.ClientURL())
			var mu sync.Mutex
			got := map[string]int{}
			if _, err := sub.Subscribe("forecast.>", func(m *nats.Msg) {
				mu.Lock()
				got[m.Header.Get(nats.MsgIdHdr)]++
				mu.Unlock()
			}); err != nil {
				t.Fatal(err)
			}
			if err := sub.Flush(); err != nil {
				t.Fatal(err)
			}
			distinct := func() int { mu.Lock(); defer mu.Unlock(); return len(got) }
			nc := connect(t, ns.ClientURL())
			s := NewNATS(nc, NATSConfig{RefuseWhileClosed: refuse, Queue: tc.queue})
			write := func(i int) error { return s.Write(forecastRec("s", "in.s", i, true)) }
			for i := range 5 {
				if err := write(i); err != nil {
					t.Fatal(err)
				}
			}
			// Queued messages are kept once sent: Confirm covers those.
			if err := s.drain(ctxTimeout(t, 10*time.Second)); err != nil {
				t.Fatal(err)
			}
			if err := s.Confirm(ctxTimeout(t, 10*time.Second)); err != nil {
				t.Fatal(err)
			}
			if st := s.Stats(); st.Unconfirmed != 0 {
				t.Fatalf("after Confirm: %+v", st)
			}
			waitFor(t, 10*time.Second, "the first 5", func() bool { return distinct() == 5 })
			if err := nc.Publish("forecast."+strings.Repeat("abcdefghi.", 500), nil); err != nil {
				t.Fatal(err)
			}
			// In the buffer, behind the bad line; or, if the server has
			// closed the connection already, kept for the next (refused
			// with RefuseWhileClosed).
			refused := 0
			for i := 5; i < 10; i++ {
				if err := write(i); err != nil {
					if !refuse || !errors.Is(err, nats.ErrConnectionClosed) {
						t.Fatal(err)
					}
					refused++
				}
			}
			waitFor(t, 10*time.Second, "the server closing the connection", nc.IsClosed)
			closedErr := write(10)
			if refuse != (closedErr != nil) {
				t.Fatalf("write while closed: %v (refuse %v)", closedErr, refuse)
			}
			if err := s.drain(ctxTimeout(t, 10*time.Second)); err != nil { // all kept
				t.Fatal(err)
			}
			s.Replace(connect(t, ns.ClientURL()))
			want := 11 - refused
			if refuse {
				want--
			}
			waitFor(t, 10*time.Second, "every forecast", func() bool { return distinct() == want })
			if err := s.Confirm(ctxTimeout(t, 10*time.Second)); err != nil {
				t.Fatal(err)
			}
			if st := s.Stats(); st.Unconfirmed != 0 || st.Republished != uint64(want-5) {
				t.Fatalf("stats %+v: want %d published again, nothing unconfirmed", st, want-5)
			}
			if err := s.Close(ctxTimeout(t, 10*time.Second)); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// Flush returns once the server has what was published: a subscriber
// flushed after it has every message. Close flushes too; after it, Write
// refuses.
func TestNATSFlush(t *testing.T) {
	for _, queue := range []int{0, 4} {
		t.Run(fmt.Sprint("queue=", queue), func(t *testing.T) { testNATSFlush(t, queue) })
	}
}

func testNATSFlush(t *testing.T, queue int) {
	srv := runNATS(t, server.Options{})
	sub := connect(t, srv.ClientURL())
	msgs, err := sub.SubscribeSync("forecast.>")
	if err != nil {
		t.Fatal(err)
	}
	if err := sub.Flush(); err != nil {
		t.Fatal(err)
	}
	s := NewNATS(connect(t, srv.ClientURL(), NATSOptions(0)...), NATSConfig{Queue: queue})
	const n = 50
	for i := range n {
		if err := s.Write(forecastRec("s", "x", i, true)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Flush(ctxTimeout(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := sub.Flush(); err != nil { // what the server has is delivered before the PONG
		t.Fatal(err)
	}
	if got, _, err := msgs.Pending(); err != nil || got != n {
		t.Errorf("%d messages pending after Flush (%v), want %d", got, err, n)
	}
	if err := s.Close(ctxTimeout(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := s.Write(forecastRec("s", "x", n, true)); !errors.Is(err, ErrClosed) {
		t.Errorf("Write after Close: %v, want ErrClosed", err)
	}
}

// With a queue, many writers at once (the shards) lose nothing: every
// message arrives, each writer's in the order written, and Close returns
// once the queue is published; a Write racing Close is published or
// refused with ErrClosed, never dropped unreported.
func TestNATSQueueConcurrent(t *testing.T) {
	srv := runNATS(t, server.Options{})
	sub := connect(t, srv.ClientURL())
	var mu sync.Mutex
	last := map[string]int{}
	n, disorder := 0, 0
	if _, err := sub.Subscribe("forecast.>", func(m *nats.Msg) {
		var b body
		if err := json.Unmarshal(m.Data, &b); err != nil {
			t.Error(err)
			return
		}
		i := int(b.Time.Sub(t0) / (10 * time.Second))
		mu.Lock()
		defer mu.Unlock()
		if p, ok := last[b.Series]; ok && i <= p {
			disorder++
		}
		last[b.Series] = i
		n++
	}); err != nil {
		t.Fatal(err)
	}
	if err := sub.Flush(); err != nil {
		t.Fatal(err)
	}
	s := NewNATS(connect(t, srv.ClientURL(), NATSOptions(0)...), NATSConfig{Queue: 16})
	const writers, each = 8, 500
	var wg sync.WaitGroup
	var accepted, refused atomic.Int64
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				switch err := s.Write(forecastRec(fmt.Sprint("s", w), "x", i, true)); {
				case err == nil:
					accepted.Add(1)
				case errors.Is(err, ErrClosed):
					refused.Add(1)
				default:
					t.Error(err)
				}
			}
		}()
	}
	waitFor(t, 10*time.Second, "half the messages", func() bool { return s.Stats().Published >= writers*each/2 })
	if err := s.Close(ctxTimeout(t, 10*time.Second)); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if accepted.Load()+refused.Load() != writers*each || accepted.Load() < writers*each/2 {
		t.Fatalf("%d accepted, %d refused, want %d in all", accepted.Load(), refused.Load(), writers*each)
	}
	waitFor(t, 10*time.Second, "every accepted message", func() bool { mu.Lock(); defer mu.Unlock(); return int64(n) >= accepted.Load() })
	mu.Lock()
	defer mu.Unlock()
	if int64(n) != accepted.Load() || disorder != 0 {
		t.Errorf("received %d of %d accepted, %d out of order", n, accepted.Load(), disorder)
	}
	if st := s.Stats(); st.Published != uint64(accepted.Load()) || st.Errors != 0 {
		t.Errorf("stats %+v, want %d published", st, accepted.Load())
	}
}
