package main

import (
	"github.com/forecastd/forecastd/lab"
)

// plotter draws backtest --plot. It is set only in a build with the tag
// "plot" (plot_tag.go): gonum/plot would put some 4 MB of fonts into the
// daemon, which never draws.
var plotter lab.Plotter

// labEnv is what the research commands (backtest, tune, nab, thresholds)
// take from this binary: the [model] schema and, if built in, plots.
func labEnv() lab.Env {
	return lab.Env{
		Models:   lab.ConfigModels{},
		Plot:     plotter,
		PlotHint: `build it with "-tags plot" (go run -tags plot ./cmd/forecastd backtest --plot …)`,
	}
}
