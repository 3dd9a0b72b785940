package pgwire_test

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/hmac"
	"crypto/md5" //nolint:gosec // the md5 method's definition
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"database/sql"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"io"
	"math/big"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/base/pgwire"
)

// backend is the server side of one connection in a test: it reads the
// frontend's messages and writes what the test scripts.
type backend struct {
	t  *testing.T
	nc net.Conn
	r  *bufio.Reader
}

// fakeServer listens on 127.0.0.1 and runs script on its first
// connection; it returns the config that reaches it.
func fakeServer(t *testing.T, script func(b *backend)) pgwire.Config {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		nc, err := ln.Accept()
		if err != nil {
			return
		}
		defer func() { _ = nc.Close() }()
		script(&backend{t: t, nc: nc, r: bufio.NewReader(nc)})
	}()
	addr := ln.Addr().(*net.TCPAddr)
	return pgwire.Config{Host: "127.0.0.1", Port: addr.Port, Database: "db", User: "alice"}
}

// untyped reads a message without a type byte (start-up, SSLRequest).
func (b *backend) untyped() []byte {
	var n uint32
	if err := binary.Read(b.r, binary.BigEndian, &n); err != nil {
		return nil
	}
	body := make([]byte, n-4)
	_, _ = io.ReadFull(b.r, body)
	return body
}

// startup reads the start-up packet's parameters.
func (b *backend) startup() map[string]string {
	body := b.untyped()
	params := map[string]string{}
	if len(body) < 4 {
		return params
	}
	parts := strings.Split(strings.TrimRight(string(body[4:]), "\x00"), "\x00")
	for i := 0; i+1 < len(parts); i += 2 {
		params[parts[i]] = parts[i+1]
	}
	return params
}

func (b *backend) read() (byte, []byte) {
	t, err := b.r.ReadByte()
	if err != nil {
		return 0, nil
	}
	var n uint32
	_ = binary.Read(b.r, binary.BigEndian, &n)
	body := make([]byte, n-4)
	_, _ = io.ReadFull(b.r, body)
	return t, body
}

func (b *backend) send(msgs ...[]byte) {
	for _, m := range msgs {
		_, _ = b.nc.Write(m)
	}
}

// ready ends the start-up: authentication done, the session's settings,
// ready for queries.
func (b *backend) ready() {
	b.send(msg('R', i32(0)), msg('S', cstr("client_encoding"), cstr("UTF8")), msg('S', cstr("DateStyle"), cstr("ISO, MDY")),
		msg('K', i32(1), i32(2)), msg('Z', []byte("I")))
}

// answerPings answers empty simple queries until the frontend leaves.
func (b *backend) answerPings() {
	for {
		t, _ := b.read()
		if t != 'Q' {
			return
		}
		b.send(msg('I'), msg('Z', []byte("I")))
	}
}

func connectOnce(ctx context.Context, cfg pgwire.Config) error {
	c, err := pgwire.NewConnector(cfg)
	if err != nil {
		return err
	}
	conn, err := c.Connect(ctx)
	if err != nil {
		return err
	}
	return conn.Close()
}

func withPassword(cfg pgwire.Config, pw string, calls *atomic.Int64) pgwire.Config {
	cfg.Password = func(context.Context) (string, error) {
		calls.Add(1)
		return pw, nil
	}
	return cfg
}

// RDS Proxy asks a client presenting an IAM token for a cleartext
// password: the token goes as it is, fetched once for the connection.
func TestCleartextPasswordSendsTheToken(t *testing.T) {
	t.Parallel()
	got := make(chan string, 1)
	var calls atomic.Int64
	cfg := withPassword(fakeServer(t, func(b *backend) {
		p := b.startup()
		if p["user"] != "alice" || p["database"] != "db" {
			got <- "bad start-up " + p["user"] + "/" + p["database"]
			return
		}
		b.send(msg('R', i32(3)))
		typ, body := b.read()
		got <- string(typ) + strings.TrimRight(string(body), "\x00")
		b.ready()
		b.answerPings()
	}), "token-123", &calls)
	require.NoError(t, connectOnce(t.Context(), cfg))
	require.Equal(t, "ptoken-123", <-got)
	require.EqualValues(t, 1, calls.Load())
}

