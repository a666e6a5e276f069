package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"runtime"

	"github.com/forecastd/forecastd/internal/nab"
	"github.com/forecastd/forecastd/pipeline"
)

// runNAB is `forecastd nab [--windows FILE] [--json] DIR`: it runs every
// file labelled in the windows file (default DIR/anomaly_windows.json)
// through a series with the default configuration and scores the
// detector's events under NAB's standard profile (internal/nab).
func runNAB(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("nab", flag.ContinueOnError)
	fs.SetOutput(stderr)
	windows := fs.String("windows", "", "labelled windows (NAB's combined_windows.json); default DIR/anomaly_windows.json")
	asJSON := fs.Bool("json", false, "print the results as JSON")
	byFile := fs.Bool("files", false, "also print each file's windows detected and missed and its false positives (JSON: always, as by_file)")
	learn := fs.Bool("learn-anomalies", pipeline.DefaultLearnAnomalies, "learn the points inside open anomaly events")
	threshold := fs.Float64("anomaly-threshold", pipeline.DefaultAnomalyThreshold, "anomaly score `S` above which a point is outside")
	openK := fs.Int("anomaly-open-k", 1, "an event opens when `K` of the last anomaly-open-n points were outside")
	openN := fs.Int("anomaly-open-n", 1, "the debounce window `N`")
	closeM := fs.Int("anomaly-close-m", pipeline.DefaultAnomalyCloseM, "an event closes after `M` points inside")
	stepFloor := fs.Float64("anomaly-step-floor", pipeline.DefaultAnomalyStepFloor, "half-widths count as at least `F` times the mean absolute change (0: no floor)")
	surprise := fs.Float64("anomaly-surprise", pipeline.DefaultAnomalySurprise, "an event opens only above `C` times the highest score of the previous anomaly-surprise-window (0: off)")
	extremeQuiet := fs.Duration("anomaly-extreme-quiet", pipeline.DefaultAnomalyExtremeQuiet, "an event opens on a new all-time high or low after `Q` without one (0: off)")
	surpriseWindow := fs.Duration("anomaly-surprise-window", pipeline.DefaultAnomalySurpriseWindow, "the time `W` of anomaly-surprise")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: forecastd nab [--windows FILE] [--json] [--files] [--learn-anomalies=BOOL] [--anomaly-threshold S] [--anomaly-open-k K --anomaly-open-n N] [--anomaly-close-m M] [--anomaly-step-floor F] [--anomaly-surprise C] [--anomaly-surprise-window W] [--anomaly-extreme-quiet Q] DIR")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return err
		}
		return usageError{err}
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return usageError{fmt.Errorf("want one directory, got %d arguments", fs.NArg())}
	}
	dir := fs.Arg(0)
	if *windows == "" {
		*windows = filepath.Join(dir, "anomaly_windows.json")
	}
	ws, err := nab.LoadWindows(*windows)
	if err != nil {
		return err
	}
	cfg := pipeline.DefaultConfig()
	cfg.LearnAnomalies = *learn
	cfg.Anomaly.Threshold, cfg.Anomaly.M = *threshold, *closeM
	cfg.Anomaly.K, cfg.Anomaly.N = *openK, *openN
	cfg.Anomaly.StepFloor, cfg.Anomaly.Surprise, cfg.Anomaly.SurpriseWindow = *stepFloor, *surprise, *surpriseWindow
	cfg.Anomaly.ExtremeQuiet = *extremeQuiet
	if err := cfg.Validate(); err != nil {
		return usageError{err}
	}
	files, err := nab.Run(dir, ws, cfg, func() nab.Detector { return nab.Events{} }, runtime.GOMAXPROCS(0))
	if err != nil {
		return err
	}
	events, err := nab.At(files, nab.Standard, nab.EventThreshold)
	if err != nil {
		return err
	}
	best, err := nab.Best(files, nab.Standard)
	if err != nil {
		return err
	}
	per := make([]map[string]any, len(files))
	for i, f := range files {
		r, err := nab.At(files[i:i+1], nab.Standard, nab.EventThreshold)
		if err != nil {
			return err
		}
		per[i] = map[string]any{"file": f.Name, "windows": r.TP + r.FN, "detected": r.TP, "missed": r.FN, "false_positives": r.FP}
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(map[string]any{"files": len(files), "profile": nab.Standard.Name, "events": events, "best": best, "by_file": per})
	}
	fmt.Fprintf(stdout, "NAB %s profile, %d files, %d windows\n", nab.Standard.Name, len(files), events.TP+events.FN)
	fmt.Fprintf(stdout, "every event opened:        score %5.1f  (detected %d, missed %d, false positives %d)\n", events.Score, events.TP, events.FN, events.FP)
	fmt.Fprintf(stdout, "best threshold %-10.4g  score %5.1f  (detected %d, missed %d, false positives %d)\n", best.Threshold, best.Score, best.TP, best.FN, best.FP)
	if *byFile {
		fmt.Fprintf(stdout, "%-60s %7s %8s %6s %15s\n", "file", "windows", "detected", "missed", "false positives")
		for _, r := range per {
			fmt.Fprintf(stdout, "%-60s %7d %8d %6d %15d\n", r["file"], r["windows"], r["detected"], r["missed"], r["false_positives"])
		}
	}
	return nil
}
