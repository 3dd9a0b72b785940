package candidate_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/base/checksum"
	"github.com/fifoworker/fifoworker/pkg/candidate"
	"github.com/fifoworker/fifoworker/pkg/s3mem"
)

func TestPutStoresContentHashAndMetadata(t *testing.T) {
	t.Parallel()
	b := setup(t)
	key := mustKey(t, "job-42", 2, "attempt-b", "json")
	content := []byte(`{"articles":120}`)

	res, err := b.store.Put(context.Background(), key, bytes.NewReader(content))
	require.NoError(t, err)
	require.Equal(t, key, res.Key)
	require.Equal(t, checksum.SHA256Hex(content), res.SHA256)
	require.Equal(t, int64(len(content)), res.Size)
	require.NotEmpty(t, res.ETag)
	require.False(t, res.AlreadyExisted)

	obj := b.bucket.object(t, key.String())
	require.NotNil(t, obj)
	require.Equal(t, content, obj.body)
	require.Equal(t, map[string]string{
		"job-id": "job-42", "generation": "2", "attempt-id": "attempt-b", "sha256": checksum.SHA256Hex(content),
	}, obj.meta)
	sum := sha256.Sum256(content)
	require.Equal(t, base64.StdEncoding.EncodeToString(sum[:]), obj.checksum, "S3 checksum")
	requireNoSpools(t, b.spoolDir)
}

func TestWriterAcceptsManySmallWrites(t *testing.T) {
	t.Parallel()
	b := setup(t)
	key := mustKey(t, "job-42", 1, "a", "txt")
	w, err := b.store.Create(context.Background(), key)
	require.NoError(t, err)
	defer func() { require.NoError(t, w.Close()) }()
	var want bytes.Buffer
	for i := range 20000 { // more than the spool's buffer
		line := fmt.Sprintf("article %d\n", i)
		want.WriteString(line)
		_, err := io.WriteString(w, line)
		require.NoError(t, err)
	}
	require.Equal(t, int64(want.Len()), w.Size())
	res, err := w.Commit()
	require.NoError(t, err)
	require.Equal(t, checksum.SHA256Hex(want.Bytes()), res.SHA256)
	require.Equal(t, want.Bytes(), b.bucket.object(t, key.String()).body)
}

func TestEmptyCandidate(t *testing.T) {
	t.Parallel()
	b := setup(t)
	key := mustKey(t, "job-42", 1, "a", "txt")
	res, err := b.store.Put(context.Background(), key, strings.NewReader(""))
	require.NoError(t, err)
	require.Equal(t, int64(0), res.Size)
	require.Equal(t, checksum.SHA256Hex(nil), res.SHA256)
	r, err := b.store.Open(context.Background(), key)
	require.NoError(t, err)
	got, err := io.ReadAll(r)
	require.NoError(t, err)
	require.Empty(t, got)
	require.NoError(t, r.Close())
}

// The spool is gone after every way a write can end.
func TestSpoolIsRemoved(t *testing.T) {
	t.Parallel()
	content := []byte("candidate content")
	tests := []struct {
		name    string
		prepare func(t *testing.T, b *testBundle)
		run     func(t *testing.T, b *testBundle, w *candidate.Writer, cancel context.CancelFunc) error
		wantErr error
	}{
		{
			name: "success",
			run:  commitOnly,
		},
		{
			name:    "upload fails",
			prepare: func(_ *testing.T, b *testBundle) { b.bucket.FailNextPuts(apiError("InternalError")) },
			run:     commitOnly,
			wantErr: errAny,
		},
		{
			name: "already exists",
			prepare: func(t *testing.T, b *testBundle) {
				b.bucket.rawPut(t, "candidates/job-42/g0000000001/a.txt", []byte("other"), nil)
			},
			run:     commitOnly,
			wantErr: candidate.ErrExists,
		},
		{
			name: "context cancelled during upload",
			run: func(_ *testing.T, b *testBundle, w *candidate.Writer, cancel context.CancelFunc) error {
				started := b.bucket.HoldNextPut()
				go func() { <-started; cancel() }()
				_, err := w.Commit()
				return err
			},
			wantErr: context.Canceled,
		},
		{
			name: "context cancelled before commit",
			run: func(_ *testing.T, _ *testBundle, w *candidate.Writer, cancel context.CancelFunc) error {
				cancel()
				_, err := w.Commit()
				return err
			},
			wantErr: context.Canceled,
		},
		{
			name: "closed without commit",
			run:  func(_ *testing.T, _ *testBundle, w *candidate.Writer, _ context.CancelFunc) error { return w.Close() },
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			if tt.prepare != nil {
				tt.prepare(t, b)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			w := b.createAndWrite(ctx, t, mustKey(t, "job-42", 1, "a", "txt"), content)
			err := tt.run(t, b, w, cancel)
			switch {
			case tt.wantErr == nil:
				require.NoError(t, err)
			case errors.Is(tt.wantErr, errAny):
				require.Error(t, err)
			default:
				require.ErrorIs(t, err, tt.wantErr)
			}
			requireNoSpools(t, b.spoolDir)
			require.NoError(t, w.Close(), "Close after the end is a no-op")
		})
	}
}

