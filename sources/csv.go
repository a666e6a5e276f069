package sources

import (
	"bufio"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/forecastd/forecastd/pipeline"
)

// CSVSeries is a series read from a CSV file (ReadCSV).
type CSVSeries struct {
	Times   []time.Time // the points' times
	Labels  []string    // the time column's text, or the row index
	Secs    []float64   // the times as Unix seconds
	Values  []float64
	HasTime bool // the file has a time column; without one, time is the row index
	Skipped int  // unparsable rows skipped (skipBad)
}

// ReadCSV reads column from a CSV file with a header row. The column
// timeColumn, or if it is "" a "time" (or else "timestamp", or "t")
// column, gives timestamps: Unix seconds (a number), RFC 3339, or
// "YYYY-MM-DD HH:MM:SS" in UTC (the NAB corpus'), between pipeline.MinTime
// and MaxTime. An unparsable row, or one with a time outside those, is an
// error naming file, line and column, unless skipBad, which skips and
// counts it.
func ReadCSV(path, column, timeColumn string, skipBad bool) (*CSVSeries, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := csv.NewReader(bufio.NewReaderSize(f, 1<<16))
	r.ReuseRecord = true
	header, err := r.Read()
	if err != nil {
		if err == io.EOF {
			return nil, fmt.Errorf("%s: empty file, want a header row", path)
		}
		return nil, fmt.Errorf("%s: header: %w", path, err)
	}
	vc, tc := csvColumns(header, column, timeColumn)
	if vc < 0 {
		return nil, fmt.Errorf("%s:1: no column %q in header %q", path, column, strings.Join(header, ","))
	}
	if timeColumn != "" && tc < 0 {
		return nil, fmt.Errorf("%s:1: no time column %q in header %q", path, timeColumn, strings.Join(header, ","))
	}
	s := &CSVSeries{HasTime: tc >= 0}
	c := csvRows{r: r, path: path, column: column, header: header, vc: vc, tc: tc, skipBad: skipBad}
	for {
		rec, err := r.Read()
		if err == io.EOF {
			break
		}
		var pe *csv.ParseError
		if err != nil {
			if errors.As(err, &pe) && skipBad {
				s.Skipped++
				continue
			}
			if errors.As(err, &pe) {
				return nil, fmt.Errorf("%s:%d:%d: %w", path, pe.Line, pe.Column, pe.Err)
			}
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if err := c.row(s, rec); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// csvColumns returns the indexes in header of the value column and of
// the time column (timeColumn, or else the best ranked), -1 if none.
func csvColumns(header []string, column, timeColumn string) (vc, tc int) {
	vc, tc = -1, -1
	for i, h := range header {
		h = strings.TrimSpace(strings.TrimPrefix(h, "\ufeff"))
		switch {
		case h == column:
			vc = i
		case timeColumn != "":
			if h == timeColumn {
				tc = i
			}
		case timeColumnRank(h) > 0 && (tc < 0 || timeColumnRank(h) > timeColumnRank(header[tc])):
			tc = i
		}
	}
	return vc, tc
}

// csvRows reads the rows of a series' file.
type csvRows struct {
	r            *csv.Reader
	path, column string
	header       []string
	vc, tc       int
	skipBad      bool
}

// row appends rec's point to s, or counts it skipped (skipBad), or
// returns why it cannot be read.
func (c *csvRows) row(s *CSVSeries, rec []string) error {
	vc, tc := c.vc, c.tc
	line, _ := c.r.FieldPos(vc)
	v, err := strconv.ParseFloat(strings.TrimSpace(rec[vc]), 64)
	if err == nil && (math.IsNaN(v) || math.IsInf(v, 0)) {
		err = errors.New("not finite")
	}
	if err != nil {
		if c.skipBad {
			s.Skipped++
			return nil
		}
		return fmt.Errorf("%s:%d: column %d (%q): cannot read %q as a finite number", c.path, line, vc+1, c.column, rec[vc])
	}
	i := len(s.Values)
	t, label, secs := time.Unix(int64(i), 0), strconv.Itoa(i), float64(i)
	if tc >= 0 {
		label = strings.TrimSpace(rec[tc])
		t, secs, err = parseTime(label)
		if err != nil {
			if c.skipBad {
				s.Skipped++
				return nil
			}
			line, _ := c.r.FieldPos(tc)
			return fmt.Errorf("%s:%d: column %d (%q): cannot read %q as a time (Unix seconds, RFC 3339 or YYYY-MM-DD HH:MM:SS)", c.path, line, tc+1, c.header[tc], rec[tc])
		}
		if !pipeline.InTimeRange(t) {
			if c.skipBad {
				s.Skipped++
				return nil
			}
			line, _ := c.r.FieldPos(tc)
			return fmt.Errorf("%s:%d: column %d (%q): time %q is outside the times forecastd computes with, %s to %s", c.path, line, tc+1, c.header[tc], rec[tc],
				pipeline.MinTime.Format(time.DateOnly), pipeline.MaxTime.Format(time.DateOnly))
		}
	}
	s.Values = append(s.Values, v)
	s.Times = append(s.Times, t)
	s.Labels = append(s.Labels, label)
	s.Secs = append(s.Secs, secs)
	return nil
}

// timeColumnRank ranks the header names read as the time column: "time"
// before "timestamp" before "t"; 0 for any other name.
func timeColumnRank(h string) int {
	switch strings.TrimSpace(strings.TrimPrefix(h, "\ufeff")) {
	case "time":
		return 3
	case "timestamp":
		return 2
	case "t":
		return 1
	}
	return 0
}

// parseTime reads Unix seconds (possibly fractional), RFC 3339, or
// "YYYY-MM-DD HH:MM:SS[.fff]" taken as UTC.
func parseTime(s string) (time.Time, float64, error) {
	if x, err := strconv.ParseFloat(s, 64); err == nil && !math.IsNaN(x) && !math.IsInf(x, 0) && math.Abs(x) < 1e11 {
		sec := math.Floor(x)
		t := time.Unix(int64(sec), int64(math.Round((x-sec)*1e9)))
		return t, x, nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		var err2 error
		if t, err2 = time.Parse("2006-01-02 15:04:05.999999999", s); err2 != nil {
			return time.Time{}, 0, err
		}
	}
	return t, float64(t.UnixNano()) / 1e9, nil
}
