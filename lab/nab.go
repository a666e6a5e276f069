package lab

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/forecastd/forecastd/internal/cmdline"
	"github.com/forecastd/forecastd/lab/nab"
)

// gridFlag collects --grid KEY=V1,V2,… flags, in order.
type gridFlag []gridAxis

type gridAxis struct {
	key    string
	values []string
}

func (g *gridFlag) String() string { return "" }

func (g *gridFlag) Set(s string) error {
	key, vals, ok := strings.Cut(s, "=")
	if !ok || key == "" || vals == "" {
		return fmt.Errorf("want KEY=V1,V2,…, got %q", s)
	}
	*g = append(*g, gridAxis{key: strings.TrimPrefix(key, "--"), values: strings.Split(vals, ",")})
	return nil
}

// candidates returns the grid's points: every combination of one value
// per axis, the first axis varying slowest; one empty point without axes.
func (g gridFlag) candidates() [][][2]string {
	out := [][][2]string{nil}
	for _, ax := range g {
		var next [][][2]string
		for _, c := range out {
			for _, v := range ax.values {
				next = append(next, append(append([][2]string(nil), c...), [2]string{ax.key, v}))
			}
		}
		out = next
	}
	return out
}

func candidateName(c [][2]string) string {
	if len(c) == 0 {
		return "(the flags as given)"
	}
	parts := make([]string, len(c))
	for i, kv := range c {
		parts[i] = kv[0] + "=" + kv[1]
	}
	return strings.Join(parts, " ")
}

// NAB is `forecastd nab [--windows FILE] [--json] [--files] [--holdout
// [--grid KEY=V1,V2,…]…] [--KEY V…] DIR`: it runs every file labelled in
// the windows file (default DIR/anomaly_windows.json) through a series
// with the default configuration, changed by any [model] key given as a
// flag, and scores the detector's events under NAB's three profiles, over
// all files and by category (lab/nab). With --holdout it runs every
// point of the grid and chooses among them leave-one-category-out.
func NAB(args []string, stdout, stderr io.Writer, env Env) error {
	fs := flag.NewFlagSet("nab", flag.ContinueOnError)
	fs.SetOutput(stderr)
	windows := fs.String("windows", "", "labelled windows (NAB's combined_windows.json); default DIR/anomaly_windows.json")
	asJSON := fs.Bool("json", false, "print the results as JSON")
	byFile := fs.Bool("files", false, "also print each file's windows detected and missed and its false positives (JSON: always, as by_file)")
	holdout := fs.Bool("holdout", false, "leave one category (directory) out: for each, choose the point of --grid with the best standard score on the other categories, and score it on the one left out")
	var grid gridFlag
	fs.Var(&grid, "grid", "with --holdout, the `KEY=V1,V2,…` values of one [model] key to choose among (repeatable: every combination is a candidate)")
	jobs := fs.Int("jobs", runtime.GOMAXPROCS(0), "files run at once")
	model := env.Models.AddFlags(fs) // the [model] keys, anomaly_* among them, as flags
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: forecastd nab [--windows FILE] [--json] [--files] [--holdout [--grid KEY=V1,V2,…]…] [--KEY VALUE for any [model] key, e.g. --anomaly_surprise 1.5] DIR")
		cmdline.PrintFlags(fs)
	}
	dir, err := parseDir(fs, args)
	if err != nil {
		return err
	}
	if len(grid) > 0 && !*holdout {
		return usageError(fmt.Errorf("--grid needs --holdout"))
	}
	for _, ax := range grid {
		if fs.Lookup(ax.key) == nil {
			return usageError(fmt.Errorf("--grid %s: no such [model] key", ax.key))
		}
	}
	if *windows == "" {
		*windows = filepath.Join(dir, "anomaly_windows.json")
	}
	ws, err := nab.LoadWindows(*windows)
	if err != nil {
		return err
	}
	run := func() ([]nab.File, error) {
		cfg, err := model.Config("")
		if err != nil {
			return nil, usageError(err)
		}
		return nab.Run(dir, ws, cfg, func() nab.Detector { return nab.Events{} }, *jobs)
	}
	if *holdout {
		return nabHoldout(fs, grid, run, stdout, stderr, *asJSON)
	}
	files, err := run()
	if err != nil {
		return err
	}
	return nabReport(files, stdout, *asJSON, *byFile)
}

