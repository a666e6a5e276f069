//go:build libsvm

package libsvm

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"
)

// fixtureTol is how closely the in-process LIBSVM must reproduce the
// fixtures of svr/testdata/libsvm (made by svm-train 3.24 with the same
// parameters and `go run ./svr/testdata/libsvm/mkfixtures.go`). Trained
// with the ε that svm-train really used (epsilon_libsvm, float32-rounded),
// the agreement is about 1e-14; with the nominal ε it is only about 1e-8.
const fixtureTol = 1e-10

// fixture is the part of a svr/testdata/libsvm/*.json file this test reads
// (the full loader is svr's libsvmFixture).
type fixture struct {
	Gamma, C, Epsilon, Tol float64
	EpsilonLIBSVM          float64 `json:"epsilon_libsvm"`
	Window                 int
	X                      [][]float64
	Y                      []float64
	TestX                  [][]float64 `json:"test_x"`
	States                 []struct {
		Lo, Hi, NSV int
		Rho         float64
		Pred        []float64
	}
}

func loadFixture(t testing.TB, name string) *fixture {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "testdata", "libsvm", name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var f fixture
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return &f
}

func TestTrainMatchesFixtures(t *testing.T) {
	for _, name := range []string{"santafe_w20_eps0.1", "santafe_w20_eps0.01", "santafe_w100_eps0.1", "santafe_w100_eps0.01"} {
		t.Run(name, func(t *testing.T) {
			f := loadFixture(t, name)
			var worst float64
			checked := 0
			for i, st := range f.States {
				// Every 7th state (both adds and removes), and the last.
				if i%7 != 0 && i != len(f.States)-1 {
					continue
				}
				checked++
				m, err := Train(f.X[st.Lo:st.Hi], f.Y[st.Lo:st.Hi], Params{Gamma: f.Gamma, C: f.C, Epsilon: f.EpsilonLIBSVM, Tol: f.Tol})
				if err != nil {
					t.Fatalf("state %d: %v", i, err)
				}
				if m.NSV != st.NSV {
					t.Errorf("state %d [%d, %d): nsv %d, fixture %d", i, st.Lo, st.Hi, m.NSV, st.NSV)
				}
				if d := math.Abs(m.Rho - st.Rho); d > fixtureTol {
					t.Errorf("state %d [%d, %d): rho %v, fixture %v", i, st.Lo, st.Hi, m.Rho, st.Rho)
				}
				for k, x := range f.TestX {
					p := m.Predict(x)
					d := math.Abs(p - st.Pred[k])
					worst = max(worst, d)
					if !(d <= fixtureTol) {
						t.Errorf("state %d [%d, %d): prediction %d = %v, fixture %v", i, st.Lo, st.Hi, k, p, st.Pred[k])
					}
				}
				m.Free()
				m.Free() // a second Free does nothing
			}
			t.Logf("%d states: max |Δpred| = %.3g", checked, worst)
		})
	}
}

func TestTrainErrors(t *testing.T) {
	if _, err := Train(nil, nil, Params{Gamma: 1, C: 1}); err == nil {
		t.Error("empty training set: no error")
	}
	if _, err := Train([][]float64{{1}}, []float64{1}, Params{Gamma: 1, C: -1}); err == nil {
		t.Error("C < 0: no error")
	}
}

// BenchmarkTrain times one LIBSVM retrain on a full window of the fixtures,
// the cost a batch SVR pays per sample on a sliding window.
func BenchmarkTrain(b *testing.B) {
	for _, name := range []string{"santafe_w20_eps0.1", "santafe_w100_eps0.1"} {
		f := loadFixture(b, name)
		st := f.States[len(f.States)-1]
		xs, ys := f.X[st.Lo:st.Hi], f.Y[st.Lo:st.Hi]
		p := Params{Gamma: f.Gamma, C: f.C, Epsilon: f.Epsilon, Tol: 1e-3}
		b.Run(fmt.Sprintf("W=%d", f.Window), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				m, err := Train(xs, ys, p)
				if err != nil {
					b.Fatal(err)
				}
				m.Free()
			}
		})
	}
}
