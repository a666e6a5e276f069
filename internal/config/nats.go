package config

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/forecastd/forecastd/internal/natsconn"
	"github.com/forecastd/forecastd/sources"
)

// Auth returns [nats]'s credentials and TLS keys as internal/natsconn's
// config, which every NATS connection of the daemon is made with.
func (n NATSConfig) Auth() natsconn.Config {
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
	c := n.Auth()
	add(c.Validate())
	if n.Embedded {
		add(c.Authorize(&server.Options{}))
	}
	return errs
}

// fieldFilterErrors returns the problems of [input] fieldpass and
// fielddrop, each naming its key: an invalid glob, or either set with a
// data_format whose points are not fields (sources.FormatKind.Fields:
// influx among the built-in formats).
func fieldFilterErrors(in InputConfig) []error {
	if len(in.FieldPass) == 0 && len(in.FieldDrop) == 0 {
		return nil
	}
	var errs []error
	if k := in.DataFormat.Format().Kind(); k == nil || !k.Fields() {
		var withFields []string
		for _, f := range sources.Formats() {
			if f.Kind().Fields() {
				withFields = append(withFields, strconv.Quote(f.String()))
			}
		}
		for _, k := range []struct {
			key string
			set bool
		}{{"fieldpass", len(in.FieldPass) > 0}, {"fielddrop", len(in.FieldDrop) > 0}} {
			if k.set {
				errs = append(errs, fmt.Errorf("input.%s: applies to data_format = %s only (line-protocol fields), not %q", k.key, strings.Join(withFields, " or "), in.DataFormat))
			}
		}
	}
	if _, err := sources.NewFieldFilter(in.FieldPass, in.FieldDrop); err != nil {
		for _, e := range unjoin(err) {
			errs = append(errs, fmt.Errorf("input.%w", e))
		}
	}
	return errs
}
