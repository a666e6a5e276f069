package dataset

import "testing"

func TestLoadAll(t *testing.T) {
	want := map[string]int{"santafe_laser_a": 1000, "sensor_temperature_15min": 5376, "market_price_daily": 1500, "sunspots_yearly": 309}
	for _, name := range Names {
		s, err := Load(name)
		if err != nil {
			t.Fatal(err)
		}
		if len(s.Values) != want[name] || len(s.Times) != want[name] {
			t.Errorf("%s: %d values, want %d", name, len(s.Values), want[name])
		}
	}
	s := MustLoad("santafe_laser_a")
	if s.Values[0] != 86 || s.Values[1] != 141 || s.Times[0] != 1 {
		t.Errorf("santafe starts %v %v at t=%v", s.Values[0], s.Values[1], s.Times[0])
	}
	if _, err := Load("nope"); err == nil {
		t.Error("missing series loaded")
	}
}

func TestScaledEmbed(t *testing.T) {
	s := Scaled([]float64{2, 4, 6, 3})
	if want := []float64{-1, 0, 1, -0.5}; !slicesEqual(s, want) {
		t.Fatalf("Scaled = %v, want %v", s, want)
	}
	xs, ys := Embed([]float64{1, 2, 3, 4, 5}, 3)
	if len(xs) != 2 || !slicesEqual(xs[0], []float64{3, 2, 1}) || !slicesEqual(xs[1], []float64{4, 3, 2}) || !slicesEqual(ys, []float64{4, 5}) {
		t.Fatalf("Embed = %v, %v", xs, ys)
	}
	if c := Scaled([]float64{7, 7}); c[0] != -1 || c[1] != -1 {
		t.Fatalf("constant series scales to %v", c)
	}
}

func slicesEqual(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
