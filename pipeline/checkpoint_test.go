package pipeline_test

import (
	"errors"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/forecastd/forecastd/internal/statestore"
	"github.com/forecastd/forecastd/lab/dataset"
	"github.com/forecastd/forecastd/pipeline"
	"github.com/forecastd/forecastd/svr"
)

// restartTol is how far a forecast after a restart may be from the
// uninterrupted run's: issue 6's 1e-9, in the series' units. Every model
// is in fact held to bit equality: AOSVR's state carries its margins and
// R (svr.AOSVRState.H, R), so its Import rebuilds nothing that rounds.
const restartTol = 1e-9

type step struct {
	p   pipeline.Point
	bad bool // the point is refused (out of order or NaN)
}

// stream returns n points of the Santa Fe laser series, every 10 s with up
// to 2 s of jitter, with a NaN at nan, an out-of-order point at ooo and a
// gap of 20 intervals before gap (MaxGap is 5).
func stream(n, nan, ooo, gap int) []step {
	v := dataset.MustLoad("santafe_laser_a").Values
	r := rand.New(rand.NewPCG(6, 6))
	t := time.Date(2024, 3, 1, 12, 0, 0, 0, time.UTC)
	out := make([]step, 0, n+2)
	for i := range n {
		t = t.Add(10*time.Second + time.Duration(r.IntN(2000))*time.Millisecond)
		if i == gap {
			t = t.Add(200 * time.Second)
		}
		switch i {
		case nan:
			out = append(out, step{pipeline.Point{Time: t, Value: math.NaN()}, true})
			t = t.Add(10 * time.Second)
		case ooo:
			out = append(out, step{pipeline.Point{Time: t.Add(-time.Hour), Value: 1}, true})
		}
		out = append(out, step{pipeline.Point{Time: t, Value: v[i]}, false})
	}
	return out
}

func push(t *testing.T, s *pipeline.Series, st step) pipeline.Result {
	t.Helper()
	r, err := s.Push(st.p)
	if (err != nil) != st.bad {
		t.Fatalf("push %v: err = %v, want refused = %v", st.p, err, st.bad)
	}
	return r
}

