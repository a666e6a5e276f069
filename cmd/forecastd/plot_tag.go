//go:build plot

package main

import "github.com/forecastd/forecastd/lab/plot"

// A build with -tags plot draws backtest --plot (lab.go).
func init() { plotter = plot.Write }
