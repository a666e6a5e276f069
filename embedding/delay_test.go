package embedding

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

func mustDelay(t testing.TB, b, tau int) *Delay {
	t.Helper()
	d, err := NewDelay(b, tau)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestNewDelayBadConfig(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		b, tau int
		want   string
	}{
		{0, 1, "dimension B is 0"},
		{-2, 1, "dimension B is -2"},
		{3, 0, "delay τ is 0"},
		{3, -1, "delay τ is -1"},
		{MaxSpan, 2, "exceeds"},
		{3, MaxSpan, "exceeds"},
		{1 << 40, 1 << 40, "exceeds"},
	} {
		d, err := NewDelay(tc.b, tc.tau)
		if d != nil || !errors.Is(err, ErrBadConfig) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("NewDelay(%d, %d) = %v, %v; want nil and an ErrBadConfig saying %q", tc.b, tc.tau, d, err, tc.want)
		}
	}
	// The largest spans allowed are accepted.
	for _, c := range [][2]int{{1, 1 << 40}, {2, MaxSpan - 1}, {MaxSpan, 1}} {
		if d, err := NewDelay(c[0], c[1]); err != nil || d.Span() > MaxSpan {
			t.Errorf("NewDelay(%d, %d) = %v, %v", c[0], c[1], d, err)
		}
	}
}

// TestDelayHandComputed checks B = 3, τ = 2 (span 5) on a short sequence
// against vectors worked out by hand: X(t) = [x(t), x(t−2), x(t−4)].
func TestDelayHandComputed(t *testing.T) {
	t.Parallel()
	d := mustDelay(t, 3, 2)
	if d.B() != 3 || d.Tau() != 2 || d.Span() != 5 {
		t.Fatalf("B, Tau, Span = %d, %d, %d; want 3, 2, 5", d.B(), d.Tau(), d.Span())
	}
	//        t:  0  1  2  3  4  5  6  7
	x := []float64{3, 1, 4, 1, 5, 9, 2, 6}
	steps := []struct {
		train []float64 // X(t−1), target x(t); nil if none
		input []float64 // X(t); nil if none
	}{
		{nil, nil},
		{nil, nil},
		{nil, nil},
		{nil, nil},
		{nil, []float64{5, 4, 3}},                // X(4) = [x4 x2 x0]
		{[]float64{5, 4, 3}, []float64{9, 1, 1}}, // (X(4), x5 = 9); X(5) = [x5 x3 x1]
		{[]float64{9, 1, 1}, []float64{2, 5, 4}}, // (X(5), x6 = 2); X(6) = [x6 x4 x2]
		{[]float64{2, 5, 4}, []float64{6, 9, 1}}, // (X(6), x7 = 6); X(7) = [x7 x5 x3]
	}
	train, input := make([]float64, 3), make([]float64, 3)
	for i, v := range x {
		trained, ready := d.Step(v, train, input)
		want := steps[i]
		if trained != (want.train != nil) || ready != (want.input != nil) {
			t.Fatalf("t=%d: Step = %v, %v; want %v, %v", i, trained, ready, want.train != nil, want.input != nil)
		}
		if trained && !slices.Equal(train, want.train) {
			t.Errorf("t=%d: training input %v, want %v (target %v)", i, train, want.train, v)
		}
		if ready && !slices.Equal(input, want.input) {
			t.Errorf("t=%d: forecast input %v, want %v", i, input, want.input)
		}
		if d.Count() != i+1 || d.Ready() != ready {
			t.Errorf("t=%d: Count, Ready = %d, %v", i, d.Count(), d.Ready())
		}
	}
}

// TestDelayAgainstHistory compares every vector with one computed from the
// whole history, over a ladder of B and τ, and checks the pairing: each
// training input is the previous forecast input, its target is the value
// just given, and it holds only earlier values.
func TestDelayAgainstHistory(t *testing.T) {
	t.Parallel()
	for _, b := range []int{1, 2, 3, 5, 8} {
		for _, tau := range []int{1, 2, 7} {
			t.Run(fmt.Sprintf("B=%d/τ=%d", b, tau), func(t *testing.T) {
				t.Parallel()
				d := mustDelay(t, b, tau)
				span := (b-1)*tau + 1
				// Values are their own time stamps: x(t) = t, so a
				// vector's components say which times they came from.
				var hist []float64
				train, input, prev := make([]float64, b), make([]float64, b), make([]float64, b)
				hadPrev := false
				for step := range 3*span + 10 {
					v := float64(step)
					trained, ready := d.Step(v, train, input)
					hist = append(hist, v)
					if trained != hadPrev {
						t.Fatalf("t=%d: trained = %v, previous step ready = %v", step, trained, hadPrev)
					}
					if trained {
						if !slices.Equal(train, prev) {
							t.Fatalf("t=%d: training input %v, previous forecast input %v", step, train, prev)
						}
						for j, c := range train {
							if c >= v {
								t.Fatalf("t=%d: training input %v holds x(%v), not before its target x(%v) (component %d)", step, train, c, v, j)
							}
						}
					}
					if ready != (len(hist) >= span) {
						t.Fatalf("t=%d: ready = %v with %d values, span %d", step, ready, len(hist), span)
					}
					if ready {
						for j := range b {
							if want := hist[len(hist)-1-j*tau]; input[j] != want {
								t.Fatalf("t=%d: X(t)[%d] = %v, want x(t−%d·%d) = %v", step, j, input[j], j, tau, want)
							}
						}
						copy(prev, input)
					}
					hadPrev = ready
				}
			})
		}
	}
}

