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
	"strconv"
)

// Names lists the series in testdata/series.
var Names = []string{"santafe_laser_a", "sensor_temperature_15min", "market_price_daily"}

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