var errAny = errors.New("any error")

func commitOnly(_ *testing.T, _ *testBundle, w *candidate.Writer, _ context.CancelFunc) error {
	_, err := w.Commit()
	return err
}

func TestClosedWithoutCommitUploadsNothing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	w := b.createAndWrite(context.Background(), t, mustKey(t, "job-42", 1, "a", "txt"), []byte("partial"))
	require.NoError(t, w.Close())
	require.Zero(t, b.bucket.putCalls())
	_, err := w.Write([]byte("more"))
	require.ErrorIs(t, err, os.ErrClosed)
	_, err = w.Commit()
	require.ErrorIs(t, err, os.ErrClosed)
}

func TestCommitTwiceFails(t *testing.T) {
	t.Parallel()
	b := setup(t)
	w := b.createAndWrite(context.Background(), t, mustKey(t, "job-42", 1, "a", "txt"), []byte("x"))
	_, err := w.Commit()
	require.NoError(t, err)
	_, err = w.Commit()
	require.ErrorIs(t, err, os.ErrClosed)
	_, err = w.Write([]byte("y"))
	require.ErrorIs(t, err, os.ErrClosed)
	require.Equal(t, 1, b.bucket.putCalls())
}

func TestWriteAfterContextEndsFails(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx, cancel := context.WithCancel(context.Background())
	w := b.createAndWrite(ctx, t, mustKey(t, "job-42", 1, "a", "txt"), []byte("x"))
	cancel()
	_, err := w.Write([]byte("y"))
	require.ErrorIs(t, err, context.Canceled)
	_, err = w.Commit()
	require.ErrorIs(t, err, context.Canceled)
	require.Zero(t, b.bucket.putCalls())
	requireNoSpools(t, b.spoolDir)

	_, err = b.store.Create(ctx, mustKey(t, "job-42", 1, "b", "txt"))
	require.ErrorIs(t, err, context.Canceled)
	requireNoSpools(t, b.spoolDir)
}

func TestCreateRejectsInvalidKey(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, err := b.store.Create(context.Background(), candidate.Key{JobID: "../x", Generation: 1, AttemptID: "a", Ext: "json"})
	require.ErrorIs(t, err, candidate.ErrInvalidKey)
	_, err = b.store.Put(context.Background(), candidate.Key{JobID: "job-42", Generation: 0, AttemptID: "a", Ext: "json"}, strings.NewReader("x"))
	require.ErrorIs(t, err, candidate.ErrInvalidKey)
	requireNoSpools(t, b.spoolDir)
	require.Zero(t, b.bucket.putCalls())
}

func TestMaxSize(t *testing.T) {
	t.Parallel()
	b := setupWith(t, candidate.Config{MaxSize: 10})
	key := mustKey(t, "job-42", 1, "a", "txt")
	w := b.createAndWrite(context.Background(), t, key, []byte("0123456789"))
	require.NoError(t, w.Err(), "exactly the max size is accepted")
	n, err := w.Write([]byte("!"))
	require.ErrorIs(t, err, candidate.ErrTooLarge)
	require.Zero(t, n)
	require.Equal(t, err, w.Err())
	_, err = w.Commit()
	require.ErrorIs(t, err, candidate.ErrTooLarge)
	require.Zero(t, b.bucket.putCalls())
	requireNoSpools(t, b.spoolDir)

	_, err = b.store.Put(context.Background(), key, strings.NewReader("0123456789+"))
	require.ErrorIs(t, err, candidate.ErrTooLarge)
}

func TestPutReportsSourceError(t *testing.T) {
	t.Parallel()
	b := setup(t)
	boom := errors.New("task failed")
	_, err := b.store.Put(context.Background(), mustKey(t, "job-42", 1, "a", "txt"), io.MultiReader(strings.NewReader("half"), errReader{boom}))
	require.ErrorIs(t, err, boom)
	require.ErrorContains(t, err, "read content")
	require.Zero(t, b.bucket.putCalls())
	requireNoSpools(t, b.spoolDir)
}

type errReader struct{ err error }

func (r errReader) Read([]byte) (int, error) { return 0, r.err }

