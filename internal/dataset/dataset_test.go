package dataset

import "testing"

func TestLoadAll(t *testing.T) {
	want := map[string]int{"santafe_laser_a": 1000, "sensor_temperature_15min": 5376, "market_price_daily": 1500}
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
