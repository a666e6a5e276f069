package pipeline

import (
	"strings"
	"testing"
	"time"

	"github.com/forecastd/forecastd/anomaly"
)

func TestKeysAnomaly(t *testing.T) {
	dir, th, md, k, m, learn := "below", 2.5, 0.3, 3, 7, false
	floor, surprise, win, quiet, margin := 0.5, 2.0, "90m", "0s", 0.25
	seasonal, run := 4.5, 12
	cfg, err := Keys{AnomalyDirection: &dir, AnomalyThreshold: &th, AnomalyMinDeviation: &md,
		AnomalyOpenK: &k, AnomalyCloseM: &m, LearnAnomalies: &learn,
		AnomalyStepFloor: &floor, AnomalySurprise: &surprise, AnomalySurpriseWin: &win, AnomalyExtremeQuiet: &quiet,
		AnomalyExtremeMarg: &margin, AnomalySeasonal: &seasonal, AnomalySeasonalRun: &run}.Config()
	if err != nil {
		t.Fatal(err)
	}
	want := anomaly.Config{Direction: anomaly.Below, Threshold: 2.5, MinDeviation: 0.3, K: 3, N: 3, M: 7,
		StepFloor: 0.5, Surprise: 2, SurpriseWindow: 90 * time.Minute, ExtremeMargin: 0.25, Seasonal: 4.5, SeasonalRun: 12}
	if cfg.Anomaly != want || cfg.LearnAnomalies {
		t.Errorf("anomaly %+v learn %v, want %+v and false", cfg.Anomaly, cfg.LearnAnomalies, want)
	}
	def, err := Keys{}.Config()
	if err != nil {
		t.Fatal(err)
	}
	if def.Anomaly != DefaultAnomaly() || def.LearnAnomalies != DefaultLearnAnomalies {
		t.Errorf("defaults %+v %v", def.Anomaly, def.LearnAnomalies)
	}
	// anomaly_open_k alone is K of the last K, below the default window
	// as above it; with anomaly_open_n, K of the last N.
	for _, c := range []struct{ k, n, wantN int }{{1, 0, 1}, {4, 0, 4}, {1, 3, 3}} {
		mc := Keys{AnomalyOpenK: &c.k}
		if c.n > 0 {
			mc.AnomalyOpenN = &c.n
		}
		got, err := mc.Config()
		if err != nil || got.Anomaly.K != c.k || got.Anomaly.N != c.wantN {
			t.Errorf("open_k %d, open_n %d: K %d N %d (%v), want N %d", c.k, c.n, got.Anomaly.K, got.Anomaly.N, err, c.wantN)
		}
	}

	bad, n := "sideways", 2
	_, err = Keys{AnomalyDirection: &bad, AnomalyOpenK: &k, AnomalyOpenN: &n}.Config()
	if err == nil || !strings.Contains(err.Error(), "anomaly_direction") || !strings.Contains(err.Error(), "sideways") ||
		!strings.Contains(err.Error(), "open_k 3, open_n 2") {
		t.Errorf("bad anomaly keys: %v", err)
	}
	negFloor, badWin, shortWin, negQuiet, negMargin := -1.0, "a day", "5s", "-1h", -0.5
	_, err = Keys{AnomalyStepFloor: &negFloor, AnomalySurpriseWin: &badWin, AnomalyExtremeQuiet: &negQuiet,
		AnomalyExtremeMarg: &negMargin}.Config()
	if err == nil || !strings.Contains(err.Error(), "step_floor -1") || !strings.Contains(err.Error(), "anomaly_surprise_window") ||
		!strings.Contains(err.Error(), "extreme_quiet -1h") || !strings.Contains(err.Error(), "extreme_margin -0.5") {
		t.Errorf("bad step floor and window: %v", err)
	}
	negSeasonal, longRun := -2.0, 1001
	_, err = Keys{AnomalySeasonal: &negSeasonal, AnomalySeasonalRun: &longRun}.Config()
	if err == nil || !strings.Contains(err.Error(), "seasonal -2") || !strings.Contains(err.Error(), "seasonal_run 1001") {
		t.Errorf("bad seasonal keys: %v", err)
	}
	_, err = Keys{AnomalySurpriseWin: &shortWin}.Config()
	if err == nil || !strings.Contains(err.Error(), "surprise_window 5s") {
		t.Errorf("surprise window 5s: %v", err)
	}
}
