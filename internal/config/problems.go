package config

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"regexp"
	"slices"
	"strings"
	"syscall"
)

// Error is every problem of a configuration file, in the order of their
// lines (those of no line last). Its text has a line per problem.
type Error struct {
	Path     string
	Problems []*Problem
}

func (e *Error) Error() string {
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = p.Error()
	}
	return strings.Join(lines, "\n")
}

// Unwrap returns the problems, for errors.Is and errors.As.
func (e *Error) Unwrap() []error {
	errs := make([]error, len(e.Problems))
	for i, p := range e.Problems {
		errs[i] = p
	}
	return errs
}

// Problem is one problem of a configuration file: "FILE:LINE: key: what
// is wrong" (no LINE when the key is absent, as a required one).
type Problem struct {
	Path string
	Line int // 0: not tied to a line
	Err  error
}

func (p *Problem) Error() string {
	msg := packagePrefix.ReplaceAllString(p.Err.Error(), "")
	if p.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", p.Path, p.Line, msg)
	}
	return fmt.Sprintf("%s: %s", p.Path, msg)
}

// packagePrefix is what the packages that check a value put before their
// message ("sources: unknown data format", "time: invalid duration").
var packagePrefix = regexp.MustCompile(`\b(?:sources|sinks|time): `)

func (p *Problem) Unwrap() error { return p.Err }

// keyError is a problem of one key, or of a value drawn from a few: its
// text is "table.key (note): msg", and at lists the keys it is about, most
// specific first, relative to table, for its line.
type keyError struct {
	table string // "model", "pipeline", `rules[2]`
	key   string // may be empty: then msg names the key ("dim must be …")
	note  string // `match "cpu.*"`
	msg   string
	at    []string
	err   error // what it wraps, for errors.Is
}

func (e *keyError) Error() string {
	s := e.table
	if e.key != "" {
		if s != "" {
			s += "."
		}
		s += e.key
	}
	if e.note != "" {
		s += " (" + e.note + ")"
	}
	if s == "" {
		return e.msg
	}
	return s + ": " + e.msg
}

func (e *keyError) Unwrap() error { return e.err }

// configFile collects the problems of one configuration file and places
// each on the line of its key.
type configFile struct {
	path     string
	lines    map[string]int // keyLines of the file
	problems []*Problem
}

// keyPath matches the key a plain validation error starts with
// ("input.subjects[1]: …", "output.influxdb.bucket: …").
var keyPath = regexp.MustCompile(`^[A-Za-z0-9_-]+(\[[0-9]+\])?(\.[A-Za-z0-9_-]+(\[[0-9]+\])?)*$`)

// add records err, on the line of the key it names.
func (f *configFile) add(err error) {
	var cands []string
	var ke *keyError
	if errors.As(err, &ke) {
		for _, k := range ke.at {
			cands = append(cands, join(ke.table, k))
			if strings.HasPrefix(ke.table, "rules[") { // a [model] key merged into the rule
				cands = append(cands, join("model", k))
			}
		}
		cands = append(cands, join(ke.table, ke.key), ke.table)
	} else if k, _, ok := strings.Cut(err.Error(), ": "); ok && keyPath.MatchString(k) {
		cands = append(cands, k)
	}
	f.problems = append(f.problems, &Problem{Path: f.path, Line: f.line(cands), Err: err})
}

// line returns the line of the first of keys defined in the file, else of
// the nearest table above the first; 0 if none is.
func (f *configFile) line(keys []string) int {
	for _, k := range keys {
		if l := f.lines[k]; k != "" && l > 0 {
			return l
		}
	}
	if len(keys) == 0 {
		return 0
	}
	for k := keys[0]; k != ""; {
		if l := f.lines[k]; l > 0 {
			return l
		}
		if i := strings.LastIndexAny(k, ".["); i >= 0 {
			k = k[:i]
		} else {
			k = ""
		}
	}
	return 0
}

// err returns the problems as an *Error in the order of their lines, or
// nil.
func (f *configFile) err() error {
	if len(f.problems) == 0 {
		return nil
	}
	ps := slices.Clone(f.problems)
	slices.SortStableFunc(ps, func(a, b *Problem) int {
		switch {
		case a.Line == b.Line:
			return 0
		case a.Line == 0:
			return 1
		case b.Line == 0:
			return -1
		}
		return a.Line - b.Line
	})
	return &Error{Path: f.path, Problems: ps}
}

func join(table, key string) string {
	switch {
	case key == "":
		return table
	case table == "":
		return key
	}
	return table + "." + key
}

// maxFileSize bounds a configuration file: a person writes it, and a few
// hundred kilobytes is already far beyond any real one.
const maxFileSize = 4 << 20

// readFile reads a configuration file, which must be a regular file of
// at most maxFileSize bytes. It never blocks on what is not one: the file
// is opened without waiting for a writer (a named pipe's open would wait
// for one, and its read too) and refused unless it is regular, as the
// descriptor opened says, so that a path swapped for a pipe or a device
// cannot hang a reload.
func readFile(path string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, fileError(path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fileError(path, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file (%s): the configuration must be a file", path, fileKind(fi.Mode()))
	}
	b, err := io.ReadAll(io.LimitReader(f, maxFileSize+1))
	if err != nil {
		return nil, fileError(path, err)
	}
	if len(b) > maxFileSize {
		return nil, fmt.Errorf("%s: more than the %d bytes a configuration file may have", path, maxFileSize)
	}
	return b, nil
}

// fileError adds to an error reading the configuration file what to do
// about it: a file forecastd may not read is, under the systemd unit,
// one the group forecastd-config may not read.
func fileError(path string, err error) error {
	if errors.Is(err, fs.ErrPermission) {
		return fmt.Errorf("%w: forecastd reads its configuration as its own user, which the systemd unit puts in the group forecastd-config: make the file readable by that group (sudo chgrp forecastd-config %s && sudo chmod 0640 %[2]s), and its directories searchable", err, path)
	}
	return err
}

// fileKind names what a path that is not a regular file is.
func fileKind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	}
	return m.Type().String()
}
