package sources

import (
	"testing"
	"time"
)

// TestDecodeAllocs: Decode, through the format registry, decodes a known
// series' json and value payloads without allocating, and influx with no
// more than the line-protocol parser's own two allocations a payload (the
// contract of Decode).
func TestDecodeAllocs(t *testing.T) {
	recv := time.Unix(1_700_000_000, 0)
	for _, tc := range []struct {
		format  Format
		subject string
		payload string
		points  int
		max     float64
	}{
		{FormatJSON, "metrics.cpu", `{"time": 1700000000, "value": 42.5}`, 1, 0},
		{FormatJSON, "metrics.cpu", `{"time": "2023-11-14T22:13:20Z", "value": 1, "series": "a"}`, 1, 0},
		{FormatJSON, "metrics.cpu", `[{"value": 1, "series": "a"}, {"value": 2, "series": "b"}]`, 2, 0},
		{FormatValue, "sensors.t1", "42.125\n", 1, 0},
		{FormatInflux, "telegraf", "cpu,host=a,cpu=cpu-total usage_idle=97.5,usage_user=1.2 1700000000000000000\n", 2, 2},
	} {
		t.Run(tc.format.String(), func(t *testing.T) {
			d := mustDecoder(t, DecoderConfig{Format: tc.format})
			payload := []byte(tc.payload)
			dst := make([]KeyedPoint, 0, 4)
			if _, err := d.Decode(dst, tc.subject, payload, recv); err != nil {
				t.Fatal(err)
			}
			allocs := testing.AllocsPerRun(100, func() {
				var err error
				if dst, err = d.Decode(dst[:0], tc.subject, payload, recv); err != nil || len(dst) != tc.points {
					t.Fatalf("Decode = %v, %v", dst, err)
				}
			})
			if allocs > tc.max {
				t.Errorf("Decode of %q allocates %v times, want at most %v", tc.payload, allocs, tc.max)
			}
		})
	}
}
