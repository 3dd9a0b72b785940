package pgwire_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/base/pgwire"
)

// The SCRAM-SHA-256 client reproduces RFC 7677's exchange (section 3):
// its client-first and client-final messages byte for byte, and it takes
// the server's signature; a signature one byte off is refused.
func TestSCRAMFollowsRFC7677(t *testing.T) {
	t.Parallel()
	first, final, verify := pgwire.SCRAM("pencil", "user", "rOprNGfwEbeRWgbNEkqO")
	require.Equal(t, "n,,n=user,r=rOprNGfwEbeRWgbNEkqO", string(first()))
	got, err := final([]byte("r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"))
	require.NoError(t, err)
	require.Equal(t, "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=", string(got))
	require.NoError(t, verify([]byte("v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=")))
	require.ErrorContains(t, verify([]byte("v=7rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=")), "signature is wrong")
	require.ErrorContains(t, verify([]byte("e=invalid-proof")), "refused: invalid-proof")
}

// A server-first message that does not extend the client's nonce, or
// carries no usable salt or iteration count, ends the exchange.
func TestSCRAMRefusesABadServerFirstMessage(t *testing.T) {
	t.Parallel()
	for msg, want := range map[string]string{
		"r=someoneelse,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096": "nonce",
		"r=abc,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096":         "nonce", // not extended
		"r=abcdef,s=!!!,i=4096":                           "salt",
		"r=abcdef,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=0":         "iteration",
		"r=abcdef,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=x":         "iteration",
		"r=abcdef,s=,i=4096":                              "salt",
	} {
		_, final, _ := pgwire.SCRAM("pw", "", "abc")
		_, err := final([]byte(msg))
		require.ErrorContains(t, err, want, msg)
	}
}

func TestParseDSN(t *testing.T) {
	t.Parallel()
	c, err := pgwire.ParseDSN("postgres://alice:s3cret@127.0.0.1:55432/jobs?sslmode=disable&connect_timeout=7")
	require.NoError(t, err)
	require.Equal(t, "127.0.0.1", c.Host)
	require.Equal(t, 55432, c.Port)
	require.Equal(t, "jobs", c.Database)
	require.Equal(t, "alice", c.User)
	require.Nil(t, c.TLS)
	require.False(t, c.PreferTLS)
	require.Equal(t, 7*time.Second, c.ConnectTimeout)
	pw, err := c.Password(t.Context())
	require.NoError(t, err)
	require.Equal(t, "s3cret", pw)

	c, err = pgwire.ParseDSN(`host=db.example port=6543 dbname='my db' user=bob password='it\'s' sslmode=verify-full`)
	require.NoError(t, err)
	require.Equal(t, "db.example", c.Host)
	require.Equal(t, 6543, c.Port)
	require.Equal(t, "my db", c.Database)
	require.NotNil(t, c.TLS)
	require.Equal(t, "db.example", c.TLS.ServerName)
	require.False(t, c.TLS.InsecureSkipVerify)
	pw, err = c.Password(t.Context())
	require.NoError(t, err)
	require.Equal(t, "it's", pw)

	c, err = pgwire.ParseDSN("postgresql://carol@h/")
	require.NoError(t, err)
	require.Equal(t, "carol", c.Database, "libpq's default database is the user's name")
	require.True(t, c.PreferTLS, "libpq's default sslmode is prefer")
	require.Nil(t, c.Password)
	require.Zero(t, c.Port, "Port 0 is the default, 5432")

	c, err = pgwire.ParseDSN("host=h\tuser=u\n port=6543\r\ndbname=d ")
	require.NoError(t, err)
	require.Equal(t, pgwire.Config{Host: "h", User: "u", Port: 6543, Database: "d", PreferTLS: true}, c, "any white space separates settings, as in libpq")

	c, err = pgwire.ParseDSN("host=h user=u sslmode=require")
	require.NoError(t, err)
	require.True(t, c.TLS.InsecureSkipVerify, "require encrypts without verifying, as libpq's")
}

