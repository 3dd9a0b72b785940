//go:build integration

package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/dev/localstack"
	"github.com/fifoworker/fifoworker/pkg/awstest"
)

// local run starts a stack, deploys the template, runs the command in the
// stack's environment, and stops the stack even when the command fails.
func TestLocalRunStopsTheStackWhenTheCommandFails(t *testing.T) {
	t.Parallel()
	awstest.SQS(t) // this run's own stack must exist; the one started here is a second
	unique := awstest.Name(t, "r")
	name := "run-" + unique[len(unique)-8:]
	var stdout, stderr bytes.Buffer
	dump := filepath.Join(t.TempDir(), "env")
	code := run([]string{"local", "run", "--name", name, "--template", "../../template.yaml", "--",
		"sh", "-c", `env > "$0"; exit 7`, dump}, &stdout, &stderr)
	require.Equal(t, 7, code, "the command's exit code is passed on; stderr:\n%s", stderr.String())
	env, err := os.ReadFile(dump)
	require.NoError(t, err)
	require.Contains(t, string(env), "FIFOWORKER_STACK="+name)
	require.Contains(t, string(env), "AWS_ENDPOINT_URL_DYNAMODB=http://127.0.0.1:")
	require.Contains(t, string(env), "KAFKA_BOOTSTRAP_SERVERS=127.0.0.1:")
	require.Contains(t, string(env), localstack.PostgresDSNVar+"=postgres://postgres@127.0.0.1:")
	require.Contains(t, stderr.String(), "resources of ../../template.yaml deployed as stack fifoworker")

	_, err = localstack.Load(localstack.Options{Name: name})
	require.ErrorContains(t, err, "no stack", "the stack is stopped and its state removed")
	_, _, err = localstack.Status(context.Background(), localstack.Options{Name: name})
	require.Error(t, err)
	pids := regexp.MustCompile(`\(pid (\d+)\)`).FindAllStringSubmatch(stderr.String(), -1)
	require.Len(t, pids, 5, "three emulators, the Kafka broker and the PostgreSQL server were started")
	for _, m := range pids {
		require.Eventually(t, func() bool {
			_, err := os.Stat("/proc/" + m[1])
			return os.IsNotExist(err)
		}, 10*time.Second, 50*time.Millisecond, "pid %s still exists", m[1])
	}
}
