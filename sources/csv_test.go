package sources

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/forecastd/forecastd/pipeline"
)

// FuzzReadCSV feeds arbitrary files to the CSV reader: it must not
// panic, and what it returns must be consistent.
func FuzzReadCSV(f *testing.F) {
	f.Add([]byte("t,value\n1,2\n2,3\n"), false)
	f.Add([]byte("time,value\n2024-01-01T00:00:00Z,1.5\nx,2\n3,\"4\"\n"), true)
	f.Add([]byte("value\n1\n\"2\n3,4\n"), true)
	f.Add([]byte("\ufefft,value,extra\n1,NaN,3\n1e300,1e-300\n"), false)
	f.Add([]byte("time,value\n1650-01-01T00:00:00Z,1\n-9e10,2\n9999-12-31 23:59:59,3\n"), true)
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte, skip bool) {
		p := filepath.Join(dir, "f.csv")
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		s, err := ReadCSV(p, "value", "", skip)
		if err != nil {
			if !strings.HasPrefix(err.Error(), p) {
				t.Fatalf("error %q does not name the file", err)
			}
			return
		}
		n := len(s.Values)
		if len(s.Times) != n || len(s.Labels) != n || len(s.Secs) != n {
			t.Fatalf("lengths %d %d %d %d", n, len(s.Times), len(s.Labels), len(s.Secs))
		}
		for _, v := range s.Values {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				t.Fatalf("non-finite value %v", v)
			}
		}
		for _, tm := range s.Times {
			if s.HasTime && !pipeline.InTimeRange(tm) {
				t.Fatalf("time %v, outside the times forecastd computes with", tm)
			}
		}
	})
}