// profileResults are a run's scores under one profile, at every event and
// at NAB's best threshold.
type profileResults struct {
	Profile string     `json:"profile"`
	Events  nab.Result `json:"events"`
	Best    nab.Result `json:"best"`
}

func nabReport(files []nab.File, stdout io.Writer, asJSON, byFile bool) error {
	var profs []profileResults
	for _, p := range nab.AllProfiles {
		events, err := nab.At(files, p, nab.EventThreshold)
		if err != nil {
			return err
		}
		best, err := nab.Best(files, p)
		if err != nil {
			return err
		}
		profs = append(profs, profileResults{p.Name, events, best})
	}
	groups, err := nab.Groups(files, nab.AllProfiles, nab.EventThreshold)
	if err != nil {
		return err
	}
	var per []map[string]any
	for i, f := range files {
		if !asJSON && !byFile {
			break
		}
		r, err := nab.At(files[i:i+1], nab.Standard, nab.EventThreshold)
		if err != nil {
			return err
		}
		per = append(per, map[string]any{"file": f.Name, "windows": r.TP + r.FN, "detected": r.TP, "missed": r.FN,
			"false_positives": r.FP, "raw": r.Raw})
	}
	if asJSON {
		var cats []map[string]any
		for _, g := range groups {
			c := map[string]any{"category": g.Group, "files": g.Files}
			for i, p := range nab.AllProfiles {
				c[p.Name] = g.Results[i]
			}
			cats = append(cats, c)
		}
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(map[string]any{"files": len(files), "profile": nab.Standard.Name, "events": profs[0].Events, "best": profs[0].Best,
			"profiles": profs, "categories": cats, "by_file": per})
	}
	ev := profs[0].Events
	fmt.Fprintf(stdout, "NAB, %d files, %d windows\n", len(files), ev.TP+ev.FN)
	for _, pr := range profs {
		e, b := pr.Events, pr.Best
		fmt.Fprintf(stdout, "%-19s every event opened:        score %5.1f  (detected %d, missed %d, false positives %d)\n", pr.Profile, e.Score, e.TP, e.FN, e.FP)
		fmt.Fprintf(stdout, "%-19s best threshold %-10.4g  score %5.1f  (detected %d, missed %d, false positives %d)\n", "", b.Threshold, b.Score, b.TP, b.FN, b.FP)
	}
	fmt.Fprintf(stdout, "\nby category, every event opened:\n%-22s %5s %7s %8s %6s %15s %8s %8s %8s\n", "category", "files", "windows", "detected", "missed", "false positives", "standard", "low FP", "low FN")
	for _, g := range groups {
		r := g.Results
		fmt.Fprintf(stdout, "%-22s %5d %7d %8d %6d %15d %8.1f %8.1f %8.1f\n", g.Group, g.Files, r[0].TP+r[0].FN, r[0].TP, r[0].FN, r[0].FP, r[0].Score, r[1].Score, r[2].Score)
	}
	if byFile {
		fmt.Fprintf(stdout, "\n%-60s %7s %8s %6s %15s %7s\n", "file", "windows", "detected", "missed", "false positives", "raw")
		for _, r := range per {
			fmt.Fprintf(stdout, "%-60s %7d %8d %6d %15d %7.3f\n", r["file"], r["windows"], r["detected"], r["missed"], r["false_positives"], r["raw"])
		}
	}
	return nil
}

