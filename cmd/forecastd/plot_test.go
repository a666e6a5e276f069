package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/forecastd/forecastd/internal/cmdline"
	"github.com/forecastd/forecastd/lab"
	"github.com/forecastd/forecastd/lab/plot"
)

// The tests run backtest --plot as a build with -tags plot does (plot_tag.go):
// the test binary draws, the daemon's default build does not.
func init() { plotter = plot.Write }

// TestBacktestPlotNotBuilt: without plots built in, --plot is a usage
// error that says which build has them, and writes nothing.
func TestBacktestPlotNotBuilt(t *testing.T) {
	out := filepath.Join(t.TempDir(), "p.svg")
	env := labEnv()
	env.Plot = nil
	var stderr strings.Builder
	err := lab.Backtest([]string{"--plot", out, "../../testdata/series/santafe_laser_a.csv"}, &stderr, &stderr, env)
	var ue cmdline.UsageError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "-tags plot") {
		t.Errorf("%v; want a usage error naming the build tag that plots", err)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("%s written (%v)", out, err)
	}
}

// TestDaemonLinksNoPlot: the daemon's build leaves gonum/plot (and its
// fonts) out; -tags plot brings it in.
func TestDaemonLinksNoPlot(t *testing.T) {
	for _, tc := range []struct {
		tags string
		want bool
	}{{"", false}, {"plot", true}} {
		b, err := exec.Command("go", "list", "-tags", tc.tags, "-deps", ".").Output()
		if err != nil {
			t.Fatalf("go list -deps: %v", err)
		}
		if got := strings.Contains(string(b), "gonum.org/v1/plot\n"); got != tc.want {
			t.Errorf("tags %q: links gonum.org/v1/plot %v, want %v", tc.tags, got, tc.want)
		}
	}
}

// TestBacktestPlot: backtest --plot through the command, an H = 12
// backtest's SVG titled by its 12-step forecasts.
func TestBacktestPlot(t *testing.T) {
	out := filepath.Join(t.TempDir(), "p.svg")
	mustCLI(t, "backtest", "--horizon", "12", "--plot", out, "../../testdata/series/santafe_laser_a.csv")
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if s := string(b); !strings.Contains(s, "12 steps ahead") || strings.Contains(s, "one-step") {
		t.Errorf("the H = 12 plot's title is not that of its 12-step forecasts")
	}
}
