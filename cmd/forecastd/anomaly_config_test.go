package main

import (
	"strings"
	"testing"

	"github.com/forecastd/forecastd/anomaly"
	"github.com/forecastd/forecastd/pipeline"
)

func TestAnomalyConfigKeys(t *testing.T) {
	dir, th, md, k, m, learn := "below", 2.5, 0.3, 3, 7, false
	cfg, err := ModelConfig{AnomalyDirection: &dir, AnomalyThreshold: &th, AnomalyMinDeviation: &md,
		AnomalyOpenK: &k, AnomalyCloseM: &m, LearnAnomalies: &learn}.Pipeline()
	if err != nil {
		t.Fatal(err)
	}
	want := anomaly.Config{Direction: anomaly.Below, Threshold: 2.5, MinDeviation: 0.3, K: 3, N: 3, M: 7}
	if cfg.Anomaly != want || cfg.LearnAnomalies {
		t.Errorf("anomaly %+v learn %v, want %+v and false", cfg.Anomaly, cfg.LearnAnomalies, want)
	}
	def, err := ModelConfig{}.Pipeline()
	if err != nil {
		t.Fatal(err)
	}
	if def.Anomaly != pipeline.DefaultAnomaly() || def.LearnAnomalies != pipeline.DefaultLearnAnomalies {
		t.Errorf("defaults %+v %v", def.Anomaly, def.LearnAnomalies)
	}

	bad, n := "sideways", 2
	_, err = ModelConfig{AnomalyDirection: &bad, AnomalyOpenK: &k, AnomalyOpenN: &n}.Pipeline()
	if err == nil || !strings.Contains(err.Error(), "anomaly_direction") || !strings.Contains(err.Error(), "sideways") ||
		!strings.Contains(err.Error(), "open_k 3, open_n 2") {
		t.Errorf("bad anomaly keys: %v", err)
	}
}
