package lab

import (
	"flag"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/forecastd/forecastd/internal/dataset"
	"github.com/forecastd/forecastd/pipeline"
)

// defaultModels is a [model] schema without keys: every command's model is
// pipeline.DefaultConfig. The schema itself, its flags and its files, is
// cmd/forecastd's, tested there through the commands.
type defaultModels struct{}

func (defaultModels) AddFlags(*flag.FlagSet, ...string) ModelFlags { return defaultModels{} }
func (defaultModels) Config(string) (pipeline.Config, error)       { return pipeline.DefaultConfig(), nil }
func (defaultModels) Rules(string) ([]pipeline.Rule, error)        { return nil, nil }
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

// FuzzReadSeries feeds arbitrary files to the CSV reader: it must not
// panic, and what it returns must be consistent.
func FuzzReadSeries(f *testing.F) {
	f.Add([]byte("t,value\n1,2\n2,3\n"), false)
	f.Add([]byte("time,value\n2024-01-01T00:00:00Z,1.5\nx,2\n3,\"4\"\n"), true)
	f.Add([]byte("value\n1\n\"2\n3,4\n"), true)
	f.Add([]byte("\ufefft,value,extra\n1,NaN,3\n1e300,1e-300\n"), false)
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte, skip bool) {
		p := filepath.Join(dir, "f.csv")
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		s, err := readSeries(p, "value", "", skip)
		if err != nil {
			if !strings.HasPrefix(err.Error(), p) {
				t.Fatalf("error %q does not name the file", err)
			}
			return
		}
		n := len(s.values)
		if len(s.times) != n || len(s.labels) != n || len(s.secs) != n {
			t.Fatalf("lengths %d %d %d %d", n, len(s.times), len(s.labels), len(s.secs))
		}
		for _, v := range s.values {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				t.Fatalf("non-finite value %v", v)
			}
		}
	})
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
