package pgwire

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// ErrInvalidConfig is a Config, or a connection string, that cannot be used.
var ErrInvalidConfig = errors.New("pgwire: invalid configuration")

// DefaultPort is PostgreSQL's port, used when Config.Port is 0.
const DefaultPort = 5432

// Config is where and how a connection opens.
type Config struct {
	// Host is the server's host name or address. Required; a Unix socket
	// directory is not supported.
	Host string
	// Port is the server's TCP port. Default DefaultPort.
	Port int
	// Database and User name the session's database and role. Required.
	Database string
	User     string
	// Password returns the password of each new connection, called only
	// when the server asks for one (an IAM token is signed per
	// connection). Nil: the connection has none, and a server that asks
	// for one is refused.
	Password func(ctx context.Context) (string, error)
	// TLS, when set, is the TLS client configuration the connection
	// starts with: the server must accept TLS. Nil: no TLS (sslmode
	// disable), unless PreferTLS.
	TLS *tls.Config
	// PreferTLS, with TLS nil, asks the server for TLS and goes on
	// without it if the server declines (libpq's sslmode=prefer, which
	// verifies nothing).
	PreferTLS bool
	// ConnectTimeout bounds dialling and the start-up exchange beside the
	// context's deadline. Default 0: the context's alone.
	ConnectTimeout time.Duration
	// Params are run-time parameters the start-up packet sets for the
	// session (application_name, default_transaction_isolation, …).
	// Default none: the server's, the database's and the role's settings.
	Params map[string]string
	// Trace, when set, is called before each round trip with the
	// statement it sends ("BEGIN", "COMMIT" and "" for a ping included):
	// a test's count of what a store sends.
	Trace func(ctx context.Context, query string)
}

// Validate returns nil or the first problem, wrapping ErrInvalidConfig.
func (c Config) Validate() error {
	switch {
	case c.Host == "":
		return fmt.Errorf("%w: Host is required", ErrInvalidConfig)
	case strings.HasPrefix(c.Host, "/"):
		return fmt.Errorf("%w: Host %q is a Unix socket directory; only TCP is supported", ErrInvalidConfig, c.Host)
	case c.Port < 0 || c.Port > 65535:
		return fmt.Errorf("%w: Port %d is not a TCP port", ErrInvalidConfig, c.Port)
	case c.Database == "":
		return fmt.Errorf("%w: Database is required", ErrInvalidConfig)
	case c.User == "":
		return fmt.Errorf("%w: User is required", ErrInvalidConfig)
	case c.ConnectTimeout < 0:
		return fmt.Errorf("%w: ConnectTimeout %v is negative", ErrInvalidConfig, c.ConnectTimeout)
	}
	for k, v := range c.Params {
		if k == "" || strings.IndexByte(k, 0) >= 0 || strings.IndexByte(v, 0) >= 0 || k == "user" || k == "database" {
			return fmt.Errorf("%w: Params[%q] is not a run-time parameter (no NUL; user and database are their own fields)", ErrInvalidConfig, k)
		}
	}
	return nil
}

func (c Config) port() int {
	if c.Port == 0 {
		return DefaultPort
	}
	return c.Port
}

// ParseDSN reads a connection string, a URL (postgres://user:password@host:port/database?sslmode=…)
// or libpq's keyword/value form (host=… port=… dbname=… user=… password=… sslmode=…), into a
// Config. The settings it knows are host, port, dbname, user, password,
// sslmode (disable, allow, prefer, require or verify-full; libpq's default
// prefer when absent) and connect_timeout (seconds); any other is an error,
// so that a setting is never silently ignored. The error never quotes a
// password.
func ParseDSN(dsn string) (Config, error) {
	var settings map[string]string
	var err error
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		settings, err = urlSettings(dsn)
	} else {
		settings, err = keywordSettings(dsn)
	}
	if err != nil {
		return Config{}, err
	}
	return configOf(settings)
}

func urlSettings(dsn string) (map[string]string, error) {
	u, err := url.Parse(dsn)
	if err != nil {
		return nil, fmt.Errorf("%w: not a URL", ErrInvalidConfig) // url's error quotes the password
	}
	s := map[string]string{}
	if u.User != nil {
		s["user"] = u.User.Username()
		if p, ok := u.User.Password(); ok {
			s["password"] = p
		}
	}
	if h := u.Hostname(); h != "" {
		s["host"] = h
	}
	if p := u.Port(); p != "" {
		s["port"] = p
	}
	if db := strings.TrimPrefix(u.Path, "/"); db != "" {
		s["dbname"] = db
	}
	for k, vs := range u.Query() {
		if _, dup := s[k]; dup || len(vs) != 1 {
			return nil, fmt.Errorf("%w: %s is given more than once", ErrInvalidConfig, k)
		}
		s[k] = vs[0]
	}
	return s, nil
}

