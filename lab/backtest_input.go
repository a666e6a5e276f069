package lab

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/forecastd/forecastd/pipeline"
	"github.com/forecastd/forecastd/sources"
)

// loaded is one series of an input file.
type loaded struct {
	file string    // the file it was read from
	key  string    // the series key of line protocol; "" for CSV
	data *recorded //
}

// label names the series in reports: the file of a CSV series, the key of
// a line-protocol one.
func (l *loaded) label() string {
	if l.key != "" {
		return l.key
	}
	return l.file
}

// inputExts are the file name endings a directory is searched for.
var inputExts = []string{".csv", ".lp", ".influx"}

// expandInputs returns the files of the FILE and DIR arguments in order, a
// directory's files (see inputExts) found recursively and sorted, skipping
// names that begin with a dot.
func (o *backtestOptions) expandInputs() ([]string, error) {
	var files []string
	for _, in := range o.inputs {
		st, err := os.Stat(in)
		if err != nil {
			return nil, err
		}
		if !st.IsDir() {
			files = append(files, in)
			continue
		}
		var found []string
		err = filepath.WalkDir(in, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if p != in && strings.HasPrefix(d.Name(), ".") {
				if d.IsDir() {
					return filepath.SkipDir
				}
				return nil
			}
			if !d.IsDir() && slices.Contains(inputExts, strings.ToLower(filepath.Ext(p))) {
				found = append(found, p)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		if len(found) == 0 {
			return nil, fmt.Errorf("%s: no %s files in the directory", in, strings.Join(inputExts, ", "))
		}
		slices.Sort(found)
		files = append(files, found...)
	}
	return files, nil
}

// isInflux reports whether file is read as line protocol.
func (o *backtestOptions) isInflux(file string) bool {
	switch o.format {
	case "influx":
		return true
	case "csv":
		return false
	}
	ext := strings.ToLower(filepath.Ext(file))
	return ext == ".lp" || ext == ".influx"
}

// load reads the series of file: one of a CSV file, every series of a
// line-protocol file, in the order of their keys.
func (o *backtestOptions) load(file string) ([]*loaded, error) { return o.loadRaw(file) }

// atStep returns the series' configuration for points at its resolution:
// with a step, the series' points aggregated into the daemon's buckets
// (in place) and cfg spaced by the step (resampled), so that the series
// computes what the daemon's computes from the same buckets.
func (l *loaded) atStep(cfg pipeline.Config) (pipeline.Config, error) {
	if cfg.Step == 0 {
		return cfg, nil
	}
	if err := l.data.resample(cfg.Step, cfg.Aggregate); err != nil {
		return cfg, fmt.Errorf("%s: %w", l.label(), err)
	}
	return resampled(cfg), nil
}

// resample aggregates the series into epoch-aligned buckets of step, as
// the daemon does with [model] step: the labels become the buckets'
// start times (RFC 3339), and what the buckets dropped is counted as
// skipped rows.
func (r *recorded) resample(step time.Duration, agg pipeline.Aggregate) error {
	ts, vs, dropped, err := pipeline.Resample(r.times, r.values, step, agg)
	if err != nil {
		return err
	}
	r.times, r.values, r.skipped = ts, vs, r.skipped+dropped
	r.labels, r.secs = make([]string, len(ts)), make([]float64, len(ts))
	for i, t := range ts {
		r.labels[i] = t.UTC().Format(time.RFC3339)
		r.secs[i] = float64(t.UnixNano()) / 1e9
	}
	r.hasTime = true
	return nil
}

func (o *backtestOptions) loadRaw(file string) ([]*loaded, error) {
	if !o.isInflux(file) {
		data, err := readSeries(file, o.column, o.timeColumn, o.skipBad)
		if err != nil {
			return nil, err
		}
		return []*loaded{{file: file, data: data}}, nil
	}
	m, err := readInflux(file, o.skipBad)
	if err != nil {
		return nil, err
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := make([]*loaded, len(keys))
	for i, k := range keys {
		out[i] = &loaded{file: file, key: k, data: m[k]}
	}
	return out, nil
}

// readInflux reads a file of InfluxDB line protocol, as Telegraf's
// outputs.file writes it, with the daemon's decoder (data_format
// "influx"): every numeric field of every line is a point of the series
// keyed "measurement,tag=v,… field" (tags sorted), timed by the line's
// timestamp in nanoseconds. Blank and comment lines are skipped, and so
// are string and boolean fields. A line that cannot be read, or has no
// timestamp, is an error naming file and line unless skipBad, which
// skips and counts it in every series. Labels (the --out time column)
// are the timestamps in nanoseconds.
func readInflux(path string, skipBad bool) (map[string]*recorded, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	dec, err := sources.NewDecoder(sources.DecoderConfig{Format: sources.FormatInflux, MaxPayload: -1, MaxPast: -1, MaxFuture: -1})
	if err != nil {
		return nil, err
	}
	series := map[string]*recorded{}
	skipped := 0
	r := bufio.NewReaderSize(f, 1<<16)
	var pts []sources.KeyedPoint
	for lineNo := 1; ; lineNo++ {
		line, rerr := r.ReadBytes('\n')
		if rerr != nil && rerr != io.EOF {
			return nil, fmt.Errorf("%s: %w", path, rerr)
		}
		if t := bytes.TrimSpace(line); len(t) > 0 && t[0] != '#' {
			var derr error
			pts, derr = dec.DecodeInflux(pts[:0], line, time.Time{})
			var bad error
			sources.EachParseError(derr, func(pe *sources.ParseError) {
				if pe.Reason != sources.ReasonUnsupportedFieldType && bad == nil {
					c := *pe
					c.Line = 0 // of the one-line payload; the file's line is given below
					bad = &c
				}
			})
			if bad == nil && len(pts) > 0 && pts[0].NoTime {
				bad = errors.New("no timestamp")
			}
			switch {
			case bad != nil && skipBad:
				skipped++
			case bad != nil:
				return nil, fmt.Errorf("%s:%d: %w", path, lineNo, bad)
			default:
				for _, p := range pts {
					s := series[p.Key]
					if s == nil {
						s = &recorded{hasTime: true}
						series[p.Key] = s
					}
					ns := p.Time.UnixNano()
					s.values = append(s.values, p.Value)
					s.times = append(s.times, p.Time)
					s.labels = append(s.labels, strconv.FormatInt(ns, 10))
					s.secs = append(s.secs, float64(ns)/1e9)
				}
			}
		}
		if rerr == io.EOF {
			break
		}
	}
	if len(series) == 0 {
		return nil, fmt.Errorf("%s: no numeric field in any line (%d lines skipped)", path, skipped)
	}
	for _, s := range series {
		s.skipped = skipped
	}
	return series, nil
}
