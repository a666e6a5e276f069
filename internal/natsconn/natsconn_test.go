package natsconn

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"
	"go.uber.org/goleak"

	"github.com/forecastd/forecastd/internal/testserver/authtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// connect connects to s with c's options (no retries) and, if it
// connects, checks that a message goes round through the server.
func connect(t *testing.T, s *server.Server, c Config) error {
	t.Helper()
	opts, err := c.Options()
	if err != nil {
		t.Fatalf("Options: %v", err)
	}
	nc, err := nats.Connect(s.ClientURL(), append(opts, nats.Timeout(5*time.Second), nats.NoReconnect())...)
	if err != nil {
		return err
	}
	defer nc.Close()
	sub, err := nc.SubscribeSync("auth.test")
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.Publish("auth.test", []byte("42.5")); err != nil {
		t.Fatal(err)
	}
	m, err := sub.NextMsg(5 * time.Second)
	if err != nil || string(m.Data) != "42.5" {
		t.Fatalf("round trip through the server: %v", err)
	}
	return nil
}

// TestServerRequires: for each way a nats-server can require a client to
// prove who it is, the right [nats] keys connect and carry a message, and
// wrong ones (and none) are refused with an error that says what the
// server refused, naming the method and never the secret.
func TestServerRequires(t *testing.T) {
	f := authtest.NewFiles(t)
	dir, seed, otherSeed, creds, caFile, certFile, keyFile := f.Dir, f.Seed, f.OtherSeed, f.Creds, f.CAFile, f.CertFile, f.KeyFile
	stranger := authtest.NewOperator(t, "stranger-op").Creds(t, dir, "stranger", time.Time{})
	otherCA := authtest.NewCA(t, "another CA")
	ocp, okp := otherCA.Issue(t, "forecastd", false)
	otherCert, otherKey := authtest.WriteFile(t, dir, "other.pem", ocp), authtest.WriteFile(t, dir, "other.key", okp)
	otherCAFile := authtest.WriteFile(t, dir, "otherca.pem", otherCA.PEM)

	for _, tc := range []struct {
		name   string
		server func() *server.Options
		good   Config
		wrong  []Config
		// wantErr is in every wrong config's explained error.
		wantErr []string
		// secret must not be in any error.
		secret string
	}{
		{
			name:    "username",
			server:  func() *server.Options { return authtest.UserOptions("forecastd", "s3cret-pass") },
			good:    Config{Username: "forecastd", Password: "s3cret-pass"},
			wrong:   []Config{{Username: "forecastd", Password: "wrong-pass"}, {Username: "other", Password: "s3cret-pass"}, {}},
			wantErr: []string{"Authorization Violation", "the server refused"},
			secret:  "s3cret-pass",
		},
		{
			name:    "token",
			server:  func() *server.Options { return authtest.TokenOptions("t0ken-value") },
			good:    Config{Token: "t0ken-value"},
			wrong:   []Config{{Token: "t0ken-wrong"}, {}},
			wantErr: []string{"Authorization Violation", "the server refused"},
			secret:  "t0ken-value",
		},
		{
			name:    "nkey_seed",
			server:  func() *server.Options { return authtest.NKeyOptions(f.SeedPub) },
			good:    Config{NKeySeed: seed},
			wrong:   []Config{{NKeySeed: otherSeed}, {}},
			wantErr: []string{"Authorization Violation", "the server refused"},
		},
		{
			name:    "credentials",
			server:  func() *server.Options { return f.Operator.ServerOptions(t) },
			good:    Config{Credentials: creds},
			wrong:   []Config{{Credentials: stranger}, {}},
			wantErr: []string{"Authorization Violation", "the server refused"},
		},
		{
			name:   "tls client verification",
			server: func() *server.Options { return authtest.TLSServerOptions(t, f.CA) },
			good:   Config{TLSCA: caFile, TLSCert: certFile, TLSKey: keyFile},
			wrong: []Config{
				{TLSCA: caFile}, // no client certificate
				{TLSCA: caFile, TLSCert: otherCert, TLSKey: otherKey},    // one the server's CA did not sign
				{TLSCA: otherCAFile, TLSCert: certFile, TLSKey: keyFile}, // the server's certificate not trusted
				{Secure: true, TLSCert: certFile, TLSKey: keyFile},       // nor by the system's roots
				{}, // no TLS at all
			},
			wantErr: []string{"tls", "certificate"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := authtest.RunServer(t, tc.server())
			if err := connect(t, s, tc.good); err != nil {
				t.Fatalf("the right %s refused: %v", tc.good, err)
			}
			for _, w := range tc.wrong {
				err := connect(t, s, w)
				if err == nil {
					t.Errorf("%s: connected, want refused", w)
					continue
				}
				msg := Explain(err, w).Error()
				for _, want := range tc.wantErr {
					if !strings.Contains(msg, want) {
						t.Errorf("%s: error %q lacks %q", w, msg, want)
					}
				}
				if tc.name != "tls client verification" && !errors.Is(Explain(err, w), nats.ErrAuthorization) {
					t.Errorf("%s: error %q is not nats.ErrAuthorization", w, msg)
				}
				if tc.secret != "" && strings.Contains(msg, tc.secret) || w.Password != "" && strings.Contains(msg, w.Password) ||
					w.Token != "" && strings.Contains(msg, w.Token) {
					t.Errorf("%s: error shows a secret: %q", w, msg)
				}
				t.Logf("%s: %s", w, msg)
			}
		})
	}
}

