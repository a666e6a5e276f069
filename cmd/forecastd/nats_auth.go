package main

import (
	"fmt"
	"net"
	"os"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/forecastd/forecastd/internal/natsconn"
)

// natsAuth is [nats]'s credentials and TLS keys.
func (n NATSConfig) natsAuth() natsconn.Config {
	return natsconn.Config{
		Username:           n.Username,
		Password:           n.Password,
		Token:              n.Token,
		NKeySeed:           n.NKeySeed,
		Credentials:        n.Credentials,
		Secure:             n.Secure,
		TLSCA:              n.TLSCA,
		TLSCert:            n.TLSCert,
		TLSKey:             n.TLSKey,
		InsecureSkipVerify: n.InsecureSkipVerify,
	}
}

// natsAuthErrors are the problems of [nats]'s credentials and TLS keys,
// each naming its key ("nats.tls_cert: set without tls_key"); with
// embedded, also the keys the embedded server cannot require.
func natsAuthErrors(n NATSConfig) []error {
	var errs []error
	add := func(err error) {
		if err != nil {
			for _, e := range unjoin(err) {
				errs = append(errs, fmt.Errorf("nats.%w", e))
			}
		}
	}
	c := n.natsAuth()
	add(c.Validate())
	if n.Embedded {
		add(c.Authorize(&server.Options{}))
	}
	return errs
}

// natsOptions are the options that authenticate and secure every NATS
// connection of the daemon, from [nats] (validated by LoadConfig).
func (d *daemon) natsOptions() ([]nats.Option, error) {
	opts, err := d.cfg.NATS.natsAuth().Options()
	if err != nil {
		return nil, fmt.Errorf("nats: %w", err)
	}
	return opts, nil
}

// explainNATS adds to a connection error what the server refused (the
// method of [nats], never a secret).
func (d *daemon) explainNATS(err error) error {
	return natsconn.Explain(err, d.cfg.NATS.natsAuth())
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
	exposed := n.natsAuth().ExposedFiles()
	if n.Password != "" || n.Token != "" {
		if fi, err := os.Stat(d.path); err == nil && fi.Mode().Perm()&0o004 != 0 {
			exposed = append(exposed, fmt.Sprintf("config %s (%#o, holds [nats] %s)", d.path, fi.Mode().Perm(), n.natsAuth().Method()))
		}
	}
	for _, f := range exposed {
		d.log.Warn("a NATS secret is in a file every user of this host may read; make it readable by forecastd only (chmod o-r)",
			"component", "nats", "file", f)
	}
}
