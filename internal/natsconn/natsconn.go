// Package natsconn authenticates and secures every NATS connection
// forecastd makes (the input, the output, the embedded server's stream
// set-up) from one [nats] table, with the key names of Telegraf's NATS
// plugins (inputs.nats_consumer, outputs.nats): username and password,
// token, nkey_seed, credentials, secure, tls_ca, tls_cert, tls_key,
// insecure_skip_verify. The embedded server requires the same credentials
// (Config.Authorize).
//
// Secrets stay out of sight: no error, String or LogValue of this package
// shows a password, a token or the contents of a seed, credentials or key
// file; Redact removes the user information of a server URL. Nothing here
// logs.
package natsconn

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"
)

// Config is [nats]: the servers every connection of the daemon is made to,
// the embedded server, and the credentials and TLS keys every connection
// authenticates and secures itself with. The zero Config connects to
// DefaultServer without credentials over plain TCP (unless a server URL is
// tls://).
//
// At most one way of authenticating may be set: Username (with Password),
// Token, NKeySeed or Credentials. TLS is used when Secure, InsecureSkipVerify
// or any TLS file is set.
type Config struct {
	Servers  []string `toml:"servers" doc:"NATS URLs. With embedded, the first one's host and port are where the embedded server listens (port 0: a free port)."`
	Embedded bool     `toml:"embedded" doc:"start a NATS server inside forecastd"`

	// Username and Password: the server's user/password authorization.
	// Password without Username is an error.
	Username string `toml:"username" doc:"user name, with password; at most one of username, token, nkey_seed and credentials. The embedded server requires the same credentials."`
	Password string `toml:"password" doc:"password of username"`
	// Token: the server's token authorization.
	Token string `toml:"token" doc:"authentication token"`
	// NKeySeed is a file holding an NKey user seed ("SU…"), which signs
	// the server's nonce; the server knows the public key.
	NKeySeed string `toml:"nkey_seed" doc:"file holding an NKey seed"`
	// Credentials is a NATS 2 .creds file, a user JWT and its NKey seed,
	// for a server in operator (decentralised JWT) mode.
	Credentials string `toml:"credentials" doc:"a .creds file (a user JWT and its NKey seed)"`
	// Secure uses TLS, verifying the server against the system's roots
	// unless TLSCA is set.
	Secure bool `toml:"secure" doc:"TLS, the server verified against the system's roots or tls_ca"`
	// TLSCA is a PEM file of the CA certificates the server's certificate
	// must chain to; empty: the system's roots.
	TLSCA string `toml:"tls_ca" doc:"PEM CA certificates the server's must chain to"`
	// TLSCert and TLSKey are the PEM client certificate and its private
	// key, for a server that verifies clients; both or neither.
	TLSCert string `toml:"tls_cert" doc:"PEM client certificate, with tls_key"`
	TLSKey  string `toml:"tls_key" doc:"its PEM private key"`
	// InsecureSkipVerify uses TLS without verifying the server's
	// certificate chain and name: for tests only, as anyone on the path
	// can then read and change the traffic.
	InsecureSkipVerify bool `toml:"insecure_skip_verify" doc:"TLS without verifying the server: tests only"`
}

// DefaultServer is where forecastd connects when [nats] servers is empty.
const DefaultServer = "nats://127.0.0.1:4222"

// WithDefaults returns c with its defaults filled in: servers
// DefaultServer.
func (c Config) WithDefaults() Config {
	if len(c.Servers) == 0 {
		c.Servers = []string{DefaultServer}
	}
	return c
}

// Methods of authentication, as Method names them.
const (
	MethodNone        = "none"
	MethodUsername    = "username"
	MethodToken       = "token"
	MethodNKeySeed    = "nkey_seed"
	MethodCredentials = "credentials"
)

// Method names how c authenticates: by its key ("username", "token",
// "nkey_seed", "credentials"), or "none". With several set (an invalid
// Config), the first of that list.
func (c Config) Method() string {
	switch {
	case c.Username != "" || c.Password != "":
		return MethodUsername
	case c.Token != "":
		return MethodToken
	case c.NKeySeed != "":
		return MethodNKeySeed
	case c.Credentials != "":
		return MethodCredentials
	}
	return MethodNone
}

