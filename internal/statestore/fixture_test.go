package statestore

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/forecastd/forecastd/anomaly"
	"github.com/forecastd/forecastd/lab/dataset"
	"github.com/forecastd/forecastd/pipeline"
)

// TestV1Fixtures: the files of testdata/v1, written by forecastd before
// the model registry (see testdata/v1/gen_test.go.txt for how), are read
// by the current code; a series restored from each goes on exactly as an
// uninterrupted series of the current code (forecasts equal bit for bit
// for 200 more points); and the current code, given the same points,
// writes the same bytes, so the kinds' state codecs write version 1
// unchanged.
func TestV1Fixtures(t *testing.T) {
	cfgs := configs()
	files, err := filepath.Glob("testdata/v1/*.state")
	if err != nil {
		t.Fatal(err)
	}
	// Every configuration that existed when the fixtures were written has
	// one; those added since (a horizon, _h6) have none.
	var v1 int
	for name := range cfgs {
		if !strings.Contains(name, "_h") {
			v1++
		}
	}
	if len(files) != v1 {
		t.Fatalf("%d fixtures, want one per configuration of version 1 (%d)", len(files), v1)
	}
	v := dataset.MustLoad("santafe_laser_a").Values
	t0 := time.Date(2024, 1, 2, 3, 4, 5, 6, time.UTC)
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".state")
		cfg, ok := cfgs[name]
		if !ok {
			t.Errorf("fixture %s: no configuration of that name", file)
			continue
		}
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("testdata/v1", name+".state"))
			if err != nil {
				t.Fatal(err)
			}
			key := "fixture/" + name
			st, err := Decode(data)
			if err != nil {
				t.Fatal(err)
			}
			if st.Model == nil || st.Model.Kind != cfg.Kind.String() {
				t.Fatalf("decoded model %+v, want a %s", st.Model, cfg.Kind)
			}
			live := series(t, key, cfg, 300)
			// The anomaly section (18, optional) is newer than the
			// fixtures: without it the bytes are version 1's.
			lst := export(t, live)
			lst.Anomaly, lst.Stats.Anomalies = anomaly.State{}, 0
			if got := Encode(lst); !bytes.Equal(got, data) {
				t.Errorf("the current code writes %d bytes for the fixture's state, differing from the fixture's %d", len(got), len(data))
			}
			r, err := pipeline.Restore(key, cfg, st)
			if err != nil {
				t.Fatal(err)
			}
			for i := 300; i < 500; i++ {
				p := pipeline.Point{Time: t0.Add(time.Duration(i) * time.Second), Value: v[i%len(v)]}
				fa, err := live.Push(p)
				if err != nil {
					t.Fatal(err)
				}
				fb, err := r.Push(p)
				if err != nil {
					t.Fatal(err)
				}
				if fa.HasForecast != fb.HasForecast || fa.Forecast.Value != fb.Forecast.Value || !same(fa.Forecast.Lower, fb.Forecast.Lower) {
					t.Fatalf("point %d: forecast %+v, restored %+v", i, fa, fb)
				}
			}
		})
	}
}

func same(a, b float64) bool { return a == b || (a != a && b != b) }
