package backtest

import (
	"math"
	"time"

	"github.com/forecastd/forecastd/lab/baseline"
	"github.com/forecastd/forecastd/pipeline"
)

// The states of a series in the per-series report.
const (
	StatusScored    = "scored"
	StatusNotScored = "not_scored" // too few points to score any (Reason says why)
	StatusError     = "error"      // its file could not be read, or the run failed
)

// SeriesReport is one series of the per-series report, an element of
// "series" in --json. MAEs are over the same scored points for forecastd
// and every baseline; a ratio is forecastd's MAE over the baseline's.
// Numbers that are undefined (no seasonal naive, no interval) are null.
// The by-horizon arrays (index h−1 for step h, see StepScores) are there
// only with a horizon above 1.
type SeriesReport struct {
	Slot int `json:"-"` // the series' place in the input order

	Series string `json:"series"` // the file of a CSV series, the key of a line-protocol one
	File   string `json:"file"`
	Status string `json:"status"`           // scored, not_scored or error
	Reason string `json:"reason,omitempty"` // why not scored, or the error

	Points     int `json:"points"`
	Scored     int `json:"scored"`
	ScoreStart int `json:"score_start"` // the first index scored: max(--train, ⌊score_from·points⌋)

	MAE              Float `json:"mae"`
	RMSE             Float `json:"rmse"`
	PersistenceMAE   Float `json:"persistence_mae"`
	SnaiveMAE        Float `json:"snaive_mae"`
	SESMAE           Float `json:"ses_mae"`
	MAEvsPersistence Float `json:"mae_vs_persistence"`
	MAEvsSnaive      Float `json:"mae_vs_snaive"`
	MAEvsSES         Float `json:"mae_vs_ses"`
	SnaivePeriod     int   `json:"snaive_period"` // points a day; 0: no seasonal naive (series shorter than 4 days, or P < 2)
	SESAlpha         Float `json:"ses_alpha"`
	Coverage         Float `json:"coverage"` // share of the scored actuals inside forecastd's interval
	NIntervals       int   `json:"n_intervals"`

	UsPerPoint  Float  `json:"us_per_point"` // wall time of the pipeline per point
	ModelSize   int    `json:"model_size"`
	Dropped     uint64 `json:"dropped"`
	SkippedRows int    `json:"skipped_rows"`
	LearnErrors uint64 `json:"learn_errors"`

	MAEByHorizon              []Float `json:"mae_by_horizon,omitempty"`
	PersistenceMAEByHorizon   []Float `json:"persistence_mae_by_horizon,omitempty"`
	SnaiveMAEByHorizon        []Float `json:"snaive_mae_by_horizon,omitempty"`
	MAEvsPersistenceByHorizon []Float `json:"mae_vs_persistence_by_horizon,omitempty"`
	MAEvsSnaiveByHorizon      []Float `json:"mae_vs_snaive_by_horizon,omitempty"`
	CoverageByHorizon         []Float `json:"coverage_by_horizon,omitempty"`
	nByHorizon                []int   // scored rows per step
	coveredByHorizon          []int   // covered rows per step (of those with an interval)
	intervalsByHorizon        []int

	Pipeline time.Duration `json:"-"`
}

// NewReport returns the report of a series that failed before it ran:
// every number undefined.
func NewReport(slot int, series, file string) SeriesReport {
	return SeriesReport{Slot: slot, Series: series, File: file, Status: StatusError,
		MAE: NaN, RMSE: NaN, PersistenceMAE: NaN, SnaiveMAE: NaN, SESMAE: NaN, MAEvsPersistence: NaN,
		MAEvsSnaive: NaN, MAEvsSES: NaN, SESAlpha: NaN, Coverage: NaN, UsPerPoint: NaN}
}

