package natsconn

import (
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/nats-io/nats.go"
)

// Reopen is a connection that outlives the server closing it: nats.go
// does not reconnect after some protocol errors, and the server then
// closes the connection for good. Reopen connects again (in the
// background if no server answers yet) and hands the new connection to
// each function registered with OnReplace. Close closes it for good.
type Reopen struct {
	// Name names the connection in errors and logs ("nats output").
	Name    string
	URL     string
	Options []nats.Option // its ClosedHandler is Reopen's
	Log     *slog.Logger

	conn    atomic.Pointer[nats.Conn]
	mu      sync.Mutex // orders replacements against Close
	closing bool       // set by Close: a closed connection stays closed

	replacedMu sync.Mutex
	replaced   []func(*nats.Conn)
}

// Connect connects and calls opened with the connection, both under the
// lock a replacement takes: the ClosedHandler, which may run as soon as
// it is connected, waits for opened.
func (r *Reopen) Connect(opened func(*nats.Conn) error) error {
	r.Options = append(r.Options, nats.ClosedHandler(r.closed))
	r.mu.Lock()
	defer r.mu.Unlock()
	nc, err := nats.Connect(r.URL, r.Options...)
	if err != nil {
		return fmt.Errorf("%s: %w", r.Name, err)
	}
	r.conn.Store(nc)
	return opened(nc)
}

// OnReplace registers f, called with each new connection that replaces
// one the server closed, before the new one is used by anyone else who
// calls Conn after f returns. f must not call Connect or Close.
func (r *Reopen) OnReplace(f func(*nats.Conn)) {
	r.replacedMu.Lock()
	defer r.replacedMu.Unlock()
	r.replaced = append(r.replaced, f)
}

// Conn is the connection now (nil before Connect).
func (r *Reopen) Conn() *nats.Conn { return r.conn.Load() }

// Connected reports whether the connection is up.
func (r *Reopen) Connected() bool {
	nc := r.conn.Load()
	return nc != nil && nc.IsConnected()
}

// Close closes the connection for good.
func (r *Reopen) Close() {
	r.mu.Lock()
	r.closing = true
	nc := r.conn.Load()
	r.mu.Unlock()
	if nc != nil {
		nc.Close() // its ClosedHandler sees closing
	}
}

// closed is the connection's ClosedHandler. Unless Close closed it, the
// server did: it connects again and hands the new connection to the
// functions registered with OnReplace.
func (r *Reopen) closed(nc *nats.Conn) {
	r.mu.Lock()
	mine := !r.closing && nc == r.conn.Load()
	r.mu.Unlock()
	if !mine {
		return
	}
	r.Log.Error(r.Name+" connection closed by the server; connecting again", "err", nc.LastError())
	// Outside mu: Connected must not wait for a dial.
	next, err := nats.Connect(r.URL, r.Options...)
	if err != nil { // RetryOnFailedConnect: only invalid options
		r.Log.Error(r.Name+": cannot connect again; forecasts are no longer published", "err", err)
		return
	}
	r.mu.Lock()
	closing := r.closing
	if !closing {
		r.conn.Store(next)
		r.replacedMu.Lock()
		fs := r.replaced
		r.replacedMu.Unlock()
		for _, f := range fs {
			f(next)
		}
	}
	r.mu.Unlock()
	switch {
	case closing:
		next.Close() // its ClosedHandler sees closing
	case next.IsClosed(): // closed before it was stored: its handler saw another
		r.closed(next)
	}
}
