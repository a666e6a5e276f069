package embedding

import (
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// veryclose is the relative tolerance of a scale/unscale round trip: a few
// ulps of the largest magnitude involved.
const veryclose = 1e-12

func mustScaler(t testing.TB, spec ScaleSpec) *Scaler {
	t.Helper()
	s, err := NewScaler(spec)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestParseScale(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		spec string
		want ScaleSpec
		text string // String of the result
	}{
		{"none", ScaleSpec{}, "none"},
		{"fixed:-1,1", ScaleSpec{Mode: ScaleFixed, Min: -1, Max: 1}, "fixed:-1,1"},
		{"fixed:0,100", ScaleSpec{Mode: ScaleFixed, Min: 0, Max: 100}, "fixed:0,100"},
		{"fixed:-2.5e3,1e-3", ScaleSpec{Mode: ScaleFixed, Min: -2500, Max: 0.001}, "fixed:-2500,0.001"},
		{"fixed:-0,0.1", ScaleSpec{Mode: ScaleFixed, Min: math.Copysign(0, -1), Max: 0.1}, "fixed:-0,0.1"},
		{"fixed:0x1p-2,1", ScaleSpec{Mode: ScaleFixed, Min: 0.25, Max: 1}, "fixed:0.25,1"},
		{"fixed:-1.7976931348623157e308,1.7976931348623157e308", ScaleSpec{Mode: ScaleFixed, Min: -math.MaxFloat64, Max: math.MaxFloat64}, "fixed:-1.7976931348623157e+308,1.7976931348623157e+308"},
		{"warmup:2", ScaleSpec{Mode: ScaleWarmup, N: 2}, "warmup:2"},
		{"warmup:500", ScaleSpec{Mode: ScaleWarmup, N: 500}, "warmup:500"},
		{"warmup:+05", ScaleSpec{Mode: ScaleWarmup, N: 5}, "warmup:5"},
	} {
		got, err := ParseScale(tc.spec)
		if err != nil {
			t.Errorf("ParseScale(%q): %v", tc.spec, err)
			continue
		}
		if !sameSpec(got, tc.want) {
			t.Errorf("ParseScale(%q) = %+v, want %+v", tc.spec, got, tc.want)
		}
		if s := got.String(); s != tc.text {
			t.Errorf("ParseScale(%q).String() = %q, want %q", tc.spec, s, tc.text)
		}
		if err := got.Validate(); err != nil {
			t.Errorf("ParseScale(%q) gave a spec that does not validate: %v", tc.spec, err)
		}
	}
}

// sameSpec compares specs bit for bit, so that −0 and 0 differ.
func sameSpec(a, b ScaleSpec) bool {
	return a.Mode == b.Mode && a.N == b.N &&
		math.Float64bits(a.Min) == math.Float64bits(b.Min) &&
		math.Float64bits(a.Max) == math.Float64bits(b.Max)
}

func TestParseScaleErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		spec, want string
	}{
		{"", `unknown mode ""`},
		{"None", `unknown mode "None"`},
		{" none", `unknown mode " none"`},
		{"linear:1", `unknown mode "linear"`},
		{"none:", "none takes no argument"},
		{"none:1", "none takes no argument"},
		{"fixed", "want fixed:MIN,MAX"},
		{"fixed:", "want fixed:MIN,MAX"},
		{"fixed:1", "want fixed:MIN,MAX"},
		{"fixed:1,", `MAX "" is not a number`},
		{"fixed:,1", `MIN "" is not a number`},
		{"fixed:a,1", `MIN "a" is not a number`},
		{"fixed:1,b", `MAX "b" is not a number`},
		{"fixed: 1,2", `MIN " 1" is not a number`},
		{"fixed:1,2,3", `MAX "2,3" is not a number`},
		{"fixed:NaN,1", `MIN "NaN" is not finite`},
		{"fixed:0,inf", `MAX "inf" is not finite`},
		{"fixed:-Inf,0", `MIN "-Inf" is not finite`},
		{"fixed:1e999,2e999", `MIN "1e999" is out of range`},
		{"fixed:1,1", "MIN 1 must be less than MAX 1"},
		{"fixed:2,1", "MIN 2 must be less than MAX 1"},
		{"warmup", "want warmup:N"},
		{"warmup:", `N "" is not an integer`},
		{"warmup:1", "N is 1, must be ≥ 2"},
		{"warmup:0", "N is 0, must be ≥ 2"},
		{"warmup:-3", "N is -3, must be ≥ 2"},
		{"warmup:2.5", `N "2.5" is not an integer`},
		{"warmup:1e3", `N "1e3" is not an integer`},
		{"warmup:99999999999999999999", `N "99999999999999999999" is out of range`},
	} {
		got, err := ParseScale(tc.spec)
		if err == nil {
			t.Errorf("ParseScale(%q) = %+v, want an error", tc.spec, got)
			continue
		}
		if !errors.Is(err, ErrBadConfig) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseScale(%q): %v; want an ErrBadConfig saying %q", tc.spec, err, tc.want)
		}
		if q := `"` + tc.spec + `"`; tc.spec != "" && !strings.Contains(err.Error(), q) {
			t.Errorf("ParseScale(%q): %v; want the spec quoted", tc.spec, err)
		}
	}
}

