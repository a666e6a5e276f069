package lab

import (
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/forecastd/forecastd/internal/cmdline"
	"github.com/forecastd/forecastd/lab/thresholdbench"
)

// Thresholds is `forecastd thresholds [--write] [--sweep P,…] [--KEY
// V…] DIR`: it scores forecastd's threshold events ("avail below 0") on
// the generated disks of DIR (testdata/thresholds) against the
// node-mixin's predict_linear rules on the same data, and prints the
// table of BENCHMARKS.md "Alerts before the threshold". The model is the
// default at step 1h, horizon 48, changed by any [model] key given as a
// flag (threshold_probability, threshold_open, threshold_close among
// them).
func Thresholds(args []string, stdout, stderr io.Writer, env Env) error {
	fs := flag.NewFlagSet("thresholds", flag.ContinueOnError)
	fs.SetOutput(stderr)
	write := fs.Bool("write", false, "generate the scenario set into DIR first (3 seeds of each kind, at 10s and 1m)")
	sweep := fs.String("sweep", "", "also score forecastd at each of these comma-separated threshold probabilities (rows \"forecastd p=P\")")
	model := env.Models.AddFlags(fs)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: forecastd thresholds [--write] [--sweep P,…] [--KEY VALUE for any [model] key, e.g. --threshold_probability 0.6] DIR")
		cmdline.PrintFlags(fs)
	}
	dir, err := parseDir(fs, args)
	if err != nil {
		return err
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	defaults := [][2]string{{"step", "1h"}, {"horizon", "48"}}
	if !set["threshold_above"] && !set["threshold_below"] {
		defaults = append(defaults, [2]string{"threshold_below", "0"}) // replaced by the scorer's "below 0"
	}
	for _, d := range defaults {
		if !set[d[0]] {
			if err := fs.Set(d[0], d[1]); err != nil {
				return err
			}
		}
	}
	cfg, err := model.Config("")
	if err != nil {
		return usageError(err)
	}
	th := cfg.Thresholds[0]
	cfg.Thresholds = nil
	if *write {
		if err := thresholdbench.WriteDir(dir, thresholdbench.Generate(3)); err != nil {
			return err
		}
	}
	ss, err := thresholdbench.ReadDir(dir)
	if err != nil {
		return err
	}
	ms := thresholdbench.Methods(cfg, th)
	ms[0].Name = fmt.Sprintf("forecastd (step %s, horizon %d)", fs.Lookup("step").Value, cfg.Horizon)
	rows, err := thresholdbench.Run(ms, ss)
	if err != nil {
		return err
	}
	if *sweep != "" {
		for _, f := range strings.Split(*sweep, ",") {
			p, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
			if err != nil {
				return usageError(fmt.Errorf("--sweep: %w", err))
			}
			t := th
			t.Probability = p
			r, err := thresholdbench.Score(thresholdbench.Forecastd(fmt.Sprintf("forecastd p=%g", p), cfg, t), "all", ss)
			if err != nil {
				return err
			}
			rows = append(rows, r)
		}
	}
	return thresholdbench.WriteTable(stdout, rows)
}
