// Package authtest makes what tests of NATS authentication need, in
// memory and in temporary files: a CA issuing server and client
// certificates (crypto/x509), NKey seed files, and an Operator with an
// account whose users' .Creds files an in-process nats-server in Operator
// mode accepts (nats-io/jwt, a memory account resolver).
package authtest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nkeys"

	"github.com/forecastd/forecastd/internal/testserver/natstest"
)

// WriteFile writes b to name in dir with mode 0600 and returns its path.
func WriteFile(t testing.TB, dir, name string, b []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// CA is a certificate authority made for one test.
type CA struct {
	Cert *x509.Certificate
	key  *ecdsa.PrivateKey
	PEM  []byte // the CA certificate, PEM
}

// NewCA makes a CA named name, valid for a day.
func NewCA(t testing.TB, name string) *CA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return &CA{Cert: cert, key: key, PEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// Issue makes a leaf certificate for name (the server's, with 127.0.0.1
// and localhost, or a client's) and returns its PEM certificate and key.
func (ca *CA) Issue(t testing.TB, name string, server bool) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: name},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	if server {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
		tmpl.IPAddresses = []net.IP{net.IPv4(127, 0, 0, 1)}
		tmpl.DNSNames = []string{"localhost"}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})
}

// TLSServerOptions returns server options that serve TLS with a certificate of ca
// and require and verify a client certificate signed by ca.
func TLSServerOptions(t testing.TB, ca *CA) *server.Options {
	t.Helper()
	cp, kp := ca.Issue(t, "nats-server", true)
	cert, err := tls.X509KeyPair(cp, kp)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	o := BaseOptions()
	o.TLS, o.TLSVerify = true, true
	o.TLSConfig = &tls.Config{
		MinVersion:   tls.VersionTLS12,
		Certificates: []tls.Certificate{cert},
		ClientCAs:    pool,
		ClientAuth:   tls.RequireAndVerifyClientCert,
	}
	return o
}

// BaseOptions are an in-process server's on a free loopback port.
func BaseOptions() *server.Options {
	return &server.Options{Host: "127.0.0.1", Port: server.RANDOM_PORT, NoLog: true, NoSigs: true}
}

// RunServer starts a nats-server with o and stops it at the end of the test.
func RunServer(t testing.TB, o *server.Options) *server.Server {
	t.Helper()
	return natstest.Run(t, o)
}

// SeedFile writes a new NKey seed made by create (nkeys.CreateUser, …)
// and returns its path and public key.
func SeedFile(t testing.TB, dir, name string, create func() (nkeys.KeyPair, error)) (path, pub string) {
	t.Helper()
	kp, err := create()
	if err != nil {
		t.Fatal(err)
	}
	seed, err := kp.Seed()
	if err != nil {
		t.Fatal(err)
	}
	pub, err = kp.PublicKey()
	if err != nil {
		t.Fatal(err)
	}
	return WriteFile(t, dir, name, append(seed, '\n')), pub
}

// Operator is an operator with one account, trusted by the server options
// it makes (operator mode, accounts from a memory resolver), and able to
// issue users' .creds files.
type Operator struct {
	kp      nkeys.KeyPair
	claims  *jwt.OperatorClaims
	account nkeys.KeyPair
	accJWT  string
}

// NewOperator makes an operator named name and its account.
func NewOperator(t testing.TB, name string) *Operator {
	t.Helper()
	okp, err := nkeys.CreateOperator()
	if err != nil {
		t.Fatal(err)
	}
	opub, _ := okp.PublicKey()
	oc := jwt.NewOperatorClaims(opub)
	oc.Name = name
	ojwt, err := oc.Encode(okp)
	if err != nil {
		t.Fatal(err)
	}
	claims, err := jwt.DecodeOperatorClaims(ojwt)
	if err != nil {
		t.Fatal(err)
	}
	akp, err := nkeys.CreateAccount()
	if err != nil {
		t.Fatal(err)
	}
	apub, _ := akp.PublicKey()
	ac := jwt.NewAccountClaims(apub)
	ac.Name = name + "-account"
	ajwt, err := ac.Encode(okp)
	if err != nil {
		t.Fatal(err)
	}
	return &Operator{kp: okp, claims: claims, account: akp, accJWT: ajwt}
}

// ServerOptions trust the operator and resolve its account from memory.
func (op *Operator) ServerOptions(t testing.TB) *server.Options {
	t.Helper()
	o := BaseOptions()
	o.TrustedOperators = []*jwt.OperatorClaims{op.claims}
	r := &server.MemAccResolver{}
	apub, _ := op.account.PublicKey()
	if err := r.Store(apub, op.accJWT); err != nil {
		t.Fatal(err)
	}
	o.AccountResolver = r
	return o
}

// Creds issues a user of the Operator's account, expiring at exp (zero:
// never), and writes its .creds file.
func (op *Operator) Creds(t testing.TB, dir, name string, exp time.Time) string {
	t.Helper()
	ukp, err := nkeys.CreateUser()
	if err != nil {
		t.Fatal(err)
	}
	upub, _ := ukp.PublicKey()
	uc := jwt.NewUserClaims(upub)
	uc.Name = name
	if !exp.IsZero() {
		uc.Expires = exp.Unix()
	}
	ujwt, err := uc.Encode(op.account)
	if err != nil {
		t.Fatal(err)
	}
	seed, _ := ukp.Seed()
	b, err := jwt.FormatUserConfig(ujwt, seed)
	if err != nil {
		t.Fatal(err)
	}
	return WriteFile(t, dir, name+".Creds", b)
}

// UserOptions are a server's that requires user and password.
func UserOptions(user, password string) *server.Options {
	o := BaseOptions()
	o.Username, o.Password = user, password
	return o
}

// TokenOptions are a server's that requires token.
func TokenOptions(token string) *server.Options {
	o := BaseOptions()
	o.Authorization = token
	return o
}

// NKeyOptions are a server's that requires the NKey user pub.
func NKeyOptions(pub string) *server.Options {
	o := BaseOptions()
	o.Nkeys = []*server.NkeyUser{{Nkey: pub}}
	return o
}

// Files are the credentials and certificates of one test, each in a file
// of mode 0600 in a temporary directory.
type Files struct {
	Dir       string
	Seed      string // a user's NKey seed
	SeedPub   string // its public key
	OtherSeed string // another user's NKey seed
	Operator  *Operator
	Creds     string // a .creds file of a user of Operator's account
	CA        *CA
	CAFile    string // CA's certificate
	CertFile  string // a client certificate CA signed
	KeyFile   string // its key
}

// NewFiles makes Files in a new temporary directory.
func NewFiles(t testing.TB) *Files {
	t.Helper()
	f := &Files{Dir: t.TempDir()}
	f.Seed, f.SeedPub = SeedFile(t, f.Dir, "user.nk", nkeys.CreateUser)
	f.OtherSeed, _ = SeedFile(t, f.Dir, "other.nk", nkeys.CreateUser)
	f.Operator = NewOperator(t, "forecastd-op")
	f.Creds = f.Operator.Creds(t, f.Dir, "forecastd", time.Time{})
	f.CA = NewCA(t, "forecastd test CA")
	f.CAFile = WriteFile(t, f.Dir, "ca.pem", f.CA.PEM)
	cp, kp := f.CA.Issue(t, "forecastd", false)
	f.CertFile, f.KeyFile = WriteFile(t, f.Dir, "client.pem", cp), WriteFile(t, f.Dir, "client.key", kp)
	return f
}