// Every connection string the driver cannot honour is refused, naming
// what is wrong and never quoting the password.
func TestParseDSNRefusesWhatItCannotHonour(t *testing.T) {
	t.Parallel()
	for dsn, want := range map[string]string{
		"postgres://u:hunter2@h/db?sslmode=verify-ca":      "sslmode",
		"postgres://u:hunter2@h/db?application_name=x":     `"application_name" is not supported`,
		"postgres://u:hunter2@h:0/db":                      "port",
		"postgres://u:hunter2@h:65536/db":                  "port",
		"postgres://u:hunter2@/db":                         "Host is required",
		"postgres://:hunter2@h/db":                         "User is required",
		"postgres://u:hunter2@h/db?sslmode=a&sslmode=b":    "more than once",
		"postgres://u:hunter2@h/db?connect_timeout=-1":     "connect_timeout",
		"host=/var/run/postgresql user=u password=hunter2": "Unix socket",
		"host=h user=u password='hunter2":                  "no closing quote",
		"host=h user=u garbage":                            "not key=value",
		"host=h host=i user=u password=hunter2":            "more than once",
		"postgres://u:hunter2@h:port/db":                   "not a URL",
		"host=h user=u password=hunter hunter2":            "not key=value",
	} {
		_, err := pgwire.ParseDSN(dsn)
		require.ErrorIs(t, err, pgwire.ErrInvalidConfig, dsn)
		require.ErrorContains(t, err, want, dsn)
		require.NotContains(t, err.Error(), "hunter2", dsn)
	}
	// Ports at their bounds.
	for port, ok := range map[string]bool{"1": true, "65535": true, "0": false, "65536": false} {
		_, err := pgwire.ParseDSN("host=h user=u port=" + port)
		require.Equal(t, ok, err == nil, "port %s: %v", port, err)
	}
}

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	ok := pgwire.Config{Host: "h", Database: "d", User: "u"}
	require.NoError(t, ok.Validate())
	for name, c := range map[string]pgwire.Config{
		"negative port":    {Host: "h", Database: "d", User: "u", Port: -1},
		"port over 65535":  {Host: "h", Database: "d", User: "u", Port: 65536},
		"no database":      {Host: "h", User: "u"},
		"negative timeout": {Host: "h", Database: "d", User: "u", ConnectTimeout: -time.Second},
		"user in Params":   {Host: "h", Database: "d", User: "u", Params: map[string]string{"user": "x"}},
		"NUL in a param":   {Host: "h", Database: "d", User: "u", Params: map[string]string{"a": "b\x00"}},
		"empty param name": {Host: "h", Database: "d", User: "u", Params: map[string]string{"": "b"}},
	} {
		require.ErrorIs(t, c.Validate(), pgwire.ErrInvalidConfig, name)
		_, err := pgwire.NewConnector(c)
		require.ErrorIs(t, err, pgwire.ErrInvalidConfig, name)
	}
	for _, port := range []int{0, 1, 65535} {
		c := ok
		c.Port = port
		require.NoError(t, c.Validate(), port)
	}
}

