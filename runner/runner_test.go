package runner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/forecastd/forecastd/embedding"
	"github.com/forecastd/forecastd/pipeline"
	"github.com/forecastd/forecastd/svr"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// event is what a series' sink or a point's acker saw, in order.
type event struct {
	kind string // "outcome", "forecast", "done"
	f    pipeline.Forecast
	t    time.Time // the point's time, for "done"
	err  error
}

// recorder is an Outputs whose sinks log every call per series; a point's
// Done is logged to the same series log, so the order of sink calls and
// acknowledgements can be checked.
type recorder struct {
	mu     sync.Mutex
	log    map[string][]event
	opened map[string]pipeline.Config
	// gate, when set, is received from before each sink call (blocks the
	// shard); fail, when set, makes sink calls fail.
	gate chan struct{}
	fail atomic.Bool
	// goroutine of each series' sink calls must stay one: checked by
	// the race detector through the unsynchronised calls counter.
}

func newRecorder() *recorder {
	return &recorder{log: map[string][]event{}, opened: map[string]pipeline.Config{}}
}

func (rc *recorder) Open(key string, cfg pipeline.Config, in *Input) pipeline.Sink {
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

func (s *recSink) call(series, kind string, f pipeline.Forecast) error {
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

func (s *recSink) Forecast(series string, f pipeline.Forecast) error {
	return s.call(series, "forecast", f)
}
func (s *recSink) Outcome(series string, o pipeline.Outcome) error {
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

func (a *ack) Done(err error) {
	a.calls.Add(1)
	a.rc.add(a.key, event{kind: "done", t: a.t, err: err})
	if a.errc != nil {
		a.errc <- err
	}
}

// fakeClock is a settable wall clock.
type fakeClock struct{ ns atomic.Int64 }

func (c *fakeClock) now() time.Time          { return time.Unix(0, c.ns.Load()) }
func (c *fakeClock) advance(d time.Duration) { c.ns.Add(int64(d)) }

func testConfig() pipeline.Config {
	cfg := pipeline.DefaultConfig()
	cfg.Kind = pipeline.NORMA
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
				if err := r.Submit(context.Background(), Input{Key: key, Point: pipeline.Point{Time: a.t, Value: seriesValue(k, i)}, Msg: a}); err != nil {
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
		alone, _ := pipeline.New(key, cfg)
		var want []event
		for i := range nPoints {
			p := pipeline.Point{Time: t0.Add(time.Duration(i) * time.Second), Value: seriesValue(k, i)}
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
	aosvr.Kind, aosvr.Window, aosvr.Interval = pipeline.AOSVR, 30, time.Minute
	sog := def
	sog.Kind = pipeline.SOGSVR
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
		if err := r.Submit(context.Background(), Input{Key: key, Point: pipeline.Point{Time: time.Unix(1, 0), Value: 1}, Msg: &ack{rc: rc, key: key, errc: errc}}); err != nil {
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
	for key, want := range map[string]pipeline.Config{"cpu.a1": aosvr, "cpu.b": aosvr, "mem1": sog, "memx": def, "cpu.c": sog} {
		if got := rc.opened[key]; got.Kind != want.Kind || got.Window != want.Window || got.Interval != want.Interval {
			t.Errorf("%s: opened with %v/%d/%v, want %v/%d/%v", key, got.Kind, got.Window, got.Interval, want.Kind, want.Window, want.Interval)
		}
	}
}

// At max_series a new series evicts its shard's least recently used one
// (counted), not the one just used; idle series are evicted by the
// shards' ticker.
func TestRunnerMaxSeriesLRUAndIdleEviction(t *testing.T) {
	rc := newRecorder()
	clk := &fakeClock{}
	r, err := NewRunner(RunnerConfig{Shards: 1, MaxSeries: 2, IdleTTL: 40 * time.Millisecond, Default: testConfig(), Outputs: rc, Now: clk.now})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close(context.Background())
	var tick atomic.Int64
	submit := func(key string) error {
		t.Helper()
		errc := make(chan error, 1)
		if err := r.Submit(context.Background(), Input{Key: key, Point: pipeline.Point{Time: time.Unix(tick.Add(1), 0), Value: 1}, Msg: &ack{rc: rc, key: key, errc: errc}}); err != nil {
			t.Fatal(err)
		}
		return <-errc
	}
	for _, k := range []string{"a", "b", "a", "c"} { // b is the least recently used when c comes
		if err := submit(k); err != nil {
			t.Fatalf("series %s: %v", k, err)
		}
	}
	if st := r.Stats(); st.EvictedLRU != 1 || st.SeriesActive != 2 {
		t.Fatalf("stats %+v: want 1 evicted (LRU), 2 active", st)
	}
	// a and c are held: a's next point is taken by the same series (its
	// sink was opened once), b's makes a new one (evicting a, now LRU).
	if err := submit("a"); err != nil {
		t.Fatal(err)
	}
	if st := r.Stats(); st.SeriesCreated != 3 {
		t.Fatalf("a was evicted instead of b: %+v", st)
	}
	if err := submit("b"); err != nil {
		t.Fatal(err)
	}
	if st := r.Stats(); st.SeriesCreated != 4 || st.EvictedLRU != 2 || st.SeriesActive != 2 {
		t.Fatalf("stats %+v: want 4 created, 2 evicted, 2 active", st)
	}
	clk.advance(time.Second) // every series is idle now
	poll(t, "idle series evicted", func() bool { return r.Stats().SeriesEvicted == 2 })
	if st := r.Stats(); st.SeriesActive != 0 {
		t.Fatalf("stats %+v: want none active", st)
	}
}

// Each shard holds at most its share of max_series (3 over 2 shards: 2
// and 1), evicting its own least recently used series: a flood of new
// keys never leaves a shard unable to take a series (issue #11's daemon
// test found a shard starved when the bound was global), nothing is
// refused, and the total never exceeds max_series. Shards above
// max_series are lowered to it.
func TestRunnerMaxSeriesShares(t *testing.T) {
	rc := newRecorder()
	r, err := NewRunner(RunnerConfig{Shards: 2, MaxSeries: 3, Default: testConfig(), Outputs: rc})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close(context.Background())
	if r.shards[0].maxShare != 2 || r.shards[1].maxShare != 1 {
		t.Fatalf("shares %d and %d, want 2 and 1", r.shards[0].maxShare, r.shards[1].maxShare)
	}
	for i := range 50 {
		key := fmt.Sprintf("k%d", i)
		errc := make(chan error, 1)
		if err := r.Submit(context.Background(), Input{Key: key, Point: pipeline.Point{Time: time.Unix(1, 0), Value: 1}, Msg: &ack{rc: rc, key: key, errc: errc}}); err != nil {
			t.Fatal(err)
		}
		if err := <-errc; err != nil {
			t.Fatalf("series %s: %v", key, err)
		}
		if n := r.Stats().SeriesActive; n > 3 {
			t.Fatalf("after %s: %d series held, max_series 3", key, n)
		}
	}
	if st := r.Stats(); st.EvictedLRU != 47 || st.SeriesActive != 3 {
		t.Fatalf("stats %+v: want 47 evicted, 3 active", st)
	}
	one, err := NewRunner(RunnerConfig{Shards: 4, MaxSeries: 1, Default: testConfig(), Outputs: rc})
	if err != nil {
		t.Fatal(err)
	}
	defer one.Close(context.Background())
	if len(one.shards) != 1 {
		t.Fatalf("%d shards for max_series 1", len(one.shards))
	}
}

// SetSeriesLimit lowers the series held below MaxSeries at once (each
// shard evicting its least recently used down to its share, the most
// recently used kept), bounds new series to it, and lets them in again
// once removed.
func TestRunnerSetSeriesLimit(t *testing.T) {
	rc := newRecorder()
	r, err := NewRunner(RunnerConfig{Shards: 2, MaxSeries: 100, Default: testConfig(), Outputs: rc})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close(context.Background())
	var tick atomic.Int64
	submit := func(key string) {
		t.Helper()
		errc := make(chan error, 1)
		if err := r.Submit(context.Background(), Input{Key: key, Point: pipeline.Point{Time: time.Unix(tick.Add(1), 0), Value: 1}, Msg: &ack{rc: rc, key: key, errc: errc}}); err != nil {
			t.Fatal(err)
		}
		if err := <-errc; err != nil {
			t.Fatalf("series %s: %v", key, err)
		}
	}
	for i := range 40 {
		submit(fmt.Sprintf("k%d", i))
	}
	if st := r.Stats(); st.SeriesActive != 40 || st.SeriesLimit != 0 {
		t.Fatalf("stats %+v: want 40 active, no limit", st)
	}
	r.SetSeriesLimit(10) // 5 a shard
	poll(t, "the shards shrunk to the limit", func() bool { return r.Stats().SeriesActive == 10 })
	// The most recently used of each shard are held: a point of k39 (the
	// newest) is taken by its series, not a new one.
	created := r.Stats().SeriesCreated
	submit("k39")
	if st := r.Stats(); st.SeriesCreated != created || st.SeriesLimit != 10 || st.EvictedLRU != 30 {
		t.Fatalf("stats %+v: want k39 still held (%d created), limit 10, 30 evicted", st, created)
	}
	for i := range 20 {
		submit(fmt.Sprintf("n%d", i))
		if n := r.Stats().SeriesActive; n > 10 {
			t.Fatalf("after n%d: %d series held, limit 10", i, n)
		}
	}
	r.SetSeriesLimit(0)
	for i := range 20 {
		submit(fmt.Sprintf("m%d", i))
	}
	if st := r.Stats(); st.SeriesActive != 30 || st.SeriesLimit != 0 {
		t.Fatalf("stats %+v: want 30 active once the limit is removed", st)
	}
}

// Invariant on random sequences of keys: with one shard, the series held
// after every point are exactly the MaxSeries most recently used keys
// (a reference LRU computed by scanning), never more, and a series
// evicted with a checkpointer comes back from the state it was evicted
// with (Restored counts it).
func TestRunnerLRUInvariantRandom(t *testing.T) {
	for seed := uint64(1); seed <= 4; seed++ {
		rng := rand.New(rand.NewPCG(seed, 11))
		max := 1 + rng.IntN(6)
		keys := 2 + rng.IntN(10)
		t.Run(fmt.Sprintf("seed%d_max%d_keys%d", seed, max, keys), func(t *testing.T) {
			rc := newRecorder()
			cp := &memCheckpoints{saved: map[string]pipeline.SeriesState{}}
			r, err := NewRunner(RunnerConfig{Shards: 1, MaxSeries: max, IdleTTL: -1, Default: testConfig(), Outputs: rc, Checkpoints: cp})
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close(context.Background())
			var recent []string // most recent first
			learned := map[string]int{}
			for i := 0; i < 300; i++ {
				k := fmt.Sprintf("s%d", rng.IntN(keys))
				errc := make(chan error, 1)
				if err := r.Submit(context.Background(), Input{Key: k, Point: pipeline.Point{Time: time.Unix(int64(i), 0), Value: seriesValue(len(k), i)}, Msg: &ack{rc: rc, key: k, errc: errc}}); err != nil {
					t.Fatal(err)
				}
				if err := <-errc; err != nil {
					t.Fatalf("point %d of %s: %v", i, k, err)
				}
				learned[k]++
				for j, x := range recent {
					if x == k {
						recent = append(recent[:j], recent[j+1:]...)
						break
					}
				}
				recent = append([]string{k}, recent...)
				if len(recent) > max {
					recent = recent[:max]
				}
				held := r.heldKeys()
				if fmt.Sprint(held) != fmt.Sprint(recent) {
					t.Fatalf("after point %d (%s): held %v, want the %d most recent %v", i, k, held, max, recent)
				}
			}
			st := r.Stats()
			if st.SeriesCreated != st.Restored+uint64(len(learned)) {
				t.Fatalf("stats %+v: every re-created series must be restored from its eviction checkpoint (%d keys)", st, len(learned))
			}
			if st.SeriesCreated-uint64(max) > st.EvictedLRU && int(st.SeriesCreated) > max {
				t.Fatalf("stats %+v: created beyond max without evictions", st)
			}
		})
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
		return Input{Key: "s", Point: pipeline.Point{Time: a.t, Value: float64(i % 3)}, Msg: a}
	}
	// Points 0 and 1 warm nothing up (dim 1: point 1 is the first
	// learned, and makes the first forecast, whose sink call blocks).
	for i := range 2 {
		if !r.TrySubmit(in(i)) {
			t.Fatalf("point %d not queued", i)
		}
	}
	poll(t, "point 0 done", func() bool { return acks[0].calls.Load() == 1 })
	poll(t, "shard blocked in the sink", func() bool { return r.shards[0].queued() == 0 })
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
	if d := time.Since(start); d > time.Minute { // a bound to catch a hang
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
		if err := r.Submit(context.Background(), Input{Key: "s", Point: pipeline.Point{Time: a.t, Value: seriesValue(1, i)}, Msg: a}); err != nil {
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
	var forecasts []pipeline.Forecast
	for _, e := range rc.events("s") {
		if e.kind == "forecast" {
			forecasts = append(forecasts, e.f)
		}
	}
	alone, _ := pipeline.New("s", cfg)
	var want []pipeline.Forecast
	for i := range 11 {
		res, _ := alone.Push(pipeline.Point{Time: time.Unix(int64(i), 0), Value: seriesValue(1, i)})
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
		if err := r.Submit(context.Background(), Input{Key: "s", Point: pipeline.Point{Time: a.t, Value: seriesValue(2, i)}, Msg: a}); err != nil {
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
	var got []pipeline.Forecast
	for _, e := range rc.events("s") {
		if e.kind == "forecast" {
			got = append(got, e.f)
		}
	}
	alone, _ := pipeline.New("s", cfg)
	var want []pipeline.Forecast
	for i := range 15 {
		res, _ := alone.Push(pipeline.Point{Time: time.Unix(int64(i), 0), Value: seriesValue(2, i)})
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

// syncLog is a bytes.Buffer safe for a logger and the test.
type syncLog struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *syncLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *syncLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// A series whose values overflow its model (a linear kernel on levels of
// 1e300 in a fixed range) stops forecasting: the runner counts its learn
// and predict errors and the AOSVR's ladder under its model kind, equal to
// the sums of its series', and logs the series, at most once a second;
// a healthy series of another kind counts nothing.
func TestRunnerCountsModelErrors(t *testing.T) {
	bad := pipeline.DefaultConfig()
	bad.Target, bad.Combine, bad.Seasons = pipeline.TargetLevel, false, nil
	bad.Kernel = svr.Linear{}
	bad.Scale = embedding.ScaleSpec{Mode: embedding.ScaleFixed, Min: -1, Max: 1}
	logs := &syncLog{}
	rc := newRecorder()
	r, err := NewRunner(RunnerConfig{Shards: 2, Default: testConfig(), Outputs: rc,
		Rules:  []Rule{{Match: "bad.*", Config: bad}},
		Logger: slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Unix(1_700_000_000, 0)
	start := time.Now()
	keys := []string{"bad.a", "bad.b", "good"}
	for i := range 200 {
		for k, key := range keys {
			v := seriesValue(k, i)
			if key != "good" && i >= 100 && i%3 == 0 {
				v = 1e300 * float64(i%7-3)
			}
			if err := r.Submit(context.Background(), Input{Key: key, Point: pipeline.Point{Time: t0.Add(time.Duration(i) * time.Second), Value: v}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := r.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	elapsed := time.Since(start)
	// The series' own counters: the shards have exited.
	var want pipeline.Stats
	var wantEvents svr.AOSVRStats
	for _, sh := range r.shards {
		for k, e := range sh.series {
			if !strings.HasPrefix(k, "bad.") {
				continue
			}
			st := e.s.Stats()
			want.LearnErrors += st.LearnErrors
			want.PredictErrors += st.PredictErrors
			ev := e.s.Model().(ladderStats).Stats()
			wantEvents.Rebuilds += ev.Rebuilds
			wantEvents.Rollbacks += ev.Rollbacks
			wantEvents.Failures += ev.Failures
			wantEvents.Refused += ev.Refused
		}
	}
	st := r.Stats()
	if len(st.Models) != len(pipeline.ModelKinds()) || st.Models[pipeline.AOSVR].Kind != pipeline.AOSVR || st.Models[pipeline.NORMA].Kind != pipeline.NORMA {
		t.Fatalf("Models = %+v: want one per kind, in Kind order", st.Models)
	}
	a := st.Models[pipeline.AOSVR]
	if want.LearnErrors == 0 || want.PredictErrors == 0 {
		t.Fatalf("the overflowing series counted no errors (%+v): the test does not test", want)
	}
	if a.LearnErrors != want.LearnErrors || a.PredictErrors != want.PredictErrors {
		t.Errorf("aosvr: learn %d predict %d errors, want the series' %d and %d", a.LearnErrors, a.PredictErrors, want.LearnErrors, want.PredictErrors)
	}
	if !a.Reports || a.Events.Rebuilds != wantEvents.Rebuilds || a.Events.Rollbacks != wantEvents.Rollbacks ||
		a.Events.Failures != wantEvents.Failures || a.Events.Refused != wantEvents.Refused || a.Events.Failures == 0 {
		t.Errorf("aosvr events %+v (reports %v), want the series' sums %+v", a.Events, a.Reports, wantEvents)
	}
	if n := st.Models[pipeline.NORMA]; n.LearnErrors != 0 || n.PredictErrors != 0 || n.Reports {
		t.Errorf("norma: %+v, want nothing", n)
	}
	out := logs.String()
	if !strings.Contains(out, "series=bad.") || !strings.Contains(out, "model=aosvr") || !strings.Contains(out, "learn_errors=") {
		t.Errorf("the errors are not logged with the series:\n%s", out)
	}
	if n := strings.Count(out, "model failed"); n < 1 || n > int(elapsed/time.Second)+1 {
		t.Errorf("%d log lines about the failing models in %v, want 1 to one a second:\n%s", n, elapsed, out)
	}
}

// heldKeys returns the keys of the series of a one-shard runner, most
// recently used first. The caller must have received the Done of its last
// point (which orders this read after the shard's writes) and the runner
// must have no ticker or checkpoint running.
func (r *Runner) heldKeys() []string {
	sh := r.shards[0]
	var ks []string
	for e := sh.lru.next; e != &sh.lru; e = e.next {
		ks = append(ks, e.s.Key())
	}
	return ks
}

// TestRunnerOfferShedsNewSeriesFirst: with its shard busy, Offer queues a
// new series' point only while the shard's queue of new series has room,
// and drops the next one (ErrQueueFull); a held series' points still take
// their own queue, and none of them is lost.
func TestRunnerOfferShedsNewSeriesFirst(t *testing.T) {
	rc := newRecorder()
	rc.gate = make(chan struct{})
	cfg := testConfig()
	cfg.Dim = 1
	r, err := NewRunner(RunnerConfig{Shards: 1, QueueSize: 4, Default: cfg, Outputs: rc})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var acks []*ack
	in := func(key string, i int) Input {
		a := &ack{rc: rc, key: key, t: time.Unix(int64(i), 0), errc: make(chan error, 1)}
		acks = append(acks, a)
		return Input{Key: key, Point: pipeline.Point{Time: a.t, Value: float64(i % 3)}, Msg: a}
	}
	// "held" is created by point 0; point 1 makes its first forecast,
	// whose sink call blocks the shard.
	if err := r.Offer(ctx, in("held", 0)); err != nil {
		t.Fatalf("held point 0: %v", err)
	}
	poll(t, "point 0 done", func() bool { return acks[0].calls.Load() == 1 })
	if err := r.Offer(ctx, in("held", 1)); err != nil {
		t.Fatalf("held point 1: %v", err)
	}
	poll(t, "shard blocked in the sink", func() bool { return r.shards[0].queued() == 0 })
	for i := range 4 {
		if err := r.Offer(ctx, in(fmt.Sprintf("new%d", i), 0)); err != nil {
			t.Fatalf("new series %d refused with the queue of new series %d/4 full: %v", i, i, err)
		}
	}
	shed := in("new4", 0)
	if err := r.Offer(ctx, shed); !errors.Is(err, ErrQueueFull) {
		t.Fatalf("new series with the queue of new series full: %v, want ErrQueueFull", err)
	}
	if err := <-acks[len(acks)-1].errc; !errors.Is(err, ErrQueueFull) {
		t.Fatalf("shed point: Done(%v), want ErrQueueFull", err)
	}
	for i := 2; i < 6; i++ {
		if err := r.Offer(ctx, in("held", i)); err != nil {
			t.Fatalf("held point %d refused with the queue of new series full: %v", i, err)
		}
	}
	full, cancel := context.WithCancel(ctx)
	cancel()
	if err := r.Offer(full, in("held", 6)); !errors.Is(err, context.Canceled) {
		t.Fatalf("held point with its queue full: %v, want it to wait (here: its context's error)", err)
	}
	close(rc.gate)
	if err := r.Close(ctx); err != nil {
		t.Fatal(err)
	}
	for _, a := range acks {
		if a.calls.Load() != 1 {
			t.Fatalf("%s point %v: Done called %d times", a.key, a.t, a.calls.Load())
		}
	}
	st := r.Stats()
	if st.DroppedQueueFull != 1 || st.DroppedClosed != 1 || st.Processed != 10 || st.SeriesCreated != 5 {
		t.Errorf("stats %+v: want 1 queue-full drop, 1 given up, 10 processed, 5 series", st)
	}
}

// orderAck records the order in which its points are done.
type orderAck struct {
	mu    *sync.Mutex
	order *[]string
	name  string
}

func (a orderAck) Done(error) {
	a.mu.Lock()
	*a.order = append(*a.order, a.name)
	a.mu.Unlock()
}

// TestRunnerHeldSeriesFirst: the points of a series held are processed
// before the points of new series queued before them, and each series'
// points in the order submitted, an evicted series' with the new series'.
func TestRunnerHeldSeriesFirst(t *testing.T) {
	rc := newRecorder()
	rc.gate = make(chan struct{})
	cfg := testConfig()
	cfg.Dim = 1
	r, err := NewRunner(RunnerConfig{Shards: 1, QueueSize: 16, MaxSeries: 2, Default: cfg, Outputs: rc})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var mu sync.Mutex
	var order []string
	submit := func(key string, i int) {
		t.Helper()
		a := orderAck{mu: &mu, order: &order, name: fmt.Sprint(key, i)}
		if err := r.Submit(ctx, Input{Key: key, Point: pipeline.Point{Time: time.Unix(int64(i), 0), Value: float64(i % 3)}, Msg: a}); err != nil {
			t.Fatal(err)
		}
	}
	done := func(n int) func() bool {
		return func() bool { mu.Lock(); defer mu.Unlock(); return len(order) == n }
	}
	// "old", "hot" and "new" are created in turn, "new" evicting "old"
	// (max 2); hot's point 1 makes its first forecast, whose sink call
	// blocks the shard.
	for i, k := range []string{"old", "hot", "new"} {
		submit(k, 0)
		poll(t, k+" created", done(i+1))
	}
	submit("hot", 1)
	poll(t, "shard blocked in the sink", func() bool { return r.shards[0].queued() == 0 })
	// "old" is a new series again: its points wait behind "brand"'s.
	submit("brand", 0)
	submit("old", 1)
	submit("old", 2)
	submit("hot", 2)
	submit("new", 1)
	submit("hot", 3)
	close(rc.gate)
	if err := r.Close(ctx); err != nil {
		t.Fatal(err)
	}
	want := []string{"old0", "hot0", "new0", "hot1", "hot2", "new1", "hot3", "brand0", "old1", "old2"}
	if fmt.Sprint(order) != fmt.Sprint(want) {
		t.Errorf("points done in the order %v, want %v", order, want)
	}
	if st := r.Stats(); st.OutOfOrder != 0 || st.Processed != 10 {
		t.Errorf("stats %+v: want 10 points processed, none out of order", st)
	}
}

// TestShardLane: a key takes the fast lane only while its series is held
// and none of its points is in the slow lane.
func TestShardLane(t *testing.T) {
	r, err := NewRunner(RunnerConfig{Shards: 1, Default: testConfig(), Outputs: newRecorder()})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close(context.Background())
	sh := r.shards[0]
	const h = 42
	lane := func(want string) {
		t.Helper()
		q, slow := sh.lane(h)
		got := "fast"
		if slow {
			got = "slow"
		}
		if got != want || (q == sh.slow) != slow {
			t.Fatalf("lane %s (slow %v), want %s", got, slow, want)
		}
	}
	lane("slow") // not held: its first point creates it
	sh.setHeld(h, true)
	lane("slow") // held, behind its point in the slow lane
	sh.slowDone(h)
	sh.slowDone(h)
	lane("fast")
	sh.setHeld(h, false) // evicted
	lane("slow")
	sh.setHeld(h, true) // created again by another path
	lane("slow")
	sh.slowDone(h)
	sh.slowDone(h)
	lane("fast")
	sh.setHeld(h, false)
	sh.keysMu.RLock()
	n := len(sh.keys)
	sh.keysMu.RUnlock()
	if n != 0 {
		t.Fatalf("%d keys left known, want none", n)
	}
}

// queued is the number of points in the shard's queues.
func (sh *shard) queued() int { return len(sh.fast) + len(sh.slow) }

// TestRunnerBucketGraceWaitsForQuietSeries: a bucket's grace runs on the
// wall clock from its end and from its series' last point, so that past
// points read at speed (a JetStream backlog after an outage, a replay)
// are not cut into buckets by the ticks that fall between them: every
// point of a bucket whose end is long past is taken, none counted late,
// and the bucket closes by its grace only once the series has been quiet
// that long.
func TestRunnerBucketGraceWaitsForQuietSeries(t *testing.T) {
	var clock fakeClock
	var calls atomic.Int64
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	clock.ns.Store(t0.Add(2 * time.Hour).UnixNano()) // the points are two hours old
	rc := newRecorder()
	cfg := testConfig()
	cfg.Step = time.Minute // grace: 6s
	r, err := NewRunner(RunnerConfig{Shards: 1, Default: cfg, Outputs: rc, bucketTick: 5 * time.Millisecond,
		Now: func() time.Time { calls.Add(1); return clock.now() }})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close(context.Background())
	// tick waits until the shard has read the clock twice more with
	// nothing submitted: a bucket tick has run to its end (the shard's
	// next tick begins by reading the clock).
	tick := func() {
		c := calls.Load()
		poll(t, "a bucket tick", func() bool { return calls.Load() > c+1 })
	}
	var processed uint64
	submit := func(i int) {
		t.Helper()
		if err := r.Submit(context.Background(), Input{Key: "s", Point: pipeline.Point{Time: t0.Add(time.Duration(i) * 10 * time.Second), Value: seriesValue(0, i)}}); err != nil {
			t.Fatal(err)
		}
		processed++
		poll(t, "the point processed", func() bool { return r.Stats().Processed == processed })
	}
	for i := range 6 * 30 { // 30 buckets of 6 points
		submit(i)
		if i%6 < 5 {
			tick() // between two points of one bucket
		}
		if st := r.Stats(); st.Late != 0 || st.BucketsClosed != 0 {
			t.Fatalf("after point %d: %d late, %d buckets closed by grace; want none while points come", i, st.Late, st.BucketsClosed)
		}
	}
	clock.advance(6 * time.Second)
	tick()
	if st := r.Stats(); st.BucketsClosed != 1 || st.Late != 0 {
		t.Fatalf("quiet for the grace: %d buckets closed by grace, %d late; want 1, 0", st.BucketsClosed, st.Late)
	}
}

func sameForecast(a, b pipeline.Forecast) bool {
	return a.Origin.Equal(b.Origin) && a.Time.Equal(b.Time) && a.Value == b.Value &&
		a.Scaled == b.Scaled && same(a.Lower, b.Lower) && same(a.Upper, b.Upper)
}

func same(a, b float64) bool { return a == b || (math.IsNaN(a) && math.IsNaN(b)) }
