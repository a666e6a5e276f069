package lab

import (
	"flag"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/forecastd/forecastd/lab/dataset"
	"github.com/forecastd/forecastd/pipeline"
	"github.com/forecastd/forecastd/runner"
)

// defaultModels is a [model] schema without keys: every command's model is
// pipeline.DefaultConfig. The schema itself, its flags and its files, is
// cmd/forecastd's, tested there through the commands.
type defaultModels struct{}

func (defaultModels) AddFlags(*flag.FlagSet, ...string) ModelFlags { return defaultModels{} }
func (defaultModels) Config(string) (pipeline.Config, error)       { return pipeline.DefaultConfig(), nil }
func (defaultModels) Rules(string) ([]runner.Rule, error)          { return nil, nil }
func (defaultModels) Influx(string) (InfluxDefaults, error)        { return InfluxDefaults{}, nil }

var testEnv = Env{Models: defaultModels{}}

// TestBacktestProgress: a run longer than the progress interval reports on
// stderr.
func TestBacktestProgress(t *testing.T) {
	defer func(d time.Duration) { progressEvery = d }(progressEvery)
	progressEvery = time.Nanosecond
	in := filepath.Join(dataset.Dir(), "sensor_temperature_15min.csv")
	var errOut strings.Builder
	err := Backtest([]string{in}, io.Discard, &errOut, testEnv)
	if err != nil || !strings.Contains(errOut.String(), "1024/5376 points (19%)") {
		t.Errorf("%v, stderr %q", err, errOut.String())
	}
}

// TestFlagDashedAliases: the dashed spellings of before still set their
// flags.
func TestFlagDashedAliases(t *testing.T) {
	b, err := parseBacktestFlags([]string{"--score-from", "0.5", "--skip-bad", "--time-column", "when", "--mase-period", "7", "f.csv"}, io.Discard, testEnv)
	if err != nil {
		t.Fatal(err)
	}
	if b.scoreFrom != 0.5 || !b.skipBad || b.timeColumn != "when" || b.masePeriod != 7 {
		t.Errorf("backtest: %+v", b)
	}
	tu, err := parseTuneFlags([]string{"--max-samples", "60", "--skip-bad", "--time-column", "when", "f.csv"}, io.Discard, testEnv)
	if err != nil {
		t.Fatal(err)
	}
	if tu.maxSamples != 60 || !tu.skipBad || tu.timeColumn != "when" {
		t.Errorf("tune: %+v", tu)
	}
}

// TestSeriesOrigin: a line-protocol series key, escapes and all, is read
// back into its measurement, tags and field.
func TestSeriesOrigin(t *testing.T) {
	if o, err := seriesOrigin(`disk,host=a\ b,path=/ used_percent`); err != nil || o.Measurement != "disk" || o.Field != "used_percent" ||
		len(o.Tags) != 2 || o.Tags[0].Value != "a b" || o.Tags[1].Value != "/" {
		t.Errorf("seriesOrigin: %+v, %v", o, err)
	}
}
