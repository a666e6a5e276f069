package lab

import (
	"github.com/forecastd/forecastd/anomaly"
)

// anomalyColumns are the columns `backtest --out` adds after the forecast's:
// the point's anomaly score against its forecast's interval (empty without
// an interval) and 1 where the detector fires, i.e. the point opens an
// anomaly event, else 0.
var anomalyColumns = []string{"anomaly_score", "anomaly"}

// appendAnomaly appends a's anomaly columns to rec.
func appendAnomaly(rec []string, a anomaly.Observation) []string {
	fired := "0"
	if a.Event == anomaly.Opened {
		fired = "1"
	}
	return append(rec, fmtFloat(a.Score), fired)
}
