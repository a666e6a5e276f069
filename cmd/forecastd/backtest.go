package main

import (
	"bufio"
	"encoding/csv"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/forecastd/forecastd/pipeline"
)

// modelFlagUsage documents the flag of each [model] key.
var modelFlagUsage = map[string]string{
	"kind":               "model `KIND`: aosvr, sogsvr or norma (default aosvr)",
	"dim":                "embedding dimension `B` (default 5)",
	"delay":              "embedding delay `TAU` in points (default 1)",
	"window":             "AOSVR forgetting window `W` in samples; 0 = no forgetting (default 200)",
	"kernel":             "`KERNEL`: rbf, poly or linear (default rbf)",
	"gamma":              "kernel gamma `G` (default 1)",
	"degree":             "poly kernel degree `D` (default 3)",
	"coef0":              "poly kernel `C0` (default 0)",
	"c":                  "AOSVR box `C` (default 10)",
	"epsilon":            "AOSVR tube epsilon `E` (default 0.1)",
	"scale":              "`SPEC` none|fixed:MIN,MAX|warmup:N, maps values into [-1, 1] (default warmup:100)",
	"coverage":           "nominal `COVERAGE` of the prediction intervals, in (0, 1) (default 0.9)",
	"interval_window":    "the last `N` residuals the intervals are calibrated on (default 200)",
	"interval_adapt":     "adaptation `RATE` of the intervals' quantile level; 0 = plain split conformal (default 0.01)",
	"interval":           "series spacing `DURATION` that dates forecasts (default: median spacing)",
	"max_gap":            "restart the embedding after a gap of more than `K` intervals (default 0: never)",
	"norma_kernel":       "NORMA's `KERNEL` if not --kernel",
	"norma_loss":         "NORMA `LOSS`: squared, epsilon or huber",
	"norma_eta":          "NORMA learning rate `ETA`",
	"norma_eta_schedule": "NORMA rate `SCHEDULE`: constant or inv_sqrt",
	"norma_lambda":       "NORMA regularisation `LAMBDA`",
	"norma_c":            "NORMA loss weight `C`",
	"norma_nu":           "NORMA `NU` of the ν-trick",
	"norma_tau":          "NORMA kernel terms kept, `TAU`",
	"sog_lambda":         "SOG-SVR `LAMBDA` of k+λ²",
	"sog_nu":             "SOG-SVR ALD threshold `NU`",
	"sog_ridge":          "SOG-SVR ALD `RIDGE`",
	"sog_c":              "SOG-SVR box `C`",
	"sog_epsilon":        "SOG-SVR tube `EPSILON`",
	"sog_max_dict":       "SOG-SVR dictionary cap `M`",
	"sog_on_full":        "SOG-SVR `POLICY` when full: replace or project",
	"sog_forget":         "SOG-SVR forgetting factor `RHO`",
	"sog_steps":          "SOG-SVR line-search `STEPS` per sample",
}

// progressEvery is the least time between two progress lines on stderr.
var progressEvery = time.Second

// backtestOptions are the backtest's command line.
type backtestOptions struct {
	file     string
	column   string
	config   string
	model    ModelConfig // the [model] keys given as flags
	train    int
	freeze   bool
	out      string
	plot     string
	json     bool
	skipBad  bool
	progress time.Duration // least time between two progress lines on stderr
}