func FuzzParseScale(f *testing.F) {
	for _, s := range []string{
		"none", "fixed:-1,1", "fixed:0,100", "fixed:-0,1e-300", "fixed:0x1p-2,1",
		"warmup:2", "warmup:+05", "fixed:1,1", "fixed:NaN,1", "warmup:1", "", "none:", "fixed:1,2,3",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		s, err := ParseScale(spec)
		if err != nil {
			if !errors.Is(err, ErrBadConfig) {
				t.Fatalf("ParseScale(%q): %v does not wrap ErrBadConfig", spec, err)
			}
			return
		}
		if err := s.Validate(); err != nil {
			t.Fatalf("ParseScale(%q) accepted %+v, which does not validate: %v", spec, s, err)
		}
		text := s.String()
		s2, err := ParseScale(text)
		if err != nil {
			t.Fatalf("ParseScale(%q) = %+v, whose String %q does not parse: %v", spec, s, text, err)
		}
		if !sameSpec(s, s2) {
			t.Fatalf("ParseScale(%q) = %+v; String %q parses to %+v", spec, s, text, s2)
		}
		if _, err := NewScaler(s); err != nil {
			t.Fatalf("NewScaler(%+v) from %q: %v", s, spec, err)
		}
	})
}

func TestScaleSpecValidate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		spec ScaleSpec
		want string // "" for valid
	}{
		{ScaleSpec{}, ""},
		{ScaleSpec{Min: math.NaN(), N: -1}, ""}, // fields none ignores
		{ScaleSpec{Mode: ScaleFixed, Min: -3, Max: 4}, ""},
		{ScaleSpec{Mode: ScaleFixed, Min: math.NaN(), Max: 4}, "Min is NaN"},
		{ScaleSpec{Mode: ScaleFixed, Min: 0, Max: math.Inf(1)}, "Max is +Inf"},
		{ScaleSpec{Mode: ScaleFixed, Min: 4, Max: 4}, "Min 4 must be less than Max 4"},
		{ScaleSpec{Mode: ScaleFixed, Min: 5, Max: 4}, "Min 5 must be less than Max 4"},
		{ScaleSpec{Mode: ScaleWarmup, N: 2}, ""},
		{ScaleSpec{Mode: ScaleWarmup, N: 1}, "N is 1"},
		{ScaleSpec{Mode: ScaleWarmup}, "N is 0"},
		{ScaleSpec{Mode: 7}, "unknown scale Mode 7"},
	} {
		err := tc.spec.Validate()
		if tc.want == "" {
			if err != nil {
				t.Errorf("%+v: %v", tc.spec, err)
			}
			continue
		}
		if !errors.Is(err, ErrBadConfig) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: Validate = %v, want an ErrBadConfig saying %q", tc.spec, err, tc.want)
		}
		if s, err := NewScaler(tc.spec); s != nil || err == nil {
			t.Errorf("NewScaler(%+v) = %v, %v; want an error", tc.spec, s, err)
		}
	}
}

