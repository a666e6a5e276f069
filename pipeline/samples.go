package pipeline

// Samples runs pts through a series configured by cfg exactly as the daemon
// would and returns every training sample its model was given, in order:
// the input vectors (copies, each of length cfg.Dim) and their targets, in
// the model's units. It is what `forecastd tune` selects parameters on, so
// that the chosen C, ε and γ are those of the samples the daemon learns
// from. Points the series drops (out of order, non-finite) are skipped, as
// the daemon skips them. Learning itself is skipped: only the feature
// mapping runs, which is why the model's own parameters do not matter.
func Samples(cfg Config, pts []Point) (xs [][]float64, ys []float64, err error) {
	s, err := New("samples", cfg)
	if err != nil {
		return nil, nil, err
	}
	s.sampleHook = func(x []float64, y float64) bool {
		xs = append(xs, append([]float64(nil), x...))
		ys = append(ys, y)
		return false
	}
	for _, p := range pts {
		_, _ = s.Push(p) // a dropped point is skipped, as in the daemon
	}
	return xs, ys, nil
}
