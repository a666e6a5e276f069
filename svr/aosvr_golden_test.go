package svr

import (
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"testing"
)

// goldenRuns are sliding-window runs over random and degenerate data,
// for TestAOSVRGoldenBits: each kernel, tubes from none to wide, box
// bounds from tight to loose, inputs with constant trailing values (an
// RBF model's shorter rows), duplicates and quantized values.
var goldenRuns = []struct {
	name   string
	kernel Kernel
	dim, w int
	c, eps float64
	quant  float64 // values rounded to multiples of quant (0: not)
	tail   int     // trailing inputs held constant
}{
	{"rbf", RBF{Gamma: 0.5}, 4, 60, 3, 0.05, 0, 0},
	{"rbf-default-like", RBF{Gamma: 0.01}, 7, 100, 3, 0.6, 0, 2},
	{"rbf-eps0", RBF{Gamma: 1}, 3, 40, 10, 0, 0, 0},
	{"rbf-tight-box", RBF{Gamma: 2}, 5, 50, 0.05, 0.01, 0, 1},
	{"rbf-quantized", RBF{Gamma: 1}, 5, 80, 10, 0.1, 0.25, 0},
	{"poly", Poly{Gamma: 0.5, Coef0: 1, Degree: 3}, 4, 60, 3, 0.05, 0, 0},
	{"linear", Linear{}, 3, 40, 1, 0.1, 0.5, 0},
}

// goldenHash runs one of goldenRuns for steps and hashes, after every
// step, the model's exported state and its predictions at fixed probes.
func goldenHash(t *testing.T, i, steps int) uint64 {
	t.Helper()
	g := goldenRuns[i]
	m, err := NewAOSVR(AOSVRConfig{Dim: g.dim, Kernel: g.kernel, C: g.c, Epsilon: g.eps, Capacity: g.w})
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(uint64(i), 77))
	probes := make([][]float64, 4)
	for k := range probes {
		probes[k] = make([]float64, g.dim)
		for j := range probes[k] {
			probes[k][j] = r.NormFloat64()
		}
	}
	h := fnv.New64a()
	put := func(vs ...float64) {
		for _, v := range vs {
			fmt.Fprintf(h, "%x,", math.Float64bits(v))
		}
	}
	x := make([]float64, g.dim)
	for s := range steps {
		for j := range x[:g.dim-g.tail] {
			x[j] = r.NormFloat64()
			if g.quant > 0 {
				x[j] = math.Round(x[j]/g.quant) * g.quant
			}
		}
		for j := g.dim - g.tail; j < g.dim; j++ {
			x[j] = 0.5
		}
		y := math.Sin(2*x[0]) + 0.3*x[g.dim-1] + 0.2*r.NormFloat64()
		if g.quant > 0 {
			y = math.Round(y/g.quant) * g.quant
		}
		if s >= g.w {
			old, _ := m.Oldest()
			_, err = m.Replace(old, x, y)
		} else {
			_, err = m.Add(x, y)
		}
		if err != nil {
			t.Fatalf("%s step %d: %v", g.name, s, err)
		}
		st := m.Export()
		put(st.Bias)
		put(st.Theta...)
		put(st.H...)
		put(st.R...)
		fmt.Fprint(h, st.Margin)
		for _, p := range probes {
			v, err := m.Predict(p)
			if err != nil {
				t.Fatal(err)
			}
			put(v)
		}
	}
	return h.Sum64()
}

// goldenFMA records the hashes of goldenRuns, 400 steps each, as the
// scalar code before the vector loops computed them (commit 46d548d), on
// a CPU where math.Exp takes its FMA path (amd64 with AVX and FMA). The
// RBF runs' hashes hold only there: math.Exp's other paths round some
// results differently.
var goldenFMA = map[string]uint64{
	"rbf":              0xa98a9649f236f5be,
	"rbf-default-like": 0xfa8b881d7b464c50,
	"rbf-eps0":         0xcc12fb5754c265d,
	"rbf-tight-box":    0x5963246fb106da68,
	"rbf-quantized":    0x370bb0e6e8faaa8c,
	"poly":             0x71c4232d8d372949,
	"linear":           0xc6868b50c472839f,
}

// goldenExpProbe is an input whose exponential math.Exp's FMA path
// rounds to goldenExpFMA and its path without FMA one bit higher.
const (
	goldenExpProbe = -0.050439
	goldenExpFMA   = 0x3fee6d0d22155b93
)

// TestAOSVRGoldenBits: the model's states and predictions, after every
// step of runs over each kernel and degenerate data, are the bits the
// scalar code gave (goldenFMA). The vector loops (svr/internal/vec, the
// four-row distances, the skipped step bounds, refine's reordered sums)
// must change no bit. Set AOSVR_GOLDEN_PRINT=1 to print the hashes.
func TestAOSVRGoldenBits(t *testing.T) {
	fmaExp := math.Float64bits(math.Exp(goldenExpProbe)) == goldenExpFMA
	for i, g := range goldenRuns {
		got := goldenHash(t, i, 400)
		if os.Getenv("AOSVR_GOLDEN_PRINT") != "" {
			fmt.Fprintf(io.Writer(os.Stdout), "\t%q: %#x,\n", g.name, got)
			continue
		}
		_, isRBF := g.kernel.(RBF)
		if isRBF && !fmaExp {
			t.Logf("%s: math.Exp does not take its FMA path here; the recorded bits do not apply", g.name)
			continue
		}
		if want, ok := goldenFMA[g.name]; !ok || got != want {
			t.Errorf("%s: states hash to %#x, want %#x (the scalar code's)", g.name, got, want)
		}
	}
}
