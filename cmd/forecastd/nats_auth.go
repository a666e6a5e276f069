package main

import (
	"fmt"
	"net"
	"os"

	"github.com/nats-io/nats.go"

	"github.com/forecastd/forecastd/internal/natsconn"
)

// natsOptions are the options that authenticate and secure every NATS
// connection of the daemon, from [nats] (validated by LoadConfig).
func (d *daemon) natsOptions() ([]nats.Option, error) {
	opts, err := d.cfg.NATS.Auth().Options()
	if err != nil {
		return nil, fmt.Errorf("nats: %w", err)
	}
	return opts, nil
}

// explainNATS adds to a connection error what the server refused (the
// method of [nats], never a secret).
func (d *daemon) explainNATS(err error) error {
	return natsconn.Explain(err, d.cfg.NATS.Auth())
}

// isLoopback reports whether host (a name or an address) is a loopback
// one: "localhost" or an address in 127.0.0.0/8 or ::1.
func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// warnExposedSecrets warns of every secret [nats] reads from a file that
// every user of the host may read: the configuration itself when it holds
// a password or token, and the seed, .creds and client key files.
func (d *daemon) warnExposedSecrets() {
	n := d.cfg.NATS
	exposed := n.Auth().ExposedFiles()
	if n.Password != "" || n.Token != "" {
		if fi, err := os.Stat(d.path); err == nil && fi.Mode().Perm()&0o004 != 0 {
			exposed = append(exposed, fmt.Sprintf("config %s (%#o, holds [nats] %s)", d.path, fi.Mode().Perm(), n.Auth().Method()))
		}
	}
	for _, f := range exposed {
		d.log.Warn("a NATS secret is in a file every user of this host may read; make it readable by forecastd only (chmod o-r)",
			"component", "nats", "file", f)
	}
}
