package main

import "testing"

// TestLegacyTagNamesKey: [output.influxdb] legacy_tag_names reaches the
// InfluxDB sink, false unless set.
func TestLegacyTagNamesKey(t *testing.T) {
	for _, tc := range []struct {
		line string
		want bool
	}{{"", false}, {"legacy_tag_names = true", true}, {"legacy_tag_names = false", false}} {
		cfg, err := LoadConfig(writeConfig(t, `
[input]
subjects = ["a.>"]
[output.influxdb]
url = "http://127.0.0.1:8086"
bucket = "forecastd"
`+tc.line+"\n"))
		if err != nil {
			t.Fatalf("%q: %v", tc.line, err)
		}
		if got := influxConfig(cfg.Output.InfluxDB).LegacyTagNames; got != tc.want {
			t.Errorf("%q: LegacyTagNames %v, want %v", tc.line, got, tc.want)
		}
	}
}
