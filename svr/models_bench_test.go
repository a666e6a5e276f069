package svr_test

import (
	"fmt"
	"testing"

	"github.com/forecastd/forecastd/lab/dataset"
	"github.com/forecastd/forecastd/lab/mackeyglass"
	"github.com/forecastd/forecastd/svr"
	"github.com/forecastd/forecastd/window"
)

// oneStepSeries are the series of the comparison: Mackey-Glass τ = 17
// (1500 points, as in the AOSVR paper) and every series in testdata/series.
func oneStepSeries() map[string][]float64 {
	m := map[string][]float64{"mackey_glass": mackeyglass.Generate(1500, mackeyglass.Config{})}
	for _, name := range dataset.Names {
		m[name] = dataset.MustLoad(name).Values
	}
	return m
}

// stepper is one model under comparison: step forecasts x(t+1) from X(t)
// after learning (X(t−1), x(t)).
type stepper struct {
	learn func(x []float64, y float64) error
	model interface {
		Predict([]float64) (float64, error)
		StateBytes() int
	}
}

func newStepper(kind string) (stepper, error) {
	const dim = 5
	switch kind {
	case "aosvr-W100", "aosvr-W200", "aosvr-W500":
		var w int
		fmt.Sscanf(kind, "aosvr-W%d", &w)
		m, err := svr.NewAOSVR(svr.AOSVRConfig{Dim: dim, C: 10, Epsilon: 0.1, Capacity: w})
		if err != nil {
			return stepper{}, err
		}
		win, err := window.New(m, w, dim)
		if err != nil {
			return stepper{}, err
		}
		return stepper{learn: win.Learn, model: m}, nil
	case "sogsvr":
		m, err := svr.NewSOGSVR(svr.SOGSVRConfig{Dim: dim})
		return stepper{learn: m.Learn, model: m}, err
	case "norma":
		m, err := svr.NewNORMA(svr.NORMAConfig{Dim: dim})
		return stepper{learn: m.Learn, model: m}, err
	}
	return stepper{}, fmt.Errorf("unknown model %q", kind)
}

var compareModels = []string{"aosvr-W100", "aosvr-W200", "aosvr-W500", "sogsvr", "norma"}

// BenchmarkModels compares the three regressors on every series with
// their defaults (AOSVR: RBF γ=1, C=10, ε=0.1 over windows of 100, 200 and
// 500): one-step MSE on the second half in scaled units (series scaled
// into [−1, 1] by min and max, B = 5), the persistence forecast's MSE on
// the same points, and, once warm, the time and allocations of a step
// (forecast, then learn) and the bytes of model state.
//
//	go test -run '^$' -bench Models -benchtime 2000x ./svr
func BenchmarkModels(b *testing.B) {
	series := oneStepSeries()
	names := []string{"mackey_glass", "santafe_laser_a", "sensor_temperature_15min", "market_price_daily"}
	for _, name := range names {
		xs, ys := dataset.Embed(dataset.Scaled(series[name]), 5)
		for _, kind := range compareModels {
			b.Run(name+"/"+kind, func(b *testing.B) {
				st, err := newStepper(kind)
				if err != nil {
					b.Fatal(err)
				}
				var se, sp float64
				scored := 0
				for i := range xs {
					p, err := st.model.Predict(xs[i])
					if err != nil {
						b.Fatal(err)
					}
					if i >= len(xs)/2 {
						d, q := p-ys[i], xs[i][0]-ys[i]
						se += d * d
						sp += q * q
						scored++
					}
					if err := st.learn(xs[i], ys[i]); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; b.Loop(); i++ {
					k := i % len(xs)
					if _, err := st.model.Predict(xs[k]); err != nil {
						b.Fatal(err)
					}
					if err := st.learn(xs[k], ys[k]); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(se/float64(scored), "mse")
				b.ReportMetric(sp/float64(scored), "persistence-mse")
				b.ReportMetric(float64(st.model.StateBytes()), "state-bytes")
			})
		}
	}
}
