package startup

import (
	"context"
	"errors"
	"log/slog"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/stretchr/testify/require"
)

// A function's init fails with the AWS configuration's problems even when
// its builder did not ask for them (a builder that returns its handler
// without a last Err), and with the builder's own error otherwise; a
// function with neither starts.
func TestBuildFailsTheInitWithEveryProblem(t *testing.T) {
	t.Parallel()
	handler := func(context.Context, string) (string, error) { return "", nil }
	careless := func(*Env, aws.Config, *slog.Logger) (func(context.Context, string) (string, error), error) {
		return handler, nil
	}
	h, err := build(NewEnvFrom(map[string]string{"AWS_ACCESS_KEY_ID": "a", "AWS_SECRET_ACCESS_KEY": "s"}), careless, slog.New(slog.DiscardHandler))
	require.Nil(t, h)
	require.EqualError(t, err, "lambdawire: misconfigured function: AWS_REGION is not set")

	errRefused := errors.New("refused")
	refusing := func(*Env, aws.Config, *slog.Logger) (func(context.Context, string) (string, error), error) {
		return nil, errRefused
	}
	_, err = build(NewEnvFrom(nil), refusing, slog.New(slog.DiscardHandler))
	require.ErrorIs(t, err, errRefused)

	ok := NewEnvFrom(map[string]string{"AWS_REGION": "eu-west-1", "AWS_ACCESS_KEY_ID": "a", "AWS_SECRET_ACCESS_KEY": "s"})
	h, err = build(ok, careless, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	require.NotNil(t, h)
}
