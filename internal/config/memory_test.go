package config

import (
	"fmt"
	"testing"
)

// TestMemoryNeedCountsAlertsAndAPI: the memory estimate grows with the
// alert sinks' max_alerts and with the read API's max_series and its
// series' path (horizon), each bound counted in proportion.
func TestMemoryNeedCountsAlertsAndAPI(t *testing.T) {
	need := func(extra string) int64 {
		t.Helper()
		c, err := Load(writeFile(t, "[nats]\nembedded = true\n[input]\nsubjects = [\"m\"]\n"+extra))
		if err != nil {
			t.Fatal(err)
		}
		def, rules, err := c.PipelineRules()
		if err != nil {
			t.Fatal(err)
		}
		return c.MemoryNeed(def, rules).Buffers
	}
	base := need("")
	for _, c := range []struct{ name, table string }{
		{"alertmanager", "[output.alertmanager]\nurl = \"http://127.0.0.1:9093\"\n"},
		{"webhook", "[output.webhook]\nurl = \"http://127.0.0.1:8080/hook\"\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			one := need(c.table+"max_alerts = 1000\n") - base
			ten := need(c.table+"max_alerts = 10000\n") - base
			long := need(c.table+"max_alerts = 1000\nmax_label_length = 4096\n") - base
			if one <= 0 || ten != 10*one || long <= one {
				t.Fatalf("max_alerts 1000: +%d bytes, 10000: +%d, with longer labels +%d", one, ten, long)
			}
		})
	}
	t.Run("api", func(t *testing.T) {
		api := func(series, horizon int) int64 {
			return need(fmt.Sprintf("[model]\nhorizon = %d\n[output.api]\nmax_series = %d\n", horizon, series)) -
				need(fmt.Sprintf("[model]\nhorizon = %d\n", horizon))
		}
		one, ten, path := api(1000, 1), api(10000, 1), api(1000, 48)
		if one <= 0 || ten != 10*one || path <= one {
			t.Fatalf("max_series 1000: +%d bytes, 10000: +%d, horizon 48: +%d", one, ten, path)
		}
	})
}
