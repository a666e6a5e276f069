package runner

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/forecastd/forecastd/pipeline"
)

// pastOf is a History serving each series' points before Until from a
// fixed set, at the series' resolution (Resample), as a database would;
// fail makes Load fail, block holds it until unblocked.
type pastOf struct {
	pts   map[string][]pipeline.Point // by input key
	fail  bool
	block chan struct{}
	mu    sync.Mutex
	calls int
}

func (h *pastOf) Load(ctx context.Context, req HistoryRequest) ([]pipeline.Point, error) {
	h.mu.Lock()
	h.calls++
	h.mu.Unlock()
	if h.block != nil {
		select {
		case <-h.block:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if h.fail {
		return nil, errors.New("history down")
	}
	var ts []time.Time
	var vs []float64
	for _, p := range h.pts[req.Base] {
		if p.Time.Before(req.Until) {
			ts, vs = append(ts, p.Time), append(vs, p.Value)
		}
	}
	if req.Config.Step == 0 {
		out := make([]pipeline.Point, len(ts))
		for i := range ts {
			out[i] = pipeline.Point{Time: ts[i], Value: vs[i]}
		}
		return out, nil
	}
	rt, rv, _, err := pipeline.Resample(ts, vs, req.Config.Step, req.Config.Aggregate)
	if err != nil {
		return nil, err
	}
	out := make([]pipeline.Point, len(rt))
	for i := range rt {
		out[i] = pipeline.Point{Time: rt[i], Value: rv[i]}
	}
	return out, nil
}

func dailyPoints(n int, every time.Duration) []pipeline.Point {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	pts := make([]pipeline.Point, n)
	for i := range pts {
		t := t0.Add(time.Duration(i) * every)
		pts[i] = pipeline.Point{Time: t, Value: 10 + 5*math.Sin(2*math.Pi*float64(t.Unix())/86400) + 0.3*math.Sin(float64(i)*0.7)}
	}
	return pts
}

// TestRunnerWarmStartEqualsFullRun: a series warmed from its past (raw and
// at a resolution) forecasts, from its first live point, exactly what a
// series that was pushed the past and the live points forecasts.
func TestRunnerWarmStartEqualsFullRun(t *testing.T) {
	pts := dailyPoints(3*288, 5*time.Minute)
	split := 2 * 288
	def := pipeline.DefaultConfig()
	res := def
	res.Step, res.Aggregate = time.Hour, pipeline.AggMax
	h := &pastOf{pts: map[string][]pipeline.Point{"s": pts[:split]}}
	rc := newRecorder()
	r, err := NewRunner(RunnerConfig{Shards: 1, Default: def, Outputs: rc,
		Rules:   []Rule{{Match: "*", Config: res, Resolution: true}},
		History: HistoryConfig{Source: h}})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pts[split:] {
		if err := r.Submit(context.Background(), Input{Key: "s", Point: p}); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	st := r.HistoryStats()
	if st.Warmed != 2 || st.Requested != 2 || st.Waiting != 0 {
		t.Fatalf("history stats %+v, want 2 series warmed", st)
	}

	// The same points through plain series: all of them raw, and the
	// past's buckets then the live raw points at the resolution.
	for _, c := range []struct {
		key  string
		cfg  pipeline.Config
		past []pipeline.Point
	}{
		{"s", def, pts[:split]},
		{pipeline.ResolutionKey("s", time.Hour), res, nil},
	} {
		s, err := pipeline.New(c.key, c.cfg)
		if err != nil {
			t.Fatal(err)
		}
		past, _ := h.Load(context.Background(), HistoryRequest{Base: "s", Config: c.cfg, Until: pts[split].Time.Truncate(max(c.cfg.Step, 1))})
		if c.cfg.Step > 0 {
			s.Prime(past)
		} else {
			for _, p := range past {
				s.Push(p)
			}
		}
		var want []pipeline.Forecast
		if f, ok := s.Pending(); ok {
			want = append(want, f) // the first live point's, made from the past
		}
		for _, p := range pts[split:] {
			r, err := s.Push(p)
			if err == nil && r.HasForecast {
				want = append(want, r.Forecast)
			}
		}
		var got []pipeline.Forecast
		for _, e := range rc.events(c.key) {
			if e.kind == "forecast" {
				got = append(got, e.f)
			}
		}
		if len(got) != len(want) || len(got) == 0 {
			t.Fatalf("%s: %d forecasts, want %d", c.key, len(got), len(want))
		}
		for i := range got {
			if got[i].Value != want[i].Value || !got[i].Time.Equal(want[i].Time) {
				t.Fatalf("%s: forecast %d %v at %v, want %v at %v", c.key, i, got[i].Value, got[i].Time, want[i].Value, want[i].Time)
			}
		}
	}
	// The first live point already has a forecast, then its outcome.
	first := rc.events("s")
	if len(first) < 2 || first[0].kind != "forecast" || first[1].kind != "outcome" || !first[0].f.Time.Equal(pts[split].Time) {
		t.Fatalf("first events of the warmed series %+v, want the forecast of the first live point its past made, then its outcome", first[:min(2, len(first))])
	}
}

// TestRunnerHistoryNeverBlocks: while one series waits for its past,
// another is processed; its live points are held, up to Buffer, then it
// starts cold; a failing History makes a cold start, counted; nothing is
// lost.
func TestRunnerHistoryNeverBlocks(t *testing.T) {
	pts := dailyPoints(50, time.Minute)
	h := &pastOf{pts: map[string][]pipeline.Point{}, block: make(chan struct{})}
	rc := newRecorder()
	r, err := NewRunner(RunnerConfig{Shards: 1, Default: pipeline.DefaultConfig(), Outputs: rc,
		History: HistoryConfig{Source: h, Buffer: 10, Concurrency: 1}})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close(context.Background())
	for _, p := range pts[:5] {
		r.Submit(context.Background(), Input{Key: "waiting", Point: p})
	}
	// "other" waits too (its Load queues behind the first): open the
	// gate... only "waiting" is blocked; submit to a series restored? no:
	// use the buffer bound instead.
	for _, p := range pts[5:] {
		r.Submit(context.Background(), Input{Key: "waiting", Point: p})
	}
	deadline := time.Now().Add(10 * time.Second) // catches a hang only
	for r.Stats().Processed < uint64(len(pts)) {
		if time.Now().After(deadline) {
			t.Fatalf("processed %d of %d while the history is blocked", r.Stats().Processed, len(pts))
		}
		time.Sleep(time.Millisecond)
	}
	if c := r.HistoryStats().Cold[ColdBufferFull]; c != 1 {
		t.Fatalf("cold buffer_full %d, want 1", c)
	}
	close(h.block)
	h2 := &pastOf{fail: true}
	r2, err := NewRunner(RunnerConfig{Shards: 2, Default: pipeline.DefaultConfig(), Outputs: newRecorder(), History: HistoryConfig{Source: h2}})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		for _, p := range pts[:3] {
			r2.Submit(context.Background(), Input{Key: fmt.Sprint("k", i), Point: p})
		}
	}
	if err := r2.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	st := r2.HistoryStats()
	if st.Cold[ColdFailed] != 20 || st.Warmed != 0 || r2.Stats().Processed != 60 {
		t.Fatalf("failing history: %+v, processed %d, want 20 cold and 60 points processed", st, r2.Stats().Processed)
	}
}

// slowPast is a History that takes a while per Load and records the most
// Loads running at once.
type slowPast struct {
	pastOf
	running, most int
}

func (h *slowPast) Load(ctx context.Context, req HistoryRequest) ([]pipeline.Point, error) {
	h.mu.Lock()
	h.running++
	h.most = max(h.most, h.running)
	h.mu.Unlock()
	defer func() { h.mu.Lock(); h.running--; h.mu.Unlock() }()
	select {
	case <-time.After(time.Millisecond): // a round trip
	case <-ctx.Done():
	}
	return h.pastOf.Load(ctx, req)
}

// TestRunnerHistoryManySeries: a burst of new series is loaded at most
// Concurrency at a time, each is warmed, and no point is lost.
func TestRunnerHistoryManySeries(t *testing.T) {
	const nSeries, live = 2000, 4
	pts := dailyPoints(64+live, time.Minute)
	h := &slowPast{pastOf: pastOf{pts: map[string][]pipeline.Point{}}}
	for i := range nSeries {
		h.pts[fmt.Sprint("s", i)] = pts[:64]
	}
	r, err := NewRunner(RunnerConfig{Shards: 2, Default: pipeline.DefaultConfig(), Outputs: newRecorder(),
		History: HistoryConfig{Source: h, Concurrency: 3, Rate: 1e6}})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pts[64:] {
		for i := range nSeries {
			if err := r.Submit(context.Background(), Input{Key: fmt.Sprint("s", i), Point: p}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := r.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	st, rs := r.HistoryStats(), r.Stats()
	if st.Warmed != nSeries || st.Points != nSeries*64 || rs.Processed != nSeries*live || rs.DroppedQueueFull+rs.DroppedShutdown != 0 {
		t.Fatalf("history %+v, runner processed %d (dropped %d, %d), want %d warmed and %d points processed",
			st, rs.Processed, rs.DroppedQueueFull, rs.DroppedShutdown, nSeries, nSeries*live)
	}
	if h.most > 3 {
		t.Fatalf("%d Loads at once, want at most Concurrency = 3", h.most)
	}
}

// startsPast records when each Load starts.
type startsPast struct {
	pastOf
	starts []time.Time
}

func (h *startsPast) Load(ctx context.Context, req HistoryRequest) ([]pipeline.Point, error) {
	h.mu.Lock()
	h.starts = append(h.starts, time.Now())
	h.mu.Unlock()
	return h.pastOf.Load(ctx, req)
}

// TestRunnerHistoryRate: a burst of new series is loaded at most Rate
// series a second, whatever the concurrency: the last of n Loads starts
// (n−1)/Rate after the burst at the earliest (a timer never fires
// early, so this bound holds on any machine), every series is warmed
// and no point is lost.
func TestRunnerHistoryRate(t *testing.T) {
	const nSeries, rate = 20, 20.0
	pts := dailyPoints(65, time.Minute)
	h := &startsPast{pastOf: pastOf{pts: map[string][]pipeline.Point{}}}
	for i := range nSeries {
		h.pts[fmt.Sprint("s", i)] = pts[:64]
	}
	r, err := NewRunner(RunnerConfig{Shards: 2, Default: pipeline.DefaultConfig(), Outputs: newRecorder(),
		History: HistoryConfig{Source: h, Concurrency: 4, Rate: rate}})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	for i := range nSeries {
		if err := r.Submit(context.Background(), Input{Key: fmt.Sprint("s", i), Point: pts[64]}); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	st, rs := r.HistoryStats(), r.Stats()
	if st.Warmed != nSeries || rs.Processed != nSeries {
		t.Fatalf("history %+v, processed %d; want %d series warmed, each point processed", st, rs.Processed, nSeries)
	}
	if len(h.starts) != nSeries {
		t.Fatalf("%d Loads, want %d", len(h.starts), nSeries)
	}
	span := slices.MaxFunc(h.starts, time.Time.Compare).Sub(t0)
	if want := time.Duration(float64(nSeries-1) / rate * float64(time.Second)); span < want {
		t.Fatalf("%d Loads started within %v of the burst, want at least %v at %v a second", nSeries, span, want, rate)
	}
}

// TestRunnerHistoryMaxHeld: the points held over all waiting series are
// bounded; the series whose point is beyond starts cold, and no point is
// lost.
func TestRunnerHistoryMaxHeld(t *testing.T) {
	pts := dailyPoints(10, time.Minute)
	h := &pastOf{pts: map[string][]pipeline.Point{}, block: make(chan struct{})}
	r, err := NewRunner(RunnerConfig{Shards: 1, Default: pipeline.DefaultConfig(), Outputs: newRecorder(),
		History: HistoryConfig{Source: h, Concurrency: 1, MaxHeld: 20}})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pts {
		for s := range 5 {
			r.Submit(context.Background(), Input{Key: fmt.Sprint("s", s), Point: p})
		}
	}
	deadline := time.Now().Add(10 * time.Second) // catches a hang only
	for r.HistoryStats().Cold[ColdBufferFull] == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("nothing started cold with 50 points and max held 20: %+v", r.HistoryStats())
		}
		time.Sleep(time.Millisecond)
	}
	close(h.block)
	if err := r.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if p := r.Stats().Processed; p != 50 {
		t.Fatalf("processed %d points, want 50", p)
	}
}

// TestRunnerHistoryLivePathAllocates: with a History, a live point of a
// warm series costs what it costs without one (one map lookup more): no
// allocation.
func TestRunnerHistoryLivePathAllocates(t *testing.T) {
	pts := dailyPoints(900, time.Minute)
	allocs := func(hc HistoryConfig) float64 {
		r, err := NewRunner(RunnerConfig{Shards: 1, Default: pipeline.DefaultConfig(), Outputs: discardOutputs{}, History: hc})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range pts[:600] {
			r.Submit(context.Background(), Input{Key: "s", Point: p})
		}
		if err := r.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		// The shard has exited: its series are the test's alone now.
		sh, i := r.shards[0], 600
		return testing.AllocsPerRun(200, func() {
			sh.process(Input{Key: "s", Point: pts[i]})
			i++
		})
	}
	without := allocs(HistoryConfig{})
	with := allocs(HistoryConfig{Source: &pastOf{pts: map[string][]pipeline.Point{"s": dailyPoints(10, time.Minute)}}})
	if with != without || with != 0 {
		t.Fatalf("allocations per live point: %v with a History, %v without; want 0", with, without)
	}
}

// originMsg is a message whose points came from subject "in.<index>".
type originMsg struct{}

func (originMsg) Done(error) {}
func (originMsg) Origin(i int) Origin {
	return Origin{Subject: fmt.Sprint("in.", i), Field: "v", Tags: []pipeline.Tag{{Key: "host", Value: "a"}}}
}

// originPast records the Origin of each request.
type originPast struct {
	mu      sync.Mutex
	origins map[string]Origin
}

func (h *originPast) Load(_ context.Context, req HistoryRequest) ([]pipeline.Point, error) {
	h.mu.Lock()
	h.origins[req.Key] = req.Origin
	h.mu.Unlock()
	return nil, nil
}

// originOutputs records the Origin each series is opened with.
type originOutputs struct {
	mu      sync.Mutex
	origins map[string]Origin
}

func (o *originOutputs) Open(key string, _ pipeline.Config, in *Input) pipeline.Sink {
	o.mu.Lock()
	o.origins[key] = in.Origin()
	o.mu.Unlock()
	return discardSink{}
}

// TestRunnerOriginAtCreation: a new series, and its resolution's, are
// opened and their past asked for with the Origin its first point's
// message gives (Originer), and a point without one gives none.
func TestRunnerOriginAtCreation(t *testing.T) {
	h := &originPast{origins: map[string]Origin{}}
	out := &originOutputs{origins: map[string]Origin{}}
	res := pipeline.DefaultConfig()
	res.Step = time.Minute
	r, err := NewRunner(RunnerConfig{Shards: 1, Default: pipeline.DefaultConfig(), Outputs: out,
		Rules:   []Rule{{Match: "a", Config: res, Resolution: true}},
		History: HistoryConfig{Source: h}})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i, in := range []Input{
		{Key: "a", Point: pipeline.Point{Time: t0, Value: 1}, Msg: originMsg{}, Index: 3},
		{Key: "a", Point: pipeline.Point{Time: t0.Add(time.Second), Value: 2}, Msg: originMsg{}, Index: 4},
		{Key: "b", Point: pipeline.Point{Time: t0, Value: 1}},
	} {
		if err := r.Submit(context.Background(), in); err != nil {
			t.Fatalf("point %d: %v", i, err)
		}
	}
	if err := r.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	want := Origin{Subject: "in.3", Field: "v", Tags: []pipeline.Tag{{Key: "host", Value: "a"}}}
	ra := pipeline.ResolutionKey("a", time.Minute)
	for _, k := range []string{"a", ra} {
		if got := out.origins[k]; fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s opened with origin %+v, want %+v", k, got, want)
		}
		if got := h.origins[k]; fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s's past asked for with origin %+v, want %+v", k, got, want)
		}
	}
	if got, ok := out.origins["b"]; !ok || fmt.Sprint(got) != fmt.Sprint(Origin{}) {
		t.Errorf("b opened (%v) with origin %+v, want none", ok, got)
	}
}

// TestRunnerHistoryWhilePriming: what happens to a series while its past
// is loaded and primed off the shard. Evicted meanwhile, it starts cold
// when its points come, and the series made for it is dropped; the runner
// closing meanwhile drops its held points, counted; rules changed
// meanwhile leave it the configuration it was created with.
func TestRunnerHistoryWhilePriming(t *testing.T) {
	pts := dailyPoints(21, time.Minute)
	past := func() *pastOf {
		return &pastOf{pts: map[string][]pipeline.Point{"a": pts[:20], "b": pts[:20]}, block: make(chan struct{})}
	}
	waitFor := func(t *testing.T, r *Runner, waiting int64) {
		deadline := time.Now().Add(10 * time.Second) // catches a hang only
		for r.HistoryStats().Waiting != waiting {
			if time.Now().After(deadline) {
				t.Fatalf("history %+v, want %d waiting", r.HistoryStats(), waiting)
			}
			time.Sleep(time.Millisecond)
		}
	}
	t.Run("evicted", func(t *testing.T) {
		h := past()
		r, err := NewRunner(RunnerConfig{Shards: 1, MaxSeries: 1, Default: pipeline.DefaultConfig(), Outputs: newRecorder(),
			History: HistoryConfig{Source: h, Concurrency: 1}})
		if err != nil {
			t.Fatal(err)
		}
		// b's creation evicts a, whose past is loading; when a's result
		// comes, a starts cold and evicts b, whose result then finds it
		// evicted too.
		r.Submit(context.Background(), Input{Key: "a", Point: pts[20]})
		r.Submit(context.Background(), Input{Key: "b", Point: pts[20]})
		waitFor(t, r, 2)
		close(h.block)
		if err := r.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		st, rs := r.HistoryStats(), r.Stats()
		if st.Cold[ColdEvicted] != 2 || st.Warmed != 0 || st.Waiting != 0 || rs.Processed != 2 || rs.EvictedLRU != 3 {
			t.Fatalf("history %+v, runner processed %d, evicted %d; want 2 cold (evicted), 2 processed, 3 evicted",
				st, rs.Processed, rs.EvictedLRU)
		}
		for k, e := range r.shards[0].series {
			if e.waiting || e.s.Model() == nil {
				t.Fatalf("series %q holds no model after its points", k)
			}
		}
	})
	t.Run("closed", func(t *testing.T) {
		h := past()
		r, err := NewRunner(RunnerConfig{Shards: 1, Default: pipeline.DefaultConfig(), Outputs: newRecorder(),
			History: HistoryConfig{Source: h, Concurrency: 1}})
		if err != nil {
			t.Fatal(err)
		}
		r.Submit(context.Background(), Input{Key: "a", Point: pts[20]})
		waitFor(t, r, 1)
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		if err := r.Close(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Close while a past loads: %v, want the deadline", err)
		}
		st, rs := r.HistoryStats(), r.Stats()
		if st.Cold[ColdShutdown] != 1 || st.Waiting != 0 || rs.DroppedShutdown != 1 || rs.Processed != 0 {
			t.Fatalf("history %+v, runner %+v; want 1 cold (shutdown) and its point dropped", st, rs)
		}
	})
	t.Run("rules changed", func(t *testing.T) {
		h := past()
		rc := newRecorder()
		r, err := NewRunner(RunnerConfig{Shards: 1, Default: pipeline.DefaultConfig(), Outputs: rc,
			History: HistoryConfig{Source: h, Concurrency: 1}})
		if err != nil {
			t.Fatal(err)
		}
		r.Submit(context.Background(), Input{Key: "a", Point: pts[20]})
		waitFor(t, r, 1)
		changed := pipeline.DefaultConfig()
		changed.Dim++
		if err := r.SetRules(changed, nil); err != nil {
			t.Fatal(err)
		}
		close(h.block)
		if err := r.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		if st := r.HistoryStats(); st.Warmed != 1 || st.Points != 20 {
			t.Fatalf("history %+v, want a warmed from 20 points", st)
		}
		e := r.shards[0].series["a"]
		if e == nil || e.s.SharedConfig().Dim != pipeline.DefaultConfig().Dim || rc.opened["a"].Dim != pipeline.DefaultConfig().Dim {
			t.Fatalf("a was created with dim %d; after SetRules it is primed with another configuration", pipeline.DefaultConfig().Dim)
		}
	})
	t.Run("idle ticks", func(t *testing.T) {
		// A series waiting for its past was seen when it was made: the
		// idle evictions that run meanwhile, the clock standing, leave it.
		h := past()
		var clock fakeClock
		clock.ns.Store(pts[20].Time.UnixNano())
		var calls atomic.Int64
		r, err := NewRunner(RunnerConfig{Shards: 1, Default: pipeline.DefaultConfig(), Outputs: newRecorder(), IdleTTL: 40 * time.Millisecond,
			Now:     func() time.Time { calls.Add(1); return clock.now() },
			History: HistoryConfig{Source: h, Concurrency: 1}})
		if err != nil {
			t.Fatal(err)
		}
		r.Submit(context.Background(), Input{Key: "a", Point: pts[20]})
		waitFor(t, r, 1)
		for c := calls.Load(); calls.Load() < c+3; { // eviction ticks read the clock
			time.Sleep(time.Millisecond)
		}
		close(h.block)
		if err := r.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		if st, rs := r.HistoryStats(), r.Stats(); st.Warmed != 1 || rs.SeriesEvicted != 0 {
			t.Fatalf("history %+v, %d evicted; want a warmed, none evicted", st, rs.SeriesEvicted)
		}
	})
}

// A history worker yields to live points: while a shard has points
// queued it sleeps for a slice, so that its processor goes looking for
// the goroutines queued elsewhere (a Gosched would take the worker back
// at once); with nothing queued it only yields.
func TestYieldPrimingSleepsWhilePointsWait(t *testing.T) {
	sh := &shard{fast: make(chan Input, 1), slow: make(chan Input, 1)}
	r := &Runner{shards: []*shard{{fast: make(chan Input, 1), slow: make(chan Input, 1)}, sh}}
	for _, lane := range []chan Input{sh.fast, sh.slow} {
		lane <- Input{Key: "a"}
		t0 := time.Now()
		r.yieldPriming()
		if d := time.Since(t0); d < pipeline.PrimeSlice {
			t.Errorf("a point queued: the worker yielded for %v, want a sleep of at least %v", d, pipeline.PrimeSlice)
		}
		<-lane
	}
	// Nothing queued: runtime.Gosched, which returns whenever the
	// scheduler resumes the worker (no lower bound to check), and must
	// not touch the lanes.
	r.yieldPriming()
	if len(sh.fast)+len(sh.slow) != 0 {
		t.Fatal("yieldPriming changed a lane")
	}
}

// aheadPast is a History that answers beyond the request's bound: the
// past before Until, then points at and after it, and one dated 9e18 ns
// (2255), as a server that ignores the query's time range would.
type aheadPast struct {
	pastOf
	ahead []pipeline.Point
}

func (h *aheadPast) Load(ctx context.Context, req HistoryRequest) ([]pipeline.Point, error) {
	pts, err := h.pastOf.Load(ctx, req)
	return append(pts, h.ahead...), err
}

// TestRunnerHistoryNotBeforeLive: the points a History returns at or
// after the series' first live point are not learned but dropped and
// counted (not_before_live): the series learns its past before it, and
// every live point after it is processed, none dropped as out of order.
func TestRunnerHistoryNotBeforeLive(t *testing.T) {
	pts := dailyPoints(100, time.Minute)
	split := 80
	ahead := []pipeline.Point{pts[split], {Time: pts[split+5].Time, Value: 1e3}, {Time: time.Unix(0, 9e18), Value: 42}}
	h := &aheadPast{pastOf: pastOf{pts: map[string][]pipeline.Point{"s": pts[:split]}}, ahead: ahead}
	r, err := NewRunner(RunnerConfig{Shards: 1, Default: pipeline.DefaultConfig(), Outputs: newRecorder(), History: HistoryConfig{Source: h}})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pts[split:] {
		if err := r.Submit(context.Background(), Input{Key: "s", Point: p}); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	st, rs := r.HistoryStats(), r.Stats()
	if st.Warmed != 1 || st.Points != uint64(split) || st.Dropped[HistoryNotBefore] != uint64(len(ahead)) {
		t.Fatalf("history %+v: want 1 series warmed with %d points, %d dropped", st, split, len(ahead))
	}
	if rs.OutOfOrder != 0 || rs.Processed != uint64(len(pts)-split) {
		t.Fatalf("live points: %d processed, %d out of order; want %d processed, none out of order", rs.Processed, rs.OutOfOrder, len(pts)-split)
	}
	if st.Bytes != 0 {
		t.Fatalf("history holds %d bytes once every Load is done, want 0", st.Bytes)
	}
}

// TestRunnerHistoryBytes: while Loads run, HistoryStats.Bytes counts
// LoadBytes for each; once their points are learned, nothing.
func TestRunnerHistoryBytes(t *testing.T) {
	pts := dailyPoints(20, time.Minute)
	h := &pastOf{pts: map[string][]pipeline.Point{"a": pts[:10], "b": pts[:10]}, block: make(chan struct{})}
	const loadBytes = 1 << 20
	r, err := NewRunner(RunnerConfig{Shards: 1, Default: pipeline.DefaultConfig(), Outputs: newRecorder(),
		History: HistoryConfig{Source: h, Concurrency: 2, Rate: 1e6, LoadBytes: loadBytes}})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"a", "b"} {
		if err := r.Submit(context.Background(), Input{Key: k, Point: pts[10]}); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(10 * time.Second) // catches a hang only
	for r.HistoryStats().Bytes != 2*loadBytes {
		if time.Now().After(deadline) {
			t.Fatalf("two Loads running: %d bytes counted, want %d", r.HistoryStats().Bytes, 2*loadBytes)
		}
		time.Sleep(time.Millisecond)
	}
	close(h.block)
	if err := r.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if st := r.HistoryStats(); st.Bytes != 0 || st.Warmed != 2 {
		t.Fatalf("after the Loads: %+v, want 0 bytes and 2 series warmed", st)
	}
}

// TestHistoryRateBounds: a rate whose interval a time.Duration cannot
// hold (or below a nanosecond) is refused, not turned into no pacing.
func TestHistoryRateBounds(t *testing.T) {
	for _, rate := range []float64{1e-12, MinHistoryRate / 2, 2 * MaxHistoryRate} {
		if _, err := (HistoryConfig{Rate: rate}).withDefaults(); !errors.Is(err, pipeline.ErrBadConfig) {
			t.Errorf("rate %v: %v, want ErrBadConfig", rate, err)
		}
	}
	for _, rate := range []float64{0, MinHistoryRate, 1, MaxHistoryRate} {
		if _, err := (HistoryConfig{Rate: rate}).withDefaults(); err != nil {
			t.Errorf("rate %v: %v", rate, err)
		}
	}
}
