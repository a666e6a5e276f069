package main

import (
	"fmt"
	"os"

	"github.com/nats-io/nats.go"

	"github.com/forecastd/forecastd/internal/natsconn"
)

// natsOptions are the options that authenticate and secure every NATS
// connection of the daemon, from [nats] (validated by config.Load).
func (d *daemon) natsOptions() ([]nats.Option, error) {
	opts, err := d.cfg.NATS.Options()
	if err != nil {
		return nil, fmt.Errorf("nats: %w", err)
	}
	return opts, nil
}

// explainNATS adds to a connection error what the server refused (the
// method of [nats], never a secret).
func (d *daemon) explainNATS(err error) error {
	return natsconn.Explain(err, d.cfg.NATS)
}

// warnExposedSecrets warns of every secret [nats] reads from a file that
// every user of the host may read: the configuration itself when it holds
// a password or token, and the seed, .creds and client key files.
func (d *daemon) warnExposedSecrets() {
	n := d.cfg.NATS
	exposed := n.ExposedFiles()
	if n.Password != "" || n.Token != "" {
		if fi, err := os.Stat(d.path); err == nil && fi.Mode().Perm()&0o004 != 0 {
			exposed = append(exposed, fmt.Sprintf("config %s (%#o, holds [nats] %s)", d.path, fi.Mode().Perm(), n.Method()))
		}
	}
	for _, f := range exposed {
		d.log.Warn("a NATS secret is in a file every user of this host may read; make it readable by forecastd only (chmod o-r)",
			"component", "nats", "file", f)
	}
}