func TestMD5Password(t *testing.T) {
	t.Parallel()
	got := make(chan string, 1)
	salt := []byte{1, 2, 3, 4}
	var calls atomic.Int64
	cfg := withPassword(fakeServer(t, func(b *backend) {
		b.startup()
		b.send(msg('R', i32(5), salt))
		_, body := b.read()
		got <- strings.TrimRight(string(body), "\x00")
		b.ready()
		b.answerPings()
	}), "pw", &calls)
	require.NoError(t, connectOnce(t.Context(), cfg))
	inner := md5.Sum([]byte("pwalice"))                                     //nolint:gosec // the method's definition
	outer := md5.Sum(append([]byte(hex.EncodeToString(inner[:])), salt...)) //nolint:gosec // the method's definition
	require.Equal(t, "md5"+hex.EncodeToString(outer[:]), <-got)
}

// scramServer plays the server's side of SCRAM-SHA-256 for password,
// checking the client's proof; lie makes it sign with the wrong key.
func scramServer(b *backend, password string, lie bool) (proofOK bool) {
	b.send(msg('R', i32(10), cstr("SCRAM-SHA-256-PLUS"), cstr("SCRAM-SHA-256"), []byte{0}))
	_, body := b.read()
	mech := body[:strings.IndexByte(string(body), 0)]
	if string(mech) != "SCRAM-SHA-256" {
		return false
	}
	clientFirst := string(body[len(mech)+5:])
	bare := strings.TrimPrefix(clientFirst, "n,,")
	cnonce := bare[strings.Index(bare, "r=")+2:]
	salt := []byte("salt-of-the-test")
	serverFirst := "r=" + cnonce + "server,s=" + base64.StdEncoding.EncodeToString(salt) + ",i=4096"
	b.send(msg('R', i32(11), []byte(serverFirst)))
	_, final := b.read()
	withoutProof, proof64, _ := strings.Cut(string(final), ",p=")
	salted, _ := pbkdf2.Key(sha256.New, password, salt, 4096, 32)
	hm := func(k []byte, m string) []byte { h := hmac.New(sha256.New, k); h.Write([]byte(m)); return h.Sum(nil) }
	clientKey := hm(salted, "Client Key")
	stored := sha256.Sum256(clientKey)
	auth := bare + "," + serverFirst + "," + withoutProof
	proof, _ := base64.StdEncoding.DecodeString(proof64)
	sig := hm(stored[:], auth)
	for i := range proof {
		proof[i] ^= sig[i]
	}
	got := sha256.Sum256(proof)
	proofOK = hmac.Equal(got[:], stored[:])
	key := hm(salted, "Server Key")
	if lie {
		key = hm(salted, "Another Key")
	}
	b.send(msg('R', i32(12), []byte("v="+base64.StdEncoding.EncodeToString(hm(key, auth)))))
	return proofOK
}

// SCRAM-SHA-256 end to end: the server verifies the client's proof, and
// the client refuses a server that cannot sign with the password's key.
func TestSCRAMWithAServer(t *testing.T) {
	t.Parallel()
	ok := make(chan bool, 1)
	var calls atomic.Int64
	cfg := withPassword(fakeServer(t, func(b *backend) {
		b.startup()
		ok <- scramServer(b, "correct horse", false)
		b.ready()
		b.answerPings()
	}), "correct horse", &calls)
	require.NoError(t, connectOnce(t.Context(), cfg))
	require.True(t, <-ok, "the server accepted the client's proof")

	cfg = withPassword(fakeServer(t, func(b *backend) {
		b.startup()
		scramServer(b, "correct horse", true)
		b.ready()
	}), "correct horse", &calls)
	require.ErrorContains(t, connectOnce(t.Context(), cfg), "signature is wrong")
}

