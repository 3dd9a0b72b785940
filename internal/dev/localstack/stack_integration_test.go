//go:build integration

package localstack

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fifoworker/fifoworker/internal/base/pgwire"
	"github.com/fifoworker/fifoworker/pkg/awstest"
	"github.com/fifoworker/fifoworker/pkg/pgtest"
)

// fifoworker builds the CLI, whose hidden `local kafka-broker` is the
// stack's broker: this test binary, run so, would run its tests.
func fifoworker(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "fifoworker")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/fifoworker/fifoworker/cmd/fifoworker").CombinedOutput()
	require.NoError(t, err, "%s", out)
	return bin
}

// A second stack beside the one the tests run on: its own ports, its own
// state, and down stops exactly its processes.
func TestSecondStackDoesNotCollide(t *testing.T) {
	t.Parallel()
	awstest.SQS(t) // the stack this run uses must exist
	unique := awstest.Name(t, "s")
	name := "second-" + unique[len(unique)-8:]
	o := Options{Name: name, Broker: fifoworker(t)}
	s, err := Up(context.Background(), o)
	require.NoError(t, err)
	t.Cleanup(func() { _ = Down(o) })
	require.Len(t, s.Processes, 5)

	_, statuses, err := Status(context.Background(), o)
	require.NoError(t, err)
	for _, st := range statuses {
		require.True(t, st.Running, st.Service)
		require.NoError(t, st.Err, st.Service)
	}
	again, err := Up(context.Background(), o)
	require.NoError(t, err)
	require.Equal(t, s.Processes, again.Processes, "up on a running stack returns it")
	t.Run("its Kafka broker", func(t *testing.T) { requireBrokerServes(t, s) })
	postmaster := requirePostgresServes(t, o, s)

	require.NoError(t, Down(o))
	requireStopped(t, s)
	requirePostgresStopped(t, o, s, postmaster)
	// The stack the other tests use still answers.
	_, err = awstest.SQS(t).ListQueues(context.Background(), nil)
	require.NoError(t, err)
}

// With AWS_ENDPOINT_URL set (a running LocalStack, say), up starts no AWS
// emulator and hands out that endpoint, but the Kafka broker and the
// PostgreSQL server are still the stack's own: no AWS endpoint speaks
// Kafka or PostgreSQL. Down stops them.
func TestExternalEndpointStartsOnlyTheBroker(t *testing.T) {
	awstest.SQS(t)
	broker := fifoworker(t)
	t.Setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:4566")
	unique := awstest.Name(t, "e")
	o := Options{Name: "external-" + unique[len(unique)-8:], Broker: broker}
	s, err := Up(context.Background(), o)
	require.NoError(t, err)
	t.Cleanup(func() { _ = Down(o) })
	require.Len(t, s.Processes, 2)
	require.Equal(t, "kafka", s.Processes[0].Service)
	require.Equal(t, "postgres", s.Processes[1].Service)
	require.Contains(t, s.Env(), "AWS_ENDPOINT_URL=http://127.0.0.1:4566")
	require.Contains(t, s.Env(), KafkaBootstrapVar+"="+s.Kafka)
	require.Contains(t, s.Env(), PostgresDSNVar+"="+s.Postgres)
	require.NotContains(t, strings.Join(s.Env(), "\n"), "AWS_ENDPOINT_URL_SQS", "no AWS emulator")
	require.FileExists(t, s.RIE, "the runtime interface emulator is still provided")
	loaded, err := Load(o)
	require.NoError(t, err)
	require.Equal(t, "http://127.0.0.1:4566", loaded.External)
	requireBrokerServes(t, s)
	postmaster := requirePostgresServes(t, o, s)
	require.NoError(t, Down(o))
	requireStopped(t, s)
	requirePostgresStopped(t, o, s, postmaster)
}

// The stack this run was given (local run, make test) names its
// PostgreSQL server to the tests, as pgtest reads it.
func TestTheRunsStackServesPostgreSQL18(t *testing.T) {
	t.Parallel()
	var version string
	require.NoError(t, pgtest.DB(t).QueryRowContext(t.Context(), "SELECT version()").Scan(&version))
	require.True(t, strings.HasPrefix(version, "PostgreSQL 18.4 "), version)
}