// TestExplainTLS: each way TLS can fail says which key to look at.
func TestExplainTLS(t *testing.T) {
	f := authtest.NewFiles(t)
	caFile, certFile, keyFile := f.CAFile, f.CertFile, f.KeyFile
	other := authtest.NewCA(t, "another CA")
	otherCAFile := authtest.WriteFile(t, f.Dir, "other.pem", other.PEM)
	tlsSrv := authtest.RunServer(t, authtest.TLSServerOptions(t, f.CA))
	plain := authtest.RunServer(t, authtest.BaseOptions())

	for _, tc := range []struct {
		name string
		s    *server.Server
		c    Config
		want string
	}{
		{"server not trusted", tlsSrv, Config{TLSCA: otherCAFile, TLSCert: certFile, TLSKey: keyFile}, "tls_ca names the CA"},
		{"no client certificate", tlsSrv, Config{TLSCA: caFile}, "the server requires a client certificate ([nats] tls_cert and tls_key)"},
		{"server without TLS", plain, Config{TLSCA: caFile, TLSCert: certFile, TLSKey: keyFile}, "does not offer TLS"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := connect(t, tc.s, tc.c)
			if err == nil {
				t.Fatal("connected")
			}
			if msg := Explain(err, tc.c).Error(); !strings.Contains(msg, tc.want) {
				t.Errorf("error %q lacks %q", msg, tc.want)
			} else {
				t.Log(msg)
			}
		})
	}
}

