package main

import (
	"testing"

	"github.com/forecastd/forecastd/internal/config"
)

// TestLegacyTagNamesKey: [output.influxdb] legacy_tag_names reaches the
// InfluxDB sink, false unless set.
func TestLegacyTagNamesKey(t *testing.T) {
	for _, tc := range []struct {
		line string
		want bool
	}{{"", false}, {"legacy_tag_names = true", true}, {"legacy_tag_names = false", false}} {
		cfg, err := config.Load(writeConfig(t, `
[input]
subjects = ["a.>"]
[output.influxdb]
url = "http://127.0.0.1:8086"
bucket = "forecastd"
`+tc.line+"\n"), config.DaemonChecks)
		if err != nil {
			t.Fatalf("%q: %v", tc.line, err)
		}
		if got := cfg.Output.Influx().LegacyTagNames; got != tc.want {
			t.Errorf("%q: LegacyTagNames %v, want %v", tc.line, got, tc.want)
		}
	}
}
