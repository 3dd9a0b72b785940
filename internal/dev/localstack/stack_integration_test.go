//go:build integration

package localstack

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/pkg/awstest"
)

// A second stack beside the one the tests run on: its own ports, its own
// state, and down stops exactly its processes.
func TestSecondStackDoesNotCollide(t *testing.T) {
	t.Parallel()
	awstest.SQS(t) // the stack this run uses must exist
	unique := awstest.Name(t, "s")
	name := "second-" + unique[len(unique)-8:]
	o := Options{Name: name}
	s, err := Up(context.Background(), o)
	require.NoError(t, err)
	t.Cleanup(func() { _ = Down(o) })
	require.Len(t, s.Processes, 3)

	_, statuses, err := Status(context.Background(), o)
	require.NoError(t, err)
	for _, st := range statuses {
		require.True(t, st.Running, st.Service)
		require.NoError(t, st.Err, st.Service)
	}
	again, err := Up(context.Background(), o)
	require.NoError(t, err)
	require.Equal(t, s.Processes, again.Processes, "up on a running stack returns it")

	require.NoError(t, Down(o))
	for _, p := range s.Processes {
		require.False(t, ours(p), "%s still running after down", p.Service)
	}
	// The stack the other tests use still answers.
	_, err = awstest.SQS(t).ListQueues(context.Background(), nil)
	require.NoError(t, err)
}

// With AWS_ENDPOINT_URL set (a running LocalStack, say), up starts nothing
// and hands out that endpoint; down has nothing to stop.
func TestExternalEndpointStartsNothing(t *testing.T) {
	awstest.SQS(t)
	t.Setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:4566")
	unique := awstest.Name(t, "e")
	o := Options{Name: "external-" + unique[len(unique)-8:]}
	s, err := Up(context.Background(), o)
	require.NoError(t, err)
	t.Cleanup(func() { _ = Down(o) })
	require.Empty(t, s.Processes)
	require.Contains(t, s.Env(), "AWS_ENDPOINT_URL=http://127.0.0.1:4566")
	require.FileExists(t, s.RIE, "the runtime interface emulator is still provided")
	loaded, err := Load(o)
	require.NoError(t, err)
	require.Equal(t, "http://127.0.0.1:4566", loaded.External)
	require.NoError(t, Down(o))
}
