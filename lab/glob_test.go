package lab

import (
	"testing"

	"github.com/forecastd/forecastd/pipeline"
	"github.com/forecastd/forecastd/runner"
)

// backtest --config applies a rule matching "*" to a series whose key
// holds a path, as the daemon does.
func TestBacktestRuleMatchesPath(t *testing.T) {
	def := pipeline.DefaultConfig()
	rule := pipeline.DefaultConfig()
	rule.Window = def.Window + 1
	got := configFor("testdata/series/santafe_laser_a.csv", def, []runner.Rule{{Match: "*", Config: rule}})
	if got.Window != rule.Window {
		t.Error(`the rule match = "*" does not apply to a key holding '/'`)
	}
}
