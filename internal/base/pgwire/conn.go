package pgwire

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"
)

// protocolVersion is 3.0, the only one the server speaks since 7.4.
const protocolVersion = 3 << 16

// sslRequestCode asks the server whether it takes TLS.
const sslRequestCode = 80877103

// ErrBroken is a call on a connection that an earlier failure broke; the
// pool drops such a connection before reuse.
var ErrBroken = errors.New("pgwire: connection broken")

// conn is one session.
type conn struct {
	cfg *Config
	nc  net.Conn
	raw net.Conn // the TCP socket, under TLS too
	r   *bufio.Reader
	buf []byte // the body of the last message read
	w   out
	bad error // why the connection is broken, nil while it is not
	tx  byte  // the transaction status of the last ReadyForQuery: 'I', 'T' or 'E'
}

// aLongTimeAgo is a deadline in the past: set on the socket, it ends any
// read or write under way.
var aLongTimeAgo = time.Unix(1, 0)

// connect dials cfg's server and runs the start-up exchange.
func connect(ctx context.Context, cfg *Config) (*conn, error) {
	if cfg.ConnectTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, cfg.ConnectTimeout)
		defer cancel()
	}
	addr := net.JoinHostPort(cfg.Host, strconv.Itoa(cfg.port()))
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("pgwire: connect to %s: %w", addr, err)
	}
	c := &conn{cfg: cfg, nc: nc, raw: nc}
	if err := c.guard(ctx, func() error { return c.start(ctx, cfg) }); err != nil {
		_ = nc.Close()
		return nil, fmt.Errorf("pgwire: connect to %s as %s: %w", addr, cfg.User, err)
	}
	return c, nil
}

// guard runs op with ctx watched: when ctx ends first, the socket's
// deadline ends op's reads and writes, the connection is broken, and
// guard returns ctx's error. A failure other than the server's *Error
// breaks the connection too.
func (c *conn) guard(ctx context.Context, op func() error) error {
	if c.bad != nil {
		return fmt.Errorf("%w: %w", ErrBroken, c.bad)
	}
	// The TCP socket's deadline, which TLS's reads and writes obey too:
	// c.nc changes when the start-up switches to TLS, under the watch.
	raw := c.raw
	stop := context.AfterFunc(ctx, func() { _ = raw.SetDeadline(aLongTimeAgo) })
	err := op()
	if !stop() {
		c.bad = ctx.Err()
		_ = c.nc.Close()
		if err != nil {
			return fmt.Errorf("pgwire: %w", ctx.Err())
		}
		return nil // done, though the connection is not reusable
	}
	var server *Error
	if err != nil && (!errors.As(err, &server) || server.fatal()) {
		c.bad = err
		_ = c.nc.Close()
	}
	return err
}

// start asks for TLS when cfg wants it, sends the start-up packet and
// answers the server's authentication request.
func (c *conn) start(ctx context.Context, cfg *Config) error {
	if cfg.TLS != nil || cfg.PreferTLS {
		if err := c.startTLS(ctx, cfg); err != nil {
			return err
		}
	}
	c.r = bufio.NewReaderSize(c.nc, 8192)
	c.w = c.w[:0]
	at := c.w.begin(0)
	c.w.i32(protocolVersion)
	c.w.str("user")
	c.w.str(cfg.User)
	c.w.str("database")
	c.w.str(cfg.Database)
	for k, v := range cfg.Params {
		c.w.str(k)
		c.w.str(v)
	}
	c.w = append(c.w, 0)
	c.w.end(at)
	if err := c.flush(); err != nil {
		return err
	}
	return c.authenticate(ctx, cfg)
}

// startTLS sends the SSLRequest and, when the server accepts, runs the TLS
// handshake on the socket.
func (c *conn) startTLS(ctx context.Context, cfg *Config) error {
	c.w = c.w[:0]
	at := c.w.begin(0)
	c.w.i32(sslRequestCode)
	c.w.end(at)
	if err := c.flush(); err != nil {
		return err
	}
	var answer [1]byte
	if _, err := c.nc.Read(answer[:]); err != nil {
		return err
	}
	switch {
	case answer[0] == 'N' && cfg.TLS == nil:
		return nil // sslmode=prefer: on without TLS
	case answer[0] == 'N':
		return errors.New("the server does not accept TLS, and the configuration requires it")
	case answer[0] != 'S':
		return fmt.Errorf("%w: answer %q to the SSLRequest", errProtocol, answer[0])
	}
	tc := cfg.TLS
	if tc == nil {
		tc = &tls.Config{InsecureSkipVerify: true} //nolint:gosec // sslmode=prefer verifies nothing, as in libpq
	}
	t := tls.Client(c.nc, tc)
	if err := t.HandshakeContext(ctx); err != nil {
		return fmt.Errorf("TLS: %w", err)
	}
	c.nc = t
	return nil
}

// Authentication request codes.
const (
	authOK          = 0
	authCleartext   = 3
	authMD5         = 5
	authSASL        = 10
	authSASLMore    = 11
	authSASLFinal   = 12
	scramMechanism  = "SCRAM-SHA-256"
	utf8Encoding    = "UTF8"
	isoDateStylePfx = "ISO"
)

