// Command onestep replays a recorded series through AOSVR over a sliding
// forgetting window, one point at a time, as forecastd does for every
// series: scale into [−1, 1], delay-embed, learn the sample whose target
// just arrived (forgetting the oldest when the window is full), forecast
// the next point. It prints the one-step errors next to persistence's
// (x̂(t+1) = x(t)) and the cost of an update.
//
//	go run ./examples/onestep [-window 200] [-dim 5] [FILE.csv]
//
// FILE.csv has a header "t,value" (default: the Santa Fe laser series in
// testdata/series). This example stands in for `forecastd backtest`.
package main

import (
	"encoding/csv"
	"flag"
	"fmt"
	"os"
	"slices"
	"strconv"
	"time"

	"github.com/forecastd/forecastd/embedding"
	"github.com/forecastd/forecastd/svr"
	"github.com/forecastd/forecastd/window"
)

func main() {
	w := flag.Int("window", 200, "forgetting window W in samples (0: no forgetting)")
	dim := flag.Int("dim", 5, "embedding dimension B")
	flag.Parse()
	path := "testdata/series/santafe_laser_a.csv"
	if flag.NArg() > 0 {
		path = flag.Arg(0)
	}
	if err := run(path, *w, *dim); err != nil {
		fmt.Fprintln(os.Stderr, "onestep:", err)
		os.Exit(1)
	}
}

func run(path string, w, dim int) error {
	values, err := readValues(path)
	if err != nil {
		return err
	}
	if len(values) < 2*dim+2 {
		return fmt.Errorf("%s: %d values are too few", path, len(values))
	}
	lo, hi := slices.Min(values), slices.Max(values)
	if lo == hi {
		hi = lo + 1
	}
	scaler, err := embedding.NewScaler(embedding.ScaleSpec{Mode: embedding.ScaleFixed, Min: lo, Max: hi})
	if err != nil {
		return err
	}
	delay, err := embedding.NewDelay(dim, 1)
	if err != nil {
		return err
	}
	model, err := svr.NewAOSVR(svr.AOSVRConfig{Dim: dim, C: 10, Epsilon: 0.1, Capacity: w})
	if err != nil {
		return err
	}
	win, err := window.New(model, w, dim)
	if err != nil {
		return err
	}
	train, input := make([]float64, dim), make([]float64, dim)
	var forecast float64
	haveForecast := false
	var se, sePersist float64
	scored := 0
	var updates time.Duration
	for i, v := range values {
		u := scaler.Scale(v)
		if haveForecast && i >= len(values)/2 { // score the second half
			d := scaler.Unscale(forecast) - v
			p := values[i-1] - v
			se += d * d
			sePersist += p * p
			scored++
		}
		trained, ready := delay.Step(u, train, input)
		if trained {
			t0 := time.Now()
			if err := win.Learn(train, u); err != nil {
				return fmt.Errorf("point %d: %w", i, err)
			}
			updates += time.Since(t0)
		}
		haveForecast = false
		if ready {
			if forecast, err = model.Predict(input); err != nil {
				return err
			}
			haveForecast = true
		}
	}
	s, e, r := model.Sizes()
	fmt.Printf("%s: %d points, AOSVR W=%d B=%d (RBF γ=1, C=10, ε=0.1)\n", path, len(values), w, dim)
	fmt.Printf("one-step MSE on the second half: AOSVR %.4g, persistence %.4g (ratio %.3f)\n",
		se/float64(scored), sePersist/float64(scored), se/sePersist)
	fmt.Printf("model: %d samples, |S|=%d |E|=%d |R|=%d, %d bytes of state, %.1f µs per update\n",
		model.Len(), s, e, r, model.StateBytes(), float64(updates.Microseconds())/float64(len(values)-dim))
	return nil
}

func readValues(path string) ([]float64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	col := slices.Index(rows[0], "value")
	if col < 0 {
		return nil, fmt.Errorf("%s: no value column in header %v", path, rows[0])
	}
	var vs []float64
	for i, r := range rows[1:] {
		v, err := strconv.ParseFloat(r[col], 64)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: column value: %w", path, i+2, err)
		}
		vs = append(vs, v)
	}
	return vs, nil
}