func parseBacktestFlags(args []string, stderr io.Writer) (*backtestOptions, error) {
	o := &backtestOptions{progress: progressEvery}
	fs := flag.NewFlagSet("backtest", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: forecastd backtest [flags] FILE.csv\n\n"+
			"Replays FILE.csv through the forecasting pipeline the daemon runs: the forecast\n"+
			"for point i is made from points 0…i−1 only; with --train N, rows start at\n"+
			"point N. Flags override --config's [model]; SOG-SVR and NORMA flags are named\n"+
			"as their config keys. A point whose time is not after the previous one's is\n"+
			"dropped (counted as \"dropped\").\n\nflags:")
		fs.PrintDefaults()
	}
	fs.StringVar(&o.column, "column", "value", "value column `NAME`; a \"time\" or \"t\" column, if present, gives timestamps")
	fs.StringVar(&o.config, "config", "", "take [model] settings from a daemon config `FILE`; flags override it")
	fs.IntVar(&o.train, "train", 0, "the first `N` points are learned but not scored")
	fs.BoolVar(&o.freeze, "freeze", false, "stop learning after the first --train points (the paper's fixed predictor)")
	fs.StringVar(&o.out, "out", "", "write one row per scored forecast to `FILE.csv`: index,time,actual,forecast,lower,upper")
	fs.StringVar(&o.plot, "plot", "", "plot actual, forecast and interval band to `FILE.svg|png`")
	fs.BoolVar(&o.json, "json", false, "print one JSON summary object on stdout")
	fs.BoolVar(&o.skipBad, "skip-bad", false, "skip and count unparsable rows instead of failing")
	mv := reflect.ValueOf(&o.model).Elem()
	for i, key := range modelKeys() {
		name := key
		if key == "kind" {
			name = "model"
		}
		fs.Var(modelFlag{field: mv.Field(i)}, name, modelFlagUsage[key])
	}

	// Flags may come before or after FILE.
	var files []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, usageError{err}
		}
		if fs.NArg() == 0 {
			break
		}
		files = append(files, fs.Arg(0))
		args = fs.Args()[1:]
	}
	if len(files) != 1 {
		fs.Usage()
		return nil, usageError{fmt.Errorf("want exactly one FILE.csv, got %d", len(files))}
	}
	o.file = files[0]
	if o.train < 0 {
		return nil, usageError{fmt.Errorf("--train must not be negative, got %d", o.train)}
	}
	if o.freeze && o.train == 0 {
		return nil, usageError{errors.New("--freeze needs --train N > 0: the points learned before freezing")}
	}
	if o.plot != "" {
		if ext := strings.ToLower(filepath.Ext(o.plot)); ext != ".svg" && ext != ".png" {
			return nil, usageError{fmt.Errorf("--plot %q: want a .svg or .png file", o.plot)}
		}
	}
	return o, nil
}

// modelConfig returns the [model] settings of --config (if any) overridden by
// the flags, validated.
func (o *backtestOptions) modelConfig() (pipeline.Config, error) {
	var mc ModelConfig
	var problems []error
	if o.config != "" {
		cfg, probs, err := decodeConfig(o.config)
		if err != nil {
			return pipeline.Config{}, err
		}
		mc, problems = cfg.Model, probs
	}
	pc, err := mc.Merge(o.model).Pipeline()
	if err != nil {
		problems = append(problems, err)
	}
	if err := errors.Join(problems...); err != nil {
		if o.config != "" {
			return pipeline.Config{}, fmt.Errorf("%s (with the flags): %w", o.config, err)
		}
		return pipeline.Config{}, err
	}
	return pc, nil
}

// recorded is a series read from a CSV file.
type recorded struct {
	times   []time.Time // the pipeline's timestamps
	labels  []string    // the time column's text, or the index
	secs    []float64   // timestamps as Unix seconds, for plots
	values  []float64
	hasTime bool
	skipped int // unparsable rows skipped (--skip-bad)
}

