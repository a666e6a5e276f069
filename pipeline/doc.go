// Package pipeline is forecastd's per-series flow, shared by the daemon
// (through package runner) and by `forecastd backtest`, so that a
// backtest predicts exactly what the daemon would have published:
//
//	point → scale (warm-up) → delay-embed → learn the previous sample
//	(through the forgetting window) → forecast the next point → emit
//
// following the one-step-ahead protocol of Ma, Theiler and Perkins,
// "Accurate On-line Support Vector Regression" (2003), section 5.2. Each
// forecast carries a split-conformal prediction interval calibrated on a
// rolling window of the series' own one-step residuals, its quantile level
// adapted to the misses seen (adaptive conformal inference), so that the
// long-run coverage stays at nominal when the residuals drift.
//
// Cost per point: one model update (AOSVR: O(W·|S|) at worst, usually
// O(|S|·d); SOG-SVR: O(m²); NORMA: O(d), its prediction having been made
// the step before), one prediction (O(|S|·d), O(m·d), O(τ·d)) and
// O(interval_window) for the residual window. No allocation once warm.
//
// The package holds one series' parts: its configuration and the
// [model] keys that describe it ([Config], [Keys]), the model kinds'
// registry ([ModelKind], [RegisterModel]), the series ([Series]), its
// resolution's buckets ([Buckets]), its intervals, combination, anomaly
// and threshold events, and its checkpoint ([SeriesState]). A [Series] is
// owned by one goroutine; it is not safe for concurrent use. Running many
// at once is package runner's.
//
// The package declares what a series emits to ([Sink]) and knows nothing
// of NATS, InfluxDB, goroutines or configuration files; it depends on
// svr, embedding, window, anomaly and ahead.
package pipeline
