package pipeline

import (
	"encoding/binary"
	"math"
	"testing"
	"time"
)

// FuzzSeriesPush feeds a default series (target change, combined, seasonal
// lags in reach) any sequence of points a publisher could send — any
// float64 bits, any spacing, repeats and reversals — and checks after every
// point: no panic; a forecast is finite, its interval either absent (both
// bounds NaN) or finite and around the forecast; and the state exports
// and restores into a series that makes the same next forecast.
//
//	go test -run '^$' -fuzz FuzzSeriesPush ./pipeline
func FuzzSeriesPush(f *testing.F) {
	seed := func(vals ...float64) []byte {
		var b []byte
		for i, v := range vals {
			b = binary.LittleEndian.AppendUint16(b, uint16(1+i%3))
			b = binary.LittleEndian.AppendUint64(b, math.Float64bits(v))
		}
		return b
	}
	f.Add(seed(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12))
	f.Add(seed(0, 0, 0, 0, 0, 0, 0, 0, 1e300, -1e300, 0, 0, 0))
	f.Add(seed(math.MaxFloat64, -math.MaxFloat64, math.MaxFloat64, 5, 5, 5, 5, 5, 5, math.NaN(), 5, 5))
	f.Add(seed(1e-300, 2e-300, 1e-300, 0, 1e-300, 0, 3e-300, 0, 1e-300, 0))
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg := DefaultConfig()
		cfg.Seasons = []time.Duration{5 * time.Second, time.Hour}
		cfg.Window = 20
		s, err := New("fuzz", cfg)
		if err != nil {
			t.Fatal(err)
		}
		now := time.Unix(1.7e9, 0)
		for k := 0; len(data) >= 10 && k < 400; k++ {
			dt := int16(binary.LittleEndian.Uint16(data)) // negative: out of order
			v := math.Float64frombits(binary.LittleEndian.Uint64(data[2:]))
			data = data[10:]
			now = now.Add(time.Duration(dt) * time.Second)
			r, err := s.Push(Point{Time: now, Value: v})
			if err != nil {
				continue // refused (out of order, non-finite), and counted
			}
			if !r.HasForecast {
				continue
			}
			fc := r.Forecast
			if math.IsNaN(fc.Value) || math.IsInf(fc.Value, 0) {
				t.Fatalf("point %d (%v): forecast %v", k, v, fc.Value)
			}
			if fc.HasInterval() {
				if math.IsInf(fc.Lower, 0) || math.IsInf(fc.Upper, 0) || math.IsNaN(fc.Upper) || !(fc.Lower <= fc.Value && fc.Value <= fc.Upper) {
					t.Fatalf("point %d (%v): interval [%v, %v] around %v", k, v, fc.Lower, fc.Upper, fc.Value)
				}
			} else if !math.IsNaN(fc.Upper) {
				t.Fatalf("point %d: half an interval: %+v", k, fc)
			}
		}
		st, err := s.Export()
		if err != nil {
			t.Fatal(err)
		}
		r, err := Restore("fuzz", cfg, st)
		if err != nil {
			t.Fatalf("restoring an exported state: %v", err)
		}
		next := Point{Time: now.Add(time.Second), Value: 1}
		ra, _ := s.Push(next)
		rb, _ := r.Push(next)
		if ra.HasForecast != rb.HasForecast || ra.HasForecast && math.Float64bits(ra.Forecast.Value) != math.Float64bits(rb.Forecast.Value) {
			t.Fatalf("after restore: %+v, uninterrupted %+v", rb.Forecast, ra.Forecast)
		}
	})
}
