// Package plot draws a backtest's forecasts, their prediction interval and
// the actual values to an SVG or PNG file with gonum/plot.
//
// It is apart from the backtest (lab) because gonum/plot links
// its fonts, some 4 MB, into any binary that imports it: the daemon
// (cmd/forecastd) is built without it, and only a build with the "plot"
// tag hands Write to backtest --plot.
package plot