// Score runs the series name (read from file, placed at slot) with cfg
// and scores it and its baselines; skipped is the rows its reader
// skipped.
func Score(slot int, name, file string, cfg pipeline.Config, data Data, skipped int, o Options) SeriesReport {
	r := NewReport(slot, file, file)
	n := len(data.Values)
	r.Series, r.Points, r.SkippedRows, r.ScoreStart = name, n, skipped, o.ScoreStart(n)
	res, err := Run(name, cfg, data, Options{Train: o.Train, ScoreFrom: o.ScoreFrom, Freeze: o.Freeze})
	if err != nil {
		r.Reason = err.Error()
		return r
	}
	st := res.Stats
	r.Pipeline = res.Took
	r.UsPerPoint = Float(res.Took.Seconds() * 1e6 / float64(n))
	r.ModelSize, r.Dropped, r.LearnErrors = res.ModelSize, st.OutOfOrder, st.LearnErrors
	if why := res.NotScored(o); why != "" {
		r.Status, r.Reason = StatusNotScored, why
		return r
	}
	r.Status = StatusScored
	r.Scored = res.N
	nf := float64(res.N)
	r.MAE, r.RMSE = Float(res.AE/nf), Float(math.Sqrt(res.SE/nf))
	r.Coverage, r.NIntervals = Float(float64(res.Covered)/float64(res.NIntervals)), res.NIntervals

	rows := res.StepRows(1)
	if res.Horizon == 1 {
		rows = res.Rows
	}
	b := baseline.Compute(data.Values, baseline.MedianSpacing(data.Times))
	r.SnaivePeriod, r.SESAlpha = b.Period, Float(b.Alpha)
	r.PersistenceMAE = Float(scoredMAE(b.Persistence, rows))
	r.SnaiveMAE = Float(scoredMAE(b.SeasonalNaive, rows))
	r.SESMAE = Float(scoredMAE(b.SES, rows))
	var moves float64 // the whole series' mean |y(t) − y(t−1)|
	for i := 1; i < n; i++ {
		moves += math.Abs(data.Values[i]-data.Values[i-1]) / float64(n-1)
	}
	r.MAEvsPersistence = maeRatio(r.MAE, r.PersistenceMAE, moves)
	r.MAEvsSnaive = maeRatio(r.MAE, r.SnaiveMAE, moves)
	r.MAEvsSES = maeRatio(r.MAE, r.SESMAE, moves)
	if res.Horizon > 1 {
		s := res.Steps(data)
		r.MAEByHorizon, r.PersistenceMAEByHorizon, r.SnaiveMAEByHorizon, r.CoverageByHorizon = s.MAE, s.PersistenceMAE, s.Snaive, s.Coverage
		r.MAEvsPersistenceByHorizon = make([]Float, res.Horizon)
		r.MAEvsSnaiveByHorizon = make([]Float, res.Horizon)
		r.nByHorizon, r.coveredByHorizon, r.intervalsByHorizon = s.N, make([]int, res.Horizon), make([]int, res.Horizon)
		for h := range res.Horizon {
			r.MAEvsPersistenceByHorizon[h] = maeRatio(s.MAE[h], s.PersistenceMAE[h], moves)
			r.MAEvsSnaiveByHorizon[h] = maeRatio(s.MAE[h], s.Snaive[h], moves)
		}
		for _, x := range res.Rows {
			if !math.IsNaN(x.Lower) {
				r.intervalsByHorizon[x.Horizon-1]++
				if x.Lower <= x.Actual && x.Actual <= x.Upper {
					r.coveredByHorizon[x.Horizon-1]++
				}
			}
		}
	}
	return r
}

// maeRatio returns mae / base, or NaN (n/a) when base is within rounding of
// zero for a series whose mean one-step move is moves: a baseline that is
// exact on the scored points (a constant stretch, which exponential
// smoothing converges onto to 1e-60) leaves nothing to compare with.
func maeRatio(mae, base Float, moves float64) Float {
	if !(float64(base) > 1e-9*moves) || base == 0 {
		return NaN
	}
	return mae / base
}

// scoredMAE returns the mean absolute error of the forecasts pred (indexed
// as the series) on the scored rows, NaN if pred is nil or has no forecast
// for one of them.
func scoredMAE(pred []float64, rows []Row) float64 {
	if pred == nil || len(rows) == 0 {
		return math.NaN()
	}
	var sum float64
	for _, r := range rows {
		p := pred[r.Index]
		if math.IsNaN(p) {
			return math.NaN()
		}
		sum += math.Abs(p - r.Actual)
	}
	return sum / float64(len(rows))
}

// RatioSummary summarises one ratio over the series where it is defined
// (finite and positive).
type RatioSummary struct {
	GeoMean     Float  `json:"geo_mean"`
	Series      int    `json:"series"` // series it is defined on
	Worse       int    `json:"worse"`  // series where forecastd is worse than the baseline (ratio > 1)
	Worst       Float  `json:"worst"`
	WorstSeries string `json:"worst_series"`
}

// BenchSummary is "summary" in --json. The by-horizon fields (index h−1
// for step h) are there only with a horizon above 1: the ratios' summaries
// at each step, and the coverage at each step pooled over the series'
// intervals, with its least and greatest over the series.
type BenchSummary struct {
	Model           string  `json:"model"`
	ScoreFrom       float64 `json:"score_from"`
	Train           int     `json:"train"`
	Series          int     `json:"series"`
	SeriesScored    int     `json:"series_scored"`
	SeriesNotScored int     `json:"series_not_scored"`
	SeriesFailed    int     `json:"series_failed"`
	Points          int     `json:"points"`
	Scored          int     `json:"scored"`

	MAEvsPersistence RatioSummary `json:"mae_vs_persistence"`
	MAEvsSnaive      RatioSummary `json:"mae_vs_snaive"`
	MAEvsSES         RatioSummary `json:"mae_vs_ses"`
	// SnaiveEarly counts the series that have a seasonal period but are
	// scored from before one period of points, where seasonal naive has
	// no forecast.
	SnaiveEarly int `json:"snaive_early"`

	CoverageMin     Float `json:"coverage_min"`
	CoverageMax     Float `json:"coverage_max"`
	CoverageNominal Float `json:"coverage_nominal"`
	UsPerPoint      Float `json:"us_per_point"` // over every point of the scored series
	Seconds         Float `json:"seconds"`

	Horizon                   int            `json:"horizon,omitempty"`
	MAEvsPersistenceByHorizon []RatioSummary `json:"mae_vs_persistence_by_horizon,omitempty"`
	MAEvsSnaiveByHorizon      []RatioSummary `json:"mae_vs_snaive_by_horizon,omitempty"`
	CoverageByHorizon         []Float        `json:"coverage_by_horizon,omitempty"`
	CoverageMinByHorizon      []Float        `json:"coverage_min_by_horizon,omitempty"`
	CoverageMaxByHorizon      []Float        `json:"coverage_max_by_horizon,omitempty"`
}

