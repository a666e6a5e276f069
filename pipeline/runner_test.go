package pipeline

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/forecastd/forecastd/embedding"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// event is what a series' sink or a point's acker saw, in order.
type event struct {
	kind string // "outcome", "forecast", "done"
	f    Forecast
	t    time.Time // the point's time, for "done"
	err  error
}

// recorder is an Outputs whose sinks log every call per series; a point's
// Done is logged to the same series log, so the order of sink calls and
// acknowledgements can be checked.
type recorder struct {
	mu     sync.Mutex
	log    map[string][]event
	opened map[string]Config
	// gate, when set, is received from before each sink call (blocks the
	// shard); fail, when set, makes sink calls fail.
	gate chan struct{}
	fail atomic.Bool
	// goroutine of each series' sink calls must stay one: checked by
	// the race detector through the unsynchronised calls counter.
}

func newRecorder() *recorder {
	return &recorder{log: map[string][]event{}, opened: map[string]Config{}}
}

func (rc *recorder) Open(key string, cfg Config, in *Input) Sink {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.opened[key] = cfg
	return &recSink{rc: rc}
}

func (rc *recorder) add(key string, e event) {
	rc.mu.Lock()
	rc.log[key] = append(rc.log[key], e)
	rc.mu.Unlock()
}

func (rc *recorder) events(key string) []event {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]event(nil), rc.log[key]...)
}

type recSink struct {
	rc    *recorder
	calls int // touched by the series' shard only (the race detector checks)
}

func (s *recSink) call(series, kind string, f Forecast) error {
	s.calls++
	if s.rc.gate != nil {
		<-s.rc.gate
	}
	if s.rc.fail.Load() {
		return errors.New("sink down")
	}
	s.rc.add(series, event{kind: kind, f: f})
	return nil
}

func (s *recSink) Forecast(series string, f Forecast) error { return s.call(series, "forecast", f) }
func (s *recSink) Outcome(series string, o Outcome) error {
	return s.call(series, "outcome", o.Forecast)
}

// ack is a point's Acker: it logs Done to its series' log, and counts.
type ack struct {
	rc    *recorder
	key   string
	t     time.Time
	calls atomic.Int32
	errc  chan error // receives Done's error, if not nil
}

func (a *ack) Done(err error) error {
	a.calls.Add(1)
	a.rc.add(a.key, event{kind: "done", t: a.t, err: err})
	if a.errc != nil {
		a.errc <- err
	}
	return nil
}

// fakeClock is a settable wall clock.
type fakeClock struct{ ns atomic.Int64 }

func (c *fakeClock) now() time.Time          { return time.Unix(0, c.ns.Load()) }
func (c *fakeClock) advance(d time.Duration) { c.ns.Add(int64(d)) }

func testConfig() Config {
	cfg := DefaultConfig()
	cfg.Kind = NORMA
	cfg.Scale = embedding.ScaleSpec{Mode: embedding.ScaleFixed, Min: -2, Max: 2}
	return cfg
}

func seriesValue(k, i int) float64 {
	return math.Sin(float64(i)/(3+float64(k))) + 0.1*float64(k)
}