// nabHoldout runs every candidate of the grid (each axis's key set on fs
// to its value) and reports leave-one-category-out.
func nabHoldout(fs *flag.FlagSet, grid gridFlag, run func() ([]nab.File, error), stdout, stderr io.Writer, asJSON bool) error {
	cands := grid.candidates()
	runs := make([][]nab.File, len(cands))
	for k, c := range cands {
		for _, kv := range c {
			if err := fs.Set(kv[0], kv[1]); err != nil {
				return usageError(fmt.Errorf("--grid %s=%s: %w", kv[0], kv[1], err))
			}
		}
		files, err := run()
		if err != nil {
			return err
		}
		runs[k] = files
		r, err := nab.At(files, nab.Standard, nab.EventThreshold)
		if err != nil {
			return err
		}
		fmt.Fprintf(stderr, "candidate %d/%d: %s: standard %.1f (detected %d, false positives %d)\n", k+1, len(cands), candidateName(c), r.Score, r.TP, r.FP)
	}
	h, err := nab.LeaveOneGroupOut(runs, nab.Standard, nab.AllProfiles, nab.EventThreshold)
	if err != nil {
		return err
	}
	if asJSON {
		return holdoutJSON(stdout, cands, h)
	}
	fmt.Fprintf(stdout, "leave one category out: %d candidates, chosen by the standard profile on the other categories, every event opened\n", len(cands))
	fmt.Fprintf(stdout, "%-22s %7s %8s %8s %8s %8s  %s\n", "held out", "windows", "rest", "standard", "low FP", "low FN", "chosen")
	for _, f := range h.Folds {
		r := f.HeldOut
		fmt.Fprintf(stdout, "%-22s %7d %8.1f %8.1f %8.1f %8.1f  %s\n", f.Group, r[0].TP+r[0].FN, f.Rest.Score, r[0].Score, r[1].Score, r[2].Score, candidateName(cands[f.Chosen]))
	}
	m := h.HeldOutMean
	fmt.Fprintf(stdout, "%-22s %7s %8s %8.1f %8.1f %8.1f\n", "mean held out", "", "", m[0], m[1], m[2])
	fmt.Fprintf(stdout, "\nfitted on every file: %s\n", candidateName(cands[h.Fitted]))
	for _, g := range h.FittedGroups {
		r := g.Results
		fmt.Fprintf(stdout, "%-22s %7d %8s %8.1f %8.1f %8.1f\n", g.Group, r[0].TP+r[0].FN, "", r[0].Score, r[1].Score, r[2].Score)
	}
	fm, fa := h.FittedMean, h.FittedAll
	fmt.Fprintf(stdout, "%-22s %7s %8s %8.1f %8.1f %8.1f\n", "mean of categories", "", "", fm[0], fm[1], fm[2])
	fmt.Fprintf(stdout, "%-22s %7d %8s %8.1f %8.1f %8.1f\n", "every file", fa[0].TP+fa[0].FN, "", fa[0].Score, fa[1].Score, fa[2].Score)
	return nil
}

// holdoutJSON writes h, over the grid's candidates cands, as JSON.
func holdoutJSON(stdout io.Writer, cands [][][2]string, h nab.Holdout) error {
	type fold struct {
		Category string                `json:"category"`
		Chosen   string                `json:"chosen"`
		Rest     nab.Result            `json:"rest"`
		HeldOut  map[string]nab.Result `json:"held_out"`
	}
	out := struct {
		Candidates  []string                      `json:"candidates"`
		Folds       []fold                        `json:"folds"`
		HeldOutMean map[string]float64            `json:"held_out_mean"`
		Fitted      string                        `json:"fitted"`
		FittedAll   map[string]nab.Result         `json:"fitted_all"`
		FittedCats  map[string]map[string]float64 `json:"fitted_categories"`
		FittedMean  map[string]float64            `json:"fitted_mean"`
	}{HeldOutMean: map[string]float64{}, Fitted: candidateName(cands[h.Fitted]), FittedAll: map[string]nab.Result{},
		FittedCats: map[string]map[string]float64{}, FittedMean: map[string]float64{}}
	for _, c := range cands {
		out.Candidates = append(out.Candidates, candidateName(c))
	}
	for i, p := range h.Profiles {
		out.HeldOutMean[p.Name] = h.HeldOutMean[i]
		out.FittedAll[p.Name] = h.FittedAll[i]
		out.FittedMean[p.Name] = h.FittedMean[i]
	}
	for _, f := range h.Folds {
		fd := fold{Category: f.Group, Chosen: candidateName(cands[f.Chosen]), Rest: f.Rest, HeldOut: map[string]nab.Result{}}
		for i, p := range h.Profiles {
			fd.HeldOut[p.Name] = f.HeldOut[i]
		}
		out.Folds = append(out.Folds, fd)
	}
	for _, g := range h.FittedGroups {
		m := map[string]float64{}
		for i, p := range h.Profiles {
			m[p.Name] = g.Results[i].Score
		}
		out.FittedCats[g.Group] = m
	}
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}
