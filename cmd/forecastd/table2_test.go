package main

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/forecastd/forecastd/lab/dataset"
	"github.com/forecastd/forecastd/lab/mackeyglass"
)

// Table 2 of Ma, Theiler and Perkins (2003): on-line and fixed AOSVR
// predictors, RBF γ = 1, C = 10, ε = 0.1, B = 5, series scaled to [−1, 1]
// by their min and max, first half learned, second half scored; MSE and MAE
// in scaled units. Columns: on-line MSE, MAE; fixed MSE, MAE.
var paperTable2 = map[string][4]float64{
	"santafe":     {0.0072, 0.0588, 0.0097, 0.0665},
	"mackeyglass": {0.0034, 0.0506, 0.0036, 0.0522},
}

// The goals of the bounded regressors under this protocol, on the Santa Fe
// laser and the yearly sunspots: an on-line MSE at most boundVsAOSVR times
// AOSVR W = 200's and at most boundVsPersistence times persistence's.
const (
	boundVsAOSVR       = 2.0
	boundVsPersistence = 0.6
)

// boundedTargets lists, by series key, the models whose goals
// TestPaperTable2 asserts with the pipeline's defaults: both bounded
// kinds on both series (NORMA on the sunspots since its default became
// τ = 48, norma_merge κ = 0.85; at τ = 32, κ = 0.8 it missed both, at
// 2.02× AOSVR W = 200 and 0.61× persistence).
var boundedTargets = map[string][]string{
	"santafe":  {"SOG-SVR", "NORMA"},
	"sunspots": {"SOG-SVR", "NORMA"},
}

// table2 runs the protocol on the series in file and returns the summaries
// of the on-line and the fixed predictor.
func table2(t *testing.T, file string, values []float64, model, window string) (online, fixed map[string]any) {
	scale := fmt.Sprintf("fixed:%s,%s", strconv.FormatFloat(slices.Min(values), 'g', -1, 64), strconv.FormatFloat(slices.Max(values), 'g', -1, 64))
	args := []string{"--model", model, "--window", window, "--kernel", "rbf", "--gamma", "1", "--c", "10", "--epsilon", "0.1",
		"--dim", "5", "--delay", "1", "--scale", scale, "--target", "level", "--seasons", "", "--combine=false",
		"--train", strconv.Itoa(len(values) / 2), file}
	return backtestJSON(t, args...), backtestJSON(t, append([]string{"--freeze"}, args...)...)
}

// table2Series are the series of TestPaperTable2: the paper's two, then
// every series in testdata/series.
type table2Series struct {
	name, key string
	values    []float64
}

// table2Models are the models of TestPaperTable2, AOSVR W = 200 before the
// bounded ones (their ratios are to its MSE).
var table2Models = []struct{ label, model, window string }{
	{"AOSVR W = 0", "aosvr", "0"}, {"AOSVR W = 200", "aosvr", "200"},
	{"SOG-SVR", "sogsvr", "0"}, {"NORMA", "norma", "0"},
}

