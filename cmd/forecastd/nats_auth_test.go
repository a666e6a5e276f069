package main

import (
	"errors"
	"fmt"
	"math"
	"net"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/forecastd/forecastd/internal/config"
	"github.com/forecastd/forecastd/internal/natsconn"
	"github.com/forecastd/forecastd/internal/testserver/authtest"
)

// authConnect connects to url as c says (the test's publisher), failing t
// if it cannot.
func authConnect(t *testing.T, url string, c natsconn.Config) *nats.Conn {
	t.Helper()
	opts, err := c.Options()
	if err != nil {
		t.Fatal(err)
	}
	nc, err := nats.Connect(url, append(opts, nats.NoReconnect())...)
	if err != nil {
		t.Fatalf("connect as %s: %v", c, err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// publishPoints publishes n points a second apart, an hour ago, on subject.
func publishPoints(t *testing.T, nc *nats.Conn, subject string, n int) {
	t.Helper()
	t0 := time.Now().Add(-time.Hour).Truncate(time.Second)
	for i := range n {
		if err := nc.Publish(subject, fmt.Appendf(nil, `{"time":%d,"value":%v}`, t0.Unix()+int64(i), math.Sin(float64(i)))); err != nil {
			t.Fatal(err)
		}
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
}

// authModel is a quick model: forecasts from a series' third point.
const authModel = `
[model]
kind = "norma"
dim = 2
scale = "fixed:-2,2"
`

// TestDaemonNATSAuth: against a nats-server that requires each way of
// authenticating, the daemon given the matching [nats] keys reads points
// and publishes forecasts (both its connections got in), and its log shows
// the method but never the secret.
func TestDaemonNATSAuth(t *testing.T) {
	f := authtest.NewFiles(t)

	for _, tc := range []struct {
		name   string
		server func() *server.Options
		keys   string
		client natsconn.Config
		secret string
	}{
		{
			name:   "username",
			server: func() *server.Options { return authtest.UserOptions("forecastd", "pa55-w0rd-xyz") },
			keys:   `username = "forecastd"` + "\n" + `password = "pa55-w0rd-xyz"`,
			client: natsconn.Config{Username: "forecastd", Password: "pa55-w0rd-xyz"},
			secret: "pa55-w0rd-xyz",
		},
		{
			name:   "token",
			server: func() *server.Options { return authtest.TokenOptions("t0ken-abc-123") },
			keys:   `token = "t0ken-abc-123"`,
			client: natsconn.Config{Token: "t0ken-abc-123"},
			secret: "t0ken-abc-123",
		},
		{
			name:   "nkey_seed",
			server: func() *server.Options { return authtest.NKeyOptions(f.SeedPub) },
			keys:   fmt.Sprintf("nkey_seed = %q", f.Seed),
			client: natsconn.Config{NKeySeed: f.Seed},
		},
		{
			name:   "credentials",
			server: func() *server.Options { return f.Operator.ServerOptions(t) },
			keys:   fmt.Sprintf("credentials = %q", f.Creds),
			client: natsconn.Config{Credentials: f.Creds},
		},
		{
			name:   "tls",
			server: func() *server.Options { return authtest.TLSServerOptions(t, f.CA) },
			keys:   fmt.Sprintf("tls_ca = %q\ntls_cert = %q\ntls_key = %q", f.CAFile, f.CertFile, f.KeyFile),
			client: natsconn.Config{TLSCA: f.CAFile, TLSCert: f.CertFile, TLSKey: f.KeyFile},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns := authtest.RunServer(t, tc.server())
			nc := authConnect(t, ns.ClientURL(), tc.client)
			col := collect(t, nc, "forecast.>")
			rd := startDaemon(t, fmt.Sprintf(`
[nats]
servers = [%q]
%s

[input]
subjects = ["auth.>"]
%s`, ns.ClientURL(), tc.keys, authModel), nil)
			waitSubscribed(t, ns, "auth.>")
			publishPoints(t, nc, "auth.a", 10)
			waitFor(t, 30*time.Second, "8 forecasts", func() bool { return col.count("auth.a") == 8 })
			if ok, why := rd.d.readiness(); !ok {
				t.Errorf("not ready: %s", why)
			}
			logs := rd.logs.String()
			if want := "nats_auth=" + tc.client.Method(); !strings.Contains(logs, want) {
				t.Errorf("log lacks %q:\n%s", want, logs)
			}
			if tc.secret != "" && strings.Contains(logs, tc.secret) {
				t.Errorf("log shows the secret:\n%s", logs)
			}
			// startDaemon writes the configuration 0644: with a password
			// or token in it, that is warned about; the 0600 files are not.
			warned := strings.Contains(logs, "a NATS secret is in a file every user of this host may read")
			if want := tc.secret != ""; warned != want || want && !strings.Contains(logs, rd.path+" (0644") {
				t.Errorf("warned of a readable secret: %t, want %t:\n%s", warned, want, logs)
			}
		})
	}
}

// TestDaemonNATSAuthRefused: with credentials or certificates the server
// refuses, the daemon is not ready, and its log says, for each connection,
// what the server refused, naming the key to look at and never a secret.
func TestDaemonNATSAuthRefused(t *testing.T) {
	f := authtest.NewFiles(t)
	stranger := authtest.NewOperator(t, "stranger-op").Creds(t, f.Dir, "stranger", time.Time{})
	otherCA := authtest.WriteFile(t, f.Dir, "other-ca.pem", authtest.NewCA(t, "another CA").PEM)
	for _, tc := range []struct {
		name   string
		server *server.Options
		keys   string
		want   string // a regexp
	}{
		{"username", authtest.UserOptions("forecastd", "right-pass-1"), `username = "forecastd"` + "\n" + `password = "wrong-pass-2"`,
			`Authorization Violation: the server refused \[nats\] username \\"forecastd\\" and its password`},
		{"token", authtest.TokenOptions("right-token-1"), `token = "wrong-token-2"`,
			`Authorization Violation: the server refused \[nats\] token"`},
		{"nkey_seed", authtest.NKeyOptions(f.SeedPub), fmt.Sprintf("nkey_seed = %q", f.OtherSeed),
			`Authorization Violation: the server refused \[nats\] nkey_seed ` + regexp.QuoteMeta(f.OtherSeed)},
		{"credentials", f.Operator.ServerOptions(t), fmt.Sprintf("credentials = %q", stranger),
			`Authorization Violation: the server refused \[nats\] credentials ` + regexp.QuoteMeta(stranger)},
		{"no client certificate", authtest.TLSServerOptions(t, f.CA), fmt.Sprintf("tls_ca = %q", f.CAFile),
			`the server requires a client certificate \(\[nats\] tls_cert and tls_key\)`},
		{"server not trusted", authtest.TLSServerOptions(t, f.CA), fmt.Sprintf("tls_ca = %q\ntls_cert = %q\ntls_key = %q", otherCA, f.CertFile, f.KeyFile),
			`certificate signed by unknown authority: the server's certificate is not trusted \(\[nats\] tls_ca names the CA that signed it\)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns := authtest.RunServer(t, tc.server)
			rd := startDaemon(t, fmt.Sprintf(`
[nats]
servers = [%q]
%s

[input]
subjects = ["auth.>"]
%s`, ns.ClientURL(), tc.keys, authModel), nil)
			for _, conn := range []string{"nats input: cannot connect", "nats output: cannot connect"} {
				re := regexp.MustCompile(regexp.QuoteMeta(conn) + `.*` + tc.want)
				waitFor(t, 20*time.Second, conn+" with the reason", func() bool { return re.MatchString(rd.logs.String()) })
			}
			if ok, why := rd.d.readiness(); ok || !strings.Contains(why, "not connected") {
				t.Errorf("readiness %t %q, want not connected", ok, why)
			}
			if logs := rd.logs.String(); regexp.MustCompile(`(right|wrong)-(pass|token)`).MatchString(logs) {
				t.Errorf("log shows a secret:\n%s", logs)
			}
		})
	}
}

// countingAuth is a server's authentication of user forecastd that counts
// the attempts and accepts password, which the test may change.
type countingAuth struct {
	mu       sync.Mutex
	password string
	attempts int
}

func (a *countingAuth) Check(c server.ClientAuthentication) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.attempts++
	o := c.GetOpts()
	return o.Username == "forecastd" && o.Password == a.password
}

func (a *countingAuth) set(password string) { a.mu.Lock(); a.password = password; a.mu.Unlock() }

func (a *countingAuth) count() int { a.mu.Lock(); defer a.mu.Unlock(); return a.attempts }

// TestDaemonNATSAuthRetries: refused, the daemon's connections keep trying
// past nats.go's default of giving up after the same refusal twice, so
// that once the server accepts the credentials the daemon gets in and is
// ready without a restart.
func TestDaemonNATSAuthRetries(t *testing.T) {
	auth := &countingAuth{password: "right-pass-1"}
	o := authtest.BaseOptions()
	o.CustomClientAuthentication = auth
	ns := authtest.RunServer(t, o)
	rd := startDaemon(t, fmt.Sprintf(`
[nats]
servers = [%q]
username = "forecastd"
password = "wrong-pass-2"

[input]
subjects = ["auth.>"]
%s`, ns.ClientURL(), authModel), nil)
	// Two connections, each refused at least three times.
	waitFor(t, 30*time.Second, "six refused attempts", func() bool { return auth.count() >= 6 })
	if rd.d.output.Conn().IsClosed() {
		t.Fatal("the output connection gave up after refusals; it must keep trying")
	}
	if ok, _ := rd.d.readiness(); ok {
		t.Fatal("ready while refused")
	}
	auth.set("wrong-pass-2") // the server's operator puts the password right
	waitFor(t, 30*time.Second, "ready once the server accepts the credentials", func() bool { ok, _ := rd.d.readiness(); return ok })
}

// TestDaemonEmbeddedAuth: the embedded server requires [nats]'s
// credentials: the daemon itself (input, output and, under JetStream, the
// stream's creation) gets in, a client with the same credentials publishes
// and reads forecasts, and one without them or with others is refused.
func TestDaemonEmbeddedAuth(t *testing.T) {
	f := authtest.NewFiles(t)
	seed, other := f.Seed, f.OtherSeed
	for _, tc := range []struct {
		name   string
		keys   string
		client natsconn.Config
		wrong  []natsconn.Config
		js     bool
	}{
		{
			name:   "username",
			keys:   `username = "forecastd"` + "\n" + `password = "emb-pass-77"`,
			client: natsconn.Config{Username: "forecastd", Password: "emb-pass-77"},
			wrong:  []natsconn.Config{{}, {Username: "forecastd", Password: "nope"}},
		},
		{
			name:   "token jetstream",
			keys:   `token = "emb-token-88"`,
			client: natsconn.Config{Token: "emb-token-88"},
			wrong:  []natsconn.Config{{}, {Token: "emb-token-89"}},
			js:     true,
		},
		{
			name:   "nkey_seed",
			keys:   fmt.Sprintf("nkey_seed = %q", seed),
			client: natsconn.Config{NKeySeed: seed},
			wrong:  []natsconn.Config{{}, {NKeySeed: other}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			js := ""
			if tc.js {
				js = fmt.Sprintf("[input.jetstream]\nstream = \"EAUTH\"\ndurable = \"fd\"\n\n[state]\ndir = %q\n", t.TempDir())
			}
			rd := startDaemon(t, fmt.Sprintf(`
[nats]
servers = ["127.0.0.1:0"]
embedded = true
%s

[input]
subjects = ["eauth.>"]
%s
%s`, tc.keys, authModel, js), nil)
			url := rd.d.embedded.ClientURL()
			for _, w := range tc.wrong {
				opts, err := w.Options()
				if err != nil {
					t.Fatal(err)
				}
				nc, err := nats.Connect(url, append(opts, nats.NoReconnect())...)
				if err == nil {
					nc.Close()
					t.Errorf("%s: connected to the embedded server, want refused", w)
				} else if !errors.Is(err, nats.ErrAuthorization) {
					t.Errorf("%s: %v, want an authorization violation", w, err)
				}
			}
			if u := tc.client.Username; u != "" { // as the README's NATS_URL for pub.go
				withUser := strings.Replace(url, "nats://", "nats://"+u+":"+tc.client.Password+"@", 1)
				nc, err := nats.Connect(withUser, nats.NoReconnect())
				if err != nil {
					t.Errorf("connect with the user in the URL: %v", err)
				} else {
					nc.Close()
				}
			}
			nc := authConnect(t, url, tc.client)
			col := collect(t, nc, "forecast.>")
			if !tc.js {
				waitSubscribed(t, rd.d.embedded, "eauth.>")
			}
			publishPoints(t, nc, "eauth.a", 10)
			waitFor(t, 30*time.Second, "8 forecasts", func() bool { return col.count("eauth.a") == 8 })
			if strings.Contains(rd.logs.String(), "emb-") {
				t.Errorf("log shows a secret:\n%s", rd.logs)
			}
		})
	}
}

// TestEmbeddedBindsLoopback: config.example.toml's embedded server (the
// quick start) listens on loopback only; told to listen on every address
// without credentials, the daemon warns what that exposes.
func TestEmbeddedBindsLoopback(t *testing.T) {
	cfg, err := config.Load("../../config.example.toml", config.DaemonChecks)
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.NATS.Embedded || len(cfg.NATS.Servers) == 0 {
		t.Fatalf("config.example.toml: embedded %t, servers %q", cfg.NATS.Embedded, cfg.NATS.Servers)
	}
	hp, err := natsconn.ServerAddr(cfg.NATS.Servers[0])
	if err != nil {
		t.Fatal(err)
	}
	if host, _, _ := net.SplitHostPort(hp); !natsconn.IsLoopback(host) {
		t.Errorf("config.example.toml's embedded server listens on %s, not loopback", hp)
	}

	rd := startDaemon(t, `
[nats]
servers = ["127.0.0.1:0"]
embedded = true

[input]
subjects = ["a.>"]
`, nil)
	if addr := rd.d.embedded.Addr().(*net.TCPAddr); !addr.IP.IsLoopback() {
		t.Errorf("embedded server listens on %v, not loopback", addr)
	}
	if strings.Contains(rd.logs.String(), "listens beyond this host") {
		t.Errorf("warned on loopback:\n%s", rd.logs)
	}

	open := startDaemon(t, `
[nats]
servers = ["0.0.0.0:0"]
embedded = true

[input]
subjects = ["a.>"]
`, nil)
	if !strings.Contains(open.logs.String(), "embedded nats server listens beyond this host without credentials") {
		t.Errorf("no warning for 0.0.0.0 without credentials:\n%s", open.logs)
	}
	secured := startDaemon(t, `
[nats]
servers = ["0.0.0.0:0"]
embedded = true
token = "tok-on-all-addresses"

[input]
subjects = ["a.>"]
`, nil)
	if strings.Contains(secured.logs.String(), "listens beyond this host") {
		t.Errorf("warned though credentials are required:\n%s", secured.logs)
	}

	for _, h := range []string{"127.0.0.1", "127.1.2.3", "::1", "localhost"} {
		if !natsconn.IsLoopback(h) {
			t.Errorf("natsconn.IsLoopback(%q) = false", h)
		}
	}
	for _, h := range []string{"0.0.0.0", "::", "10.0.0.1", "example.com", ""} {
		if natsconn.IsLoopback(h) {
			t.Errorf("natsconn.IsLoopback(%q) = true", h)
		}
	}
}

// TestCheckConfigNATSAuthHidesSecrets: check-config's report of bad
// [nats] keys names them but shows no password or token.
func TestCheckConfigNATSAuthHidesSecrets(t *testing.T) {
	_, err := config.Load("testdata/nats_auth.bad.toml", config.DaemonChecks)
	if err == nil {
		t.Fatal("no error")
	}
	for _, secret := range []string{"hunter2", "t0ken"} {
		if strings.Contains(err.Error(), secret) {
			t.Errorf("error shows %q:\n%v", secret, err)
		}
	}
}

// TestConfigExampleNATSAuth: config.example.toml explains every [nats]
// credential and TLS key, and a file with them set to working values
// loads.
func TestConfigExampleNATSAuth(t *testing.T) {
	b, err := os.ReadFile("../../config.example.toml")
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"username", "password", "token", "nkey_seed", "credentials", "secure", "tls_ca", "tls_cert", "tls_key", "insecure_skip_verify"} {
		if !regexp.MustCompile(`(?m)^#\s+` + k + ` = `).Match(b) {
			t.Errorf("config.example.toml does not show %q", k)
		}
	}
}

// TestReadmeNATSAuth: the README's [nats] example loads (with its files in
// place) and authenticates with the .creds file over TLS, and its
// check-config example prints what the README shows.
func TestReadmeNATSAuth(t *testing.T) {
	sec := docSection(t, "docs/operations.md", "NATS authentication and TLS")
	f := authtest.NewFiles(t)
	tomls := codeBlocks(sec, "toml")
	if len(tomls) != 1 {
		t.Fatalf("%d toml blocks, want 1", len(tomls))
	}
	text := strings.NewReplacer("/etc/forecastd/nats.creds", f.Creds, "/etc/forecastd/nats-ca.pem", f.CAFile).Replace(tomls[0])
	cfg, err := config.Load(writeConfig(t, text+"\n[input]\nsubjects = [\"metrics.>\"]\n"), config.DaemonChecks)
	if err != nil {
		t.Fatalf("the README's [nats] example: %v", err)
	}
	if c := cfg.NATS; c.Method() != natsconn.MethodCredentials || !c.TLS() {
		t.Errorf("the README's example: %s", c)
	}

	m := regexp.MustCompile("(?ms)^```\n(forecastd\\.toml:.*?)^```\n").FindStringSubmatch(sec)
	if m == nil {
		t.Fatal("no check-config output in the section")
	}
	shown := m[1]
	dir := t.TempDir()
	path := authtest.WriteFile(t, dir, "forecastd.toml", fmt.Appendf(nil, `[nats]
servers = ["nats://127.0.0.1:4222"]
username = "forecastd"
password = "secret-1"
token = "secret-2"
tls_ca = %q
tls_cert = %q

[input]
subjects = ["metrics.>"]
`, f.CAFile, f.CertFile))
	_, errOut, code := cli(t, "check-config", path)
	var got []string
	for _, l := range strings.Split(errOut, "\n") {
		if rest, ok := strings.CutPrefix(l, path); ok {
			got = append(got, "forecastd.toml"+rest)
		}
	}
	if code != 1 || strings.Join(got, "\n")+"\n" != shown {
		t.Errorf("check-config exit %d printed\n%s\nthe README shows\n%s", code, strings.Join(got, "\n"), shown)
	}
}
