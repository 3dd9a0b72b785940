package pgopen_test

import (
	"context"
	"net"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/lambdawire/pgopen"
	"github.com/fifoworker/fifoworker/internal/lambdawire/startup"
)

var deployed = aws.Config{Region: "eu-west-1", Credentials: credentials.NewStaticCredentialsProvider("AKIDEXAMPLE", "secret", "session")}

func iamEnv(extra map[string]string) map[string]string {
	m := map[string]string{"POSTGRES_HOST": "db.proxy-abc.eu-west-1.rds.amazonaws.com", "POSTGRES_PORT": "5432",
		"POSTGRES_DATABASE": "fifoworker", "POSTGRES_USER": "fifoworker_admin"}
	for k, v := range extra {
		m[k] = v
	}
	return m
}

// Deployed, a connection is verify-full TLS to POSTGRES_HOST (no
// plaintext fallback, the system's roots) and its password is an IAM
// authentication token for POSTGRES_USER at the host and port, signed for
// rds-db in the function's region with its credentials, made for each new
// connection.
func TestAConnectionPresentsAnIAMTokenOverVerifiedTLS(t *testing.T) {
	t.Parallel()
	env := startup.NewEnvFrom(iamEnv(nil))
	conf, ok := pgopen.IAMConfig(env, deployed)
	require.NoError(t, env.Err())
	require.True(t, ok)
	require.Equal(t, "db.proxy-abc.eu-west-1.rds.amazonaws.com", conf.Host)
	require.EqualValues(t, 5432, conf.Port)
	require.Equal(t, "fifoworker", conf.Database)
	require.Equal(t, "fifoworker_admin", conf.User)
	require.NotNil(t, conf.TLS, "TLS is required")
	require.False(t, conf.PreferTLS, "no plaintext fallback")
	require.False(t, conf.TLS.InsecureSkipVerify, "verify-full checks the chain and the name")
	require.Nil(t, conf.TLS.RootCAs, "the system's roots")
	require.Equal(t, conf.Host, conf.TLS.ServerName)
	require.Nil(t, conf.Params)

	require.NotNil(t, conf.Password)
	token, err := conf.Password(t.Context())
	require.NoError(t, err)
	u, err := url.Parse("https://" + token)
	require.NoError(t, err, token)
	require.Equal(t, "db.proxy-abc.eu-west-1.rds.amazonaws.com:5432", u.Host)
	q := u.Query()
	require.Equal(t, "connect", q.Get("Action"))
	require.Equal(t, "fifoworker_admin", q.Get("DBUser"))
	require.True(t, strings.HasPrefix(q.Get("X-Amz-Credential"), "AKIDEXAMPLE/"), q.Get("X-Amz-Credential"))
	require.True(t, strings.HasSuffix(q.Get("X-Amz-Credential"), "/eu-west-1/rds-db/aws4_request"), q.Get("X-Amz-Credential"))
	require.Equal(t, "900", q.Get("X-Amz-Expires"))
	require.NotEmpty(t, q.Get("X-Amz-Signature"))
	require.Equal(t, "session", q.Get("X-Amz-Security-Token"))
}