func TestScalerNone(t *testing.T) {
	t.Parallel()
	s := mustScaler(t, ScaleSpec{})
	if !s.Frozen() {
		t.Fatal("ScaleNone is not frozen")
	}
	for _, v := range []float64{0, 1, -1, 3.5, -1e300, 1e-300} {
		if got := s.Scale(v); got != v {
			t.Errorf("Scale(%v) = %v, want the identity", v, got)
		}
		if got := s.Unscale(v); got != v {
			t.Errorf("Unscale(%v) = %v, want the identity", v, got)
		}
	}
	if lo, hi, frozen := s.Range(); lo != -1 || hi != 1 || !frozen {
		t.Errorf("Range = %v, %v, %v; want -1, 1, true", lo, hi, frozen)
	}
}

func TestScalerFixed(t *testing.T) {
	t.Parallel()
	s := mustScaler(t, ScaleSpec{Mode: ScaleFixed, Min: 0, Max: 10})
	for _, c := range []struct{ v, u float64 }{
		{0, -1}, {10, 1}, {5, 0}, {7.5, 0.5},
		{15, 2}, {-10, -3}, {1000, 199}, // outside the range: linear, not clipped
	} {
		if got := s.Scale(c.v); got != c.u {
			t.Errorf("Scale(%v) = %v, want %v", c.v, got, c.u)
		}
		if got := s.Unscale(c.u); got != c.v {
			t.Errorf("Unscale(%v) = %v, want %v", c.u, got, c.v)
		}
	}
	// Observe does nothing to a fixed range.
	if frozen, err := s.Observe(1e6); !frozen || err != nil {
		t.Fatalf("Observe = %v, %v", frozen, err)
	}
	if lo, hi, frozen := s.Range(); lo != 0 || hi != 10 || !frozen || s.Seen() != 0 {
		t.Fatalf("Range = %v, %v, %v, Seen %d; want 0, 10, true, 0", lo, hi, frozen, s.Seen())
	}
}

// TestScaleRoundTrip checks Unscale(Scale(v)) = v within veryclose over
// seeded random ranges of several magnitudes, with values inside and outside
// them, and that the range's ends go to ∓1.
func TestScaleRoundTrip(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(3, 4))
	for _, mag := range []float64{1e-6, 1, 1e3, 1e9} {
		for range 50 {
			lo := (rng.Float64() - 0.5) * mag * 10
			hi := lo + rng.Float64()*mag + mag*1e-3
			s := mustScaler(t, ScaleSpec{Mode: ScaleFixed, Min: lo, Max: hi})
			ref := max(math.Abs(lo), math.Abs(hi))
			if u := s.Scale(lo); math.Abs(u+1) > veryclose*ref/(hi-lo) {
				t.Errorf("[%v, %v]: Scale(Min) = %v, want -1", lo, hi, u)
			}
			if u := s.Scale(hi); math.Abs(u-1) > veryclose*ref/(hi-lo) {
				t.Errorf("[%v, %v]: Scale(Max) = %v, want 1", lo, hi, u)
			}
			for range 20 {
				v := lo + (rng.Float64()*5-2)*(hi-lo) // in [lo−2w, hi+2w]
				got := s.Unscale(s.Scale(v))
				if tol := veryclose * max(1, ref, math.Abs(v)); math.Abs(got-v) > tol {
					t.Errorf("[%v, %v]: Unscale(Scale(%v)) = %v, off by %v > %v", lo, hi, v, got, got-v, tol)
				}
			}
		}
	}
	// The widest finite range stays finite.
	s := mustScaler(t, ScaleSpec{Mode: ScaleFixed, Min: -math.MaxFloat64, Max: math.MaxFloat64})
	if u := s.Scale(math.MaxFloat64); u != 1 {
		t.Errorf("Scale(MaxFloat64) over the widest range = %v, want 1", u)
	}
	if v := s.Unscale(-1); v != -math.MaxFloat64 {
		t.Errorf("Unscale(-1) over the widest range = %v, want -MaxFloat64", v)
	}
}

