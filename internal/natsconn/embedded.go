package natsconn

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"golang.org/x/time/rate"

	"github.com/forecastd/forecastd/internal/retry"
)

// Embedded is what StartEmbedded runs.
type Embedded struct {
	// Addr is the host and port to listen on (port 0: a free one).
	Addr string
	// MaxPayload is the server's max_payload.
	MaxPayload int32
	// Auth is the credentials clients must present (Config.Authorize).
	Auth Config
	// StoreDir, if not empty, runs JetStream stored there, and Stream is
	// created if it does not exist, capturing Subjects.
	StoreDir string
	Stream   string
	Subjects []string
	// Connect are the options its own connection to create Stream
	// authenticates with.
	Connect []nats.Option
	Log     *slog.Logger
}

// StartEmbedded starts an in-process NATS server as e says and returns it
// with its client URL. A host that is not a loopback one without
// credentials is warned about. The server is returned, to be shut down,
// even with an error once it has started. Its shared subject cache is
// off (see the options).
func StartEmbedded(e Embedded) (*server.Server, string, error) {
	opts, err := e.options()
	if err != nil {
		return nil, "", fmt.Errorf("embedded nats: %w", err)
	}
	if !IsLoopback(opts.Host) && e.Auth.Method() == MethodNone {
		e.Log.Warn("embedded nats server listens beyond this host without credentials: whoever reaches it can publish points, read forecasts and manage its streams; set [nats] username and password, token or nkey_seed, or bind 127.0.0.1",
			"component", "nats", "addr", e.Addr)
	}
	ns, err := server.NewServer(opts)
	if err != nil {
		return nil, "", fmt.Errorf("embedded nats: %w", err)
	}
	ns.Start()
	if !ns.ReadyForConnections(10 * time.Second) {
		return ns, "", fmt.Errorf("embedded nats: not ready to listen on %s within 10s", e.Addr)
	}
	url := ns.ClientURL()
	e.Log.Info("embedded nats server listening", "component", "nats", "url", url, "jetstream", opts.JetStream, "auth", e.Auth.Method())
	if opts.JetStream {
		if err := e.createStream(url); err != nil {
			return ns, "", err
		}
	}
	return ns, url, nil
}

// options are the server's options: its address (a port in use is an
// error now, rather than a timeout), limits, credentials and JetStream.
func (e Embedded) options() (*server.Options, error) {
	host, portStr, err := net.SplitHostPort(e.Addr)
	if err != nil {
		return nil, err
	}
	port, err := strconv.Atoi(portStr)
	if err != nil {
		return nil, fmt.Errorf("port %q: %w", portStr, err)
	}
	if port == 0 {
		port = server.RANDOM_PORT
	} else {
		// nats-server reports a port in use only to its logger: say it
		// now rather than time out.
		ln, err := net.Listen("tcp", e.Addr)
		if errors.Is(err, syscall.EADDRINUSE) {
			return nil, fmt.Errorf("%w: another process listens on %s, perhaps a NATS server already: set [nats] embedded = false to use that server, or give [nats] servers another port (0: any free one)", err, e.Addr)
		}
		if err != nil {
			return nil, err
		}
		ln.Close()
	}
	opts := &server.Options{
		ServerName: "forecastd-embedded",
		Host:       host,
		Port:       port,
		NoSigs:     true,
		NoLog:      true,
		MaxPayload: e.MaxPayload,
		// The shared subject cache holds 1 024 subjects and is swept
		// back to 256 past that, while the daemon's traffic has two
		// subjects a series (its point's, its forecast's): beyond a few
		// hundred series every lookup would miss, insert and feed the
		// sweep. Without it a lookup walks the subscription tree, a
		// few levels for the daemon's subscriptions; each connection's
		// own cache of 512 subjects is kept.
		NoSublistCache: true,
	}
	if err := e.Auth.Authorize(opts); err != nil {
		return nil, err
	}
	if e.StoreDir != "" {
		opts.JetStream = true
		opts.StoreDir = e.StoreDir
	}
	return opts, nil
}

// createStream creates e.Stream on the server at url unless it exists.
func (e Embedded) createStream(url string) error {
	nc, err := nats.Connect(url, e.Connect...)
	if err != nil {
		return fmt.Errorf("embedded nats: %w", Explain(err, e.Auth))
	}
	defer nc.Close()
	jsc, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := jsc.Stream(ctx, e.Stream); errors.Is(err, jetstream.ErrStreamNotFound) {
		if _, err := jsc.CreateStream(ctx, jetstream.StreamConfig{Name: e.Stream, Subjects: e.Subjects}); err != nil {
			return fmt.Errorf("embedded nats: create stream %q: %w", e.Stream, err)
		}
		e.Log.Info("jetstream stream created", "component", "nats", "stream", e.Stream, "subjects", e.Subjects)
	} else if err != nil {
		return fmt.Errorf("embedded nats: stream %q: %w", e.Stream, err)
	}
	return nil
}

// IsLoopback reports whether host (a name or an address) is a loopback
// one: "localhost" or an address in 127.0.0.0/8 or ::1.
func IsLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// FailEvery is how often at most a FailureLog logs; the attempts in
// between are counted in its next line.
const FailEvery = 10 * time.Second

// FailureLog logs a connection's failed attempts to connect, with the
// server URLs and the error: the first at once, then at most one line per
// FailEvery.
type FailureLog struct {
	Log      *slog.Logger
	Msg, URL string

	once   sync.Once
	limit  *rate.Limiter
	missed atomic.Int64
}

// Failed logs err, or counts it for the next line.
func (c *FailureLog) Failed(err error) {
	if errors.Is(err, nats.ErrNoServers) {
		// What nats.go reports first of a failed initial connect
		// (RetryOnFailedConnect), before the attempts say why.
		return
	}
	c.once.Do(func() { c.limit = retry.Every(FailEvery) })
	if !c.limit.Allow() {
		c.missed.Add(1)
		return
	}
	c.Log.Warn(c.Msg, "url", c.URL, "err", err, "attempts", c.missed.Swap(0)+1)
}