func TestConflictIsRetriedThenSucceeds(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.bucket.FailNextPuts(apiError("ConditionalRequestConflict"), apiError("ConditionalRequestConflict"))
	key := mustKey(t, "job-42", 1, "a", "txt")
	res, err := b.store.Put(context.Background(), key, strings.NewReader("content"))
	require.NoError(t, err)
	require.False(t, res.AlreadyExisted)
	require.Equal(t, 3, b.bucket.putCalls())
	require.Equal(t, []byte("content"), b.bucket.object(t, key.String()).body, "every retry sends the whole body")
	requireNoSpools(t, b.spoolDir)
}

func TestConflictRetriesAreBounded(t *testing.T) {
	t.Parallel()
	b := setupWith(t, candidate.Config{ConflictAttempts: 3})
	conflict := apiError("ConditionalRequestConflict")
	b.bucket.FailNextPuts(conflict, conflict, conflict, conflict)
	_, err := b.store.Put(context.Background(), mustKey(t, "job-42", 1, "a", "txt"), strings.NewReader("content"))
	require.ErrorIs(t, err, conflict)
	require.NotErrorIs(t, err, candidate.ErrExists)
	require.ErrorContains(t, err, "still conflicting after 3 attempts")
	require.Equal(t, 3, b.bucket.putCalls())
	requireNoSpools(t, b.spoolDir)
}

// The usual end of a conflict: the retry meets the winner's object.
func TestConflictThenExists(t *testing.T) {
	t.Parallel()
	b := setup(t)
	key := mustKey(t, "job-42", 1, "a", "txt")
	b.bucket.rawPut(t, key.String(), []byte("winner"), map[string]string{
		"job-id": "job-42", "generation": "1", "attempt-id": "a", "sha256": checksum.SHA256Hex([]byte("winner")),
	})
	b.bucket.FailNextPuts(apiError("ConditionalRequestConflict"))
	_, err := b.store.Put(context.Background(), key, strings.NewReader("loser"))
	var exists *candidate.ExistsError
	require.ErrorAs(t, err, &exists)
	require.Equal(t, checksum.SHA256Hex([]byte("winner")), exists.SHA256)
	require.Equal(t, 2, b.bucket.putCalls())
}

func TestConflictBackoffStopsWithContext(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		b := setupWith(t, candidate.Config{ConflictAttempts: 5, ConflictBackoff: time.Hour})
		b.bucket.FailNextPuts(apiError("ConditionalRequestConflict"))
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, err := b.store.Put(ctx, mustKey(t, "job-42", 1, "a", "txt"), strings.NewReader("content"))
		require.ErrorIs(t, err, context.DeadlineExceeded)
		require.ErrorContains(t, err, "waiting to retry after a conflict")
		require.Equal(t, 50*time.Millisecond, time.Since(start), "the wait ends with the context, not the hour")
		require.Equal(t, 1, b.bucket.putCalls())
		requireNoSpools(t, b.spoolDir)
	})
}

// ConflictAttempts sends in all, the first
// retry after about ConflictBackoff (its upper half random), each next one after
// about twice as long.
func TestConflictRetryWaitsAsConfigured(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		const base = 100 * time.Millisecond
		b := setupWith(t, candidate.Config{ConflictAttempts: 4, ConflictBackoff: base})
		conflict := apiError("ConditionalRequestConflict")
		b.bucket.FailNextPuts(conflict, conflict, conflict, conflict)
		_, err := b.store.Put(context.Background(), mustKey(t, "job-42", 1, "a", "txt"), strings.NewReader("content"))
		require.ErrorContains(t, err, "still conflicting after 4 attempts")
		times := b.bucket.CallTimes(s3mem.OpPutObject)
		require.Len(t, times, 4)
		for i, full := range []time.Duration{base, 2 * base, 4 * base} {
			wait := times[i+1].Sub(times[i])
			require.GreaterOrEqual(t, wait, full/2, "wait before retry %d", i+1)
			require.LessOrEqual(t, wait, full, "wait before retry %d", i+1)
		}
	})
}

func TestExistingObjectWithOtherContentIsErrExists(t *testing.T) {
	t.Parallel()
	b := setup(t)
	key := mustKey(t, "job-42", 1, "a", "json")
	first, err := b.store.Put(context.Background(), key, strings.NewReader("first"))
	require.NoError(t, err)

	_, err = b.store.Put(context.Background(), key, strings.NewReader("second"))
	require.ErrorIs(t, err, candidate.ErrExists)
	var exists *candidate.ExistsError
	require.ErrorAs(t, err, &exists)
	require.Equal(t, key, exists.Key)
	require.Equal(t, first.SHA256, exists.SHA256)
	require.Equal(t, checksum.SHA256Hex([]byte("second")), exists.Ours)
	require.Equal(t, []byte("first"), b.bucket.object(t, key.String()).body, "the first object is unchanged")
	requireNoSpools(t, b.spoolDir)
}