// What the driver cannot or must not do at start-up is an error naming
// it: a password asked and none configured, a method it does not speak,
// a SASL list without SCRAM-SHA-256, the server's refusal (with its
// SQLSTATE), a session whose text it would misread.
func TestStartUpRefusals(t *testing.T) {
	t.Parallel()
	for name, c := range map[string]struct {
		script func(b *backend)
		want   string
	}{
		"no password": {func(b *backend) { b.startup(); b.send(msg('R', i32(3))) }, "asks for a password"},
		"GSSAPI":      {func(b *backend) { b.startup(); b.send(msg('R', i32(7))) }, "method 7"},
		"SASL without SCRAM": {func(b *backend) {
			b.startup()
			b.send(msg('R', i32(10), cstr("OAUTHBEARER"), []byte{0}))
		}, "OAUTHBEARER"},
		"refused": {func(b *backend) {
			b.startup()
			b.send(msg('E', []byte("SFATAL\x00VFATAL\x00C28P01\x00Mpassword authentication failed\x00\x00")))
		}, "(SQLSTATE 28P01)"},
		"latin1": {func(b *backend) {
			b.startup()
			b.send(msg('R', i32(0)), msg('S', cstr("client_encoding"), cstr("LATIN1")))
		}, "client_encoding is LATIN1"},
		"German dates": {func(b *backend) {
			b.startup()
			b.send(msg('R', i32(0)), msg('S', cstr("DateStyle"), cstr("German, DMY")))
		}, "DateStyle is German"},
		"the server hangs up": {func(b *backend) { b.startup() }, "EOF"},
		// Once SCRAM has begun, the server must prove it knows the
		// password before the client takes it as authenticated, and may
		// not switch to asking for the password itself.
		"SCRAM cut short": {func(b *backend) {
			b.startup()
			b.send(msg('R', i32(10), cstr("SCRAM-SHA-256"), []byte{0}))
			b.read()
			b.ready()
		}, "before proving"},
		"SCRAM's end without its middle": {func(b *backend) {
			b.startup()
			b.send(msg('R', i32(10), cstr("SCRAM-SHA-256"), []byte{0}))
			b.read()
			key := hmac.New(sha256.New, nil)
			key.Write([]byte("Server Key"))
			sig := hmac.New(sha256.New, key.Sum(nil)) // signed with no password and nothing exchanged
			b.send(msg('R', i32(12), []byte("v="+base64.StdEncoding.EncodeToString(sig.Sum(nil)))))
			b.ready()
		}, "out of order"},
		"SCRAM then cleartext": {func(b *backend) {
			b.startup()
			b.send(msg('R', i32(10), cstr("SCRAM-SHA-256"), []byte{0}))
			b.read()
			b.send(msg('R', i32(3)))
			b.read()
			b.ready()
		}, "method 3"},
	} {
		cfg := fakeServer(t, c.script)
		if name != "no password" {
			cfg.Password = func(context.Context) (string, error) { return "pw", nil }
		}
		err := connectOnce(t.Context(), cfg)
		require.ErrorContains(t, err, c.want, name)
		require.ErrorContains(t, err, "connect to 127.0.0.1:", name)
	}
}

// A connection that cannot start within its context ends with the
// context's error, not a hang.
func TestStartUpEndsWithItsContext(t *testing.T) {
	t.Parallel()
	started, done := make(chan struct{}), make(chan struct{})
	defer close(done)
	silent := func(b *backend) { b.startup(); started <- struct{}{}; <-done }
	cfg := fakeServer(t, silent)
	ctx, cancel := context.WithCancel(t.Context())
	go func() { <-started; cancel() }()
	err := connectOnce(ctx, cfg)
	require.ErrorIs(t, err, context.Canceled)
	cfg = fakeServer(t, silent)
	go func() { <-started }()
	cfg.ConnectTimeout = 50 * time.Millisecond
	require.ErrorIs(t, connectOnce(t.Context(), cfg), context.DeadlineExceeded)
}

// selfSigned is a TLS certificate for 127.0.0.1 that no root trusts.
func selfSigned(t *testing.T) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, DNSNames: []string{"db.test"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// tlsServer answers the SSLRequest with S and serves the session over TLS.
func tlsServer(t *testing.T, cert tls.Certificate, sawPassword chan<- string) pgwire.Config {
	return fakeServer(t, func(b *backend) {
		if code := b.untyped(); binary.BigEndian.Uint32(code) != 80877103 {
			return
		}
		_, _ = b.nc.Write([]byte("S"))
		tc := tls.Server(b.nc, &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})
		if tc.Handshake() != nil {
			return
		}
		tb := &backend{t: b.t, nc: tc, r: bufio.NewReader(tc)}
		tb.startup()
		tb.send(msg('R', i32(3)))
		_, body := tb.read()
		sawPassword <- strings.TrimRight(string(body), "\x00")
		tb.ready()
		tb.answerPings()
	})
}

