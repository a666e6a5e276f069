package main

import (
	"io"
	"log/slog"
)

// Log formats of the top-level log_format key.
const (
	logFormatText = "text" // slog's text handler: key=value (the default)
	logFormatJSON = "json" // slog's JSON handler: one object per line
)

// newLogger returns the daemon's logger: format "json" is slog's JSON
// handler, anything else (validated before) its text handler.
func newLogger(w io.Writer, format string, level slog.Level) *slog.Logger {
	opts := &slog.HandlerOptions{Level: level}
	if format == logFormatJSON {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}