func TestScalerWarmup(t *testing.T) {
	t.Parallel()
	s := mustScaler(t, ScaleSpec{Mode: ScaleWarmup, N: 4})
	if s.Frozen() {
		t.Fatal("warm-up scaler frozen before any value")
	}
	if lo, hi, frozen := s.Range(); lo != 0 || hi != 0 || frozen {
		t.Fatalf("initial Range = %v, %v, %v; want 0, 0, false", lo, hi, frozen)
	}
	for i, c := range []struct {
		v      float64
		lo, hi float64
	}{
		{3, 3, 3}, {-1, -1, 3}, {7, -1, 7}, {2, -1, 7},
	} {
		frozen, err := s.Observe(c.v)
		if err != nil {
			t.Fatal(err)
		}
		if want := i == 3; frozen != want || s.Frozen() != want {
			t.Fatalf("after %d values: Observe = %v, Frozen = %v; want %v", i+1, frozen, s.Frozen(), want)
		}
		if lo, hi, _ := s.Range(); lo != c.lo || hi != c.hi || s.Seen() != i+1 {
			t.Fatalf("after %d values: Range %v, %v, Seen %d; want %v, %v, %d", i+1, lo, hi, s.Seen(), c.lo, c.hi, i+1)
		}
		if i == 1 {
			// A NaN is refused and not counted.
			if _, err := s.Observe(math.NaN()); !errors.Is(err, ErrNonFinite) || s.Seen() != 2 {
				t.Fatalf("Observe(NaN) = %v with Seen %d; want ErrNonFinite and 2", err, s.Seen())
			}
		}
	}
	if u := s.Scale(-1); u != -1 {
		t.Errorf("Scale(-1) = %v, want -1", u)
	}
	if u := s.Scale(7); u != 1 {
		t.Errorf("Scale(7) = %v, want 1", u)
	}
	if u := s.Scale(11); u != 2 {
		t.Errorf("Scale(11) = %v, want 2 (outside, not clipped)", u)
	}
	// The frozen range no longer moves.
	if frozen, err := s.Observe(100); !frozen || err != nil {
		t.Fatalf("Observe after freeze = %v, %v", frozen, err)
	}
	if lo, hi, frozen := s.Range(); lo != -1 || hi != 7 || !frozen || s.Seen() != 4 {
		t.Fatalf("Range after freeze = %v, %v, %v, Seen %d; want -1, 7, true, 4", lo, hi, frozen, s.Seen())
	}
}

func TestScalerDegenerateRange(t *testing.T) {
	t.Parallel()
	s := mustScaler(t, ScaleSpec{Mode: ScaleWarmup, N: 3})
	for range 3 {
		if _, err := s.Observe(5); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct{ v, u float64 }{{5, 0}, {7, 2}, {4.5, -0.5}} {
		if got := s.Scale(c.v); got != c.u {
			t.Errorf("Scale(%v) over [5, 5] = %v, want %v", c.v, got, c.u)
		}
		if got := s.Unscale(c.u); got != c.v {
			t.Errorf("Unscale(%v) over [5, 5] = %v, want %v", c.u, got, c.v)
		}
	}
}

func TestScalerPanicsBeforeFrozen(t *testing.T) {
	t.Parallel()
	s := mustScaler(t, ScaleSpec{Mode: ScaleWarmup, N: 2})
	s.Observe(1)
	for name, f := range map[string]func(float64) float64{"Scale": s.Scale, "Unscale": s.Unscale} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s before the range is frozen did not panic", name)
				}
			}()
			f(1)
		}()
	}
}