// requirePostgresServes: the stack's PostgreSQL 18.4 listens on 127.0.0.1
// only, at the DSN its environment names, and answers a query; it returns
// the postmaster's PID (which the data directory's postmaster.pid names).
func requirePostgresServes(t *testing.T, o Options, s *State) int {
	t.Helper()
	require.NoError(t, o.defaults()) // the cache the stack's data directory is named after
	p := postgresProcess(t, s)
	require.Equal(t, PostgresDSN(p.Port), s.Postgres)
	requireListensOnLoopbackOnly(t, strconv.Itoa(p.Port))

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	db, err := pgwire.Open(s.Postgres)
	require.NoError(t, err)
	defer func() { _ = db.Close() }()
	var version string
	require.NoError(t, db.QueryRowContext(ctx, "SELECT version()").Scan(&version))
	require.True(t, strings.HasPrefix(version, "PostgreSQL 18.4 "), version)

	pidFile, err := os.ReadFile(filepath.Join(o.postgresDataDir(), "postmaster.pid"))
	require.NoError(t, err, "its data directory is the stack's")
	first, _, _ := strings.Cut(string(pidFile), "\n")
	postmaster, err := strconv.Atoi(first)
	require.NoError(t, err)
	require.NotEqual(t, p.PID, postmaster, "the stack's process runs the postmaster")
	return postmaster
}

// postgresProcess is the stack's PostgreSQL process.
func postgresProcess(t *testing.T, s *State) Process {
	t.Helper()
	for _, p := range s.Processes {
		if p.Service == "postgres" {
			return p
		}
	}
	t.Fatalf("stack %s has no postgres process: %+v", s.Name, s.Processes)
	return Process{}
}

// requirePostgresStopped: after down the postmaster is gone, its port is
// closed and its data directory removed.
func requirePostgresStopped(t *testing.T, o Options, s *State, postmaster int) {
	t.Helper()
	require.NoError(t, o.defaults())
	require.ErrorIs(t, syscall.Kill(postmaster, 0), syscall.ESRCH, "the postmaster (pid %d) is gone", postmaster)
	port := postgresProcess(t, s).Port
	_, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(port), time.Second)
	require.Error(t, err, "nothing listens on its port %d", port)
	_, err = os.Stat(o.postgresDataDir())
	require.ErrorIs(t, err, os.ErrNotExist, "its data directory is removed")
}

// requireListensOnLoopbackOnly: something listens on port, and only on
// 127.0.0.1.
func requireListensOnLoopbackOnly(t *testing.T, port string) {
	t.Helper()
	out, err := exec.Command("ss", "-ltnH", "sport = :"+port).Output()
	require.NoError(t, err, "ss (iproute2) lists the listening sockets")
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	require.NotEmpty(t, lines[0], "something listens on %s", port)
	for _, line := range lines {
		f := strings.Fields(line)
		require.GreaterOrEqual(t, len(f), 4, line)
		require.Equal(t, "127.0.0.1:"+port, f[3], "it listens on 127.0.0.1 only: %s", line)
	}
}

// requireBrokerServes: the stack's broker listens on 127.0.0.1 only, and
// a record produced through it is read back.
func requireBrokerServes(t *testing.T, s *State) {
	t.Helper()
	_, port, ok := strings.Cut(s.Kafka, "127.0.0.1:")
	require.True(t, ok, "the broker's address is on loopback: %q", s.Kafka)
	requireListensOnLoopbackOnly(t, port)

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(s.Kafka))
	require.NoError(t, err)
	defer cl.Close()
	topic := "commands-" + port
	created, err := kadm.NewClient(cl).CreateTopic(ctx, 2, -1, nil, topic)
	require.NoError(t, err)
	require.NoError(t, created.Err)
	sent := &kgo.Record{Topic: topic, Key: []byte("job-1"), Value: []byte(`{"n":1}`)}
	require.NoError(t, cl.ProduceSync(ctx, sent).FirstErr())

	// Read back from the partition the producer chose (the broker's
	// consumer groups are kafkabroker's tests' business).
	reader, err := kgo.NewClient(kgo.SeedBrokers(s.Kafka), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{
		topic: {sent.Partition: kgo.NewOffset().At(sent.Offset)},
	}))
	require.NoError(t, err)
	defer reader.Close()
	var got []*kgo.Record
	for len(got) == 0 && ctx.Err() == nil {
		got = append(got, reader.PollFetches(ctx).Records()...)
	}
	require.Len(t, got, 1)
	require.Equal(t, []byte("job-1"), got[0].Key)
	require.Equal(t, []byte(`{"n":1}`), got[0].Value)

	var log string
	for _, p := range s.Processes {
		if p.Service == "kafka" {
			raw, err := os.ReadFile(p.Log)
			require.NoError(t, err)
			log = string(raw)
		}
	}
	require.Contains(t, log, "kafka broker listening", "the broker logs to its log file")
}

// requireStopped: no process of the stack is left, its broker included.
func requireStopped(t *testing.T, s *State) {
	t.Helper()
	for _, p := range s.Processes {
		require.False(t, ours(p), "%s still running after down", p.Service)
		require.Eventually(t, func() bool {
			_, err := os.Stat(fmt.Sprintf("/proc/%d", p.PID))
			return os.IsNotExist(err)
		}, 10*time.Second, 50*time.Millisecond, "%s's pid %d still exists", p.Service, p.PID)
	}
	_, err := Load(Options{Name: s.Name})
	require.ErrorContains(t, err, "no stack", "its state is removed")
}
