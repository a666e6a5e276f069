package config

import (
	"time"

	"github.com/forecastd/forecastd/anomaly"
	"github.com/forecastd/forecastd/pipeline"
)

// anomalyPipeline sets cfg's anomaly detector from m's anomaly_* keys and
// learn_anomalies, reporting a bad direction through bad; the numeric
// ranges are checked by cfg.Validate.
func (m ModelConfig) anomalyPipeline(cfg *pipeline.Config, bad func(key string, err error)) {
	a := &cfg.Anomaly
	if m.AnomalyDirection != nil {
		if d, err := anomaly.ParseDirection(*m.AnomalyDirection); err != nil {
			bad("anomaly_direction", err)
		} else {
			a.Direction = d
		}
	}
	setFloat(&a.Threshold, m.AnomalyThreshold)
	setFloat(&a.MinDeviation, m.AnomalyMinDeviation)
	setInt(&a.K, m.AnomalyOpenK)
	setInt(&a.N, m.AnomalyOpenN)
	if m.AnomalyOpenK != nil && m.AnomalyOpenN == nil && a.N < a.K {
		a.N = a.K // open_k alone: K of the last K
	}
	setInt(&a.M, m.AnomalyCloseM)
	setFloat(&a.StepFloor, m.AnomalyStepFloor)
	setFloat(&a.Surprise, m.AnomalySurprise)
	setDuration(&a.ExtremeQuiet, m.AnomalyExtremeQuiet, "anomaly_extreme_quiet", bad)
	setDuration(&a.SurpriseWindow, m.AnomalySurpriseWin, "anomaly_surprise_window", bad)
	setFloat(&a.Seasonal, m.AnomalySeasonal)
	setInt(&a.SeasonalRun, m.AnomalySeasonalRun)
	if m.LearnAnomalies != nil {
		cfg.LearnAnomalies = *m.LearnAnomalies
	}
}

// setDuration sets *dst to the duration v names, if v is set, or reports
// why it names none through bad under key.
func setDuration(dst *time.Duration, v *string, key string, bad func(key string, err error)) {
	if v == nil {
		return
	}
	d, err := ParseDuration(*v)
	if err != nil {
		bad(key, err)
		return
	}
	*dst = d
}