// roundTrip exports s, encodes the state to bytes, decodes it and restores
// a new series from it.
func roundTrip(t *testing.T, s *pipeline.Series) *pipeline.Series {
	t.Helper()
	st, err := s.Export()
	if err != nil {
		t.Fatal(err)
	}
	st.Seq = 12345
	got, err := statestore.Decode(statestore.Encode(st))
	if err != nil {
		t.Fatal(err)
	}
	if got.Seq != 12345 {
		t.Fatalf("Seq = %d after the round trip", got.Seq)
	}
	r, err := pipeline.Restore(s.Key(), s.Config(), got)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// diff returns how far apart a and b are (0 if equal, +Inf if they differ
// in kind: one a NaN, one with a value the other lacks).
func diff(a, b float64) float64 {
	if math.IsNaN(a) || math.IsNaN(b) {
		if math.IsNaN(a) && math.IsNaN(b) {
			return 0
		}
		return math.Inf(1)
	}
	return math.Abs(a - b)
}

func forecastDiff(a, b pipeline.Forecast) float64 {
	if !a.Time.Equal(b.Time) || !a.Origin.Equal(b.Origin) {
		return math.Inf(1)
	}
	return max(diff(a.Value, b.Value), diff(a.Lower, b.Lower), diff(a.Upper, b.Upper), diff(a.Scaled, b.Scaled), pathDiff(a.Path, b.Path))
}

// pathDiff returns how far apart two paths are (+Inf if their steps or
// times differ).
func pathDiff(a, b []pipeline.Step) float64 {
	if len(a) != len(b) {
		return math.Inf(1)
	}
	d := 0.0
	for k := range a {
		if a[k].Horizon != b[k].Horizon || !a[k].Time.Equal(b[k].Time) {
			return math.Inf(1)
		}
		d = max(d, diff(a[k].Value, b[k].Value), diff(a[k].Lower, b[k].Lower), diff(a[k].Upper, b[k].Upper))
	}
	return d
}

// checkpointConfigs returns a configuration of each kind with the default
// target (change, combined, with a seasonal lag of 3 minutes that the
// 10 s stream reaches) and, suffixed "_paper", the AOSVR paper's setup
// (level, warm-up scale).
func checkpointConfigs() map[string]pipeline.Config {
	out := map[string]pipeline.Config{}
	for suffix, base := range map[string]pipeline.Config{"": pipeline.DefaultConfig(), "_paper": pipeline.PaperConfig()} {
		base.MaxGap = 5
		if base.Target == pipeline.TargetChange {
			base.Seasons = []time.Duration{3 * time.Minute, 24 * time.Hour}
		}
		a0 := base
		a0.Window = 0
		sog := base
		sog.Kind = pipeline.SOGSVR
		norma := base
		norma.Kind = pipeline.NORMA
		out["aosvr_W200"+suffix], out["aosvr_W0"+suffix], out["sogsvr"+suffix], out["norma"+suffix] = base, a0, sog, norma
		if base.Target == pipeline.TargetChange { // forecasting 6 points ahead: the steps' state too
			h, hn := base, norma
			h.Horizon, hn.Horizon = 6, 6
			out["aosvr_W200_h6"+suffix], out["norma_h6"+suffix] = h, hn
		}
	}
	return out
}

// TestCheckpointFirstForecastAfterRestartEqualsUninterrupted: a series
// checkpointed (exported, encoded, decoded, restored) at any point of its
// life forecasts on as if it had never stopped: every later forecast and
// outcome (value, interval, scaled value, times) within 1e-9 of the
// uninterrupted series', bit-identical with NORMA and SOG-SVR, for hundreds
// of points, across a NaN, an out-of-order point and a gap restart, and its
// counters equal. The cuts fall inside the scale's warm-up (100 points),
// on the point that ends it, right after, with a forecast pending
// mid-stream, just after the NaN (the embedding to restart at the next
// point), and after the gap restart.
func TestCheckpointFirstForecastAfterRestartEqualsUninterrupted(t *testing.T) {
	const n, nan, ooo, gap = 800, 300, 320, 450
	in := stream(n, nan, ooo, gap)
	// Indices into in: the cut comes after in[cut] was pushed.
	nanAt := -1
	for i, s := range in {
		if s.bad && math.IsNaN(s.p.Value) {
			nanAt = i
		}
	}
	cuts := map[string]int{"warmup": 40, "warmup_end": 99, "after_warmup": 100, "mid_pending": 250, "after_nan": nanAt, "after_gap": gap + 3}
	for name, cfg := range checkpointConfigs() {
		for cutName, cut := range cuts {
			t.Run(name+"/"+cutName, func(t *testing.T) {
				t.Parallel()
				exact := true // AOSVR too: its state carries h and R
				a, err := pipeline.New("host=a/cpu 0", cfg)
				if err != nil {
					t.Fatal(err)
				}
				b, _ := pipeline.New("host=a/cpu 0", cfg)
				for i := 0; i <= cut; i++ {
					push(t, a, in[i])
					push(t, b, in[i])
				}
				if cutName == "mid_pending" {
					if st, _ := b.Export(); !st.Pending {
						t.Fatal("no forecast pending at the cut")
					}
				}
				b = roundTrip(t, b)
				worst, forecasts := 0.0, 0
				for i := cut + 1; i < len(in); i++ {
					ra, rb := push(t, a, in[i]), push(t, b, in[i])
					if ra.HasForecast != rb.HasForecast || ra.HasOutcome != rb.HasOutcome {
						t.Fatalf("point %d: uninterrupted %+v, restored %+v", i, ra, rb)
					}
					d := 0.0
					if ra.HasForecast {
						forecasts++
						d = forecastDiff(ra.Forecast, rb.Forecast)
					}
					if ra.HasOutcome {
						d = max(d, forecastDiff(ra.Outcome.Forecast, rb.Outcome.Forecast), diff(ra.Outcome.ActualScaled, rb.Outcome.ActualScaled), pathDiff(ra.Outcome.Path, rb.Outcome.Path))
					}
					worst = max(worst, d)
					if d > restartTol || exact && d != 0 {
						t.Fatalf("point %d (%d after the cut): forecasts differ by %g:\nuninterrupted %+v\nrestored      %+v", i, i-cut, d, ra.Forecast, rb.Forecast)
					}
				}
				if forecasts < 300 {
					t.Fatalf("only %d forecasts compared", forecasts)
				}
				if sa, sb := a.Stats(), b.Stats(); sa != sb {
					t.Errorf("stats differ:\nuninterrupted %+v\nrestored      %+v", sa, sb)
				}
				if exact { // the whole state, bit for bit
					ea, _ := a.Export()
					eb, _ := b.Export()
					ea.LastTime, eb.LastTime = ea.LastTime.UTC(), eb.LastTime.UTC()
					ea.Pend.Time, ea.Pend.Origin = ea.Pend.Time.UTC(), ea.Pend.Origin.UTC()
					eb.Pend.Time, eb.Pend.Origin = eb.Pend.Time.UTC(), eb.Pend.Origin.UTC()
					if string(statestore.Encode(ea)) != string(statestore.Encode(eb)) {
						t.Errorf("final states differ")
					}
				}
				t.Logf("%d forecasts after the cut, largest difference %g", forecasts, worst)
			})
		}
	}
}

// TestCheckpointTwice: a series restored from a checkpoint of a restored
// series goes on like the original (restores compose).
func TestCheckpointTwice(t *testing.T) {
	in := stream(600, -1, -1, 350)
	for name, cfg := range checkpointConfigs() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			a, _ := pipeline.New("k", cfg)
			b, _ := pipeline.New("k", cfg)
			for i, st := range in {
				ra, rb := push(t, a, st), push(t, b, st)
				if d := forecastDiff(ra.Forecast, rb.Forecast); d > restartTol {
					t.Fatalf("point %d: forecasts differ by %g", i, d)
				}
				if i%97 == 0 {
					b = roundTrip(t, b)
				}
			}
		})
	}
}

