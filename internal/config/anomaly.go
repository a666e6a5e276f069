package main

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
	d, err := parseDuration(*v)
	if err != nil {
		bad(key, err)
		return
	}
	*dst = d
}

// anomalyFlagUsage documents the flags of the anomaly keys; init adds it
// to commonFlagUsage (kept apart so as not to realign that table).
var anomalyFlagUsage = map[string]string{
	"anomaly_direction":       "anomalies counted on `SIDE`: both, above or below the forecast (default both)",
	"anomaly_threshold":       "anomaly `SCORE` above which a point is outside (1 = on the interval's bound; default 3)",
	"anomaly_min_deviation":   "smallest absolute deviation `D` from the forecast that can count as outside (default 0)",
	"anomaly_open_k":          "an anomaly event opens when `K` of the last anomaly_open_n points were outside (default 1)",
	"anomaly_open_n":          "the debounce window `N` of anomaly_open_k, at most 64 (default 1)",
	"anomaly_close_m":         "an anomaly event closes after `M` points in a row inside (default 10)",
	"anomaly_step_floor":      "each half-width of the interval counts as at least `F` times the series' mean absolute change between points when deciding whether a point is outside (default 1; 0 no floor)",
	"anomaly_surprise":        "an anomaly event opens only on a point whose score is above `C` times the highest score of the previous anomaly_surprise_window (default 1.4; 0 off)",
	"anomaly_extreme_quiet":   "an anomaly event also opens on a new all-time high or low of the series after `DURATION` without one, whatever its score (default 48h; 0s off)",
	"anomaly_surprise_window": "the `DURATION` of anomaly_surprise, 24s to 8784h (default 25h: a day and a bit, so that a deviation the series makes every day is compared with yesterday's)",
	"anomaly_seasonal":        "an anomaly event also opens when anomaly_seasonal_run points in a row, on one side, differ from the series' value a day or a week before (the closer) by more than `K` times the mean such difference, and no event opened in the previous anomaly_surprise_window (default 6; 0 off)",
	"anomaly_seasonal_run":    "the `N` points in a row of anomaly_seasonal, 1 to 1000 (default 8)",
	"learn_anomalies":         "learn the points inside an open anomaly event; false keeps them out of the model and the intervals for up to interval_window points (default true)",
}

func init() {
	for k, v := range anomalyFlagUsage {
		commonFlagUsage[k] = v
	}
}
