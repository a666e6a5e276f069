package lab

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"runtime"

	"github.com/forecastd/forecastd/internal/cmdline"
	"github.com/forecastd/forecastd/lab/nab"
)

// NAB is `forecastd nab [--windows FILE] [--json] [--files] [--KEY V…]
// DIR`: it runs every file labelled in the windows file (default
// DIR/anomaly_windows.json) through a series with the default
// configuration, changed by any [model] key given as a flag, and scores
// the detector's events under NAB's standard profile (lab/nab).
func NAB(args []string, stdout, stderr io.Writer, env Env) error {
	fs := flag.NewFlagSet("nab", flag.ContinueOnError)
	fs.SetOutput(stderr)
	windows := fs.String("windows", "", "labelled windows (NAB's combined_windows.json); default DIR/anomaly_windows.json")
	asJSON := fs.Bool("json", false, "print the results as JSON")
	byFile := fs.Bool("files", false, "also print each file's windows detected and missed and its false positives (JSON: always, as by_file)")
	model := env.Models.AddFlags(fs) // the [model] keys, anomaly_* among them, as flags
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: forecastd nab [--windows FILE] [--json] [--files] [--KEY VALUE for any [model] key, e.g. --anomaly_surprise 1.5] DIR")
		cmdline.PrintFlags(fs)
	}
	dir, err := parseDir(fs, args)
	if err != nil {
		return err
	}
	if *windows == "" {
		*windows = filepath.Join(dir, "anomaly_windows.json")
	}
	ws, err := nab.LoadWindows(*windows)
	if err != nil {
		return err
	}
	cfg, err := model.Config("")
	if err != nil {
		return usageError(err)
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
	var per []map[string]any
	for i, f := range files {
		if !*asJSON && !*byFile {
			break
		}
		r, err := nab.At(files[i:i+1], nab.Standard, nab.EventThreshold)
		if err != nil {
			return err
		}
		per = append(per, map[string]any{"file": f.Name, "windows": r.TP + r.FN, "detected": r.TP, "missed": r.FN, "false_positives": r.FP})
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
