// Package dataset reads the series kept in the repository's
// testdata/series folder (copied from the project's shared data; see the
// README there for their provenance and licence), for tests and benchmarks.
package dataset

import (
	"encoding/csv"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
)

// Names lists the series in testdata/series.
var Names = []string{"santafe_laser_a", "sensor_temperature_15min", "market_price_daily", "sunspots_yearly"}

// Series is a loaded series: timestamps (the t column) and values.
type Series struct {
	Name   string
	Times  []float64
	Values []float64
}

// Dir returns the absolute path of the repository's testdata/series folder.
func Dir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "testdata", "series")
}

// Load reads the named series (without the .csv ending).
func Load(name string) (*Series, error) {
	path := filepath.Join(Dir(), name+".csv")
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := csv.NewReader(f)
	header, err := r.Read()
	if err != nil {
		return nil, fmt.Errorf("%s: header: %w", path, err)
	}
	if len(header) != 2 || header[0] != "t" || header[1] != "value" {
		return nil, fmt.Errorf("%s: header %v, want [t value]", path, header)
	}
	s := &Series{Name: name}
	for line := 2; ; line++ {
		rec, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, line, err)
		}
		t, err := strconv.ParseFloat(rec[0], 64)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: column t: %w", path, line, err)
		}
		v, err := strconv.ParseFloat(rec[1], 64)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: column value: %w", path, line, err)
		}
		s.Times = append(s.Times, t)
		s.Values = append(s.Values, v)
	}
	return s, nil
}

// MustLoad is Load for tests and benchmarks: it panics on error.
func MustLoad(name string) *Series {
	s, err := Load(name)
	if err != nil {
		panic(err)
	}
	return s
}

// Scaled returns v mapped into [−1, 1] by its min and max: the scaling of
// the AOSVR paper's experiments (section 5.2). A constant v maps to −1.
func Scaled(v []float64) []float64 {
	lo, hi := slices.Min(v), slices.Max(v)
	span := hi - lo
	if span == 0 {
		span = 1
	}
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = 2*(x-lo)/span - 1
	}
	return out
}

// Embed returns the delay vectors X(t) = [x(t), x(t−1), …, x(t−dim+1)] of
// v and their targets x(t+1), for t = dim−1 … len(v)−2: the one-step
// samples of the AOSVR paper's protocol with delay 1.
func Embed(v []float64, dim int) (xs [][]float64, ys []float64) {
	for t := dim - 1; t+1 < len(v); t++ {
		x := make([]float64, dim)
		for j := range x {
			x[j] = v[t-j]
		}
		xs, ys = append(xs, x), append(ys, v[t+1])
	}
	return xs, ys
}
