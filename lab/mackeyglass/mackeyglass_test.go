package mackeyglass

import (
	"math"
	"testing"
)

func TestGenerateDeterministic(t *testing.T) {
	a := Generate(500, Config{})
	b := Generate(500, Config{})
	for i := range a {
		if math.Float64bits(a[i]) != math.Float64bits(b[i]) {
			t.Fatalf("sample %d: %v then %v", i, a[i], b[i])
		}
	}
}

func TestGenerateTransient(t *testing.T) {
	// Generate(n, Transient: T) is the tail of Generate(n+T, no transient).
	all := Generate(1100, Config{Transient: -1})
	tail := Generate(100, Config{})
	for i, v := range tail {
		if v != all[1000+i] {
			t.Fatalf("sample %d: %v, want %v", i, v, all[1000+i])
		}
	}
	if all[0] != 1.2 {
		t.Errorf("x(0) = %v, want the initial history 1.2", all[0])
	}
}

func TestGenerateAttractor(t *testing.T) {
	xs := Generate(2000, Config{})
	lo, hi := math.Inf(1), math.Inf(-1)
	var mean float64
	for i, v := range xs {
		if math.IsNaN(v) || v < 0.2 || v > 1.5 {
			t.Fatalf("sample %d = %v, outside the attractor's range [0.2, 1.5]", i, v)
		}
		lo, hi = min(lo, v), max(hi, v)
		mean += v
	}
	mean /= float64(len(xs))
	var sd float64
	for _, v := range xs {
		sd += (v - mean) * (v - mean)
	}
	sd = math.Sqrt(sd / float64(len(xs)))
	// The τ=17 attractor spans about 0.4 … 1.3 with standard deviation ≈ 0.23.
	if hi-lo < 0.7 || sd < 0.15 || sd > 0.3 {
		t.Errorf("range [%v, %v], sd %v: not the chaotic τ=17 attractor", lo, hi, sd)
	}
}

// TestIntegratorConverges checks the RK4 integration against the same
// integration with a 10 times smaller step: over a horizon where the
// trajectories have not yet separated (a non-chaotic small τ, and the first
// time units of the chaotic τ=17), the two agree closely, as a 4th-order
// method's O(dt⁴) error says.
func TestIntegratorConverges(t *testing.T) {
	for _, tc := range []struct {
		name string
		tau  float64
		n    int
		tol  float64
	}{
		{"tau=2", 2, 50, 1e-8},
		{"tau=17", 17, 150, 1e-8},
	} {
		t.Run(tc.name, func(t *testing.T) {
			coarse := Generate(tc.n, Config{Tau: tc.tau, Dt: 0.1, Transient: -1})
			fine := Generate(tc.n, Config{Tau: tc.tau, Dt: 0.01, Transient: -1})
			var worst float64
			for i := range coarse {
				worst = max(worst, math.Abs(coarse[i]-fine[i]))
			}
			t.Logf("max |x_dt=0.1 − x_dt=0.01| over %d time units: %.3g", tc.n, worst)
			if worst > tc.tol {
				t.Errorf("max difference %.3g > %g", worst, tc.tol)
			}
			if coarse[tc.n-1] == coarse[tc.n/2] {
				t.Errorf("series constant")
			}
		})
	}
}

func TestGeneratePanics(t *testing.T) {
	for name, cfg := range map[string]Config{
		"tau not multiple of dt": {Tau: 17.05},
		"1/dt not integral":      {Dt: 0.3},
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Error("no panic")
				}
			}()
			Generate(10, cfg)
		})
	}
}