// TestScalerStateRoundTrip saves the state of each kind of scaler, passes it
// through JSON into a fresh Scaler, and checks that both go on identically.
func TestScalerStateRoundTrip(t *testing.T) {
	t.Parallel()
	stream := []float64{4, -2, 9, 0.5, 3, -7, 12, 1}
	for _, tc := range []struct {
		name string
		spec ScaleSpec
		cut  int
	}{
		{"none", ScaleSpec{}, 3},
		{"fixed", ScaleSpec{Mode: ScaleFixed, Min: -5, Max: 5}, 3},
		{"warmup before the first value", ScaleSpec{Mode: ScaleWarmup, N: 4}, 0},
		{"warmup midway", ScaleSpec{Mode: ScaleWarmup, N: 4}, 2},
		{"warmup one short", ScaleSpec{Mode: ScaleWarmup, N: 4}, 3},
		{"warmup frozen", ScaleSpec{Mode: ScaleWarmup, N: 4}, 6},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s1 := mustScaler(t, tc.spec)
			for _, v := range stream[:tc.cut] {
				s1.Observe(v)
			}
			text, err := json.Marshal(s1.State())
			if err != nil {
				t.Fatal(err)
			}
			var st ScalerState
			if err := json.Unmarshal(text, &st); err != nil {
				t.Fatal(err)
			}
			s2 := mustScaler(t, tc.spec)
			if err := s2.SetState(st); err != nil {
				t.Fatal(err)
			}
			if s1.State() != s2.State() {
				t.Fatalf("restored state %+v, want %+v", s2.State(), s1.State())
			}
			for _, v := range stream[tc.cut:] {
				f1, _ := s1.Observe(v)
				f2, _ := s2.Observe(v)
				if f1 != f2 {
					t.Fatalf("Observe(%v): original frozen %v, restored %v", v, f1, f2)
				}
				if f1 && (s1.Scale(v) != s2.Scale(v) || s1.Unscale(v) != s2.Unscale(v)) {
					t.Fatalf("value %v: original scales to %v, restored to %v", v, s1.Scale(v), s2.Scale(v))
				}
			}
			if !s1.Frozen() {
				t.Fatal("the stream did not freeze the range; the test checks too little")
			}
		})
	}
}

func TestScalerSetStateErrors(t *testing.T) {
	t.Parallel()
	warm := ScaleSpec{Mode: ScaleWarmup, N: 4}
	for _, tc := range []struct {
		name string
		spec ScaleSpec
		st   ScalerState
		want string
	}{
		{"other N", warm, ScalerState{Spec: ScaleSpec{Mode: ScaleWarmup, N: 5}}, "state is for scale warmup:5; the scaler has warmup:4"},
		{"other mode", warm, ScalerState{Spec: ScaleSpec{}}, "state is for scale none"},
		{"other range", ScaleSpec{Mode: ScaleFixed, Min: 0, Max: 1}, ScalerState{Spec: ScaleSpec{Mode: ScaleFixed, Min: 0, Max: 2}}, "fixed:0,2"},
		{"Seen with fixed", ScaleSpec{Mode: ScaleFixed, Min: 0, Max: 1}, ScalerState{Spec: ScaleSpec{Mode: ScaleFixed, Min: 0, Max: 1}, Seen: 2}, "Seen is 2"},
		{"Seen negative", warm, ScalerState{Spec: warm, Seen: -1}, "Seen is -1, must be in [0, 4]"},
		{"Seen beyond N", warm, ScalerState{Spec: warm, Seen: 5, Min: 0, Max: 1}, "Seen is 5, must be in [0, 4]"},
		{"NaN range", warm, ScalerState{Spec: warm, Seen: 2, Min: math.NaN(), Max: 1}, "not a finite range"},
		{"inverted range", warm, ScalerState{Spec: warm, Seen: 2, Min: 3, Max: 1}, "not a finite range"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := mustScaler(t, tc.spec)
			s.Observe(0.5)
			before := s.State()
			err := s.SetState(tc.st)
			if !errors.Is(err, ErrBadState) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("SetState = %v, want an ErrBadState saying %q", err, tc.want)
			}
			if s.State() != before {
				t.Fatalf("failed SetState changed the state from %+v to %+v", before, s.State())
			}
		})
	}
	// Fields a mode ignores do not make a state foreign.
	s := mustScaler(t, ScaleSpec{Mode: ScaleWarmup, N: 3, Min: 9})
	if err := s.SetState(ScalerState{Spec: ScaleSpec{Mode: ScaleWarmup, N: 3, Max: 4}}); err != nil {
		t.Fatalf("SetState with ignored fields differing: %v", err)
	}
}