// Each text value decodes to the Go type database/sql scans from.
func TestDecodeText(t *testing.T) {
	t.Parallel()
	ist := time.FixedZone("", 5*3600+30*60)
	for _, c := range []struct {
		oid  uint32
		raw  string
		want any
	}{
		{20, "-9223372036854775808", int64(math.MinInt64)},
		{23, "42", int64(42)},
		{21, "-7", int64(-7)},
		{26, "4294967295", int64(4294967295)},
		{701, "1.5", 1.5},
		{700, "-Infinity", math.Inf(-1)},
		{16, "t", true},
		{16, "f", false},
		{17, `\x00ff7f`, []byte{0, 0xff, 0x7f}},
		{17, `\x`, []byte{}},
		{3802, `{"a": 1}`, []byte(`{"a": 1}`)},
		{114, `[1]`, []byte(`[1]`)},
		{1082, "2026-12-02", time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)},
		{1114, "2026-12-02 07:36:22.123456", time.Date(2026, 12, 2, 7, 36, 22, 123456000, time.UTC)},
		{1184, "2026-12-02 07:36:22+00", time.Date(2026, 12, 2, 7, 36, 22, 0, time.UTC)},
		{1184, "2026-12-02 13:06:22.5+05:30", time.Date(2026, 12, 2, 13, 6, 22, 5e8, ist)},
		{1184, "1900-01-01 00:00:00-00:01:15", time.Date(1900, 1, 1, 0, 0, 0, 0, time.FixedZone("", -75))},
		{25, "text é", "text é"},
		{1700, "12.50", "12.50"}, // numeric, and any type the driver does not know: text
	} {
		got, err := pgwire.DecodeText(c.oid, []byte(c.raw))
		require.NoError(t, err, "%d %q", c.oid, c.raw)
		if want, ok := c.want.(time.Time); ok {
			require.True(t, want.Equal(got.(time.Time)), "%d %q: %v", c.oid, c.raw, got)
			_, off := got.(time.Time).Zone()
			_, wantOff := want.Zone()
			require.Equal(t, wantOff, off, c.raw)
			continue
		}
		require.Equal(t, c.want, got, "%d %q", c.oid, c.raw)
	}
	for _, c := range []struct {
		oid uint32
		raw string
	}{
		{20, "9223372036854775808"}, {23, "x"}, {16, "true"}, {17, "\\000"}, {17, `\xZZ`},
		{1184, "infinity"}, {1082, "2026-13-01"}, {701, "one"},
	} {
		_, err := pgwire.DecodeText(c.oid, []byte(c.raw))
		require.Error(t, err, "%d %q", c.oid, c.raw)
	}
}

// Each argument's bytes in Bind: text, but []byte's own bytes (sent in
// binary), arrays as literals whose elements are quoted and escaped.
func TestEncodeParam(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		v    any
		want string
	}{
		{int64(-3), "-3"},
		{1.25, "1.25"},
		{math.Inf(1), "Infinity"},
		{math.Inf(-1), "-Infinity"},
		{math.NaN(), "NaN"},
		{true, "true"},
		{"it's", "it's"},
		{[]byte{0, 1, 0xff}, "\x00\x01\xff"},
		{time.Date(2026, 12, 2, 7, 36, 22, 123456789, time.FixedZone("", 3600)), "2026-12-02 07:36:22.123456+01:00:00"},
		{time.Date(1900, 1, 1, 0, 0, 0, 999, time.FixedZone("AMT", 19*60+32)), "1900-01-01 00:00:00+00:19:32"},
		{time.Date(2026, 12, 2, 7, 36, 22, 0, time.UTC), "2026-12-02 07:36:22+00:00:00"},
		{[]string{}, "{}"},
		{[]string{`a"b`, `c\d`, "e,f", "{g}", "", "NULL"}, `{"a\"b","c\\d","e,f","{g}","","NULL"}`},
		{[]int64{1, -2, 3}, "{1,-2,3}"},
	} {
		got, err := pgwire.EncodeParam(c.v)
		require.NoError(t, err, "%v", c.v)
		require.Equal(t, c.want, string(got), "%#v", c.v)
	}
	got, err := pgwire.EncodeParam(nil)
	require.NoError(t, err)
	require.Nil(t, got, "NULL")
	got, err = pgwire.EncodeParam([]byte(nil))
	require.NoError(t, err)
	require.Nil(t, got, "a nil []byte is NULL")
	got, err = pgwire.EncodeParam([]byte{})
	require.NoError(t, err)
	require.NotNil(t, got, "an empty []byte is an empty bytea, not NULL")
	require.Empty(t, got)
	_, err = pgwire.EncodeParam(uint8(1))
	require.ErrorContains(t, err, "not supported")
}