// authenticate answers the server's requests until it is ready for
// queries, and checks the session's settings the decoding relies on.
func (c *conn) authenticate(ctx context.Context, cfg *Config) error {
	var scram *scramClient
	for {
		t, body, err := readMessage(c.r, &c.buf)
		if err != nil {
			return err
		}
		m := in{b: body}
		switch t {
		case 'R':
			code := m.i32()
			switch {
			case m.bad:
				return fmt.Errorf("%w: short authentication request", errProtocol)
			case code == authOK && scram != nil && !scram.verified:
				return fmt.Errorf("%w: the server ended the exchange before proving it knows the password", errSCRAM)
			case code == authOK:
			// Once SCRAM has begun, only its next steps: a server asking
			// for the password itself (in clear, or as MD5) mid-exchange
			// falls to the default's refusal.
			case code == authCleartext && scram == nil:
				pw, err := password(ctx, cfg)
				if err != nil {
					return err
				}
				err = c.sendPassword(pw)
				if err != nil {
					return err
				}
			case code == authMD5 && scram == nil:
				pw, err := password(ctx, cfg)
				if err != nil {
					return err
				}
				if err := c.sendPassword(md5Password(cfg.User, pw, m.bytes(4))); err != nil {
					return err
				}
			case code == authSASL && scram == nil:
				if !saslOffers(m.b, scramMechanism) {
					return fmt.Errorf("the server offers SASL mechanisms %q, and the driver speaks %s only", strings.Split(strings.TrimRight(string(m.b), "\x00"), "\x00"), scramMechanism)
				}
				pw, err := password(ctx, cfg)
				if err != nil {
					return err
				}
				if scram, err = newSCRAM(pw); err != nil {
					return err
				}
				if err := c.sendSASLInitial(scram.first()); err != nil {
					return err
				}
			case code == authSASLMore && scram != nil && scram.authMessage == "":
				final, err := scram.final(m.b)
				if err != nil {
					return err
				}
				if err := c.sendPasswordBytes(final); err != nil {
					return err
				}
			case code == authSASLFinal && scram != nil:
				if err := scram.verify(m.b); err != nil {
					return err
				}
			default:
				return fmt.Errorf("the server asks for authentication method %d, which the driver does not speak", code)
			}
		case 'E':
			return parseError(body)
		case 'S':
			if err := checkParameter(&m); err != nil {
				return err
			}
		case 'K', 'N', 'v': // the cancel key (unused), a notice, a minor version negotiated down
		case 'Z':
			if len(body) != 1 {
				return fmt.Errorf("%w: ReadyForQuery of %d bytes", errProtocol, len(body))
			}
			c.tx = body[0]
			return nil
		default:
			return fmt.Errorf("%w: message %q during start-up", errProtocol, t)
		}
	}
}

// checkParameter refuses a session whose text the driver would misread:
// its client encoding must be UTF8 and its dates ISO.
func checkParameter(m *in) error {
	name, value := m.str(), m.str()
	switch {
	case m.bad:
		return fmt.Errorf("%w: short ParameterStatus", errProtocol)
	case name == "client_encoding" && value != utf8Encoding:
		return fmt.Errorf("the session's client_encoding is %s, and the driver needs %s (set the database's or role's client_encoding)", value, utf8Encoding)
	case name == "DateStyle" && !strings.HasPrefix(value, isoDateStylePfx):
		return fmt.Errorf("the session's DateStyle is %s, and the driver reads ISO (set the database's or role's DateStyle)", value)
	}
	return nil
}

func password(ctx context.Context, cfg *Config) (string, error) {
	if cfg.Password == nil {
		return "", errors.New("the server asks for a password, and the configuration has none")
	}
	pw, err := cfg.Password(ctx)
	if err != nil {
		return "", fmt.Errorf("password: %w", err)
	}
	return pw, nil
}

func saslOffers(list []byte, mechanism string) bool {
	for _, m := range strings.Split(string(list), "\x00") {
		if m == mechanism {
			return true
		}
	}
	return false
}

func (c *conn) sendPassword(pw string) error { return c.sendPasswordBytes(append([]byte(pw), 0)) }

// sendPasswordBytes sends a PasswordMessage (or SASLResponse) of data as
// it is.
func (c *conn) sendPasswordBytes(data []byte) error {
	c.w = c.w[:0]
	at := c.w.begin('p')
	c.w = append(c.w, data...)
	c.w.end(at)
	return c.flush()
}

func (c *conn) sendSASLInitial(data []byte) error {
	c.w = c.w[:0]
	at := c.w.begin('p')
	c.w.str(scramMechanism)
	c.w.i32(len(data))
	c.w = append(c.w, data...)
	c.w.end(at)
	return c.flush()
}

// flush writes the messages built in c.w.
func (c *conn) flush() error {
	_, err := c.nc.Write(c.w)
	return err
}

// close ends the session politely when it is healthy, and closes the
// socket.
func (c *conn) close() error {
	if c.bad == nil {
		c.w = c.w[:0]
		at := c.w.begin('X')
		c.w.end(at)
		_ = c.nc.SetWriteDeadline(time.Now().Add(time.Second))
		_ = c.flush()
		c.bad = net.ErrClosed
	}
	return c.nc.Close()
}