// TestRestoreRefusesChangedConfig: a state restored under a configuration
// that differs in any setting that shapes it is refused with an error
// naming the series and every change, old → new; MeasureUpdates, and the
// settings of other kinds, do not count.
func TestRestoreRefusesChangedConfig(t *testing.T) {
	cfg := pipeline.PaperConfig()
	s, _ := pipeline.New("web/latency p99", cfg)
	for _, st := range stream(150, -1, -1, -1) {
		push(t, s, st)
	}
	st, err := s.Export()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		change func(*pipeline.Config)
		want   []string // in the error; nil: no error
	}{
		{"same", func(*pipeline.Config) {}, nil},
		{"measure_updates", func(c *pipeline.Config) { c.MeasureUpdates = true }, nil},
		{"other_kind_settings", func(c *pipeline.Config) { c.NORMA.Tau = 7; c.SOG.MaxDict = 3 }, nil},
		{"window", func(c *pipeline.Config) { c.Window = 100 }, []string{"window 200 → 100"}},
		{"kernel_and_c", func(c *pipeline.Config) { c.C = 5; c.Epsilon = 0.05 }, []string{"c 10 → 5", "epsilon 0.1 → 0.05"}},
		{"coverage", func(c *pipeline.Config) { c.Coverage = 0.95 }, []string{"coverage 0.9 → 0.95"}},
		{"kind", func(c *pipeline.Config) { c.Kind = pipeline.NORMA }, []string{"kind aosvr → norma", "window 200 → (unset)", "norma_tau (unset) → 48"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := cfg
			tc.change(&c)
			_, err := pipeline.Restore("web/latency p99", c, st)
			if tc.want == nil {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errors.Is(err, pipeline.ErrConfigChanged) {
				t.Fatalf("err = %v, want ErrConfigChanged", err)
			}
			for _, w := range append(tc.want, `"web/latency p99"`) {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not name %q", err, w)
				}
			}
		})
	}
	if _, err := pipeline.Restore("other", cfg, st); !errors.Is(err, pipeline.ErrBadState) || !strings.Contains(err.Error(), `"other"`) {
		t.Errorf("restoring another series' state: err = %v, want ErrBadState naming the series", err)
	}
}