// poll waits until cond holds, failing t after a deadline.
func poll(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// The runner's forecasts equal a Series run alone on the same points, for
// many series submitted concurrently; every point is acknowledged exactly
// once, after its outcome and forecast reached the sink.
func TestRunnerMatchesSeriesAndAcksAfterSink(t *testing.T) {
	const nSeries, nPoints = 12, 300
	rc := newRecorder()
	cfg := testConfig()
	r, err := NewRunner(RunnerConfig{Shards: 3, QueueSize: 8, Default: cfg, Outputs: rc})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Unix(1_700_000_000, 0)
	acks := make([][]*ack, nSeries)
	var wg sync.WaitGroup
	for g := range 2 { // two submitters, each with its own series
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 1))
			next := make([]int, nSeries)
			for left := nSeries / 2 * nPoints; left > 0; left-- {
				var k int
				for k = 2*rng.IntN(nSeries/2) + g; next[k] == nPoints; k = 2*rng.IntN(nSeries/2) + g {
				}
				i := next[k]
				next[k]++
				key := fmt.Sprintf("s%d", k)
				a := &ack{rc: rc, key: key, t: t0.Add(time.Duration(i) * time.Second)}
				acks[k] = append(acks[k], a)
				if err := r.Submit(context.Background(), Input{Key: key, Point: Point{Time: a.t, Value: seriesValue(k, i)}, Msg: a}); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if err := r.Close(context.Background()); err != nil {
		t.Fatal(err)
	}

	var wantForecasts uint64
	for k := range nSeries {
		key := fmt.Sprintf("s%d", k)
		alone, _ := New(key, cfg)
		var want []event
		for i := range nPoints {
			p := Point{Time: t0.Add(time.Duration(i) * time.Second), Value: seriesValue(k, i)}
			res, err := alone.Push(p)
			if err != nil {
				t.Fatal(err)
			}
			if res.HasOutcome {
				want = append(want, event{kind: "outcome", f: res.Outcome.Forecast})
			}
			if res.HasForecast {
				want = append(want, event{kind: "forecast", f: res.Forecast})
				wantForecasts++
			}
			want = append(want, event{kind: "done", t: p.Time})
		}
		got := rc.events(key)
		if len(got) != len(want) {
			t.Fatalf("%s: %d events, want %d", key, len(got), len(want))
		}
		for j := range want {
			g, w := got[j], want[j]
			if g.kind != w.kind || !sameForecast(g.f, w.f) || !g.t.Equal(w.t) || g.err != nil {
				t.Fatalf("%s: event %d is %+v, want %+v", key, j, g, w)
			}
		}
		for i, a := range acks[k] {
			if n := a.calls.Load(); n != 1 {
				t.Fatalf("%s: point %d acknowledged %d times", key, i, n)
			}
		}
	}
	st := r.Stats()
	if st.Submitted != nSeries*nPoints || st.Processed != nSeries*nPoints || st.Forecasts != wantForecasts ||
		st.SeriesCreated != nSeries || st.SeriesActive != nSeries {
		t.Errorf("stats %+v; want %d points, %d forecasts, %d series", st, nSeries*nPoints, wantForecasts, nSeries)
	}
	if err := r.Submit(context.Background(), Input{Key: "late"}); !errors.Is(err, ErrClosed) {
		t.Errorf("Submit after Close: %v, want ErrClosed", err)
	}
}

// A series takes its configuration from the first rule matching its key,
// else the default; SetRules applies to series created afterwards, and an
// invalid SetRules changes nothing.
func TestRunnerRules(t *testing.T) {
	rc := newRecorder()
	def := testConfig()
	aosvr := def
	aosvr.Kind, aosvr.Window, aosvr.Interval = AOSVR, 30, time.Minute
	sog := def
	sog.Kind = SOGSVR
	r, err := NewRunner(RunnerConfig{Shards: 2, Default: def, Outputs: rc, Rules: []Rule{
		{Match: "cpu.*", Config: aosvr},
		{Match: "cpu.a*", Config: sog}, // shadowed by the first
		{Match: "mem[0-9]", Config: sog},
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close(context.Background())
	bad := def
	bad.Dim = 0
	if err := r.SetRules(def, []Rule{{Match: "[", Config: def}, {Match: "x", Config: bad}}); err == nil {
		t.Fatal("SetRules accepted a bad pattern and a bad config")
	} else if msg := err.Error(); !strings.Contains(msg, `rules[0].match "["`) || !strings.Contains(msg, `rules[1] (match "x")`) || !strings.Contains(msg, "dim") {
		t.Errorf("SetRules error %q does not name every problem", msg)
	}
	submit := func(key string) {
		t.Helper()
		errc := make(chan error, 1)
		if err := r.Submit(context.Background(), Input{Key: key, Point: Point{Time: time.Unix(1, 0), Value: 1}, Msg: &ack{rc: rc, key: key, errc: errc}}); err != nil {
			t.Fatal(err)
		}
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
	}
	for _, k := range []string{"cpu.a1", "cpu.b", "mem1", "memx"} {
		submit(k)
	}
	if err := r.SetRules(sog, nil); err != nil {
		t.Fatal(err)
	}
	submit("cpu.c")
	submit("cpu.a1") // exists: keeps its config
	rc.mu.Lock()
	defer rc.mu.Unlock()
	for key, want := range map[string]Config{"cpu.a1": aosvr, "cpu.b": aosvr, "mem1": sog, "memx": def, "cpu.c": sog} {
		if got := rc.opened[key]; got.Kind != want.Kind || got.Window != want.Window || got.Interval != want.Interval {
			t.Errorf("%s: opened with %v/%d/%v, want %v/%d/%v", key, got.Kind, got.Window, got.Interval, want.Kind, want.Window, want.Interval)
		}
	}
}

// max_series refuses new series (counted) until idle ones can be evicted;
// idle series are also evicted by the shards' ticker.
func TestRunnerMaxSeriesAndIdleEviction(t *testing.T) {
	rc := newRecorder()
	clk := &fakeClock{}
	r, err := NewRunner(RunnerConfig{Shards: 2, MaxSeries: 2, IdleTTL: 40 * time.Millisecond, Default: testConfig(), Outputs: rc, Now: clk.now})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close(context.Background())
	submit := func(key string) error {
		t.Helper()
		errc := make(chan error, 1)
		if err := r.Submit(context.Background(), Input{Key: key, Point: Point{Time: time.Unix(clk.ns.Load(), 1), Value: 1}, Msg: &ack{rc: rc, key: key, errc: errc}}); err != nil {
			t.Fatal(err)
		}
		return <-errc
	}
	if err := submit("a"); err != nil {
		t.Fatal(err)
	}
	if err := submit("b"); err != nil {
		t.Fatal(err)
	}
	if err := submit("c"); !errors.Is(err, ErrMaxSeries) {
		t.Fatalf("third series: %v, want ErrMaxSeries", err)
	}
	if st := r.Stats(); st.DroppedMaxSeries != 1 || st.SeriesActive != 2 {
		t.Fatalf("stats %+v: want 1 dropped for max_series, 2 active", st)
	}
	clk.advance(time.Second) // a and b are idle now
	poll(t, "idle series evicted", func() bool { return r.Stats().SeriesEvicted == 2 })
	if err := submit("c"); err != nil {
		t.Fatal(err)
	}
	if st := r.Stats(); st.SeriesActive != 1 || st.SeriesCreated != 3 {
		t.Fatalf("stats %+v: want 1 active of 3 created", st)
	}
}

// With the shard stuck in a sink: TrySubmit drops (counted) when the queue
// is full, and Close past its deadline abandons what is queued (counted,
// Done(ErrShutdown)), returning only once the shard has exited.
func TestRunnerQueueFullAndCloseDeadline(t *testing.T) {
	rc := newRecorder()
	rc.gate = make(chan struct{})
	cfg := testConfig()
	cfg.Dim = 1
	r, err := NewRunner(RunnerConfig{Shards: 1, QueueSize: 3, Default: cfg, Outputs: rc})
	if err != nil {
		t.Fatal(err)
	}
	var acks []*ack
	in := func(i int) Input {
		a := &ack{rc: rc, key: "s", t: time.Unix(int64(i), 0), errc: make(chan error, 1)}
		acks = append(acks, a)
		return Input{Key: "s", Point: Point{Time: a.t, Value: float64(i % 3)}, Msg: a}
	}
	// Points 0 and 1 warm nothing up (dim 1: point 1 is the first
	// learned, and makes the first forecast, whose sink call blocks).
	for i := range 2 {
		if !r.TrySubmit(in(i)) {
			t.Fatalf("point %d not queued", i)
		}
	}
	poll(t, "point 0 done", func() bool { return acks[0].calls.Load() == 1 })
	poll(t, "shard blocked in the sink", func() bool { return len(r.shards[0].q) == 0 })
	for i := 2; i < 5; i++ {
		if !r.TrySubmit(in(i)) {
			t.Fatalf("point %d not queued", i)
		}
	}
	if r.TrySubmit(in(5)) {
		t.Fatal("point 5 queued in a full queue")
	}
	if err := <-acks[5].errc; !errors.Is(err, ErrQueueFull) {
		t.Fatalf("dropped point: Done(%v), want ErrQueueFull", err)
	}
	if acks[1].calls.Load() != 0 {
		t.Fatal("point 1 acknowledged before the sink accepted its forecast")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	go func() { <-r.abort; close(rc.gate) }() // unblock the sink once Close gave up
	start := time.Now()
	if err := r.Close(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Close: %v, want DeadlineExceeded", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("Close took %v", d)
	}
	if err := <-acks[1].errc; err != nil {
		t.Fatalf("point 1: Done(%v)", err)
	}
	for _, a := range acks[2:5] {
		if err := <-a.errc; !errors.Is(err, ErrShutdown) {
			t.Fatalf("queued point at the deadline: Done(%v), want ErrShutdown", err)
		}
	}
	st := r.Stats()
	if st.DroppedQueueFull != 1 || st.DroppedShutdown != 3 || st.Processed != 2 {
		t.Errorf("stats %+v: want 1 queue-full drop, 3 shutdown drops, 2 processed", st)
	}
}

// A point whose forecast the sink refused is acknowledged with the error
// (so JetStream redelivers it); its redelivery, a duplicate, sends the same
// forecast again and is then acknowledged; other duplicates are skipped.
func TestRunnerSinkErrorThenRedelivery(t *testing.T) {
	rc := newRecorder()
	cfg := testConfig()
	cfg.Dim = 2
	r, err := NewRunner(RunnerConfig{Shards: 1, Default: cfg, Outputs: rc})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close(context.Background())
	submit := func(i int) error {
		t.Helper()
		a := &ack{rc: rc, key: "s", t: time.Unix(int64(i), 0), errc: make(chan error, 1)}
		if err := r.Submit(context.Background(), Input{Key: "s", Point: Point{Time: a.t, Value: seriesValue(1, i)}, Msg: a}); err != nil {
			t.Fatal(err)
		}
		return <-a.errc
	}
	for i := range 10 {
		if err := submit(i); err != nil {
			t.Fatal(err)
		}
	}
	rc.fail.Store(true)
	if err := submit(10); err == nil {
		t.Fatal("sink failure not reported to Done")
	}
	if err := submit(10); err == nil { // redelivered while still down
		t.Fatal("sink failure on re-emission not reported")
	}
	rc.fail.Store(false)
	if err := submit(10); err != nil {
		t.Fatal(err)
	}
	if err := submit(9); err != nil { // an old duplicate: skipped
		t.Fatal(err)
	}
	if err := submit(10); err != nil { // sent: now a plain duplicate
		t.Fatal(err)
	}
	var forecasts []Forecast
	for _, e := range rc.events("s") {
		if e.kind == "forecast" {
			forecasts = append(forecasts, e.f)
		}
	}
	alone, _ := New("s", cfg)
	var want []Forecast
	for i := range 11 {
		res, _ := alone.Push(Point{Time: time.Unix(int64(i), 0), Value: seriesValue(1, i)})
		if res.HasForecast {
			want = append(want, res.Forecast)
		}
	}
	if len(forecasts) != len(want) || !sameForecast(forecasts[len(want)-1], want[len(want)-1]) {
		t.Fatalf("forecasts sent %v\nwant %v", forecasts, want)
	}
	if st := r.Stats(); st.Reemitted != 1 || st.SinkErrors != 2 || st.OutOfOrder != 4 {
		t.Errorf("stats %+v: want 1 re-emitted, 2 sink errors, 4 duplicates", st)
	}
}

// With RedeliveryHold, a series whose forecast a sink refused holds its
// newer points (ErrHeld, unlearned) until the refused point is redelivered
// and its forecast accepted: nothing is lost, the forecasts are those of an
// uninterrupted run. After the hold time the series goes on.
func TestRunnerRedeliveryHold(t *testing.T) {
	rc := newRecorder()
	clk := &fakeClock{}
	cfg := testConfig()
	cfg.Dim = 2
	r, err := NewRunner(RunnerConfig{Shards: 1, Default: cfg, Outputs: rc, RedeliveryHold: time.Minute, Now: clk.now})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close(context.Background())
	submit := func(i int) error {
		t.Helper()
		a := &ack{rc: rc, key: "s", t: time.Unix(int64(i), 0), errc: make(chan error, 1)}
		if err := r.Submit(context.Background(), Input{Key: "s", Point: Point{Time: a.t, Value: seriesValue(2, i)}, Msg: a}); err != nil {
			t.Fatal(err)
		}
		return <-a.errc
	}
	for i := range 10 {
		if err := submit(i); err != nil {
			t.Fatal(err)
		}
	}
	rc.fail.Store(true)
	if err := submit(10); err == nil {
		t.Fatal("sink failure not reported")
	}
	rc.fail.Store(false)
	for _, i := range []int{11, 12} {
		if err := submit(i); !errors.Is(err, ErrHeld) {
			t.Fatalf("point %d while held: %v, want ErrHeld", i, err)
		}
	}
	for i := 10; i < 15; i++ { // the redeliveries, then new points
		if err := submit(i); err != nil {
			t.Fatalf("point %d: %v", i, err)
		}
	}
	var got []Forecast
	for _, e := range rc.events("s") {
		if e.kind == "forecast" {
			got = append(got, e.f)
		}
	}
	alone, _ := New("s", cfg)
	var want []Forecast
	for i := range 15 {
		res, _ := alone.Push(Point{Time: time.Unix(int64(i), 0), Value: seriesValue(2, i)})
		if res.HasForecast {
			want = append(want, res.Forecast)
		}
	}
	if len(got) != len(want) {
		t.Fatalf("%d forecasts sent, want %d", len(got), len(want))
	}
	for i := range want {
		if !sameForecast(got[i], want[i]) {
			t.Fatalf("forecast %d is %+v, want %+v", i, got[i], want[i])
		}
	}
	// The hold expires: a point refused for good does not stop the series.
	rc.fail.Store(true)
	if err := submit(15); err == nil {
		t.Fatal("sink failure not reported")
	}
	rc.fail.Store(false)
	if err := submit(16); !errors.Is(err, ErrHeld) {
		t.Fatalf("held: %v", err)
	}
	clk.advance(2 * time.Minute)
	if err := submit(16); err != nil {
		t.Fatalf("after the hold: %v", err)
	}
	if st := r.Stats(); st.Held != 3 || st.Reemitted != 1 {
		t.Errorf("stats %+v: want 3 held, 1 re-emitted", st)
	}
}