// keywordSettings reads key=value pairs separated by white space, a value
// optionally single-quoted with \' and \\ inside. Its errors name keys,
// never a value: an unquoted password with a space in it reads as a
// setting that is not key=value.
func keywordSettings(dsn string) (map[string]string, error) {
	s := map[string]string{}
	rest := strings.TrimLeft(dsn, dsnSpace)
	after := "the start"
	for rest != "" {
		eq := strings.IndexByte(rest, '=')
		if eq <= 0 || strings.ContainsAny(strings.TrimRight(rest[:eq], dsnSpace), dsnSpace) {
			return nil, fmt.Errorf("%w: the setting after %s is not key=value", ErrInvalidConfig, after)
		}
		key := strings.TrimRight(rest[:eq], dsnSpace)
		rest = strings.TrimLeft(rest[eq+1:], dsnSpace)
		var val strings.Builder
		if strings.HasPrefix(rest, "'") {
			i, closed := 1, false
			for ; i < len(rest); i++ {
				if rest[i] == '\\' && i+1 < len(rest) {
					i++
					val.WriteByte(rest[i])
				} else if rest[i] == '\'' {
					closed = true
					break
				} else {
					val.WriteByte(rest[i])
				}
			}
			if !closed {
				return nil, fmt.Errorf("%w: the value of %s has no closing quote", ErrInvalidConfig, key)
			}
			rest = rest[i+1:]
		} else {
			end := strings.IndexAny(rest, dsnSpace)
			if end < 0 {
				end = len(rest)
			}
			val.WriteString(rest[:end])
			rest = rest[end:]
		}
		if _, dup := s[key]; dup {
			return nil, fmt.Errorf("%w: %s is given more than once", ErrInvalidConfig, key)
		}
		s[key] = val.String()
		after = key
		rest = strings.TrimLeft(rest, dsnSpace)
	}
	return s, nil
}

// dsnSpace is the white space that separates settings (libpq's isspace).
const dsnSpace = " \t\n\r\f\v"

func configOf(s map[string]string) (Config, error) {
	c := Config{Host: s["host"], Database: s["dbname"], User: s["user"]}
	for k, v := range s {
		switch k {
		case "host", "dbname", "user":
		case "password":
			pw := v
			c.Password = func(context.Context) (string, error) { return pw, nil }
		case "port":
			p, err := strconv.Atoi(v)
			if err != nil || p <= 0 || p > 65535 {
				return Config{}, fmt.Errorf("%w: port %q is not a TCP port", ErrInvalidConfig, v)
			}
			c.Port = p
		case "connect_timeout":
			secs, err := strconv.Atoi(v)
			if err != nil || secs < 0 {
				return Config{}, fmt.Errorf("%w: connect_timeout %q is not a whole number of seconds", ErrInvalidConfig, v)
			}
			c.ConnectTimeout = time.Duration(secs) * time.Second
		case "sslmode":
			if err := c.setSSLMode(v); err != nil {
				return Config{}, err
			}
		default:
			return Config{}, fmt.Errorf("%w: setting %q is not supported (host, port, dbname, user, password, sslmode, connect_timeout)", ErrInvalidConfig, k)
		}
	}
	if _, ok := s["sslmode"]; !ok {
		c.PreferTLS = true
	}
	if c.Database == "" {
		c.Database = c.User // libpq's default
	}
	return c, c.Validate()
}

func (c *Config) setSSLMode(mode string) error {
	switch mode {
	case "disable":
	case "allow", "prefer":
		c.PreferTLS = true
	case "require":
		c.TLS = &tls.Config{InsecureSkipVerify: true} //nolint:gosec // sslmode=require verifies nothing, as in libpq
	case "verify-full":
		c.TLS = &tls.Config{ServerName: c.Host, MinVersion: tls.VersionTLS12}
	default:
		return fmt.Errorf("%w: sslmode %q is not supported (disable, allow, prefer, require, verify-full)", ErrInvalidConfig, mode)
	}
	return nil
}