// readSeries reads column from a CSV file with a header row. A "time" (or
// else "t") column gives timestamps: Unix seconds (a number) or RFC 3339.
// An unparsable row is an error naming file, line and column, unless
// skipBad, which skips and counts it.
func readSeries(path, column string, skipBad bool) (*recorded, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := csv.NewReader(bufio.NewReaderSize(f, 1<<16))
	r.ReuseRecord = true
	header, err := r.Read()
	if err != nil {
		if err == io.EOF {
			return nil, fmt.Errorf("%s: empty file, want a header row", path)
		}
		return nil, fmt.Errorf("%s: header: %w", path, err)
	}
	vc, tc := -1, -1
	for i, h := range header {
		h = strings.TrimSpace(strings.TrimPrefix(h, "\ufeff"))
		switch {
		case h == column:
			vc = i
		case h == "time":
			tc = i
		case h == "t" && (tc < 0 || header[tc] != "time"):
			tc = i
		}
	}
	if vc < 0 {
		return nil, fmt.Errorf("%s:1: no column %q in header %q", path, column, strings.Join(header, ","))
	}
	s := &recorded{hasTime: tc >= 0}
	for {
		rec, err := r.Read()
		if err == io.EOF {
			break
		}
		var pe *csv.ParseError
		if err != nil {
			if errors.As(err, &pe) && skipBad {
				s.skipped++
				continue
			}
			if errors.As(err, &pe) {
				return nil, fmt.Errorf("%s:%d:%d: %w", path, pe.Line, pe.Column, pe.Err)
			}
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		line, _ := r.FieldPos(vc)
		v, err := strconv.ParseFloat(strings.TrimSpace(rec[vc]), 64)
		if err == nil && (math.IsNaN(v) || math.IsInf(v, 0)) {
			err = errors.New("not finite")
		}
		if err != nil {
			if skipBad {
				s.skipped++
				continue
			}
			return nil, fmt.Errorf("%s:%d: column %d (%q): cannot read %q as a finite number", path, line, vc+1, column, rec[vc])
		}
		i := len(s.values)
		t, label, secs := time.Unix(int64(i), 0), strconv.Itoa(i), float64(i)
		if tc >= 0 {
			label = strings.TrimSpace(rec[tc])
			t, secs, err = parseTime(label)
			if err != nil {
				if skipBad {
					s.skipped++
					continue
				}
				line, _ := r.FieldPos(tc)
				return nil, fmt.Errorf("%s:%d: column %d (%q): cannot read %q as a time (Unix seconds or RFC 3339)", path, line, tc+1, header[tc], rec[tc])
			}
		}
		s.values = append(s.values, v)
		s.times = append(s.times, t)
		s.labels = append(s.labels, label)
		s.secs = append(s.secs, secs)
	}
	return s, nil
}

// parseTime reads Unix seconds (possibly fractional) or RFC 3339.
func parseTime(s string) (time.Time, float64, error) {
	if x, err := strconv.ParseFloat(s, 64); err == nil && !math.IsNaN(x) && !math.IsInf(x, 0) && math.Abs(x) < 1e11 {
		sec := math.Floor(x)
		t := time.Unix(int64(sec), int64(math.Round((x-sec)*1e9)))
		return t, x, nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, 0, err
	}
	return t, float64(t.UnixNano()) / 1e9, nil
}

// row is one scored forecast.
type row struct {
	index                          int
	secs                           float64
	actual, forecast, lower, upper float64
}

// scorer is the backtest's pipeline.Sink: it scores every outcome of a
// point at or after --train and writes its CSV row.
type scorer struct {
	s      *pipeline.Series
	data   *recorded
	train  int
	index  int // the point being pushed
	prev   float64
	havePv bool
	out    *csv.Writer
	rec    []string
	rows   []row

	n, nInt, covered                       int
	se, ae, seS, aeS, pse, pae, pseS, paeS float64
}

func (sc *scorer) Forecast(string, pipeline.Forecast) error { return nil }

func (sc *scorer) Outcome(_ string, o pipeline.Outcome) error {
	i := sc.index
	if i < sc.train {
		return nil
	}
	f := o.Forecast
	e := o.Actual - f.Value
	eS := o.ActualScaled - f.Scaled
	sc.n++
	sc.se += e * e
	sc.ae += math.Abs(e)
	sc.seS += eS * eS
	sc.aeS += math.Abs(eS)
	if sc.havePv {
		pe := o.Actual - sc.prev
		pS, _ := sc.s.Scale(sc.prev)
		peS := o.ActualScaled - pS
		sc.pse += pe * pe
		sc.pae += math.Abs(pe)
		sc.pseS += peS * peS
		sc.paeS += math.Abs(peS)
	}
	if f.HasInterval() {
		sc.nInt++
		if f.Lower <= o.Actual && o.Actual <= f.Upper {
			sc.covered++
		}
	}
	sc.rows = append(sc.rows, row{i, sc.data.secs[i], o.Actual, f.Value, f.Lower, f.Upper})
	if sc.out != nil {
		sc.rec = append(sc.rec[:0], strconv.Itoa(i), sc.data.labels[i], fmtFloat(o.Actual), fmtFloat(f.Value), fmtFloat(f.Lower), fmtFloat(f.Upper))
		return sc.out.Write(sc.rec)
	}
	return nil
}

// fmtFloat writes the shortest exact form, or nothing for NaN (no interval).
func fmtFloat(x float64) string {
	if math.IsNaN(x) {
		return ""
	}
	return strconv.FormatFloat(x, 'g', -1, 64)
}

// jfloat is a float64 that marshals NaN and ±Inf (an undefined mean) as null.
type jfloat float64

func (f jfloat) MarshalJSON() ([]byte, error) {
	x := float64(f)
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return []byte("null"), nil
	}
	return strconv.AppendFloat(nil, x, 'g', -1, 64), nil
}