// A write whose earlier send succeeded although its caller saw an error
// (a lost response) is recognised when it is sent again.
func TestExistingIdenticalObjectIsOurEarlierSuccess(t *testing.T) {
	t.Parallel()
	b := setup(t)
	key := mustKey(t, "job-42", 1, "a", "json")
	first, err := b.store.Put(context.Background(), key, strings.NewReader("same"))
	require.NoError(t, err)

	again, err := b.store.Put(context.Background(), key, strings.NewReader("same"))
	require.NoError(t, err)
	require.True(t, again.AlreadyExisted)
	require.Equal(t, first.SHA256, again.SHA256)
	require.Equal(t, first.Size, again.Size)
	require.Equal(t, first.ETag, again.ETag)
	require.Equal(t, 2, b.bucket.putCalls(), "the second write was sent and refused by S3")
}

// Same hash is not enough when the object was not written for this key.
func TestExistingForeignObjectIsErrExists(t *testing.T) {
	t.Parallel()
	b := setup(t)
	key := mustKey(t, "job-42", 1, "a", "json")
	b.bucket.rawPut(t, key.String(), []byte("same"), map[string]string{
		"job-id": "job-42", "generation": "1", "attempt-id": "other", "sha256": checksum.SHA256Hex([]byte("same")),
	})
	_, err := b.store.Put(context.Background(), key, strings.NewReader("same"))
	require.ErrorIs(t, err, candidate.ErrExists)
	require.ErrorIs(t, err, candidate.ErrInvalidMetadata)
}

// A 412 known only by its status (no error code) is still "exists"; when
// the object cannot be read to compare, both facts are reported.
func TestPreconditionByStatusOnly(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.bucket.FailNextPuts(statusError{412})
	_, err := b.store.Put(context.Background(), mustKey(t, "job-42", 1, "a", "json"), strings.NewReader("x"))
	require.ErrorIs(t, err, candidate.ErrExists)
	require.ErrorIs(t, err, candidate.ErrNotFound)
	require.Equal(t, 1, b.bucket.putCalls())
}

func TestOtherErrorsAreNotRetried(t *testing.T) {
	t.Parallel()
	b := setup(t)
	// A 409 with another code is not a conditional-write conflict.
	b.bucket.FailNextPuts(apiError("OperationAborted"))
	_, err := b.store.Put(context.Background(), mustKey(t, "job-42", 1, "a", "json"), strings.NewReader("x"))
	require.ErrorContains(t, err, "OperationAborted")
	require.ErrorContains(t, err, "candidate: put candidates/job-42/g0000000001/a.json")
	require.NotErrorIs(t, err, candidate.ErrExists)
	require.Equal(t, 1, b.bucket.putCalls())
}

// Memory use does not grow with the size of a candidate: writing and
// uploading 64 MiB allocates a small, fixed amount. Not parallel, so that
// no other test's allocations are counted.
func TestMemoryDoesNotGrowWithSize(t *testing.T) {
	b := setup(t)
	b.bucket.discardBodies()
	const size = 64 << 20
	chunk := bytes.Repeat([]byte("0123456789abcdef"), 4096) // 64 KiB, reused
	key := mustKey(t, "job-42", 1, "big", "bin")

	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)

	w, err := b.store.Create(context.Background(), key)
	require.NoError(t, err)
	for written := 0; written < size; written += len(chunk) {
		_, err := w.Write(chunk)
		require.NoError(t, err)
	}
	res, err := w.Commit()
	require.NoError(t, err)

	runtime.ReadMemStats(&after)
	allocated := after.TotalAlloc - before.TotalAlloc
	t.Logf("allocated %d KiB to store %d MiB", allocated>>10, size>>20)
	require.Less(t, allocated, uint64(4<<20), "memory grew with the object")
	require.Equal(t, int64(size), res.Size)
	sent := b.bucket.receivedAt(t, key.String())
	require.Equal(t, res.SHA256, sent.sha256)
	require.Equal(t, int64(size), sent.size)
	require.Equal(t, int64(size), sent.contentLength)
	raw, err := hex.DecodeString(res.SHA256)
	require.NoError(t, err)
	require.Equal(t, base64.StdEncoding.EncodeToString(raw), sent.checksum)
	requireNoSpools(t, b.spoolDir)
}

func TestCreateFailsWhenSpoolDirIsMissing(t *testing.T) {
	t.Parallel()
	s, err := candidate.New(candidate.Config{Client: memoryS3(t), Bucket: testBucket, SpoolDir: t.TempDir() + "/missing"})
	require.NoError(t, err, "New does not look at the directory")
	_, err = s.Create(context.Background(), mustKey(t, "job-42", 1, "a", "json"))
	require.ErrorIs(t, err, os.ErrNotExist)
	require.ErrorContains(t, err, "spool")
}