// ratioAcc accumulates a RatioSummary.
type ratioAcc struct {
	logSum float64
	s      RatioSummary
}

func (a *ratioAcc) add(x Float, series string) {
	v := float64(x)
	if !(v > 0) || math.IsInf(v, 0) {
		return
	}
	a.logSum += math.Log(v)
	a.s.Series++
	if v > 1 {
		a.s.Worse++
	}
	if a.s.Series == 1 || v > float64(a.s.Worst) {
		a.s.Worst, a.s.WorstSeries = x, series
	}
}

func (a *ratioAcc) summary() RatioSummary {
	s := a.s
	s.GeoMean = NaN
	if s.Series > 0 {
		s.GeoMean = Float(math.Exp(a.logSum / float64(s.Series)))
	} else {
		s.Worst = NaN
	}
	return s
}

// minMax widens [lo, hi] (NaN: empty) to hold c, unless c is NaN.
func minMax(lo, hi *Float, c Float) {
	if math.IsNaN(float64(c)) {
		return
	}
	if math.IsNaN(float64(*lo)) || c < *lo {
		*lo = c
	}
	if math.IsNaN(float64(*hi)) || c > *hi {
		*hi = c
	}
}

// SummarizeBench summarises the scored series of reps, run with cfg and o;
// Seconds is the caller's.
func SummarizeBench(o Options, cfg pipeline.Config, reps []SeriesReport) BenchSummary {
	sum := BenchSummary{Model: cfg.Kind.String(), ScoreFrom: o.ScoreFrom, Train: o.Train, Series: len(reps),
		CoverageMin: NaN, CoverageMax: NaN, CoverageNominal: Float(cfg.Coverage), UsPerPoint: NaN}
	var pers, snaive, ses ratioAcc
	H := max(1, cfg.Horizon)
	for _, r := range reps { // rules may set other horizons
		H = max(H, len(r.MAEByHorizon))
	}
	persH, snaiveH := make([]ratioAcc, H), make([]ratioAcc, H)
	covered, intervals := make([]int, H), make([]int, H)
	covMin, covMax := make([]Float, H), make([]Float, H)
	for h := range H {
		covMin[h], covMax[h] = NaN, NaN
	}
	var took time.Duration
	points := 0
	for _, r := range reps {
		switch r.Status {
		case StatusError:
			sum.SeriesFailed++
			continue
		case StatusNotScored:
			sum.SeriesNotScored++
			continue
		}
		sum.SeriesScored++
		sum.Points += r.Points
		sum.Scored += r.Scored
		took += r.Pipeline
		points += r.Points
		pers.add(r.MAEvsPersistence, r.Series)
		snaive.add(r.MAEvsSnaive, r.Series)
		ses.add(r.MAEvsSES, r.Series)
		if r.SnaivePeriod > 0 && math.IsNaN(float64(r.SnaiveMAE)) {
			sum.SnaiveEarly++
		}
		minMax(&sum.CoverageMin, &sum.CoverageMax, r.Coverage)
		for h := 0; h < H && h < len(r.MAEvsPersistenceByHorizon); h++ {
			persH[h].add(r.MAEvsPersistenceByHorizon[h], r.Series)
			snaiveH[h].add(r.MAEvsSnaiveByHorizon[h], r.Series)
			covered[h] += r.coveredByHorizon[h]
			intervals[h] += r.intervalsByHorizon[h]
			minMax(&covMin[h], &covMax[h], r.CoverageByHorizon[h])
		}
	}
	sum.MAEvsPersistence, sum.MAEvsSnaive, sum.MAEvsSES = pers.summary(), snaive.summary(), ses.summary()
	if points > 0 {
		sum.UsPerPoint = Float(took.Seconds() * 1e6 / float64(points))
	}
	if H > 1 {
		sum.Horizon = H
		sum.MAEvsPersistenceByHorizon, sum.MAEvsSnaiveByHorizon = make([]RatioSummary, H), make([]RatioSummary, H)
		sum.CoverageByHorizon, sum.CoverageMinByHorizon, sum.CoverageMaxByHorizon = make([]Float, H), covMin, covMax
		for h := range H {
			sum.MAEvsPersistenceByHorizon[h], sum.MAEvsSnaiveByHorizon[h] = persH[h].summary(), snaiveH[h].summary()
			sum.CoverageByHorizon[h] = Float(float64(covered[h]) / float64(intervals[h]))
		}
	}
	return sum
}