// summary is the --json object. The first fields are the contract;
// the rest are additions.
type summary struct {
	Model            string `json:"model"`
	NScored          int    `json:"n_scored"`
	MSE              jfloat `json:"mse"`
	MAE              jfloat `json:"mae"`
	RMSE             jfloat `json:"rmse"`
	MSEScaled        jfloat `json:"mse_scaled"`
	MAEScaled        jfloat `json:"mae_scaled"`
	PersistenceMSE   jfloat `json:"persistence_mse"`
	PersistenceMAE   jfloat `json:"persistence_mae"`
	ModelSize        int    `json:"model_size"`
	MaxModelSize     int    `json:"max_model_size"`
	Updates          uint64 `json:"updates"`
	NsPerUpdate      jfloat `json:"ns_per_update"`
	ModelBytes       int    `json:"model_bytes"`
	IntervalCoverage jfloat `json:"interval_coverage"`
	Seconds          jfloat `json:"seconds"`

	PersistenceMSEScaled jfloat `json:"persistence_mse_scaled"`
	PersistenceMAEScaled jfloat `json:"persistence_mae_scaled"`
	NsPerForecast        jfloat `json:"ns_per_forecast"`
	CoverageNominal      jfloat `json:"coverage_nominal"`
	NIntervals           int    `json:"n_intervals"`
	NPoints              int    `json:"n_points"`
	SkippedRows          int    `json:"skipped_rows"`
	Dropped              uint64 `json:"dropped"`
	LearnErrors          uint64 `json:"learn_errors"`
}

