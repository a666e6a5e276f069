package statestore

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"path/filepath"

	"github.com/forecastd/forecastd/internal/atomicfile"
)

// Applied is the input position the checkpoints of a directory cover:
// every message of JetStream stream Stream up to sequence Seq had been
// acknowledged, hence applied to its series, before a round of
// checkpoints that was written whole. The daemon hands Seq to the source
// at start (sources.JetStreamConfig.Checkpointed), which resumes the
// consumer after it.
type Applied struct {
	Stream  string `json:"stream"`
	Durable string `json:"durable"`
	Seq     uint64 `json:"seq"`
}

// AppliedFile is the name of the file that keeps Applied in a checkpoint
// directory, as JSON; the store's own files are named *Ext.
const AppliedFile = "jetstream-applied.json"

// ReadApplied reads dir's Applied; the zero Applied if there is none. The
// error names the file.
func ReadApplied(dir string) (Applied, error) {
	var a Applied
	path := filepath.Join(dir, AppliedFile)
	f, _, err := openRegular(path)
	if errors.Is(err, fs.ErrNotExist) {
		return a, nil
	}
	if err != nil {
		return a, fmt.Errorf("statestore: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, 1<<20)) // a few dozen bytes
	if err != nil {
		return a, fmt.Errorf("statestore: %s: %w", path, err)
	}
	if err := json.Unmarshal(b, &a); err != nil {
		return Applied{}, fmt.Errorf("statestore: %s: %w", path, err)
	}
	return a, nil
}

// WriteApplied replaces dir's Applied atomically (atomicfile.WriteFile:
// two fsyncs).
func WriteApplied(dir string, a Applied) error {
	b, err := json.Marshal(a)
	if err != nil { // a struct of strings and a number: cannot happen
		return fmt.Errorf("statestore: applied position: %w", err)
	}
	if err := atomicfile.WriteFile(filepath.Join(dir, AppliedFile), append(b, '\n')); err != nil {
		return fmt.Errorf("statestore: applied position: %w", err)
	}
	return nil
}

// OpenDir opens the checkpoints of dir (OpenCheckpoints) and, for a
// JetStream consumer (stream != ""), the position they cover: that of
// stream and durable from the start if the file names another consumer or
// cannot be read (logged: the stream is then replayed from its start).
func OpenDir(dir string, log *slog.Logger, lim Limits, stream, durable string) (*Checkpoints, Applied, error) {
	c, err := OpenCheckpoints(dir, log, lim)
	if err != nil || stream == "" {
		return c, Applied{}, err
	}
	a, err := ReadApplied(dir)
	if err != nil {
		log.Error("applied position unreadable; the stream is replayed from its start", "err", err)
	}
	if a.Stream != stream || a.Durable != durable {
		a = Applied{Stream: stream, Durable: durable}
	}
	return c, a, nil
}
