package sources

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/forecastd/forecastd/internal/retry"
	"github.com/forecastd/forecastd/pipeline"
)

// Recording is one recorded input of a Replay: payloads, one a line, in
// the Replay's decoder format (a file of line protocol, as Telegraf's
// outputs.file writes it), or points already read (a CSV file).
type Recording struct {
	// Name names the recording in errors and logs (its file name).
	Name string
	// Subject is the subject its messages carry (Message.Subject): the
	// series key of json and value payloads without "series", and the
	// label of the series' forecasts.
	Subject string
	// Reader gives the payloads, one a line; blank lines and lines
	// beginning with '#' are skipped. Nil when Points are given.
	Reader io.Reader
	// Format is the Reader's payload format; zero is the
	// ReplayConfig.Decoder's.
	Format Format
	// Points are points already read and keyed, delivered in order, in
	// messages of up to ReplayConfig.Batch points.
	Points []KeyedPoint
}

// ReplayConfig configures a Replay.
type ReplayConfig struct {
	// Recordings are replayed one after the other, in order.
	Recordings []Recording
	// Decoder decodes the Readers' lines, as the NATS source decodes
	// payloads; MaxPast and MaxFuture are ignored (no window: history is
	// replayed), and a point without a time is refused (ReasonBadTime),
	// since a replayed point keeps its recorded time.
	Decoder DecoderConfig
	// Buffer is the capacity of the Messages channel; zero is
	// DefaultBuffer.
	Buffer int
	// Batch is the most points of a Points recording in one message; zero
	// is DefaultPullBatch.
	Batch int
	// MaxLine is the longest line read, in bytes; zero is the decoder's
	// MaxPayload (DefaultMaxPayload when that is zero or negative). A
	// longer line is refused (ReasonTooLarge) and reading goes on.
	MaxLine int
	// Logger receives the refused lines, at most one a second per reason
	// (keys component, recording, line, reason, err); nil discards.
	Logger *slog.Logger
}

// checkRecorded returns an error for the first of pts that a decoder would
// have refused for its key (pipeline.CheckKey) or its time (outside
// pipeline.MinTime to MaxTime); keys are checked once each in a row.
func checkRecorded(pts []KeyedPoint) error {
	key := ""
	for i, p := range pts {
		if i == 0 || p.Key != key {
			if pe := invalidKey(p.Key); pe != nil {
				return fmt.Errorf("point %d: %w", i, pe)
			}
			key = p.Key
		}
		if !pipeline.InTimeRange(p.Time) {
			return fmt.Errorf("point %d: %w", i, badClockTime(p.Time))
		}
	}
	return nil
}

// Replay is a source of recorded points: it reads its recordings once,
// in order, decoding them as the NATS source decodes its payloads, and
// delivers *Message on Messages, then closes it. Messages have no
// sequence and need no settling: Done's outcome is counted (Stats.Acked:
// messages every point of which was handled, Stats.Naked: those with a
// point that failed). It offers the same methods as Source, for the
// daemon's input.
type Replay struct {
	cfg    ReplayConfig
	log    *slog.Logger
	out    chan *Message
	stats  counters
	errLog *rate.Limiter

	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}

	mu  sync.Mutex
	err error // the first read error (not a refused line)
}