// TestValidate: every problem of the keys at once, each naming its key and
// the file at fault, never a secret or a file's contents.
func TestValidate(t *testing.T) {
	f := authtest.NewFiles(t)
	dir, seed, creds, caFile, certFile, keyFile := f.Dir, f.Seed, f.Creds, f.CAFile, f.CertFile, f.KeyFile
	accountSeed, _ := authtest.SeedFile(t, dir, "account.nk", nkeys.CreateAccount)
	notSeed := authtest.WriteFile(t, dir, "notseed", []byte("SECRETSTUFF not a seed\n"))
	missing := filepath.Join(dir, "missing")
	expired := f.Operator.Creds(t, dir, "old", time.Now().Add(-time.Hour))
	_, kp := f.CA.Issue(t, "c", false)
	_, kp2 := f.CA.Issue(t, "c2", false)
	otherKey := authtest.WriteFile(t, dir, "c2.key", kp2)
	unreadable := authtest.WriteFile(t, dir, "unreadable.key", kp)
	if err := os.Chmod(unreadable, 0); err != nil {
		t.Fatal(err)
	}
	big := authtest.WriteFile(t, dir, "big.creds", bytes.Repeat([]byte("x"), maxSecretFile+1))

	for _, tc := range []struct {
		name string
		c    Config
		want []string // substrings, one per expected problem
	}{
		{"none", Config{}, nil},
		{"username", Config{Username: "u", Password: "p"}, nil},
		{"username without password", Config{Username: "u"}, nil},
		{"token", Config{Token: "t"}, nil},
		{"nkey", Config{NKeySeed: seed}, nil},
		{"creds", Config{Credentials: creds}, nil},
		{"mtls", Config{TLSCA: caFile, TLSCert: certFile, TLSKey: keyFile}, nil},
		{"secure", Config{Secure: true}, nil},
		{"token and username", Config{Username: "u", Password: "p", Token: "t"},
			[]string{"token: cannot be combined with username"}},
		{"every method", Config{Username: "u", Token: "t", NKeySeed: seed, Credentials: creds},
			[]string{"token: cannot be combined with username", "nkey_seed: cannot be combined with username", "credentials: cannot be combined with username"}},
		{"password alone", Config{Password: "p"}, []string{"password: set without username"}},
		{"seed missing", Config{NKeySeed: missing}, []string{"nkey_seed: open " + missing + ": no such file"}},
		{"not a seed", Config{NKeySeed: notSeed}, []string{"nkey_seed: " + notSeed + ": no NKey seed in it"}},
		{"account seed", Config{NKeySeed: accountSeed}, []string{"nkey_seed: " + accountSeed + ": the seed is not a user's"}},
		{"a directory", Config{NKeySeed: dir}, []string{"nkey_seed: " + dir + ": not a regular file"}},
		{"creds missing", Config{Credentials: missing}, []string{"credentials: open " + missing}},
		{"creds not creds", Config{Credentials: seed}, []string{"credentials: " + seed + ": no user JWT in it"}},
		{"creds expired", Config{Credentials: expired}, []string{"credentials: " + expired + ": the user JWT expired at "}},
		{"creds too big", Config{Credentials: big}, []string{"credentials: " + big + ": 65537 bytes, more than the 65536"}},
		{"cert without key", Config{TLSCert: certFile}, []string{"tls_cert: set without tls_key"}},
		{"key without cert", Config{TLSKey: keyFile}, []string{"tls_key: set without tls_cert"}},
		{"key of another cert", Config{TLSCert: certFile, TLSKey: otherKey}, []string{"tls_key: " + otherKey + " does not go with tls_cert " + certFile}},
		{"cert is a key", Config{TLSCert: keyFile, TLSKey: keyFile}, []string{"tls_cert: " + keyFile + ": no PEM certificate"}},
		{"key is a cert", Config{TLSCert: certFile, TLSKey: certFile}, []string{"tls_key: " + certFile + ": no PEM private key"}},
		{"ca not pem", Config{TLSCA: notSeed}, []string{"tls_ca: " + notSeed + ": no PEM certificate in it"}},
		{"ca missing", Config{TLSCA: missing}, []string{"tls_ca: open " + missing}},
		{"all at once", Config{Password: "p", TLSCA: missing, TLSCert: certFile, NKeySeed: notSeed},
			[]string{"password: set without username", "nkey_seed: " + notSeed, "tls_ca: open", "tls_cert: set without tls_key"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.c.Validate()
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				if _, err := tc.c.Options(); err != nil {
					t.Fatalf("Options: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("no error, want %q", tc.want)
			}
			lines := strings.Split(err.Error(), "\n")
			if len(lines) != len(tc.want) {
				t.Errorf("%d problems, want %d:\n%v", len(lines), len(tc.want), err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
			if strings.Contains(err.Error(), "SECRETSTUFF") {
				t.Errorf("error shows a file's contents:\n%v", err)
			}
			if _, oerr := tc.c.Options(); oerr == nil || oerr.Error() != err.Error() {
				t.Errorf("Options: %v, want Validate's error", oerr)
			}
		})
	}

	// Unreadable as this user (root reads everything).
	if os.Geteuid() != 0 {
		err := Config{TLSCert: certFile, TLSKey: unreadable}.Validate()
		if err == nil || !strings.Contains(err.Error(), "tls_key: open "+unreadable+": permission denied") {
			t.Errorf("unreadable key: %v", err)
		}
	}
}

// TestValidateRandom: over random combinations of keys, Validate accepts
// exactly the configurations with at most one method, no password without
// a user, both or neither of a key pair and only good files; Options
// agrees with it; and no error, String or log line shows a password or
// token.
func TestValidateRandom(t *testing.T) {
	f := authtest.NewFiles(t)
	seed, creds, caFile, certFile, keyFile := f.Seed, f.Creds, f.CAFile, f.CertFile, f.KeyFile
	bad := filepath.Join(f.Dir, "missing")
	const pass, tok = "pa55-Word!", "tok-EN-42"
	pick := func(r *rand.Rand, good string) (string, bool) {
		switch r.IntN(4) {
		case 0:
			return bad, false
		case 1, 2:
			return "", true
		}
		return good, true
	}
	r := rand.New(rand.NewPCG(11, 12))
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	for i := range 400 {
		var c Config
		ok := true
		var fileOK bool
		if r.IntN(3) == 0 {
			c.Username = "forecastd"
		}
		if r.IntN(3) == 0 {
			c.Password = pass
		}
		if r.IntN(4) == 0 {
			c.Token = tok
		}
		c.NKeySeed, fileOK = pick(r, seed)
		ok = ok && fileOK
		c.Credentials, fileOK = pick(r, creds)
		ok = ok && fileOK
		c.TLSCA, fileOK = pick(r, caFile)
		ok = ok && fileOK
		c.TLSCert, fileOK = pick(r, certFile)
		ok = ok && fileOK
		c.TLSKey, fileOK = pick(r, keyFile)
		ok = ok && fileOK
		c.Secure, c.InsecureSkipVerify = r.IntN(2) == 0, r.IntN(4) == 0
		methods := 0
		for _, on := range []bool{c.Username != "", c.Token != "", c.NKeySeed != "", c.Credentials != ""} {
			if on {
				methods++
			}
		}
		ok = ok && methods <= 1 && (c.Password == "" || c.Username != "") && (c.TLSCert == "") == (c.TLSKey == "")
		err := c.Validate()
		if (err == nil) != ok {
			t.Fatalf("case %d: %#v: Validate %v, want ok=%t", i, c, err, ok)
		}
		opts, oerr := c.Options()
		if (oerr == nil) != ok || ok && len(opts) == 0 {
			t.Fatalf("case %d: Options %v with Validate %v", i, oerr, err)
		}
		log.Info("nats", "config", c, "err", err)
		for _, s := range []string{fmt.Sprint(err), c.String(), fmt.Sprintf("%v %+v %#v %s", c, c, c, c)} {
			if strings.Contains(s, pass) || strings.Contains(s, tok) {
				t.Fatalf("case %d shows a secret: %s", i, s)
			}
		}
	}
	if strings.Contains(logs.String(), pass) || strings.Contains(logs.String(), tok) {
		t.Fatal("the log shows a secret")
	}
}

// TestAuthorize: an embedded server given the same keys requires them:
// the daemon's own connection gets in, a client without them or with
// others does not; keys it cannot require are errors naming them.
func TestAuthorize(t *testing.T) {
	f := authtest.NewFiles(t)
	seed, otherSeed := f.Seed, f.OtherSeed
	for _, tc := range []struct {
		c     Config
		wrong []Config
	}{
		{Config{Username: "forecastd", Password: "pw"}, []Config{{}, {Username: "forecastd", Password: "no"}, {Token: "pw"}}},
		{Config{Token: "tk"}, []Config{{}, {Token: "tj"}, {Username: "tk", Password: "tk"}}},
		{Config{NKeySeed: seed}, []Config{{}, {NKeySeed: otherSeed}}},
		{Config{}, nil},
	} {
		t.Run(tc.c.Method(), func(t *testing.T) {
			o := authtest.BaseOptions()
			if err := tc.c.Authorize(o); err != nil {
				t.Fatal(err)
			}
			s := authtest.RunServer(t, o)
			if err := connect(t, s, tc.c); err != nil {
				t.Fatalf("own keys refused: %v", err)
			}
			for _, w := range tc.wrong {
				if err := connect(t, s, w); !errors.Is(err, nats.ErrAuthorization) {
					t.Errorf("%s: %v, want refused", w, err)
				}
			}
		})
	}

	for _, tc := range []struct {
		c    Config
		want string
	}{
		{Config{Credentials: f.Creds}, "credentials: the embedded server cannot require a .creds file"},
		{Config{Secure: true}, "secure: the embedded server serves plain NATS"},
		{Config{Username: "u", Password: "p", InsecureSkipVerify: true}, "insecure_skip_verify: the embedded server serves plain NATS"},
	} {
		if err := tc.c.Authorize(authtest.BaseOptions()); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.c, err, tc.want)
		}
	}
}

func TestRedact(t *testing.T) {
	for in, want := range map[string]string{
		"nats://127.0.0.1:4222":                       "nats://127.0.0.1:4222",
		"nats://user:pw@h:4222":                       "nats://user:xxxxx@h:4222",
		"nats://tok@h:4222,tls://a:b@g:4443":          "nats://xxxxx@h:4222,tls://a:xxxxx@g:4443",
		"h:4222":                                      "h:4222",
		"nats://u:p%zz@h:1":                           "(unparsable URL with user information)",
		"nats://127.0.0.1:4222,nats://127.0.0.1:4223": "nats://127.0.0.1:4222,nats://127.0.0.1:4223",
	} {
		if got := Redact(in); got != want {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestExposedFiles: a secret file every user may read is listed; one only
// its owner and group may read is not, nor the CA and client certificate.
func TestExposedFiles(t *testing.T) {
	f := authtest.NewFiles(t)
	seed, creds, caFile, certFile, keyFile := f.Seed, f.Creds, f.CAFile, f.CertFile, f.KeyFile
	for _, f := range []string{caFile, certFile} {
		if err := os.Chmod(f, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	c := Config{NKeySeed: seed, TLSCA: caFile, TLSCert: certFile, TLSKey: keyFile}
	if got := c.ExposedFiles(); len(got) != 0 {
		t.Errorf("0600 files listed: %q", got)
	}
	for _, f := range []string{seed, creds, keyFile} {
		if err := os.Chmod(f, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(seed, 0o640); err != nil {
		t.Fatal(err)
	}
	got := Config{NKeySeed: seed, TLSCA: caFile, TLSCert: certFile, TLSKey: keyFile}.ExposedFiles()
	if want := []string{"tls_key " + keyFile + " (0644)"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("ExposedFiles = %q, want %q", got, want)
	}
	got = Config{Credentials: creds}.ExposedFiles()
	if want := []string{"credentials " + creds + " (0644)"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("ExposedFiles = %q, want %q", got, want)
	}
}