func TestDelayDimensionOne(t *testing.T) {
	t.Parallel()
	d := mustDelay(t, 1, 4) // τ plays no part when B = 1
	train, input := []float64{-1}, []float64{-1}
	trained, ready := d.Step(10, train, input)
	if trained || !ready || input[0] != 10 || train[0] != -1 {
		t.Fatalf("first Step = %v, %v, train %v, input %v; want false, true, [-1] untouched, [10]", trained, ready, train, input)
	}
	trained, ready = d.Step(20, train, input)
	if !trained || !ready || train[0] != 10 || input[0] != 20 {
		t.Fatalf("second Step = %v, %v, train %v, input %v; want true, true, [10], [20]", trained, ready, train, input)
	}
}

func TestDelayLeavesUnwrittenSlices(t *testing.T) {
	t.Parallel()
	d := mustDelay(t, 2, 1)
	train, input := []float64{-7, -7}, []float64{-7, -7}
	if trained, ready := d.Step(1, train, input); trained || ready {
		t.Fatalf("Step = %v, %v on the first value of span 2", trained, ready)
	}
	if !slices.Equal(train, []float64{-7, -7}) || !slices.Equal(input, []float64{-7, -7}) {
		t.Fatalf("Step wrote train %v, input %v without a vector", train, input)
	}
	if d.Vector(input) || !slices.Equal(input, []float64{-7, -7}) {
		t.Fatalf("Vector wrote %v before Ready", input)
	}
}

func TestDelayVector(t *testing.T) {
	t.Parallel()
	d := mustDelay(t, 3, 2)
	train, input, v := make([]float64, 3), make([]float64, 3), make([]float64, 3)
	for i := range 12 {
		_, ready := d.Step(float64(i*i), train, input)
		if got := d.Vector(v); got != ready {
			t.Fatalf("step %d: Vector = %v, Step ready = %v", i, got, ready)
		}
		if ready && !slices.Equal(v, input) {
			t.Fatalf("step %d: Vector %v, Step input %v", i, v, input)
		}
	}
}

func TestDelayReset(t *testing.T) {
	t.Parallel()
	d := mustDelay(t, 2, 3) // span 4
	train, input := make([]float64, 2), make([]float64, 2)
	for i := range 9 {
		d.Step(float64(100+i), train, input)
	}
	d.Reset()
	if d.Count() != 0 || d.Ready() || d.Vector(input) {
		t.Fatalf("after Reset: Count %d, Ready %v", d.Count(), d.Ready())
	}
	// After the gap, span new values are needed, and no vector mixes
	// values from before it.
	for i := range 6 {
		v := float64(i)
		trained, ready := d.Step(v, train, input)
		if wantReady := i >= 3; ready != wantReady || trained != (i >= 4) {
			t.Fatalf("step %d after Reset: Step = %v, %v", i, trained, ready)
		}
		if trained && !slices.Equal(train, []float64{v - 1, v - 4}) {
			t.Fatalf("step %d after Reset: train %v, want [%v %v]", i, train, v-1, v-4)
		}
		if ready && !slices.Equal(input, []float64{v, v - 3}) {
			t.Fatalf("step %d after Reset: input %v, want [%v %v]", i, input, v, v-3)
		}
	}
}

func TestDelayStepPanicsOnWrongLength(t *testing.T) {
	t.Parallel()
	d := mustDelay(t, 3, 1)
	for _, c := range [][2]int{{2, 3}, {3, 4}, {0, 0}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Step with lengths %v and B 3 did not panic", c)
				}
			}()
			d.Step(1, make([]float64, c[0]), make([]float64, c[1]))
		}()
	}
	defer func() {
		if recover() == nil {
			t.Error("Vector with length 2 and B 3 did not panic")
		}
	}()
	d.Vector(make([]float64, 2))
}