// NewReplay validates cfg and starts reading. Read Messages until it is
// closed, then call Close.
func NewReplay(cfg ReplayConfig) (*Replay, error) {
	cfg.Decoder.MaxPast, cfg.Decoder.MaxFuture = -1, -1
	var errs []error
	if _, err := NewDecoder(cfg.Decoder); err != nil {
		errs = append(errs, err)
	}
	for i, r := range cfg.Recordings {
		if r.Format != 0 {
			dc := cfg.Decoder
			dc.Format = r.Format
			if _, err := NewDecoder(dc); err != nil {
				errs = append(errs, fmt.Errorf("sources: replay: recording %d (%q): %w", i, r.Name, err))
			}
		}
		if (r.Reader == nil) == (r.Points == nil) {
			errs = append(errs, fmt.Errorf("sources: replay: recording %d (%q): want a Reader or Points, not both or neither", i, r.Name))
		}
		if err := checkRecorded(r.Points); err != nil {
			errs = append(errs, fmt.Errorf("sources: replay: recording %d (%q): %w", i, r.Name, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if cfg.Buffer <= 0 {
		cfg.Buffer = DefaultBuffer
	}
	if cfg.Batch <= 0 {
		cfg.Batch = DefaultPullBatch
	}
	if cfg.MaxLine <= 0 {
		cfg.MaxLine = cfg.Decoder.MaxPayload
		if cfg.MaxLine <= 0 {
			cfg.MaxLine = DefaultMaxPayload
		}
	}
	r := &Replay{cfg: cfg, log: cfg.Logger, out: make(chan *Message, cfg.Buffer), done: make(chan struct{})}
	if r.log == nil {
		r.log = slog.New(slog.DiscardHandler)
	}
	r.log = r.log.With("component", "sources")
	r.errLog = retry.Every(time.Second)
	r.ctx, r.cancel = context.WithCancel(context.Background())
	go r.run()
	return r, nil
}

// Messages returns the channel of decoded messages, closed once every
// recording was read (or intake stopped).
func (r *Replay) Messages() <-chan *Message { return r.out }

// Connected is always true: a replay needs no server.
func (r *Replay) Connected() bool { return true }

// Done is closed when reading has ended.
func (r *Replay) Done() <-chan struct{} { return r.done }

// Err returns the first error that stopped reading a recording (an I/O
// error), nil if every recording was read to its end.
func (r *Replay) Err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

// Stats returns the counters: Received counts lines read (and batches of
// Points), Refused the lines none of whose points could be used.
func (r *Replay) Stats() Stats {
	st := r.stats.snapshot()
	st.Connected = true
	return st
}

// StopIntake stops reading (what was not yet delivered is dropped and
// counted) and returns once Messages is closed, or ctx's error.
func (r *Replay) StopIntake(ctx context.Context) error {
	r.cancel()
	select {
	case <-r.done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("sources: replay: stop intake: %w", ctx.Err())
	}
}

// Close is StopIntake: a replay holds nothing else.
func (r *Replay) Close(ctx context.Context) error { return r.StopIntake(ctx) }

func (r *Replay) run() {
	defer close(r.done)
	defer close(r.out)
	decs := map[Format]*Decoder{}
	for _, rec := range r.cfg.Recordings {
		var err error
		if rec.Reader != nil {
			dc := r.cfg.Decoder
			if rec.Format != 0 {
				dc.Format = rec.Format
			}
			dec := decs[dc.Format]
			if dec == nil {
				if dec, err = NewDecoder(dc); err != nil { // validated in NewReplay
					r.fail(err)
					return
				}
				decs[dc.Format] = dec
			}
			err = r.readLines(dec, rec)
		} else {
			err = r.sendPoints(rec)
		}
		if r.ctx.Err() != nil {
			return
		}
		if err != nil {
			r.fail(err)
			return
		}
	}
}

func (r *Replay) fail(err error) {
	r.mu.Lock()
	if r.err == nil {
		r.err = err
	}
	r.mu.Unlock()
}

// readLines decodes rec's lines, one message each.
func (r *Replay) readLines(dec *Decoder, rec Recording) error {
	br := bufio.NewReaderSize(rec.Reader, 1<<16)
	var line []byte
	for n := 1; ; n++ {
		chunk, isPrefix, err := br.ReadLine()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("sources: replay: %s:%d: %w", rec.Name, n, err)
		}
		line = append(line[:0], chunk...)
		tooLong := false
		for isPrefix {
			if chunk, isPrefix, err = br.ReadLine(); err != nil && err != io.EOF {
				return fmt.Errorf("sources: replay: %s:%d: %w", rec.Name, n, err)
			}
			if len(line) <= r.cfg.MaxLine {
				line = append(line, chunk...)
			}
			tooLong = tooLong || len(line) > r.cfg.MaxLine
		}
		t := bytes.TrimSpace(line)
		if len(t) == 0 || t[0] == '#' {
			continue
		}
		r.stats.received.Add(1)
		if tooLong || len(line) > r.cfg.MaxLine {
			r.refuse(rec, n, &ParseError{Reason: ReasonTooLarge, Msg: fmt.Sprintf("line longer than %d bytes", r.cfg.MaxLine)})
			continue
		}
		pts, derr := dec.Decode(nil, rec.Subject, t, time.Time{})
		var first *ParseError
		EachParseError(derr, func(pe *ParseError) {
			if first == nil {
				first = pe
			}
			r.stats.parse[pe.Reason].Add(1)
		})
		// A replayed point keeps its recorded time: one without is refused.
		kept := pts[:0]
		for _, p := range pts {
			if p.NoTime {
				pe := &ParseError{Reason: ReasonBadTime, Series: p.Key, Msg: "no time: a replayed point keeps its recorded time"}
				r.stats.parse[pe.Reason].Add(1)
				if first == nil {
					first = pe
				}
				continue
			}
			kept = append(kept, p)
		}
		if first != nil && r.errLog.Allow() {
			r.log.Warn("refused input", "recording", rec.Name, "line", n, "reason", first.Reason.String(), "err", first)
		}
		if len(kept) == 0 {
			if derr == nil && first == nil { // every field left out by fieldpass / fielddrop
				r.stats.filtered.Add(1)
			} else {
				r.stats.refused.Add(1)
			}
			continue
		}
		if !r.deliver(&Message{Subject: rec.Subject, Points: kept, Err: derr}) {
			return nil
		}
	}
}

func (r *Replay) refuse(rec Recording, line int, pe *ParseError) {
	r.stats.parse[pe.Reason].Add(1)
	r.stats.refused.Add(1)
	if r.errLog.Allow() {
		r.log.Warn("refused input", "recording", rec.Name, "line", line, "reason", pe.Reason.String(), "err", pe)
	}
}

// sendPoints delivers rec.Points in messages of up to Batch points.
func (r *Replay) sendPoints(rec Recording) error {
	for i := 0; i < len(rec.Points); i += r.cfg.Batch {
		pts := rec.Points[i:min(i+r.cfg.Batch, len(rec.Points))]
		r.stats.received.Add(1)
		if !r.deliver(&Message{Subject: rec.Subject, Points: pts}) {
			return nil
		}
	}
	return nil
}

// deliver sends m, blocking while the channel is full; false if intake
// stopped first.
func (r *Replay) deliver(m *Message) bool {
	m.pending.Store(int64(len(m.Points)))
	m.settled = func(failed bool) {
		if failed {
			r.stats.naked.Add(1)
		} else {
			r.stats.acked.Add(1)
		}
	}
	select {
	case r.out <- m:
		r.stats.delivered.Add(1)
		r.stats.points.Add(uint64(len(m.Points)))
		return true
	case <-r.ctx.Done():
		r.stats.dropped.Add(1)
		return false
	}
}
