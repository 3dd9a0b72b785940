package localstack

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
)

// A stack whose `local up` was killed half-way (its processes run in
// process groups of their own, so they outlive it) is not returned as up
// by the next Up: not when a service it should have is missing from its
// state (killed before PostgreSQL started: no server, no
// FIFOWORKER_POSTGRES_DSN), nor when its recorded processes run but do not
// answer (killed while they started). Up stops what remains and starts
// afresh; here the start fails at once (no broker program), which shows
// Up did not return the old stack.
func TestUpDoesNotReturnAHalfStartedStack(t *testing.T) {
	t.Parallel()
	silent := silentListener(t).Addr().(*net.TCPAddr).Port
	// A broker that answers, for the stack whose only recorded process
	// is ready: beside an external endpoint, its broker.
	broker, err := kfake.NewCluster(kfake.NumBrokers(1))
	require.NoError(t, err)
	t.Cleanup(broker.Close)
	_, answering, err := net.SplitHostPort(broker.ListenAddrs()[0])
	require.NoError(t, err)
	for _, tc := range []struct {
		name     string
		external string
		services []string
		port     string
	}{
		{"postgres never started", "http://127.0.0.1:4566", []string{"kafka"}, answering},
		{"every service started, none answers", "", services, strconv.Itoa(silent)},
	} {
		dir := t.TempDir()
		o := Options{Name: "half", CacheDir: dir, ReadyTimeout: 300 * time.Millisecond, Broker: dir + "/no-such-broker"}
		require.NoError(t, o.defaults())
		s := &State{Name: "half", Region: "eu-west-1", StartedAt: time.Now().UTC(), External: tc.external}
		port, err := strconv.Atoi(tc.port)
		require.NoError(t, err)
		for _, service := range tc.services {
			p, done, err := start(dir, service, port, "/bin/sleep", []string{"60"})
			require.NoError(t, err)
			t.Cleanup(func() {
				_ = signalGroup(p.PID, syscall.SIGKILL)
				if err := <-done; err != nil {
					t.Logf("%s: %v", service, err) // killed, as meant
				}
			})
			s.Processes = append(s.Processes, p)
			s.setEndpoint(service, port)
		}
		require.NoError(t, save(o, s))
		got, err := Up(context.Background(), o)
		require.ErrorContains(t, err, "no-such-broker", "%s: Up returned the half-started stack %v", tc.name, got)
		for _, p := range s.Processes {
			require.False(t, ours(p), fmt.Sprintf("%s: %s stopped", tc.name, p.Service))
		}
	}
}

// complete wants a process for each service Up starts: all five, or the
// broker and PostgreSQL beside an external endpoint (none off Linux).
func TestCompleteWantsEveryServiceUpStarts(t *testing.T) {
	t.Parallel()
	with := func(external string, names ...string) *State {
		s := &State{External: external}
		for _, n := range names {
			s.Processes = append(s.Processes, Process{Service: n})
		}
		return s
	}
	require.True(t, complete(with("", services...)))
	require.False(t, complete(with("", "dynamodb", "sqs", "s3", "kafka")), "no postgres")
	require.False(t, complete(with("", "sqs", "s3", "kafka", "postgres")), "no dynamodb")
	require.True(t, complete(with("http://127.0.0.1:4566", "kafka", "postgres")))
	require.False(t, complete(with("http://127.0.0.1:4566", "kafka")), "no postgres beside an external endpoint")
	require.True(t, complete(with("http://127.0.0.1:4566")), "off Linux: none started")
}