// msg renders one backend message.
func msg(t byte, body ...[]byte) []byte {
	b := []byte{t, 0, 0, 0, 0}
	for _, p := range body {
		b = append(b, p...)
	}
	binary.BigEndian.PutUint32(b[1:], uint32(len(b)-1))
	return b
}

func i16(v int) []byte     { return binary.BigEndian.AppendUint16(nil, uint16(v)) }
func i32(v int) []byte     { return binary.BigEndian.AppendUint32(nil, uint32(v)) }
func cstr(s string) []byte { return append([]byte(s), 0) }

// rowDescription of one text column named n.
func rowDescription(oid int) []byte {
	return msg('T', i16(1), cstr("n"), i32(0), i16(0), i32(oid), i16(-1), i32(-1), i16(0))
}

// A server's answer the driver cannot read is an error, never a panic nor
// a hang: a row of the wrong width, a short message, a length past the
// bound, a message it does not expect, the stream's end.
func TestResultsRefuseWhatTheyCannotRead(t *testing.T) {
	t.Parallel()
	ready := msg('Z', []byte("I"))
	for name, raw := range map[string][]byte{
		"two values for one column": bytes.Join([][]byte{rowDescription(25), msg('D', i16(2), i32(1), []byte("a"), i32(1), []byte("b")), ready}, nil),
		"a value past the message":  bytes.Join([][]byte{rowDescription(25), msg('D', i16(1), i32(9), []byte("a")), ready}, nil),
		"a length over 1 GB":        {'D', 0x7f, 0xff, 0xff, 0xff},
		"an unexpected message":     msg('G', i16(0)),
		"the stream ends":           rowDescription(25),
		"a bad ReadyForQuery":       msg('Z'),
		"an undecodable value":      bytes.Join([][]byte{rowDescription(20), msg('D', i16(1), i32(1), []byte("x")), ready}, nil),
	} {
		require.Error(t, pgwire.ReadResults(raw), name)
	}
	// A message's length is bounded at 1 GB (a field's limit in
	// PostgreSQL): at the bound it is read (here the stream ends first),
	// past it the stream is out of step.
	header := func(n uint32) []byte { return binary.BigEndian.AppendUint32([]byte{'D'}, n+4) }
	require.ErrorContains(t, pgwire.ReadResults(header(1<<30+1)), "protocol error")
	err := pgwire.ReadResults(header(1 << 30))
	require.ErrorIs(t, err, io.ErrUnexpectedEOF)
	require.NotContains(t, err.Error(), "protocol error")
	// A server error is *Error, with its SQLSTATE, after ReadyForQuery.
	err = pgwire.ReadResults(bytes.Join([][]byte{msg('E', []byte("SERROR\x00VERROR\x00C23505\x00Mduplicate key\x00\x00")), ready}, nil))
	var pe *pgwire.Error
	require.True(t, errors.As(err, &pe), "%v", err)
	require.Equal(t, "23505", pe.SQLState())
	require.Equal(t, "ERROR: duplicate key (SQLSTATE 23505)", pe.Error())
	require.NoError(t, pgwire.ReadResults(bytes.Join([][]byte{msg('1'), msg('2'), rowDescription(25), msg('D', i16(1), i32(-1)), msg('C', cstr("SELECT 1")), ready}, nil)))
}

func FuzzReadResults(f *testing.F) {
	f.Add(bytes.Join([][]byte{rowDescription(20), msg('D', i16(1), i32(1), []byte("7")), msg('C', cstr("SELECT 1")), msg('Z', []byte("I"))}, nil))
	f.Add(bytes.Join([][]byte{msg('E', []byte("C40001\x00\x00")), msg('Z', []byte("E"))}, nil))
	f.Fuzz(func(t *testing.T, raw []byte) {
		_ = pgwire.ReadResults(raw) // no panic, and an end: the input is finite
	})
}