// Every setting of a deployed function is checked at init: each missing
// or wrong one is named, and no pool is opened.
func TestOpenNamesEachBadSetting(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		env  map[string]string
		cfg  aws.Config
		want string
	}{
		{"no host", map[string]string{"POSTGRES_HOST": ""}, deployed, "POSTGRES_HOST is not set"},
		{"no database", map[string]string{"POSTGRES_DATABASE": ""}, deployed, "POSTGRES_DATABASE is not set"},
		{"no user", map[string]string{"POSTGRES_USER": ""}, deployed, "POSTGRES_USER is not set"},
		{"port 0", map[string]string{"POSTGRES_PORT": "0"}, deployed, `POSTGRES_PORT="0" is not an integer in [1, 65535]`},
		{"port 65536", map[string]string{"POSTGRES_PORT": "65536"}, deployed, `POSTGRES_PORT="65536" is not an integer in [1, 65535]`},
		{"a host with a setting", map[string]string{"POSTGRES_HOST": "db sslmode=disable"}, deployed, `POSTGRES_HOST: "db sslmode=disable" is not a host name`},
		{"a host with a port", map[string]string{"POSTGRES_HOST": "db:5432"}, deployed, `POSTGRES_HOST: "db:5432" is not a host name`},
		{"max conns 0", map[string]string{"POSTGRES_MAX_CONNS": "0"}, deployed, `POSTGRES_MAX_CONNS="0" is not an integer in [1, 64]`},
		{"max conns 65", map[string]string{"POSTGRES_MAX_CONNS": "65"}, deployed, `POSTGRES_MAX_CONNS="65" is not an integer in [1, 64]`},
		{"no credentials", nil, aws.Config{Region: "eu-west-1"}, "POSTGRES_USER: an IAM authentication token needs"},
		{"no region", nil, aws.Config{Credentials: deployed.Credentials}, "POSTGRES_USER: an IAM authentication token needs"},
		{"a bad local DSN", map[string]string{pgopen.DSNVar: "postgres://[::1"}, deployed, pgopen.DSNVar + ": not a PostgreSQL connection string"},
	} {
		env := startup.NewEnvFrom(iamEnv(tc.env))
		db := pgopen.Open(env, tc.cfg)
		err := env.Err()
		require.Error(t, err, tc.name)
		require.Contains(t, err.Error(), tc.want, tc.name)
		require.Nil(t, db, tc.name)
	}
}

// POSTGRES_MAX_CONNS bounds the pool, open and idle connections alike:
// 4 by default, 1 and 64 at the bounds.
func TestOpenBoundsThePool(t *testing.T) {
	t.Parallel()
	for v, want := range map[string]int{"": pgopen.DefaultMaxConns, "1": 1, "64": 64, "7": 7} {
		env := startup.NewEnvFrom(map[string]string{pgopen.DSNVar: "postgres://postgres@127.0.0.1:1/postgres?sslmode=disable", "POSTGRES_MAX_CONNS": v})
		db := pgopen.Open(env, aws.Config{})
		require.NoError(t, env.Err(), v)
		require.Equal(t, want, db.Stats().MaxOpenConnections, v)
		require.NoError(t, db.Close())
	}
}

// Open sends nothing: the pool dials the server when a statement first
// needs a connection, not at the function's init.
func TestOpenDialsNothingUntilAConnectionIsNeeded(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer func() { _ = ln.Close() }()
	tcp := ln.(*net.TCPListener)
	env := startup.NewEnvFrom(map[string]string{pgopen.DSNVar: "postgres://postgres@" + ln.Addr().String() + "/postgres?sslmode=disable&connect_timeout=5"})
	db := pgopen.Open(env, aws.Config{})
	require.NoError(t, env.Err())
	defer func() { _ = db.Close() }()

	require.NoError(t, tcp.SetDeadline(time.Now()))
	_, err = tcp.Accept()
	require.ErrorIs(t, err, os.ErrDeadlineExceeded, "Open dialled the server")

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go func() { _ = db.PingContext(ctx) }()
	require.NoError(t, tcp.SetDeadline(time.Now().Add(10*time.Second)))
	conn, err := tcp.Accept()
	require.NoError(t, err, "the first statement dials")
	_ = conn.Close()
}

// POSTGRES_DATABASE and POSTGRES_USER reach the connection as they are,
// quotes, backslashes and spaces included: they are fields of the
// start-up packet, never a connection string, so no value can add a
// setting of its own (a user ending a quote and asking for sslmode=disable
// still connects over verified TLS, as that user).
func TestASettingsQuoteCannotAddASetting(t *testing.T) {
	t.Parallel()
	user, database := `u' sslmode='disable`, `d\' host='evil b`
	env := startup.NewEnvFrom(iamEnv(map[string]string{"POSTGRES_USER": user, "POSTGRES_DATABASE": database}))
	conf, ok := pgopen.IAMConfig(env, deployed)
	require.NoError(t, env.Err())
	require.True(t, ok)
	require.Equal(t, user, conf.User)
	require.Equal(t, database, conf.Database)
	require.Equal(t, "db.proxy-abc.eu-west-1.rds.amazonaws.com", conf.Host)
	require.NotNil(t, conf.TLS, "still verify-full")
	require.False(t, conf.TLS.InsecureSkipVerify)
	require.False(t, conf.PreferTLS)
}
