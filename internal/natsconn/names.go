package natsconn

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"unicode"
)

// CheckSubject returns why s is not a NATS subject, nil if it is: tokens
// separated by '.', none empty, without spaces or control characters; with
// wildcards, a token may be '*', and the last '>'; without, neither
// (nats-server's server.IsValidSubject and IsValidLiteralSubject, which
// let spaces through in a literal subject that a publish then refuses).
func CheckSubject(s string, wildcards bool) error {
	if s == "" {
		return errors.New("empty")
	}
	tokens := strings.Split(s, ".")
	for i, t := range tokens {
		switch {
		case t == "":
			return errors.New(`an empty token (a leading or trailing ".", or "..")`)
		case strings.IndexFunc(t, IsSpaceOrControl) >= 0:
			return errors.New("a space or control character")
		case (t == "*" || t == ">") && !wildcards:
			return errors.New("no wildcards (* or >)")
		case t == ">" && i != len(tokens)-1:
			return errors.New(`">" must be the last token`)
		}
	}
	return nil
}

// IsSpaceOrControl reports whether r is a space or a control character,
// which no NATS name may hold.
func IsSpaceOrControl(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }

// ServerAddr returns the host:port of a NATS URL ("nats://h:p", "h:p").
func ServerAddr(s string) (string, error) {
	if !strings.Contains(s, "://") {
		s = "nats://" + s
	}
	u, err := url.Parse(s)
	if err != nil {
		return "", err
	}
	if u.Scheme != "nats" && u.Scheme != "tls" && u.Scheme != "ws" && u.Scheme != "wss" {
		return "", fmt.Errorf("unsupported scheme %q", u.Scheme)
	}
	if u.Hostname() == "" {
		return "", fmt.Errorf("no host in %q", s)
	}
	port := u.Port()
	if port == "" {
		port = "4222"
	}
	return net.JoinHostPort(u.Hostname(), port), nil
}
