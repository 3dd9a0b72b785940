package localstack

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/pkg/pgtest"
)

// The stack exports its server under the name pgtest reads.
func TestThePostgresVariableIsPgtests(t *testing.T) {
	t.Parallel()
	require.Equal(t, pgtest.DSNVar, PostgresDSNVar)
}

func TestEnvNamesThePostgresServerOnlyWhenThereIsOne(t *testing.T) {
	t.Parallel()
	dsn := PostgresDSN(5432)
	require.Equal(t, "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable", dsn)
	s := &State{Name: "dev", Region: "eu-west-1", SQS: "http://127.0.0.1:1", DynamoDB: "http://127.0.0.1:2", S3: "http://127.0.0.1:3",
		Kafka: "127.0.0.1:4", Postgres: dsn}
	require.Contains(t, s.Env(), PostgresDSNVar+"="+dsn)
	require.Contains(t, s.Shell(), "export FIFOWORKER_POSTGRES_DSN='"+dsn+"'\n")

	ext := &State{Name: "ls", Region: "eu-west-1", External: "http://127.0.0.1:4566", Kafka: "127.0.0.1:4", Postgres: dsn}
	require.Contains(t, ext.Env(), PostgresDSNVar+"="+dsn, "the server is ours beside an external endpoint too")

	without := &State{Name: "old", Region: "eu-west-1", SQS: "http://127.0.0.1:1"}
	require.NotContains(t, strings.Join(without.Env(), "\n"), PostgresDSNVar, "a stack without PostgreSQL names none")
	require.NotContains(t, without.Shell(), PostgresDSNVar)
}

func TestPostgresGetsItsOwnPort(t *testing.T) {
	t.Parallel()
	got, err := choosePorts(Ports{}, services)
	require.NoError(t, err)
	require.NotZero(t, got.Postgres)
	for _, other := range []int{got.SQS, got.DynamoDB, got.S3, got.Kafka} {
		require.NotEqual(t, other, got.Postgres)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer func() { _ = l.Close() }()
	port := l.Addr().(*net.TCPAddr).Port
	_, err = choosePorts(Ports{Postgres: port}, services)
	require.ErrorContains(t, err, "for postgres is in use")
	require.Contains(t, services, "postgres")
}

// Beside an external endpoint the stack still starts its own broker and
// its own PostgreSQL: no AWS endpoint serves either.
func TestAnExternalEndpointStillGetsOurPostgres(t *testing.T) {
	t.Setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:4566")
	cache := t.TempDir()
	// The runtime interface emulator is installed from the cache: put one
	// there so that prepare installs nothing.
	rie := filepath.Join(cache, "bin", "aws-lambda-rie-"+RIEVersion)
	require.NoError(t, os.MkdirAll(filepath.Dir(rie), 0o755))
	require.NoError(t, os.WriteFile(rie, nil, 0o755))
	o := Options{Name: "ext", CacheDir: cache}
	require.NoError(t, o.defaults())
	starting, _, err := prepare(context.Background(), o, &State{External: "http://127.0.0.1:4566"})
	require.NoError(t, err)
	require.Equal(t, []string{"kafka", "postgres"}, starting)
}

// The server's data directory is the stack's, named after its state
// directory, never read from the state file: Down removes it (and Up
// removes one a killed stack left) without trusting a path it recorded.
func TestDownRemovesThePostgresDataDirectory(t *testing.T) {
	t.Parallel()
	o := Options{Name: "pgdata", CacheDir: t.TempDir()}
	require.NoError(t, o.defaults())
	other := Options{Name: "pgdata", CacheDir: t.TempDir()}
	require.NoError(t, other.defaults())
	require.NotEqual(t, o.postgresDataDir(), other.postgresDataDir(), "two caches' stacks of one name do not share it")
	require.Contains(t, filepath.Base(o.postgresDataDir()), "pgdata")

	dir := o.postgresDataDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "base"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "PG_VERSION"), []byte("18\n"), 0o600))
	require.NoError(t, save(o, &State{Name: "pgdata"}))
	require.NoError(t, Down(o))
	_, err := os.Stat(dir)
	require.ErrorIs(t, err, os.ErrNotExist, "down removes the data directory")
}

// The probe wants an answer to a query, not an open port.
func TestThePostgresProbeWantsAnAnswer(t *testing.T) {
	t.Parallel()
	silent := silentListener(t)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	port := silent.Addr().(*net.TCPAddr).Port
	require.Error(t, probe(ctx, "postgres", PostgresDSN(port), "eu-west-1"), "a port that accepts is not a server")
}

// A postmaster left running on the stack's data directory (its `local
// postgres` process was killed before it could stop it) is stopped by
// Down: postmaster.pid names it, and its command line names the data
// directory. A PID there that runs something else is left alone.
func TestDownStopsAPostmasterLeftOnTheDataDirectory(t *testing.T) {
	t.Parallel()
	o := Options{Name: "left", CacheDir: t.TempDir()}
	require.NoError(t, o.defaults())
	dir := o.postgresDataDir()
	require.NoError(t, os.MkdirAll(dir, 0o700))
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	// A stand-in whose command line reads as the postmaster's on dir.
	left := exec.Command("sh", "-c", "sleep 60; :", "postgres", "-D", dir, "-p", "1")
	left.SysProcAttr = ownProcessGroup()
	require.NoError(t, left.Start())
	t.Cleanup(func() { _ = left.Process.Kill() })
	exited := make(chan error, 1)
	go func() { exited <- left.Wait() }()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "postmaster.pid"), []byte(strconv.Itoa(left.Process.Pid)+"\n"+dir+"\n"), 0o600))
	require.NoError(t, save(o, &State{Name: "left"}))
	require.NoError(t, Down(o))
	select {
	case err := <-exited:
		require.ErrorContains(t, err, "killed")
	case <-time.After(10 * time.Second):
		t.Fatal("the postmaster left on the data directory still runs after down")
	}

	other := exec.Command("sleep", "60") // a PID that is not a postmaster on dir
	require.NoError(t, other.Start())
	t.Cleanup(func() { _ = other.Process.Kill(); _ = other.Wait() })
	require.NoError(t, os.MkdirAll(dir, 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "postmaster.pid"), []byte(strconv.Itoa(other.Process.Pid)+"\n"), 0o600))
	require.NoError(t, save(o, &State{Name: "left"}))
	require.NoError(t, Down(o))
	ticks, state, err := procStat(other.Process.Pid)
	require.NoError(t, err, "left alone")
	require.NotZero(t, ticks)
	require.NotEqual(t, "Z", state, "left alone")
}
