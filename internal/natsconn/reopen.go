package natsconn

import (
	"fmt"
	"log/slog"
	"sync"

	"github.com/nats-io/nats.go"
)

// Reopen is a connection that outlives the server closing it: nats.go
// does not reconnect after some protocol errors, and the server then
// closes the connection for good. Reopen connects again (in the
// background if no server answers yet) and hands the new connection to
// OnReplace. Close closes it for good.
type Reopen struct {
	// Name names the connection in errors and logs ("nats output").
	Name    string
	URL     string
	Options []nats.Option // its ClosedHandler is Reopen's
	Log     *slog.Logger
	// OnReplace, if set, is called with each new connection, under the
	// lock Conn takes.
	OnReplace func(*nats.Conn)

	mu      sync.Mutex
	conn    *nats.Conn
	closing bool // set by Close: a closed connection stays closed
}

// Connect connects and calls opened with the connection, both under the
// lock Conn takes: the ClosedHandler, which may run as soon as it is
// connected, waits for opened.
func (r *Reopen) Connect(opened func(*nats.Conn) error) error {
	r.Options = append(r.Options, nats.ClosedHandler(r.closed))
	r.mu.Lock()
	defer r.mu.Unlock()
	nc, err := nats.Connect(r.URL, r.Options...)
	if err != nil {
		return fmt.Errorf("%s: %w", r.Name, err)
	}
	r.conn = nc
	return opened(nc)
}

// Conn is the connection now.
func (r *Reopen) Conn() *nats.Conn {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.conn
}

// Connected reports whether the connection is up.
func (r *Reopen) Connected() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.conn != nil && r.conn.IsConnected()
}

// Close closes the connection for good.
func (r *Reopen) Close() {
	r.mu.Lock()
	r.closing = true
	nc := r.conn
	r.mu.Unlock()
	if nc != nil {
		nc.Close() // its ClosedHandler sees closing
	}
}

// closed is the connection's ClosedHandler. Unless Close closed it, the
// server did: it connects again and hands the new connection to
// OnReplace.
func (r *Reopen) closed(nc *nats.Conn) {
	r.mu.Lock()
	mine := !r.closing && nc == r.conn
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
		r.conn = next
		if r.OnReplace != nil {
			r.OnReplace(next)
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