// TLS reports whether c's connections use TLS.
func (c Config) TLS() bool {
	return c.Secure || c.InsecureSkipVerify || c.TLSCA != "" || c.TLSCert != "" || c.TLSKey != ""
}

// String describes c without its secrets: the method, the user name, the
// files named, and TLS.
func (c Config) String() string {
	var b strings.Builder
	b.WriteString("auth=" + c.Method())
	if c.Username != "" {
		fmt.Fprintf(&b, " username=%q", c.Username)
	}
	for _, f := range []struct{ key, v string }{
		{"nkey_seed", c.NKeySeed}, {"credentials", c.Credentials},
		{"tls_ca", c.TLSCA}, {"tls_cert", c.TLSCert}, {"tls_key", c.TLSKey},
	} {
		if f.v != "" {
			fmt.Fprintf(&b, " %s=%q", f.key, f.v)
		}
	}
	fmt.Fprintf(&b, " tls=%t", c.TLS())
	if c.InsecureSkipVerify {
		b.WriteString(" insecure_skip_verify=true")
	}
	return b.String()
}

// LogValue is String, for slog: a Config logged shows no secret.
func (c Config) LogValue() slog.Value { return slog.StringValue(c.String()) }

// GoString is String, so that %#v shows no secret either.
func (c Config) GoString() string { return "natsconn.Config{" + c.String() + "}" }

// Validate returns nil if c can be run, or every problem at once, each
// starting with its key ("servers[1]: …", "tls_cert: set without
// tls_key"): a server that is not a NATS URL, the credentials' problems
// (ValidateAuth), and with Embedded what the embedded server cannot
// require (Authorize).
func (c Config) Validate() error {
	var errs []error
	for i, s := range c.Servers {
		if _, err := ServerAddr(s); err != nil {
			errs = append(errs, fmt.Errorf("servers[%d]: %v", i, err))
		}
	}
	errs = append(errs, c.ValidateAuth())
	if c.Embedded {
		errs = append(errs, c.Authorize(&server.Options{}))
	}
	return errors.Join(errs...)
}

// ValidateAuth returns nil if c can connect as configured, or every problem at
// once, each starting with its key ("tls_cert: set without tls_key"):
// more than one way of authenticating, a password without a user name,
// half a client key pair, and any file that cannot be read or is not what
// its key says (an NKey user seed, a .creds file with a user JWT that has
// not expired and its seed, PEM certificates, a key matching the
// certificate). Messages name files, never their contents. It reads the
// files; cost O(size of the files).
func (c Config) ValidateAuth() error {
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", key, fmt.Sprintf(format, args...)))
	}

	var set []string
	for _, m := range []struct {
		key string
		on  bool
	}{
		{"username", c.Username != ""}, {"token", c.Token != ""},
		{"nkey_seed", c.NKeySeed != ""}, {"credentials", c.Credentials != ""},
	} {
		if m.on {
			set = append(set, m.key)
		}
	}
	for _, k := range set[min(1, len(set)):] {
		bad(k, "cannot be combined with %s: a connection authenticates one way, by username and password, token, nkey_seed or credentials", set[0])
	}
	if c.Password != "" && c.Username == "" {
		bad("password", "set without username")
	}
	if c.NKeySeed != "" {
		if err := checkSeedFile(c.NKeySeed); err != nil {
			bad("nkey_seed", "%v", err)
		}
	}
	if c.Credentials != "" {
		if err := checkCredsFile(c.Credentials, time.Now()); err != nil {
			bad("credentials", "%v", err)
		}
	}
	if c.TLSCA != "" {
		if _, err := loadCAs(c.TLSCA); err != nil {
			bad("tls_ca", "%v", err)
		}
	}
	switch {
	case c.TLSCert != "" && c.TLSKey == "":
		bad("tls_cert", "set without tls_key, the client certificate's private key")
	case c.TLSKey != "" && c.TLSCert == "":
		bad("tls_key", "set without tls_cert, the client certificate of that private key")
	case c.TLSCert != "":
		if _, err := loadKeyPair(c.TLSCert, c.TLSKey); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Options returns the nats.go options that authenticate and secure a
// connection as c says, after ValidateAuth's checks (it returns their
// error). The files are read now; a .creds or seed file is read again at
// every (re)connection by nats.go, so that it may be replaced while
// forecastd runs.
//
// The options include nats.IgnoreAuthErrorAbort: a connection the server
// refuses (wrong or revoked credentials) keeps retrying, every attempt
// reporting ErrAuthorization to the connection's handlers, rather than
// closing for good after two refusals; a daemon then recovers once the
// server's or its own credentials are put right.
func (c Config) Options() ([]nats.Option, error) {
	if err := c.ValidateAuth(); err != nil {
		return nil, err
	}
	opts := []nats.Option{nats.IgnoreAuthErrorAbort()}
	switch c.Method() {
	case MethodUsername:
		opts = append(opts, nats.UserInfo(c.Username, c.Password))
	case MethodToken:
		opts = append(opts, nats.Token(c.Token))
	case MethodNKeySeed:
		o, err := nats.NkeyOptionFromSeed(c.NKeySeed)
		if err != nil {
			return nil, fmt.Errorf("nkey_seed: %s: %w", c.NKeySeed, err)
		}
		opts = append(opts, o)
	case MethodCredentials:
		opts = append(opts, nats.UserCredentials(c.Credentials))
	}
	if !c.TLS() {
		return opts, nil
	}
	tc := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: c.InsecureSkipVerify}
	if c.TLSCA != "" {
		pool, err := loadCAs(c.TLSCA)
		if err != nil {
			return nil, fmt.Errorf("tls_ca: %w", err)
		}
		tc.RootCAs = pool
	}
	if c.TLSCert != "" {
		kp, err := loadKeyPair(c.TLSCert, c.TLSKey)
		if err != nil {
			return nil, err
		}
		tc.Certificates = []tls.Certificate{kp}
	}
	return append(opts, nats.Secure(tc)), nil
}

