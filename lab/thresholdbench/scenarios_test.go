package thresholdbench

import (
	"math"
	"slices"
	"testing"
	"time"
)

// TestScenariosAreGenerated: the committed scenario set is what
// Generate(3) makes (`forecastd thresholds --write testdata/thresholds`).
func TestScenariosAreGenerated(t *testing.T) {
	got, err := ReadDir("../../testdata/thresholds")
	if err != nil {
		t.Fatal(err)
	}
	want := Generate(3)
	slices.SortFunc(want, func(a, b Scenario) int {
		switch {
		case a.Name < b.Name:
			return -1
		case a.Name > b.Name:
			return 1
		}
		return 0
	})
	if len(got) != len(want) {
		t.Fatalf("%d files, want %d", len(got), len(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.Name != w.Name || g.Kind != w.Kind || !g.Start.Equal(w.Start) || g.Spacing != w.Spacing || g.Size != w.Size || !slices.Equal(g.Avail, w.Avail) {
			t.Errorf("%s differs from the generator's %s (%d and %d samples)", g.Name, w.Name, len(g.Avail), len(w.Avail))
		}
	}
}

// TestPredictLinearOnALine: on a disk emptying by 1 GB an hour, sampled
// every minute, predict_linear(avail[6h], 24h) < 0 turns true 24 h before
// the crossing, and with for: 1h fires an hour later, 23 h before, with
// the crossing as its ETA: a true alert, its ETA error 0.
func TestPredictLinearOnALine(t *testing.T) {
	s := Scenario{Name: "line", Kind: "linear", Start: time.Unix(0, 0).UTC(), Spacing: time.Minute, Size: 100}
	for i := range 60 * 60 {
		s.Avail = append(s.Avail, math.Max(0, 50-float64(i)/60))
	}
	m := PredictLinear(6*time.Hour, 24*time.Hour, time.Hour, 0)
	eps, err := m.Run(&s)
	if err != nil {
		t.Fatal(err)
	}
	tc, _ := s.Crossing()
	if len(eps) != 1 || tc.Sub(eps[0].Start) != 23*time.Hour || eps[0].ETA.Sub(tc).Abs() > time.Millisecond {
		t.Fatalf("alerts %+v, crossing %v: want one firing 23 h before, ETA the crossing", eps, tc)
	}
	row, err := Score(m, "t", []Scenario{s})
	if err != nil {
		t.Fatal(err)
	}
	if row.Detected != 1 || row.False != 0 || row.ETAErrors[0] > 1e-6 {
		t.Errorf("row %+v", row)
	}
}