type point struct {
	t int
	v float64
}

func TestWarmupReplaysEveryPoint(t *testing.T) {
	t.Parallel()
	s := mustScaler(t, ScaleSpec{Mode: ScaleWarmup, N: 3})
	w := NewWarmup[point](s)
	if w.Scaler() != s {
		t.Fatal("Scaler() is not the scaler given")
	}
	steps := []struct {
		p    point
		want []point // nil: nothing to process yet
		err  error
	}{
		{point{1, 10}, nil, nil},
		{point{2, math.Inf(1)}, nil, ErrNonFinite}, // refused, not held back
		{point{3, 30}, nil, nil},
		{point{4, 20}, []point{{1, 10}, {3, 30}, {4, 20}}, nil},
		{point{5, 50}, []point{{5, 50}}, nil},
		{point{6, math.NaN()}, nil, ErrNonFinite},
		{point{7, 0}, []point{{7, 0}}, nil},
	}
	for _, st := range steps {
		got, err := w.Add(st.p, st.p.v)
		if !errors.Is(err, st.err) || (err == nil) != (st.err == nil) {
			t.Fatalf("Add(%v) error %v, want %v", st.p, err, st.err)
		}
		if !slices.Equal(got, st.want) {
			t.Fatalf("Add(%v) = %v, want %v", st.p, got, st.want)
		}
	}
	if lo, hi, frozen := s.Range(); lo != 10 || hi != 30 || !frozen {
		t.Fatalf("Range = %v, %v, %v; want 10, 30, true", lo, hi, frozen)
	}
	if len(w.Pending()) != 0 {
		t.Fatalf("Pending = %v after the freeze", w.Pending())
	}
}

func TestWarmupPassesThroughWhenFrozen(t *testing.T) {
	t.Parallel()
	for _, spec := range []ScaleSpec{{}, {Mode: ScaleFixed, Min: 0, Max: 1}} {
		w := NewWarmup[point](mustScaler(t, spec))
		for i := range 3 {
			p := point{i, float64(i)}
			got, err := w.Add(p, p.v)
			if err != nil || !slices.Equal(got, []point{p}) {
				t.Fatalf("%s: Add(%v) = %v, %v; want [%v]", spec, p, got, err, p)
			}
		}
	}
}

// TestWarmupCheckpoint saves a Warmup midway through its warm-up, restores
// it into a fresh Scaler and Warmup, and checks that both hand back the same
// points and scale them alike.
func TestWarmupCheckpoint(t *testing.T) {
	t.Parallel()
	spec := ScaleSpec{Mode: ScaleWarmup, N: 5}
	pts := []point{{1, 2}, {2, -4}, {3, 8}, {4, 1}, {5, 6}, {6, 3}, {7, -1}}
	const cut = 3
	s1 := mustScaler(t, spec)
	w1 := NewWarmup[point](s1)
	for _, p := range pts[:cut] {
		if got, err := w1.Add(p, p.v); got != nil || err != nil {
			t.Fatalf("Add(%v) = %v, %v during warm-up", p, got, err)
		}
	}
	st, pending := s1.State(), slices.Clone(w1.Pending())
	if !slices.Equal(pending, pts[:cut]) {
		t.Fatalf("Pending = %v, want %v", pending, pts[:cut])
	}

	s2 := mustScaler(t, spec)
	w2 := NewWarmup[point](s2)
	if err := w2.SetPending(pending); !errors.Is(err, ErrBadState) {
		t.Fatalf("SetPending of %d points into a scaler that has seen none: %v, want ErrBadState", len(pending), err)
	}
	if err := s2.SetState(st); err != nil {
		t.Fatal(err)
	}
	if err := w2.SetPending(pending[:1]); !errors.Is(err, ErrBadState) {
		t.Fatalf("SetPending of 1 point with Seen %d: %v, want ErrBadState", s2.Seen(), err)
	}
	if err := w2.SetPending(pending); err != nil {
		t.Fatal(err)
	}
	pending[0] = point{99, 99} // SetPending copied
	for _, p := range pts[cut:] {
		g1, err1 := w1.Add(p, p.v)
		g2, err2 := w2.Add(p, p.v)
		if err1 != nil || err2 != nil || !slices.Equal(g1, g2) {
			t.Fatalf("Add(%v): original %v %v, restored %v %v", p, g1, err1, g2, err2)
		}
		for _, q := range g1 {
			if s1.Scale(q.v) != s2.Scale(q.v) {
				t.Fatalf("point %v: original scales to %v, restored to %v", q, s1.Scale(q.v), s2.Scale(q.v))
			}
		}
	}
	if !s2.Frozen() {
		t.Fatal("restored scaler never froze")
	}
	if err := w2.SetPending([]point{{1, 1}}); !errors.Is(err, ErrBadState) {
		t.Fatalf("SetPending of a point once frozen: %v, want ErrBadState", err)
	}
}

