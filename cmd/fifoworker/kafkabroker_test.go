package main

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestMain makes this test binary answer `local kafka-broker` as
// fifoworker does, and names it as the stack's broker program: a stack the
// tests start (local run) runs its broker as this binary, which holds the
// same code. Without the first, the binary would run its tests instead.
func TestMain(m *testing.M) {
	if len(os.Args) > 2 && os.Args[1] == "local" && (os.Args[2] == "kafka-broker" || os.Args[2] == "postgres") {
		os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
	}
	self, err := os.Executable()
	if err != nil {
		panic(err)
	}
	brokerBinary = self
	os.Exit(m.Run())
}

// The hidden verb runs a broker on 127.0.0.1 until SIGTERM, and then
// stops it and exits 0: how `local down` stops the stack's broker.
func TestKafkaBrokerRunsUntilSIGTERM(t *testing.T) {
	t.Parallel()
	cmd := exec.Command(brokerBinary, "local", "kafka-broker", "--port", "0")
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	lines := bufio.NewScanner(stderr)
	require.True(t, lines.Scan(), "a line saying where it listens")
	m := regexp.MustCompile(`addr=(127\.0\.0\.1:\d+)`).FindStringSubmatch(lines.Text())
	require.NotNil(t, m, lines.Text())

	cl, err := kgo.NewClient(kgo.SeedBrokers(m[1]))
	require.NoError(t, err)
	defer cl.Close()
	meta, err := kadm.NewClient(cl).BrokerMetadata(t.Context())
	require.NoError(t, err, "it answers as a Kafka broker")
	require.Len(t, meta.Brokers, 1)

	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	rest, err := io.ReadAll(stderr)
	require.NoError(t, err)
	require.Contains(t, string(rest), "kafka broker stopped")
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		require.NoError(t, err, "it exits 0 on SIGTERM")
	case <-time.After(time.Minute):
		t.Fatal("the broker did not stop within a minute of SIGTERM")
	}
}

// The verb is the stack's, not the user's: help does not list it, and a
// port out of range is a usage error naming it.
func TestKafkaBrokerIsHiddenAndChecksItsPort(t *testing.T) {
	t.Parallel()
	var out, errOut bytes.Buffer
	require.Equal(t, 0, run([]string{"local", "--help"}, &out, &errOut), errOut.String())
	require.Contains(t, out.String(), "serve")
	require.NotContains(t, out.String(), "kafka-broker")
	for _, port := range []string{"-1", "65536"} {
		out.Reset()
		errOut.Reset()
		require.Equal(t, 2, run([]string{"local", "kafka-broker", "--port", port}, &out, &errOut), port)
		require.Contains(t, errOut.String(), "Port "+port)
		require.False(t, strings.Contains(errOut.String(), "listening"), "nothing was started")
	}
}