// verify-full refuses a certificate no root vouches for before any
// password is sent; with the certificate's root trusted, the session runs
// over TLS and the password goes inside it. A server that declines TLS is
// refused when the configuration requires it, and used in plaintext only
// under sslmode=prefer.
func TestTLS(t *testing.T) {
	t.Parallel()
	cert := selfSigned(t)
	saw := make(chan string, 1)
	var calls atomic.Int64
	cfg := withPassword(tlsServer(t, cert, saw), "token", &calls)
	cfg.TLS = &tls.Config{ServerName: "db.test", MinVersion: tls.VersionTLS12}
	require.ErrorContains(t, connectOnce(t.Context(), cfg), "certificate")
	require.Zero(t, calls.Load(), "no password before the server is verified")

	roots := x509.NewCertPool()
	leaf, err := x509.ParseCertificate(cert.Certificate[0])
	require.NoError(t, err)
	roots.AddCert(leaf)
	cfg = withPassword(tlsServer(t, cert, saw), "token", &calls)
	cfg.TLS = &tls.Config{ServerName: "db.test", RootCAs: roots, MinVersion: tls.VersionTLS12}
	require.NoError(t, connectOnce(t.Context(), cfg))
	require.Equal(t, "token", <-saw)

	cfg = withPassword(tlsServer(t, cert, saw), "token", &calls)
	cfg.TLS = &tls.Config{ServerName: "other.test", RootCAs: roots, MinVersion: tls.VersionTLS12}
	require.ErrorContains(t, connectOnce(t.Context(), cfg), "other.test", "verify-full checks the name")

	declines := func(b *backend) {
		b.untyped()
		_, _ = b.nc.Write([]byte("N"))
		b.startup()
		b.ready()
		b.answerPings()
	}
	cfg = fakeServer(t, declines)
	cfg.TLS = &tls.Config{ServerName: "db.test", MinVersion: tls.VersionTLS12}
	require.ErrorContains(t, connectOnce(t.Context(), cfg), "does not accept TLS")
	cfg = fakeServer(t, declines)
	cfg.PreferTLS = true
	require.NoError(t, connectOnce(t.Context(), cfg))
}

// A quiet session over TLS passes the pool's reset and is reused: the
// check for a session ended while idle reads nothing from it.
func TestAQuietTLSSessionIsReused(t *testing.T) {
	t.Parallel()
	cert := selfSigned(t)
	roots := x509.NewCertPool()
	leaf, err := x509.ParseCertificate(cert.Certificate[0])
	require.NoError(t, err)
	roots.AddCert(leaf)
	var calls atomic.Int64
	cfg := withPassword(tlsServer(t, cert, make(chan string, 1)), "token", &calls)
	cfg.TLS = &tls.Config{ServerName: "db.test", RootCAs: roots, MinVersion: tls.VersionTLS12}
	c, err := pgwire.NewConnector(cfg)
	require.NoError(t, err)
	db := sql.OpenDB(c)
	defer func() { _ = db.Close() }()
	db.SetMaxOpenConns(1)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	for range 3 { // the fake server serves one connection only
		require.NoError(t, db.PingContext(ctx))
	}
	require.Equal(t, int64(1), calls.Load(), "one session, one password")
}

// A context that ends after the TLS handshake, while the start-up waits
// on the server, ends the connection with the context's error (and, under
// -race, without a race between the watch and the switch to TLS).
func TestStartUpOverTLSEndsWithItsContext(t *testing.T) {
	t.Parallel()
	cert := selfSigned(t)
	handshaken, done := make(chan struct{}), make(chan struct{})
	defer close(done)
	cfg := fakeServer(t, func(b *backend) {
		b.untyped()
		_, _ = b.nc.Write([]byte("S"))
		tc := tls.Server(b.nc, &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})
		if tc.Handshake() != nil {
			return
		}
		(&backend{t: b.t, nc: tc, r: bufio.NewReader(tc)}).startup()
		handshaken <- struct{}{}
		<-done
	})
	cfg.TLS = &tls.Config{InsecureSkipVerify: true} //nolint:gosec // the test's server
	ctx, cancel := context.WithCancel(t.Context())
	go func() { <-handshaken; cancel() }()
	require.ErrorIs(t, connectOnce(ctx, cfg), context.Canceled)
}