// TestPipelineLosesNoPoint runs the per-point path a series takes (warm-up,
// scaling, embedding) and checks that every point, warm-up ones included,
// reaches the embedding in order, scaled by the frozen range.
func TestPipelineLosesNoPoint(t *testing.T) {
	t.Parallel()
	const n = 6
	s := mustScaler(t, ScaleSpec{Mode: ScaleWarmup, N: n})
	w := NewWarmup[point](s)
	d := mustDelay(t, 2, 1)
	train, input := make([]float64, 2), make([]float64, 2)
	var got []float64
	for i := range 20 {
		v := math.Sin(float64(i))
		ready, err := w.Add(point{i, v}, v)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range ready {
			got = append(got, s.Unscale(s.Scale(p.v)))
			d.Step(s.Scale(p.v), train, input)
		}
	}
	if d.Count() != 20 || len(got) != 20 {
		t.Fatalf("embedding saw %d points, want 20", d.Count())
	}
	for i, v := range got {
		if want := math.Sin(float64(i)); math.Abs(v-want) > veryclose {
			t.Fatalf("point %d: %v after scaling round trip, want %v", i, v, want)
		}
	}
}

func TestPerPointZeroAllocs(t *testing.T) {
	s := mustScaler(t, ScaleSpec{Mode: ScaleWarmup, N: 8})
	w := NewWarmup[point](s)
	d := mustDelay(t, 5, 1)
	train, input := make([]float64, 5), make([]float64, 5)
	i := 0
	var sink float64
	step := func() {
		i++
		v := float64(i % 17)
		ready, _ := w.Add(point{i, v}, v)
		for _, p := range ready {
			if trained, ok := d.Step(s.Scale(p.v), train, input); trained && ok {
				sink += s.Unscale(input[0])
			}
		}
	}
	for range 20 {
		step()
	}
	if !s.Frozen() || !d.Ready() {
		t.Fatal("not warm after 20 points")
	}
	if allocs := testing.AllocsPerRun(1000, step); allocs != 0 {
		t.Fatalf("per-point path allocates %v times per point, want 0", allocs)
	}
	_ = sink
}

func BenchmarkPerPoint(b *testing.B) {
	s := mustScaler(b, ScaleSpec{Mode: ScaleFixed, Min: -1, Max: 1})
	w := NewWarmup[point](s)
	d := mustDelay(b, 5, 1)
	train, input := make([]float64, 5), make([]float64, 5)
	i := 0
	b.ReportAllocs()
	for b.Loop() {
		i++
		v := float64(i % 17)
		ready, _ := w.Add(point{i, v}, v)
		for _, p := range ready {
			d.Step(s.Scale(p.v), train, input)
		}
	}
}
