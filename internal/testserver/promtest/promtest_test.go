package promtest

import (
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestFutureAndOutOfOrder: what the README tells a user of forecasts'
// times, on each real server: samples behind a later one of the same
// series (within Prometheus' out_of_order_time_window) are stored;
// samples ahead of the server's clock (a forecast's target time) are
// stored by VictoriaMetrics up to 2 days ahead, by Prometheus' remote
// write receiver up to 10 minutes ahead only (its maxAheadTime, not
// configurable), refused beyond.
func TestFutureAndOutOfOrder(t *testing.T) {
	for _, k := range Kinds {
		t.Run(k.Name, func(t *testing.T) {
			t.Parallel()
			s := Start(t, k)
			now := time.Now().Truncate(time.Second)
			lbl := map[string]string{"__name__": "x", "series_key": "a"}
			ahead := []time.Duration{time.Minute, time.Hour, 36 * time.Hour}
			if k == Prometheus {
				if err := s.Post(lbl, []Sample{{T: now.Add(11 * time.Minute).UnixMilli(), V: 1}}); err == nil ||
					!strings.Contains(err.Error(), "too far in the future") {
					t.Fatalf("a sample 11 min ahead: %v", err)
				}
				ahead = []time.Duration{time.Minute, 5 * time.Minute, 9 * time.Minute}
			}
			for _, d := range ahead {
				s.Write(t, lbl, []Sample{{T: now.Add(d).UnixMilli(), V: d.Minutes()}})
			}
			s.Write(t, lbl, []Sample{{T: now.Add(-time.Hour).UnixMilli(), V: -1}}) // behind
			var got []Sample
			for deadline := time.Now().Add(time.Minute); len(got) < len(ahead)+1 && time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
				s.Flush(t)
				got = s.Query(t, "x[3d]", now.Add(48*time.Hour))
			}
			if len(got) != len(ahead)+1 || got[0].V != -1 || got[len(got)-1].V != ahead[len(ahead)-1].Minutes() {
				t.Fatalf("%s: %v", k.Name, got)
			}
		})
	}
}