// Explain adds to a connection error what the server refused: for an
// authorization error, the method and user name of c (never a secret), and
// for a TLS error whether c uses TLS. Other errors are returned as they are.
// errors.Is still finds the original.
func Explain(err error, c Config) error {
	if err == nil {
		return nil
	}
	switch {
	case errors.Is(err, nats.ErrAuthorization), errors.Is(err, nats.ErrAuthExpired),
		errors.Is(err, nats.ErrAuthRevoked), errors.Is(err, nats.ErrAccountAuthExpired):
		who := "no credentials ([nats] sets none of username, token, nkey_seed, credentials)"
		switch c.Method() {
		case MethodUsername:
			who = fmt.Sprintf("[nats] username %q and its password", c.Username)
		case MethodToken:
			who = "[nats] token"
		case MethodNKeySeed:
			who = fmt.Sprintf("[nats] nkey_seed %s", c.NKeySeed)
		case MethodCredentials:
			who = fmt.Sprintf("[nats] credentials %s", c.Credentials)
		}
		return fmt.Errorf("%w: the server refused %s", err, who)
	case errors.Is(err, nats.ErrSecureConnRequired):
		return fmt.Errorf("%w: set [nats] secure = true (or tls_ca)", err)
	case errors.Is(err, nats.ErrSecureConnWanted):
		return fmt.Errorf("%w: the server does not offer TLS; unset [nats] secure, tls_* and insecure_skip_verify", err)
	}
	var ce *tls.CertificateVerificationError
	var ua x509.UnknownAuthorityError
	var hn x509.HostnameError
	if errors.As(err, &ce) || errors.As(err, &ua) || errors.As(err, &hn) {
		return fmt.Errorf("%w: the server's certificate is not trusted ([nats] tls_ca names the CA that signed it)", err)
	}
	// With TLS 1.3 the server checks the client's certificate after the
	// handshake: its refusal reaches the client as its alert, or as the
	// connection closed right after the handshake (nats.go's ErrTLS "after
	// TLS handshake"), whichever comes first.
	if s := err.Error(); strings.Contains(s, "tls: certificate required") || strings.Contains(s, "tls: bad certificate") ||
		strings.Contains(s, "tls: unknown certificate authority") ||
		errors.Is(err, nats.ErrTLS) && strings.Contains(s, "after TLS handshake") {
		if c.TLSCert == "" {
			return fmt.Errorf("%w: the server requires a client certificate ([nats] tls_cert and tls_key)", err)
		}
		return fmt.Errorf("%w: the server refused the client certificate [nats] tls_cert %s (is it signed by a CA the server trusts?)", err, c.TLSCert)
	}
	return err
}

