package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/forecastd/forecastd/sinks"
	"github.com/forecastd/forecastd/sources"
)

// csvFormat is a payload format registered by this file alone, with a
// setting of its own (csv_separator, a key of [input]): lines of
// "time,value", the time in Unix seconds, every line a point of the
// subject's series. The daemon reads it as data_format = "csv" with no
// change to the command's code or the configuration's.
type csvFormat struct{}

func init() { sources.RegisterFormat(csvFormat{}) }

func (csvFormat) Name() string     { return "csv" }
func (csvFormat) Doc() string      { return "time,value lines" }
func (csvFormat) Fields() bool     { return false }
func (csvFormat) NewSettings() any { return new(csvSettings) }

// csvSettings are the csv format's keys of [input].
type csvSettings struct {
	Separator string `toml:"csv_separator" doc:"the character between a line's time and value"`
}

// WithDefaults returns s with a comma as the separator.
func (s csvSettings) WithDefaults() csvSettings {
	if s.Separator == "" {
		s.Separator = ","
	}
	return s
}

// Validate reports a separator that is not one character.
func (s *csvSettings) Validate() error {
	if s.Separator != "" && len(s.Separator) != 1 {
		return fmt.Errorf("csv_separator: want one character, got %q", s.Separator)
	}
	return nil
}

func (csvFormat) Decode(d *sources.Decoder, dst []sources.KeyedPoint, subject string, payload []byte, recv time.Time) ([]sources.KeyedPoint, error) {
	var set csvSettings
	if s, ok := d.Settings().(*csvSettings); ok {
		set = *s
	}
	sep := set.WithDefaults().Separator[0]
	var errs sources.ParseErrors
	n := 0
	for line := range bytes.Lines(payload) {
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		n++
		var pe *sources.ParseError
		if tb, vb, ok := bytes.Cut(line, []byte{sep}); !ok {
			pe = &sources.ParseError{Reason: sources.ReasonInvalidValue, Msg: fmt.Sprintf("%q: want time,value", sources.Truncate(line))}
		} else if sec, err := strconv.ParseInt(string(tb), 10, 64); err != nil {
			pe = &sources.ParseError{Reason: sources.ReasonBadTime, Msg: fmt.Sprintf("time %q is not Unix seconds", sources.Truncate(tb))}
		} else if v, vpe := d.ParseValue(vb); vpe != nil {
			pe = vpe
		} else {
			dst, pe = d.AppendPoint(dst, []byte(subject), time.Unix(sec, 0), v, recv)
		}
		if pe != nil {
			pe.Line = n
			errs = append(errs, pe)
		}
	}
	switch {
	case n == 0:
		return dst, &sources.ParseError{Reason: sources.ReasonEmpty, Msg: "no line"}
	case len(errs) == 0:
		return dst, nil
	case len(errs) == 1:
		return dst, errs[0]
	}
	return dst, errs
}

// TestRegisteredFormatDaemonPath: a payload format registered by a test
// file goes through the daemon's whole path: check-config accepts
// data_format = "csv" and refuses fieldpass with it, the NATS source
// decodes its payloads (several points a message), the runner forecasts
// them and the NATS sink publishes the forecasts; a bad payload is
// refused and counted by reason in /metrics, as the built-in formats'.
func TestRegisteredFormatDaemonPath(t *testing.T) {
	t.Parallel()
	const cfg = `
[nats]
servers = ["127.0.0.1:0"]
embedded = true

[input]
subjects = ["csv.>"]
data_format = "csv"
csv_separator = ";"

[http]
listen = "127.0.0.1:0"

[model]
kind = "norma"
dim = 3
`
	if _, errOut, code := cli(t, "check-config", writeConfig(t, cfg)); code != 0 {
		t.Fatalf("check-config: exit %d:\n%s", code, errOut)
	}
	p := writeConfig(t, strings.Replace(cfg, "csv_separator = \";\"\n", "csv_separator = \";;\"\nfieldpass = [\"usage_*\"]\n", 1))
	_, errOut, code := cli(t, "check-config", p)
	for _, want := range []string{
		p + `:9: input.csv_separator: want one character, got ";;"`,
		p + `:10: input.fieldpass: applies to data_format = "influx" only (line-protocol fields), not "csv"`,
	} {
		if code != 1 || !strings.Contains(errOut, want) {
			t.Errorf("check-config with a bad separator and fieldpass: exit %d, stderr lacks %q:\n%s", code, want, errOut)
		}
	}

	rd := startDaemon(t, cfg, nil)
	nc := connectTest(t, rd.d.embedded.ClientURL())
	col := collect(t, nc, "forecast.>")
	waitSubscribed(t, rd.d.embedded, "csv.>")
	const msgs, perMsg = 20, 3
	t0 := time.Now().Add(-time.Hour).Truncate(time.Second)
	for i := range msgs {
		var b []byte
		for j := range perMsg {
			k := i*perMsg + j
			b = fmt.Appendf(b, "%d;%v\n", t0.Add(time.Duration(k)*time.Second).Unix(), float64(k%5))
		}
		if err := nc.Publish("csv.a", b); err != nil {
			t.Fatal(err)
		}
	}
	for _, bad := range []string{"nope", fmt.Sprintf("%d;abc", t0.Unix())} {
		if err := nc.Publish("csv.a", []byte(bad)); err != nil {
			t.Fatal(err)
		}
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	const n = msgs * perMsg
	waitFor(t, 20*time.Second, "every point processed and its forecast published", func() bool {
		return rd.d.runner.Stats().Processed == n && col.count("csv.a") > 0 &&
			uint64(col.count("csv.a")) == sinkOf[*sinks.NATS](rd.d).Stats().Published
	})
	fs := col.series("csv.a")
	last := fs[len(fs)-1]
	if want := t0.Add(time.Duration(n-1) * time.Second); !last.Origin.Equal(want) || last.Yhat == nil {
		t.Errorf("last forecast %+v, want one from %v, the last payload's last time", last, want)
	}
	m := scrape(t, rd.d.httpAddr.String())
	if got := m[`forecastd_parse_errors_total{reason="invalid_value"}`]; got != 2 {
		t.Errorf(`parse_errors_total{reason="invalid_value"} = %v, want 2 (the bad payloads)`, got)
	}
	if _, err := rd.stop(t); err != nil {
		t.Fatalf("stop: %v\n%s", err, rd.logs)
	}
}

// TestRegisteredFormatReplay: forecastd replay reads a recording of the
// registered format, one payload a line, as [input] data_format names it;
// a bad line is refused and counted, and the rest goes on.
func TestRegisteredFormatReplay(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "c.toml")
	if err := os.WriteFile(cfg, []byte("[nats]\nembedded = true\n\n[input]\nsubjects = [\"x\"]\ndata_format = \"csv\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for i := range 30 {
		fmt.Fprintf(&b, "%d,%d\n", 1700000000+60*i, i*i%7)
		if i == 12 {
			b.WriteString("1700000000;3\n")
		}
	}
	rec := filepath.Join(dir, "points.txt")
	if err := os.WriteFile(rec, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	out := mustCLI(t, "replay", "-config", cfg, rec)
	if want := "replayed 30 points (31 lines or batches read, 1 refused, 1 parse errors) into 1 series: "; !strings.Contains(out, want) {
		t.Fatalf("summary lacks %q:\n%s", want, out)
	}
}