// TestDelayStateRoundTrip saves the state at several points of a stream
// (before the first vector, at it, after the ring has wrapped, right after a
// Reset), passes it through JSON into a fresh Delay, and checks that both go
// on identically.
func TestDelayStateRoundTrip(t *testing.T) {
	t.Parallel()
	const b, tau = 3, 2 // span 5
	rng := rand.New(rand.NewPCG(1, 2))
	stream := make([]float64, 40)
	for i := range stream {
		stream[i] = rng.NormFloat64()
	}
	for _, cut := range []int{0, 1, 4, 5, 6, 13, 27} {
		for _, reset := range []bool{false, true} {
			t.Run(fmt.Sprintf("cut=%d/reset=%v", cut, reset), func(t *testing.T) {
				t.Parallel()
				d1 := mustDelay(t, b, tau)
				tr1, in1 := make([]float64, b), make([]float64, b)
				for _, v := range stream[:cut] {
					d1.Step(v, tr1, in1)
				}
				if reset {
					d1.Reset()
				}
				st := d1.State()
				if want := min(d1.Count(), d1.Span()); len(st.Values) != want {
					t.Fatalf("State has %d values, want %d", len(st.Values), want)
				}
				text, err := json.Marshal(st)
				if err != nil {
					t.Fatal(err)
				}
				var st2 DelayState
				if err := json.Unmarshal(text, &st2); err != nil {
					t.Fatal(err)
				}
				d2 := mustDelay(t, b, tau)
				d2.Step(42, make([]float64, b), make([]float64, b)) // state to be replaced
				if err := d2.SetState(st2); err != nil {
					t.Fatal(err)
				}
				if d2.Count() != d1.Count() || d2.Ready() != d1.Ready() {
					t.Fatalf("restored Count, Ready = %d, %v; want %d, %v", d2.Count(), d2.Ready(), d1.Count(), d1.Ready())
				}
				v1, v2 := make([]float64, b), make([]float64, b)
				if ok1, ok2 := d1.Vector(v1), d2.Vector(v2); ok1 != ok2 || !slices.Equal(v1, v2) {
					t.Fatalf("Vector: original %v %v, restored %v %v", ok1, v1, ok2, v2)
				}
				tr2, in2 := make([]float64, b), make([]float64, b)
				for i, v := range stream[cut:] {
					t1, r1 := d1.Step(v, tr1, in1)
					t2, r2 := d2.Step(v, tr2, in2)
					if t1 != t2 || r1 != r2 || t1 && !slices.Equal(tr1, tr2) || r1 && !slices.Equal(in1, in2) {
						t.Fatalf("step %d after restore: original %v %v %v %v, restored %v %v %v %v", i, t1, r1, tr1, in1, t2, r2, tr2, in2)
					}
				}
			})
		}
	}
}

func TestDelaySetStateErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		st   DelayState
		want string
	}{
		{"other B", DelayState{B: 2, Tau: 2}, "B = 2, τ = 2"},
		{"other τ", DelayState{B: 3, Tau: 1}, "B = 3, τ = 1"},
		{"negative count", DelayState{B: 3, Tau: 2, Count: -1}, "Count is -1"},
		{"too few values", DelayState{B: 3, Tau: 2, Count: 3, Values: []float64{1, 2}}, "2 values for Count 3, want 3"},
		{"too many values", DelayState{B: 3, Tau: 2, Count: 9, Values: []float64{1, 2, 3, 4, 5, 6}}, "6 values for Count 9, want 5"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d := mustDelay(t, 3, 2)
			for i := range 7 {
				d.Step(float64(i), make([]float64, 3), make([]float64, 3))
			}
			before := d.State()
			err := d.SetState(tc.st)
			if !errors.Is(err, ErrBadState) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("SetState = %v, want an ErrBadState saying %q", err, tc.want)
			}
			if after := d.State(); after.Count != before.Count || !slices.Equal(after.Values, before.Values) {
				t.Fatalf("failed SetState changed the state from %+v to %+v", before, after)
			}
		})
	}
}

func TestDelayStepZeroAllocs(t *testing.T) {
	d := mustDelay(t, 5, 2)
	train, input := make([]float64, 5), make([]float64, 5)
	v := 0.0
	allocs := testing.AllocsPerRun(1000, func() {
		v++
		d.Step(v, train, input)
	})
	if allocs != 0 {
		t.Fatalf("Step allocates %v times per call, want 0", allocs)
	}
	if !d.Ready() {
		t.Fatal("embedding never became ready")
	}
}

func BenchmarkStep(b *testing.B) {
	for _, dim := range []int{1, 5, 20} {
		for _, tau := range []int{1, 4} {
			b.Run(fmt.Sprintf("B=%d/τ=%d", dim, tau), func(b *testing.B) {
				d := mustDelay(b, dim, tau)
				train, input := make([]float64, dim), make([]float64, dim)
				v := 0.0
				b.ReportAllocs()
				for b.Loop() {
					v++
					d.Step(v, train, input)
				}
			})
		}
	}
}
