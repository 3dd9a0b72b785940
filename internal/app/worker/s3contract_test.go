package worker_test

import (
	"context"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/pkg/candidate"
)

// s3Contract is what the worker's tests rely on from a bucket, checked
// through candidate.Store: s3mem.S3 (behind the tests'
// bucket wrapper) passes it here and the S3 emulator in the integration
// tests. pkg/candidate's conformance run holds s3mem.S3 to the emulator
// in full; this is the part the worker's tests lean on.
func s3Contract(t *testing.T, store *candidate.Store) {
	ctx := context.Background()
	key, err := candidate.NewKey("job-42", 1, "req-1_msg-1", "txt")
	require.NoError(t, err)

	_, err = store.Head(ctx, key)
	require.ErrorIs(t, err, candidate.ErrNotFound)
	_, err = store.Open(ctx, key)
	require.ErrorIs(t, err, candidate.ErrNotFound)

	res, err := store.Put(ctx, key, strings.NewReader("a\nb\n"))
	require.NoError(t, err)
	require.False(t, res.AlreadyExisted)
	require.EqualValues(t, 4, res.Size)

	again, err := store.Put(ctx, key, strings.NewReader("a\nb\n"))
	require.NoError(t, err, "the same content again is the earlier write")
	require.True(t, again.AlreadyExisted)
	_, err = store.Put(ctx, key, strings.NewReader("other"))
	require.ErrorIs(t, err, candidate.ErrExists, "If-None-Match: * keeps the first object")

	r, err := store.Open(ctx, key)
	require.NoError(t, err)
	content, err := io.ReadAll(r)
	require.NoError(t, err)
	require.NoError(t, r.Close())
	require.Equal(t, "a\nb\n", string(content))
	require.Equal(t, res.SHA256, r.Info().SHA256)

	other, err := candidate.NewKey("job-42", 2, "req-2_msg-1", "txt")
	require.NoError(t, err)
	_, err = store.Put(ctx, other, strings.NewReader(""))
	require.NoError(t, err, "an empty candidate")
	listed, err := store.List(ctx, "job-42")
	require.NoError(t, err)
	require.Len(t, listed, 2)
	require.Equal(t, key, listed[0].Key)
	require.Equal(t, other, listed[1].Key)

	require.NoError(t, store.Delete(ctx, key))
	_, err = store.Head(ctx, key)
	require.ErrorIs(t, err, candidate.ErrNotFound)
}

func TestMemoryS3MeetsTheContract(t *testing.T) {
	t.Parallel()
	s3Contract(t, setup(t).candidates)
}
