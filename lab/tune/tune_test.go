package tune

import "testing"

// TestTuneDefaultGrid: the default values around v are 1 and 3 times the
// powers of ten from v/below to v·above, and v.
func TestTuneDefaultGrid(t *testing.T) {
	for _, tc := range []struct {
		v, below, above float64
		want            []float64
	}{
		{3, 10, 10, []float64{0.3, 1, 3, 10, 30}},
		{0.01, 10, 10, []float64{0.001, 0.003, 0.01, 0.03, 0.1}},
		{0.5, 10, 3, []float64{0.1, 0.3, 0.5, 1}},
		{0.1, 10, 3, []float64{0.01, 0.03, 0.1, 0.3}},
		{0, 10, 3, []float64{0}},
	} {
		got := ladder(tc.v, tc.below, tc.above)
		if len(got) != len(tc.want) {
			t.Errorf("ladder(%v, %v, %v) = %v, want %v", tc.v, tc.below, tc.above, got, tc.want)
			continue
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Errorf("ladder(%v, %v, %v) = %v, want %v", tc.v, tc.below, tc.above, got, tc.want)
				break
			}
		}
	}
}
