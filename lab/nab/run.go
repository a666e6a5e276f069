package nab

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/forecastd/forecastd/anomaly"
	"github.com/forecastd/forecastd/pipeline"
)

// ReadFile reads a NAB data file: a header `timestamp,value`, then one
// `YYYY-MM-DD HH:MM:SS,value` row per point, in time order.
func ReadFile(path string) (times []time.Time, values []float64, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	line := 0
	for sc.Scan() {
		line++
		if line == 1 {
			if h := strings.TrimSpace(sc.Text()); h != "timestamp,value" {
				return nil, nil, fmt.Errorf("%s:1: header %q, want timestamp,value", path, h)
			}
			continue
		}
		ts, vs, ok := strings.Cut(strings.TrimSpace(sc.Text()), ",")
		if !ok {
			return nil, nil, fmt.Errorf("%s:%d: want timestamp,value", path, line)
		}
		t, err := time.Parse(TimeLayout, ts)
		if err != nil {
			return nil, nil, fmt.Errorf("%s:%d: %w", path, line, err)
		}
		v, err := strconv.ParseFloat(vs, 64)
		if err != nil {
			return nil, nil, fmt.Errorf("%s:%d: %w", path, line, err)
		}
		times = append(times, t)
		values = append(values, v)
	}
	return times, values, sc.Err()
}

// Detector makes NAB scores, in [0, 1], of one series from its forecasts'
// outcomes; a new one is made for each file.
type Detector interface {
	// Outcome returns the NAB score of the point that closed a forecast.
	Outcome(o pipeline.Outcome) float64
}

// Events is forecastd's anomaly detector as NAB sees it: the series'
// own detector (pipeline.Config.Anomaly) scores each point against its
// forecast's interval, and a point that opens an event scores s/(1 + s)
// in [0, 1), s its anomaly score; every other point scores 0. One detection
// per event is what NAB rewards: detections after the first in a window
// earn nothing, and each outside one costs.
type Events struct{}

// EventThreshold is the threshold at which every event Events reports
// counts as a detection (its scores are > 0 exactly there).
const EventThreshold = 1e-300

// Outcome implements Detector.
func (Events) Outcome(o pipeline.Outcome) float64 {
	if o.Anomaly.Event != anomaly.Opened {
		return 0
	}
	return o.Anomaly.Score / (1 + o.Anomaly.Score)
}

// Run runs every file named in windows under dir through a series with
// cfg and a detector made by newDet, at most par files at once, and
// returns the files' scores (in name order).
func Run(dir string, windows map[string][]Window, cfg pipeline.Config, newDet func() Detector, par int) ([]File, error) {
	names := make([]string, 0, len(windows))
	for n := range windows {
		names = append(names, n)
	}
	sort.Strings(names)
	files := make([]File, len(names))
	errs := make([]error, len(names))
	sem := make(chan struct{}, max(1, par))
	done := make(chan struct{})
	for i, name := range names {
		go func() {
			sem <- struct{}{}
			defer func() { <-sem; done <- struct{}{} }()
			files[i], errs[i] = runFile(filepath.Join(dir, filepath.FromSlash(name)), name, windows[name], cfg, newDet())
		}()
	}
	for range names {
		<-done
	}
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return files, nil
}

func runFile(path, name string, ws []Window, cfg pipeline.Config, det Detector) (File, error) {
	times, values, err := ReadFile(path)
	if err != nil {
		return File{}, err
	}
	s, err := pipeline.New(name, cfg)
	if err != nil {
		return File{}, err
	}
	f := File{Name: name, Times: times, Scores: make([]float64, len(times)), Windows: ws}
	for i := range times {
		res, err := s.Push(pipeline.Point{Time: times[i], Value: values[i]})
		if errors.Is(err, pipeline.ErrOutOfOrder) {
			continue // the daemon drops it too (NAB's files repeat a few times)
		}
		if err != nil {
			return File{}, fmt.Errorf("%s: point %d: %w", path, i+1, err)
		}
		if res.HasOutcome {
			f.Scores[i] = det.Outcome(res.Outcome)
		}
	}
	return f, nil
}
