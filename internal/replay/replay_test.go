package replay

import (
	"io"
	"strings"
	"testing"
	"time"

	"github.com/forecastd/forecastd/internal/config"
	"github.com/forecastd/forecastd/sources"
)

// toyFormat is a data format registered by this test alone.
type toyFormat struct{}

var formatToy = sources.RegisterFormat(toyFormat{})

func (toyFormat) Name() string { return "toy" }
func (toyFormat) Doc() string  { return "toy" }
func (toyFormat) Fields() bool { return false }
func (toyFormat) Decode(_ *sources.Decoder, dst []sources.KeyedPoint, _ string, _ []byte, _ time.Time) ([]sources.KeyedPoint, error) {
	return dst, &sources.ParseError{Reason: sources.ReasonEmpty}
}

// TestFormatFlag: --format takes auto, csv and every registered data
// format; a data format other than influx replaces [input] data_format,
// and files are then read as payloads whatever their name.
func TestFormatFlag(t *testing.T) {
	for _, tc := range []struct {
		format, file string
		fileFormat   string
		data         sources.Format
	}{
		{"auto", "a.lp", "influx", sources.FormatJSON},
		{"auto", "a.csv", "csv", sources.FormatJSON},
		{"auto", "a.txt", "", sources.FormatJSON},
		{"influx", "a.txt", "influx", sources.FormatJSON},
		{"value", "a.lp", "", sources.FormatValue},
		{"toy", "a.lp", "", formatToy},
		{"toy", "a.csv", "", formatToy},
	} {
		o, err := ParseFlags([]string{"--format", tc.format, tc.file}, io.Discard, "")
		if err != nil {
			t.Errorf("--format %s: %v", tc.format, err)
			continue
		}
		if got := o.FileFormat(tc.file); got != tc.fileFormat {
			t.Errorf("--format %s: FileFormat(%s) = %q, want %q", tc.format, tc.file, got, tc.fileFormat)
		}
		c, err := Config(&config.Config{}, o.Format)
		if err != nil || c.Input.WithDefaults().DataFormat != tc.data {
			t.Errorf("--format %s: data_format %v, %v; want %v", tc.format, c.Input.DataFormat, err, tc.data)
		}
	}
	_, err := ParseFlags([]string{"--format", "xml", "a.txt"}, io.Discard, "")
	if want := `--format "xml": want auto, csv, influx, json, toy or value`; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("--format xml: %v, want %q", err, want)
	}
}