func runBacktest(args []string, stdout, stderr io.Writer) error {
	start := time.Now()
	o, err := parseBacktestFlags(args, stderr)
	if err != nil {
		return err
	}
	cfg, err := o.modelConfig()
	if err != nil {
		return err
	}
	cfg.MeasureUpdates = true
	data, err := readSeries(o.file, o.column, o.skipBad)
	if err != nil {
		return err
	}
	name := strings.TrimSuffix(filepath.Base(o.file), filepath.Ext(o.file))
	s, err := pipeline.New(name, cfg)
	if err != nil {
		return err
	}
	sc := &scorer{s: s, data: data, train: o.train}
	var outFile *os.File
	if o.out != "" {
		if outFile, err = os.Create(o.out); err != nil {
			return err
		}
		defer outFile.Close()
		sc.out = csv.NewWriter(bufio.NewWriterSize(outFile, 1<<16))
		if err := sc.out.Write([]string{"index", "time", "actual", "forecast", "lower", "upper"}); err != nil {
			return err
		}
	}

	n := len(data.values)
	lastReport := time.Now()
	for i := range n {
		if o.freeze && i == o.train {
			s.Freeze()
		}
		sc.index = i
		err := s.Process(pipeline.Point{Time: data.times[i], Value: data.values[i]}, sc)
		if errors.Is(err, pipeline.ErrOutOfOrder) {
			continue // counted by the series
		} else if err != nil {
			return fmt.Errorf("%s: point %d: %w", o.file, i, err)
		}
		sc.prev, sc.havePv = data.values[i], true
		if i&1023 == 1023 && o.progress > 0 && time.Since(lastReport) >= o.progress {
			lastReport = time.Now()
			fmt.Fprintf(stderr, "backtest: %s: %d/%d points (%.0f%%), %.1f s\n", o.file, i+1, n, 100*float64(i+1)/float64(n), time.Since(start).Seconds())
		}
	}
	if sc.out != nil {
		sc.out.Flush()
		if err := sc.out.Error(); err != nil {
			return fmt.Errorf("%s: %w", o.out, err)
		}
		if err := outFile.Close(); err != nil {
			return fmt.Errorf("%s: %w", o.out, err)
		}
	}

	st := s.Stats()
	nf := float64(sc.n)
	sum := summary{
		Model:                cfg.Kind.String(),
		NScored:              sc.n,
		MSE:                  jfloat(sc.se / nf),
		MAE:                  jfloat(sc.ae / nf),
		RMSE:                 jfloat(math.Sqrt(sc.se / nf)),
		MSEScaled:            jfloat(sc.seS / nf),
		MAEScaled:            jfloat(sc.aeS / nf),
		PersistenceMSE:       jfloat(sc.pse / nf),
		PersistenceMAE:       jfloat(sc.pae / nf),
		PersistenceMSEScaled: jfloat(sc.pseS / nf),
		PersistenceMAEScaled: jfloat(sc.paeS / nf),
		ModelSize:            s.ModelSize(),
		MaxModelSize:         st.MaxModelSize,
		Updates:              st.Updates,
		NsPerUpdate:          jfloat(float64(st.UpdateNanos) / float64(st.Updates)),
		NsPerForecast:        jfloat(float64(st.PredictNanos) / float64(st.Forecasts)),
		ModelBytes:           s.ModelBytes(),
		IntervalCoverage:     jfloat(float64(sc.covered) / float64(sc.nInt)),
		CoverageNominal:      jfloat(cfg.Coverage),
		NIntervals:           sc.nInt,
		NPoints:              n,
		SkippedRows:          data.skipped,
		Dropped:              st.OutOfOrder,
		LearnErrors:          st.LearnErrors,
	}
	if o.plot != "" {
		title := fmt.Sprintf("%s — %s, one-step forecasts, %.0f %% interval", name, cfg.Kind, 100*cfg.Coverage)
		if err := writePlot(o.plot, title, sc.rows, data.hasTime && isEpoch(data.secs)); err != nil {
			return fmt.Errorf("plot: %w", err)
		}
	}
	sum.Seconds = jfloat(time.Since(start).Seconds())
	if o.json {
		enc := json.NewEncoder(stdout)
		return enc.Encode(sum)
	}
	return writeText(stdout, o.file, sum)
}

// isEpoch reports whether timestamps look like Unix times (after 1973),
// to be drawn as dates, rather than indices.
func isEpoch(secs []float64) bool { return len(secs) > 0 && secs[0] > 1e8 }

func writeText(w io.Writer, file string, s summary) error {
	_, err := fmt.Fprintf(w, `%s: %s, %d points, %d scored
  mse %.6g  mae %.6g  rmse %.6g   (scaled: mse %.6g  mae %.6g)
  persistence: mse %.6g  mae %.6g   (scaled: mse %.6g  mae %.6g)
  interval coverage %.4g (nominal %.4g, on %d forecasts)
  model size %d (max %d), %d bytes; %d updates, %.0f ns/update, %.0f ns/forecast; %.3f s
`, file, s.Model, s.NPoints, s.NScored,
		float64(s.MSE), float64(s.MAE), float64(s.RMSE), float64(s.MSEScaled), float64(s.MAEScaled),
		float64(s.PersistenceMSE), float64(s.PersistenceMAE), float64(s.PersistenceMSEScaled), float64(s.PersistenceMAEScaled),
		float64(s.IntervalCoverage), float64(s.CoverageNominal), s.NIntervals,
		s.ModelSize, s.MaxModelSize, s.ModelBytes, s.Updates, float64(s.NsPerUpdate), float64(s.NsPerForecast), float64(s.Seconds))
	if err == nil && s.SkippedRows > 0 {
		_, err = fmt.Fprintf(w, "  skipped %d unparsable rows\n", s.SkippedRows)
	}
	if err == nil && s.Dropped > 0 {
		_, err = fmt.Fprintf(w, "  dropped %d points out of time order\n", s.Dropped)
	}
	return err
}