// Redact returns a server URL (or a comma-separated list of them) without
// its user information, as nats.go's ConnectedUrlRedacted does: a password
// or token written in a URL is shown as "xxxxx".
func Redact(servers string) string {
	parts := strings.Split(servers, ",")
	for i, s := range parts {
		u, err := url.Parse(strings.TrimSpace(s))
		if err != nil || u.User == nil {
			if err != nil && strings.Contains(s, "@") {
				parts[i] = "(unparsable URL with user information)"
			}
			continue
		}
		if _, ok := u.User.Password(); ok {
			u.User = url.UserPassword(u.User.Username(), "xxxxx")
		} else {
			u.User = url.User("xxxxx")
		}
		parts[i] = u.String()
	}
	return strings.Join(parts, ",")
}

// Authorize makes an embedded server's options require c's credentials:
// username and password, token, or the public key of nkey_seed. With none
// set it changes nothing, and the server accepts any client. A .creds file
// cannot be required this way (operator mode needs the operator's and the
// account's JWTs, which it does not hold): that is an error naming the
// key, as is TLS, which the embedded server does not serve.
func (c Config) Authorize(o *server.Options) error {
	var errs []error
	switch c.Method() {
	case MethodUsername:
		o.Username, o.Password = c.Username, c.Password
	case MethodToken:
		o.Authorization = c.Token
	case MethodNKeySeed:
		pub, err := seedPublicKey(c.NKeySeed)
		if err != nil {
			errs = append(errs, fmt.Errorf("nkey_seed: %w", err))
		} else {
			o.Nkeys = append(o.Nkeys, &server.NkeyUser{Nkey: pub})
		}
	case MethodCredentials:
		errs = append(errs, errors.New("credentials: the embedded server cannot require a .creds file (operator mode needs the operator's and the account's JWTs); use username and password, token or nkey_seed, or an external nats-server"))
	}
	if c.TLS() {
		key := "secure"
		for _, k := range []struct {
			key string
			on  bool
		}{{"tls_ca", c.TLSCA != ""}, {"tls_cert", c.TLSCert != ""}, {"tls_key", c.TLSKey != ""}, {"insecure_skip_verify", c.InsecureSkipVerify}} {
			if k.on && !c.Secure {
				key = k.key
				break
			}
		}
		errs = append(errs, fmt.Errorf("%s: the embedded server serves plain NATS: TLS (secure, tls_ca, tls_cert, tls_key, insecure_skip_verify) needs an external nats-server", key))
	}
	return errors.Join(errs...)
}

// ExposedFiles lists c's files that hold a secret (nkey_seed, credentials,
// tls_key) and that every user of the host may read, as "key path (mode)":
// they should be readable by forecastd's user or group only. A file that
// cannot be stat'ed is left to Validate.
func (c Config) ExposedFiles() []string {
	var out []string
	for _, f := range []struct{ key, path string }{
		{"nkey_seed", c.NKeySeed}, {"credentials", c.Credentials}, {"tls_key", c.TLSKey},
	} {
		if f.path == "" {
			continue
		}
		if fi, err := os.Stat(f.path); err == nil && fi.Mode().Perm()&0o004 != 0 {
			out = append(out, fmt.Sprintf("%s %s (%#o)", f.key, f.path, fi.Mode().Perm()))
		}
	}
	return out
}

// maxSecretFile bounds the size of a seed or .creds file read: both hold a
// few hundred bytes.
const maxSecretFile = 64 << 10

// readSmall reads a file of at most max bytes.
func readSmall(path string, max int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file", path)
	}
	if fi.Size() > max {
		return nil, fmt.Errorf("%s: %d bytes, more than the %d such a file may have", path, fi.Size(), max)
	}
	b := make([]byte, fi.Size())
	if _, err := f.ReadAt(b, 0); err != nil && fi.Size() > 0 {
		return nil, err
	}
	return b, nil
}

func wipe(b []byte) {
	for i := range b {
		b[i] = 'x'
	}
}

