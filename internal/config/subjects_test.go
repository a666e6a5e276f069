package config

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/forecastd/forecastd/sinks"
	"github.com/forecastd/forecastd/sources"
)

// TestOutputSubjectsCountThreshold: the input refuses a point whose
// longest output subject, its threshold events'
// (forecast.threshold.<subject>), would exceed sinks.MaxSubjectLen. A
// subject of 3 983 bytes (max_key_len 8192) passed when the anomaly
// events' subject was counted, and its threshold events were refused by
// the sink (under JetStream: its points nak'd for ever).
func TestOutputSubjectsCountThreshold(t *testing.T) {
	var cfg Config
	cfg.Input.MaxKeyLen = 8192
	dc, err := cfg.Decoder()
	if err != nil {
		t.Fatal(err)
	}
	d, err := sources.NewDecoder(dc)
	if err != nil {
		t.Fatal(err)
	}
	recv := time.Now()
	for _, c := range []struct {
		n  int
		ok bool
	}{{sinks.MaxSubjectLen - len("forecast.threshold."), true}, {3983, false}, {sinks.MaxSubjectLen - len("forecast.anomaly."), false}} {
		subject := "m." + strings.Repeat("x", c.n-2)
		pts, err := d.Decode(nil, subject, []byte(`{"value":1}`), recv)
		if ok := len(pts) == 1; ok != c.ok || !c.ok && !errors.Is(err, sources.ErrSubjectTooLong) {
			t.Errorf("a subject of %d bytes: %d points, %v; want accepted %v", c.n, len(pts), err, c.ok)
		}
	}
}
