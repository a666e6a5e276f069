package runner

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/forecastd/forecastd/pipeline"
)

// memCheckpoints is a Checkpointer in memory.
type memCheckpoints struct {
	mu     sync.Mutex
	saved  map[string]pipeline.SeriesState
	saves  int
	forgot []string
}

func (m *memCheckpoints) Saved(key string) (pipeline.SeriesState, string, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	st, ok := m.saved[key]
	return st, "mem:" + key, ok
}

func (m *memCheckpoints) Save(st pipeline.SeriesState) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.saved[st.Key] = st
	m.saves++
}

func (m *memCheckpoints) Forget(key string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.saved, key)
	m.forgot = append(m.forgot, key)
}

// A runner restored from the checkpoints another took (periodically, while
// points flowed, and at Close) goes on exactly as an uninterrupted series:
// it skips the points replayed up to each series' checkpointed sequence,
// and its forecasts equal those of a Series run alone, bit for bit.
func TestRunnerCheckpointRestore(t *testing.T) {
	const nSeries, n, cut, replay = 40, 120, 70, 25
	key := func(k int) string { return fmt.Sprintf("s%d", k) }
	seq := func(k, i int) uint64 { return uint64(i*nSeries + k + 1) } // one stream, series interleaved
	t0 := time.Unix(1_700_000_000, 0)
	submit := func(r *Runner, rc *recorder, from, to int) {
		for i := from; i < to; i++ {
			for k := range nSeries {
				tm := t0.Add(time.Duration(i) * time.Second)
				in := Input{Key: key(k), Point: pipeline.Point{Time: tm, Value: seriesValue(k, i)}, Seq: seq(k, i), Msg: &ack{rc: rc, key: key(k), t: tm}}
				if err := r.Submit(context.Background(), in); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	cp := &memCheckpoints{saved: map[string]pipeline.SeriesState{}}
	cfg := RunnerConfig{Shards: 4, QueueSize: 16, CheckpointBatch: 3, Default: testConfig(), Checkpoints: cp}

	rc1 := newRecorder()
	cfg.Outputs = rc1
	r1, err := NewRunner(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ckDone := make(chan error)
	go func() { // checkpoints while the points flow
		var err error
		for range 5 {
			if err = r1.Checkpoint(context.Background()); err != nil {
				break
			}
		}
		ckDone <- err
	}()
	submit(r1, rc1, 0, cut)
	if err := <-ckDone; err != nil {
		t.Fatal(err)
	}
	if err := r1.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := r1.Checkpoint(context.Background()); err != ErrClosed {
		t.Fatalf("Checkpoint after Close: %v, want ErrClosed", err)
	}
	if len(cp.saved) != nSeries {
		t.Fatalf("%d series checkpointed, want %d", len(cp.saved), nSeries)
	}
	for k := range nSeries {
		if got, want := cp.saved[key(k)].Seq, seq(k, cut-1); got != want {
			t.Fatalf("series %d checkpointed at seq %d, want %d", k, got, want)
		}
	}

	rc2 := newRecorder()
	cfg.Outputs = rc2
	r2, err := NewRunner(cfg)
	if err != nil {
		t.Fatal(err)
	}
	submit(r2, rc2, cut-replay, n) // a replay from before the checkpoint
	if err := r2.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	st := r2.Stats()
	if st.Restored != nSeries || st.Replayed != nSeries*replay || st.RestoreFailed != 0 {
		t.Fatalf("stats %+v: want %d restored, %d replayed", st, nSeries, nSeries*replay)
	}
	for k := range nSeries {
		alone, err := pipeline.New(key(k), testConfig())
		if err != nil {
			t.Fatal(err)
		}
		var want []pipeline.Forecast
		for i := range n {
			res, _ := alone.Push(pipeline.Point{Time: t0.Add(time.Duration(i) * time.Second), Value: seriesValue(k, i)})
			if i >= cut && res.HasForecast {
				want = append(want, res.Forecast)
			}
		}
		var got []pipeline.Forecast
		for _, e := range rc2.events(key(k)) {
			if e.kind == "forecast" {
				got = append(got, e.f)
			}
			if e.kind == "done" && e.err != nil {
				t.Fatalf("series %d: point at %v: %v", k, e.t, e.err)
			}
		}
		if len(got) != len(want) {
			t.Fatalf("series %d: %d forecasts after the restart, want %d", k, len(got), len(want))
		}
		for i := range want {
			if got[i].Time != want[i].Time || got[i].Value != want[i].Value || !sameFloat(got[i].Lower, want[i].Lower) {
				t.Fatalf("series %d forecast %d: %+v, want %+v", k, i, got[i], want[i])
			}
		}
	}
}

func sameFloat(a, b float64) bool { return a == b || a != a && b != b }

// An evicted series' checkpoint is forgotten; a state that does not fit
// the series' configuration is refused, counted, and the series starts
// afresh.
func TestRunnerCheckpointEvictAndRestoreFailure(t *testing.T) {
	clk := &fakeClock{}
	cp := &memCheckpoints{saved: map[string]pipeline.SeriesState{}}
	other := testConfig()
	other.Dim = 3
	s, err := pipeline.New("b", other)
	if err != nil {
		t.Fatal(err)
	}
	st, err := s.Export()
	if err != nil {
		t.Fatal(err)
	}
	cp.saved["b"] = st
	r, err := NewRunner(RunnerConfig{Shards: 1, IdleTTL: 40 * time.Millisecond, Now: clk.now, Default: testConfig(), Outputs: newRecorder(), Checkpoints: cp})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close(context.Background())
	for _, k := range []string{"a", "b"} {
		if err := r.Submit(context.Background(), Input{Key: k, Point: pipeline.Point{Time: time.Unix(1, 0), Value: 1}}); err != nil {
			t.Fatal(err)
		}
	}
	poll(t, "both series created", func() bool { return r.Stats().SeriesCreated == 2 })
	if st := r.Stats(); st.RestoreFailed != 1 || st.Restored != 0 {
		t.Fatalf("stats %+v: want 1 restore failed", st)
	}
	clk.advance(2 * time.Minute)
	poll(t, "both series evicted", func() bool { return r.Stats().SeriesEvicted == 2 })
	cp.mu.Lock()
	defer cp.mu.Unlock()
	if len(cp.forgot) != 2 || len(cp.saved) != 0 {
		t.Fatalf("forgotten %v, saved %d: want both forgotten", cp.forgot, len(cp.saved))
	}
}

// fullCheckpoints is a memCheckpoints whose eviction queue is full: it
// refuses every evicted state (EvictionSaver).
type fullCheckpoints struct{ memCheckpoints }

func (f *fullCheckpoints) SaveEvicted(pipeline.SeriesState) bool { return false }
func (f *fullCheckpoints) KeepEvicted(string)                    {}

// A series evicted at max_series is saved through SaveEvicted when the
// Checkpointer has it; a refusal is counted (EvictedUnsaved) and the
// series, when it comes back, starts afresh (not restored).
func TestRunnerEvictionSaverRefuses(t *testing.T) {
	rc := newRecorder()
	cp := &fullCheckpoints{memCheckpoints{saved: map[string]pipeline.SeriesState{}}}
	r, err := NewRunner(RunnerConfig{Shards: 1, MaxSeries: 1, Default: testConfig(), Outputs: rc, Checkpoints: cp})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close(context.Background())
	for i, k := range []string{"a", "b", "a"} {
		errc := make(chan error, 1)
		if err := r.Submit(context.Background(), Input{Key: k, Point: pipeline.Point{Time: time.Unix(int64(i), 0), Value: 1}, Msg: &ack{rc: rc, key: k, errc: errc}}); err != nil {
			t.Fatal(err)
		}
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
	}
	if st := r.Stats(); st.EvictedLRU != 2 || st.EvictedUnsaved != 2 || st.Restored != 0 {
		t.Fatalf("stats %+v: want 2 evicted, both unsaved, none restored", st)
	}
}
