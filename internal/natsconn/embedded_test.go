package natsconn

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// TestEmbeddedNoSublistCache: the embedded server delivers on many
// subjects with its shared subject cache off, where a server with the
// cache on (nats-server's default) fills it.
func TestEmbeddedNoSublistCache(t *testing.T) {
	ns, url, err := StartEmbedded(Embedded{Addr: "127.0.0.1:0", Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if ns != nil {
		t.Cleanup(func() { ns.Shutdown(); ns.WaitForShutdown() })
	}
	if err != nil {
		t.Fatal(err)
	}
	def, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, NoSigs: true, NoLog: true})
	if err != nil {
		t.Fatal(err)
	}
	def.Start()
	t.Cleanup(func() { def.Shutdown(); def.WaitForShutdown() })
	if !def.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats-server not ready")
	}
	for _, c := range []struct {
		name   string
		s      *server.Server
		url    string
		cached bool
	}{{"embedded", ns, url, false}, {"nats-server's default", def, def.ClientURL(), true}} {
		nc, err := nats.Connect(c.url)
		if err != nil {
			t.Fatal(err)
		}
		sub, err := nc.SubscribeSync("load.>")
		if err != nil {
			t.Fatal(err)
		}
		const n = 20
		for i := range n {
			if err := nc.Publish(fmt.Sprintf("load.s%02d", i), []byte("1")); err != nil {
				t.Fatal(err)
			}
		}
		for i := range n {
			if _, err := sub.NextMsg(10 * time.Second); err != nil {
				t.Fatalf("%s: message %d: %v", c.name, i, err)
			}
		}
		nc.Close()
		sz, err := c.s.Subsz(nil)
		if err != nil {
			t.Fatal(err)
		}
		if cached := sz.NumCache > 0; cached != c.cached {
			t.Errorf("%s: %d subjects in the shared cache after %d publications, want cached = %v", c.name, sz.NumCache, n, c.cached)
		}
	}
}

// TestEmbeddedPortInUse: a port another process listens on (a NATS
// server already, most likely) is said so, with what to do: embedded =
// false to use that server, or another port.
func TestEmbeddedPortInUse(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	ns, _, err := StartEmbedded(Embedded{Addr: l.Addr().String(), Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if ns != nil {
		ns.Shutdown()
		ns.WaitForShutdown()
	}
	if !errors.Is(err, syscall.EADDRINUSE) || !strings.Contains(err.Error(), "embedded = false") || !strings.Contains(err.Error(), "another port") {
		t.Fatalf("port in use: %v, want it to suggest embedded = false or another port", err)
	}
}