// TestRestoreRefusesBadState: a state damaged in any part is refused with
// ErrBadState (or the config error), never a panic or a restored series.
func TestRestoreRefusesBadState(t *testing.T) {
	for name, cfg := range checkpointConfigs() {
		s, _ := pipeline.New("k", cfg)
		for _, st := range stream(300, -1, -1, -1) {
			push(t, s, st)
		}
		for _, tc := range []struct {
			name    string
			corrupt func(*pipeline.SeriesState)
		}{
			{"residual_nan", func(st *pipeline.SeriesState) { st.Residuals[3] = math.NaN() }},
			{"residual_negative", func(st *pipeline.SeriesState) { st.Residuals[0] = -1 }},
			{"too_many_residuals", func(st *pipeline.SeriesState) { st.Residuals = make([]float64, 201) }},
			{"alpha_inf", func(st *pipeline.SeriesState) { st.Alpha = math.Inf(1) }},
			{"delay_values", func(st *pipeline.SeriesState) {
				if st.Changes != nil {
					st.Changes.Values = st.Changes.Values[:1]
				} else {
					st.Delay.Values = st.Delay.Values[1:]
				}
			}},
			{"change_scale", func(st *pipeline.SeriesState) {
				if st.Changes != nil {
					st.Changes.Scale = math.NaN()
				} else {
					st.Pend.Value = math.NaN()
				}
			}},
			{"change_levels", func(st *pipeline.SeriesState) {
				if st.Changes != nil {
					st.Changes.Levels = st.Changes.Levels[1:]
				} else {
					st.Pend.Value = math.NaN()
				}
			}},
			{"combination_loss", func(st *pipeline.SeriesState) {
				if st.Combine != nil {
					st.Combine.Loss[0] = -1
				} else {
					st.Pend.Value = math.NaN()
				}
			}},
			{"guard_missing", func(st *pipeline.SeriesState) {
				if st.Changes != nil {
					st.Guard = nil
				} else {
					st.Pend.Value = math.NaN()
				}
			}},
			{"delay_config", func(st *pipeline.SeriesState) { st.Delay.B++ }},
			{"scaler_seen", func(st *pipeline.SeriesState) { st.Scaler.Seen = 50 }},
			{"warmup_points_when_frozen", func(st *pipeline.SeriesState) { st.Warmup = make([]pipeline.WarmupPoint, 2) }},
			{"spacing_zero", func(st *pipeline.SeriesState) { st.Spacings[2] = 0 }},
			{"pending_nan", func(st *pipeline.SeriesState) { st.Pend.Scaled = math.NaN() }},
			{"no_model", func(st *pipeline.SeriesState) { st.Model = nil }},
			{"other_kind", func(st *pipeline.SeriesState) {
				if st.Model.Kind == "norma" {
					st.Model.Kind = "aosvr"
				} else {
					st.Model.Kind = "norma"
				}
			}},
			{"model_coefficient", func(st *pipeline.SeriesState) {
				switch m := st.Model.State.(type) {
				case *pipeline.AOSVRState:
					m.Theta[0] = math.NaN()
				case *svr.SOGSVRState:
					m.Alpha[0] = math.Inf(1)
				case *svr.NORMAState:
					m.Coef[0] = math.NaN()
				}
			}},
			{"model_dim", func(st *pipeline.SeriesState) {
				switch m := st.Model.State.(type) {
				case *pipeline.AOSVRState:
					m.X[0] = m.X[0][1:]
				case *svr.SOGSVRState:
					m.Atoms[0] = m.Atoms[0][1:]
				case *svr.NORMAState:
					m.X[0] = m.X[0][1:]
				}
			}},
			{"window_handle", func(st *pipeline.SeriesState) {
				a, ok := st.Model.State.(*pipeline.AOSVRState)
				if ok && len(a.Window) > 0 {
					a.Window[5] = a.Window[4]
				} else if ok {
					a.Window = []uint64{1}
				} else {
					st.Pend.Value = math.Inf(-1)
				}
			}},
		} {
			t.Run(name+"/"+tc.name, func(t *testing.T) {
				st, err := s.Export()
				if err != nil {
					t.Fatal(err)
				}
				tc.corrupt(&st)
				r, err := pipeline.Restore("k", cfg, st)
				if err == nil || r != nil {
					t.Fatalf("restored a broken state: %v", err)
				}
				if !errors.Is(err, pipeline.ErrBadState) || !strings.Contains(err.Error(), `series "k"`) {
					t.Errorf("err = %v, want ErrBadState naming the series", err)
				}
			})
		}
	}
}

// TestExportIsACopy: a state does not change when its series goes on.
func TestExportIsACopy(t *testing.T) {
	for name, cfg := range checkpointConfigs() {
		t.Run(name, func(t *testing.T) {
			in := stream(400, -1, -1, -1)
			s, _ := pipeline.New("k", cfg)
			for _, st := range in[:60] { // inside the paper's warm-up: points held back
				push(t, s, st)
			}
			st1, _ := s.Export()
			for _, st := range in[60:300] {
				push(t, s, st)
			}
			st2, _ := s.Export()
			before := statestore.Encode(st2)
			keep := statestore.Encode(st1)
			for _, st := range in[300:] {
				push(t, s, st)
			}
			if string(statestore.Encode(st2)) != string(before) {
				t.Error("the state changed as its series went on")
			}
			held := 60 // inside the paper's warm-up; target change holds nothing back
			if cfg.Target == pipeline.TargetChange {
				held = 0
			}
			if len(st1.Warmup) != held || string(statestore.Encode(st1)) != string(keep) {
				t.Errorf("the warm-up state changed (%d points held)", len(st1.Warmup))
			}
			if !reflect.DeepEqual(st1.Config, pipeline.ConfigFields(cfg)) {
				t.Errorf("Config = %v", st1.Config)
			}
		})
	}
}