// TestPaperTable2 reproduces Table 2 for every model on the paper's two
// series and on every series in testdata/series, logs it as the Markdown
// table of BENCHMARKS.md (next to the paper's values and persistence, with
// each on-line MSE ÷ AOSVR W = 200's and ÷ persistence's), checks the
// paper's claims on its own model, AOSVR without forgetting (W = 0, the
// paper's growing training set): the on-line predictor beats the fixed one
// on Santa Fe and on Mackey-Glass, in MSE and MAE, and on Santa Fe its MSE
// is within 5 % of the paper's 0.0072; and checks the bounded regressors'
// goals that boundedTargets lists.
//
// Mackey-Glass: 1500 points of lab/mackeyglass (τ = 17, RK4 dt = 0.1,
// sampled every time unit, the first 1000 discarded). "Fixed": --freeze
// after the first half, learned by the same online procedure (for AOSVR
// exactly the batch solution on those samples).
//
//	go test -run PaperTable2 -v ./cmd/forecastd
func TestPaperTable2(t *testing.T) {
	series := []table2Series{
		{"Santa Fe laser A", "santafe", dataset.MustLoad("santafe_laser_a").Values},
		{"Mackey-Glass τ = 17", "mackeyglass", mackeyglass.Generate(1500, mackeyglass.Config{})},
		{"sensor_temperature_15min", "", dataset.MustLoad("sensor_temperature_15min").Values},
		{"market_price_daily", "", dataset.MustLoad("market_price_daily").Values},
		{"sunspots_yearly", "sunspots", dataset.MustLoad("sunspots_yearly").Values},
	}
	var b strings.Builder
	fmt.Fprintln(&b, "| series | model | on-line MSE | on-line MAE | fixed MSE | fixed MAE | persistence MSE | persistence MAE | model size (max) | ÷ AOSVR W = 200 | ÷ persistence |")
	fmt.Fprintln(&b, "|---|---|---|---|---|---|---|---|---|---|---|")
	for _, s := range series {
		file := valuesCSV(t, "series.csv", s.values)
		paper, inPaper := paperTable2[s.key]
		if inPaper {
			fmt.Fprintf(&b, "| %s | **paper (AOSVR)** | **%.4f** | **%.4f** | **%.4f** | **%.4f** | | | | | |\n", s.name, paper[0], paper[1], paper[2], paper[3])
		}
		var aosvr200 float64
		for _, c := range table2Models {
			on, fx := table2(t, file, s.values, c.model, c.window)
			mse, pmse := num(t, on, "mse_scaled"), num(t, on, "persistence_mse_scaled")
			if c.label == "AOSVR W = 200" {
				aosvr200 = mse
			}
			vsAOSVR := "" // AOSVR W = 0 runs before W = 200
			if aosvr200 > 0 {
				vsAOSVR = fmt.Sprintf("%.3f", mse/aosvr200)
			}
			fmt.Fprintf(&b, "| %s | %s | %.4g | %.4g | %.4g | %.4g | %.4g | %.4g | %d (%d) | %s | %.3f |\n", s.name, c.label,
				mse, num(t, on, "mae_scaled"), num(t, fx, "mse_scaled"), num(t, fx, "mae_scaled"),
				pmse, num(t, on, "persistence_mae_scaled"),
				int(num(t, on, "model_size")), int(num(t, on, "max_model_size")), vsAOSVR, mse/pmse)
			checkTable2Run(t, s, c.label, on, fx)
			if slices.Contains(boundedTargets[s.key], c.label) {
				if mse > boundVsAOSVR*aosvr200 {
					t.Errorf("%s %s: on-line MSE %.4g is %.3f× AOSVR W = 200's %.4g, want at most %g×", s.name, c.label, mse, mse/aosvr200, aosvr200, boundVsAOSVR)
				}
				if mse > boundVsPersistence*pmse {
					t.Errorf("%s %s: on-line MSE %.4g is %.3f× persistence's %.4g, want at most %g×", s.name, c.label, mse, mse/pmse, pmse, boundVsPersistence)
				}
			}
		}
	}
	t.Logf("scaled units; first half learned, second half scored\n%s", b.String())
}

// checkTable2Run checks one model's run of TestPaperTable2: the second half
// scored, the first half learned by the fixed predictor, and for AOSVR
// W = 0 on the paper's series the paper's claims.
func checkTable2Run(t *testing.T, s table2Series, label string, on, fx map[string]any) {
	t.Helper()
	n := len(s.values)
	if got := num(t, on, "n_scored"); got != float64(n-n/2) {
		t.Errorf("%s %s: n_scored %v, want the second half, %d", s.name, label, got, n-n/2)
	}
	if got := num(t, fx, "updates"); got != float64(n/2-5) {
		t.Errorf("%s %s: the fixed predictor made %v updates, want %d (the first half's samples)", s.name, label, got, n/2-5)
	}
	paper, inPaper := paperTable2[s.key]
	if !inPaper || label != "AOSVR W = 0" {
		return
	}
	if !(num(t, on, "mse_scaled") < num(t, fx, "mse_scaled")) || !(num(t, on, "mae_scaled") < num(t, fx, "mae_scaled")) {
		t.Errorf("%s: the on-line predictor does not beat the fixed one", s.name)
	}
	if got := num(t, on, "mse_scaled"); s.key == "santafe" && math.Abs(got-paper[0]) > 0.05*paper[0] {
		t.Errorf("%s: on-line MSE %.5f, want the paper's %.4f ± 5 %%", s.name, got, paper[0])
	}
}
