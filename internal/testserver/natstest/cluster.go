// Package natstest runs real nats-servers in-process for tests: one
// JetStream server, or a JetStream cluster of several joined by routes on
// loopback, each stopped at the end of the test.
package natstest

import (
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// JetStream starts one nats-server with JetStream stored under a test
// directory, on a free loopback port.
func JetStream(t testing.TB) *server.Server {
	t.Helper()
	o := &server.Options{
		ServerName: "single",
		Host:       "127.0.0.1",
		Port:       server.RANDOM_PORT,
		NoLog:      true,
		NoSigs:     true,
		JetStream:  true,
		StoreDir:   t.TempDir(),
	}
	return start(t, o)
}

// Cluster starts n nats-servers (n ≥ 3 for a JetStream meta-group that
// survives one loss) with JetStream, joined in cluster "C" by routes on
// loopback, and waits until the cluster has a JetStream leader.
func Cluster(t testing.TB, n int) []*server.Server {
	t.Helper()
	ports := freePorts(t, n)
	routes := make([]string, n)
	for i, p := range ports {
		routes[i] = fmt.Sprintf("nats-route://127.0.0.1:%d", p)
	}
	base := t.TempDir()
	servers := make([]*server.Server, n)
	for i := range n {
		o := &server.Options{
			ServerName: fmt.Sprintf("n%d", i+1),
			Host:       "127.0.0.1",
			Port:       server.RANDOM_PORT,
			NoLog:      true,
			NoSigs:     true,
			JetStream:  true,
			StoreDir:   filepath.Join(base, fmt.Sprintf("n%d", i+1)),
			Cluster: server.ClusterOpts{
				Name: "C",
				Host: "127.0.0.1",
				Port: ports[i],
			},
			Routes: server.RoutesFromStr(strings.Join(routes, ",")),
		}
		s, err := server.NewServer(o)
		if err != nil {
			t.Fatal(err)
		}
		s.Start()
		servers[i] = s
		t.Cleanup(func() { s.Shutdown(); s.WaitForShutdown() })
	}
	for _, s := range servers {
		if !s.ReadyForConnections(10 * time.Second) {
			t.Fatalf("nats-server %s not ready", s.Name())
		}
	}
	// A bound to catch a hang, not a measure: under load a cluster forms slowly.
	deadline := time.Now().Add(60 * time.Second)
	for {
		ready := true
		for _, s := range servers {
			if !s.JetStreamIsCurrent() || s.JetStreamIsClustered() && !clusterHasLeader(servers) {
				ready = false
			}
		}
		if ready {
			return servers
		}
		if time.Now().After(deadline) {
			t.Fatalf("nats-server cluster of %d: no JetStream leader seeing every peer within 60s", n)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// clusterHasLeader reports whether a server leads the JetStream meta
// group and sees every server online: until it does, it refuses to place
// a stream with a replica on each ("no suitable peers for placement").
func clusterHasLeader(servers []*server.Server) bool {
	for _, s := range servers {
		if s.JetStreamIsLeader() {
			return len(s.JetStreamClusterPeers()) == len(servers)
		}
	}
	return false
}

// URLs joins the client URLs of servers, for nats.Connect.
func URLs(servers ...*server.Server) string {
	u := make([]string, len(servers))
	for i, s := range servers {
		u[i] = s.ClientURL()
	}
	return strings.Join(u, ",")
}

// Connect connects to servers, closed at the end of the test.
func Connect(t testing.TB, servers ...*server.Server) *nats.Conn {
	t.Helper()
	nc, err := nats.Connect(URLs(servers...), nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// Run starts a nats-server with o, shut down when the test ends, and
// waits until it accepts connections.
func Run(t testing.TB, o *server.Options) *server.Server { t.Helper(); return start(t, o) }

func start(t testing.TB, o *server.Options) *server.Server {
	t.Helper()
	s, err := server.NewServer(o)
	if err != nil {
		t.Fatal(err)
	}
	s.Start()
	t.Cleanup(func() { s.Shutdown(); s.WaitForShutdown() })
	if !s.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats-server not ready")
	}
	return s
}

func freePorts(t testing.TB, n int) []int {
	t.Helper()
	ls := make([]net.Listener, n)
	ports := make([]int, n)
	for i := range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ls[i] = l
		ports[i] = l.Addr().(*net.TCPAddr).Port
	}
	for _, l := range ls {
		l.Close()
	}
	return ports
}

// Map adds the subject mapping src → dst (nats-server's mappings, e.g.
// "metrics.*" → "p.{{partition(4,1)}}.{{wildcard(1)}}") to the global
// account of every server.
func Map(t testing.TB, servers []*server.Server, src, dst string) {
	t.Helper()
	for _, s := range servers {
		if err := s.GlobalAccount().AddMapping(src, dst); err != nil {
			t.Fatal(err)
		}
	}
}