// seedPublicKey returns the public key of the NKey user seed in path.
func seedPublicKey(path string) (string, error) {
	b, err := readSmall(path, maxSecretFile)
	if err != nil {
		return "", err
	}
	defer wipe(b)
	kp, err := nkeys.ParseDecoratedNKey(b)
	if err != nil {
		return "", fmt.Errorf("%s: no NKey seed in it (want a line starting with SU)", path)
	}
	defer kp.Wipe()
	pub, err := kp.PublicKey()
	if err != nil {
		return "", fmt.Errorf("%s: %v", path, err)
	}
	if !nkeys.IsValidPublicUserKey(pub) {
		return "", fmt.Errorf("%s: the seed is not a user's (want one starting with SU, got an NKey of another kind)", path)
	}
	return pub, nil
}

func checkSeedFile(path string) error {
	_, err := seedPublicKey(path)
	return err
}

// checkCredsFile checks a .creds file: a user JWT, decodable and not
// expired at now, and a user seed.
func checkCredsFile(path string, now time.Time) error {
	b, err := readSmall(path, maxSecretFile)
	if err != nil {
		return err
	}
	defer wipe(b)
	tok, err := nkeys.ParseDecoratedJWT(b)
	if err != nil || !strings.HasPrefix(tok, "eyJ") {
		return fmt.Errorf("%s: no user JWT in it (want a .creds file: -----BEGIN NATS USER JWT----- …)", path)
	}
	uc, err := jwt.DecodeUserClaims(tok)
	if err != nil {
		return fmt.Errorf("%s: the JWT is not a user's: %v", path, err)
	}
	if uc.Expires > 0 && now.Unix() >= uc.Expires {
		return fmt.Errorf("%s: the user JWT expired at %s", path, time.Unix(uc.Expires, 0).UTC().Format(time.RFC3339))
	}
	kp, err := nkeys.ParseDecoratedUserNKey(b)
	if err != nil {
		return fmt.Errorf("%s: no user NKey seed in it (want -----BEGIN USER NKEY SEED----- …)", path)
	}
	defer kp.Wipe()
	pub, err := kp.PublicKey()
	if err != nil {
		return fmt.Errorf("%s: %v", path, err)
	}
	if pub != uc.Subject {
		return fmt.Errorf("%s: the seed is not that of the JWT's user %s", path, uc.Subject)
	}
	return nil
}

// maxPEMFile bounds a CA bundle or a certificate or key file.
const maxPEMFile = 4 << 20

// loadCAs reads a PEM file of CA certificates.
func loadCAs(path string) (*x509.CertPool, error) {
	b, err := readSmall(path, maxPEMFile)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	n := 0
	for rest := b; ; {
		var blk *pem.Block
		blk, rest = pem.Decode(rest)
		if blk == nil {
			break
		}
		if blk.Type != "CERTIFICATE" {
			continue
		}
		cert, err := x509.ParseCertificate(blk.Bytes)
		if err != nil {
			return nil, fmt.Errorf("%s: certificate %d: %v", path, n+1, err)
		}
		pool.AddCert(cert)
		n++
	}
	if n == 0 {
		return nil, fmt.Errorf("%s: no PEM certificate in it", path)
	}
	return pool, nil
}

// loadKeyPair reads a client certificate and its key; its errors name the
// key of the file at fault.
func loadKeyPair(certFile, keyFile string) (tls.Certificate, error) {
	cb, err := readSmall(certFile, maxPEMFile)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("tls_cert: %w", err)
	}
	kb, err := readSmall(keyFile, maxPEMFile)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("tls_key: %w", err)
	}
	defer wipe(kb)
	if blk, _ := pem.Decode(cb); blk == nil || blk.Type != "CERTIFICATE" {
		return tls.Certificate{}, fmt.Errorf("tls_cert: %s: no PEM certificate in it", certFile)
	}
	if blk, _ := pem.Decode(kb); blk == nil || !strings.Contains(blk.Type, "PRIVATE KEY") {
		return tls.Certificate{}, fmt.Errorf("tls_key: %s: no PEM private key in it", keyFile)
	}
	kp, err := tls.X509KeyPair(cb, kb)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("tls_key: %s does not go with tls_cert %s: %v", keyFile, certFile, err)
	}
	return kp, nil
}
