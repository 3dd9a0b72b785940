package candidate_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/base/checksum"
	"github.com/fifoworker/fifoworker/pkg/candidate"
	"github.com/fifoworker/fifoworker/pkg/s3mem"
)

func TestOpenReadsAndVerifies(t *testing.T) {
	t.Parallel()
	b := setup(t)
	key := mustKey(t, "job-42", 2, "attempt-b", "json")
	content := bytes.Repeat([]byte(`{"article":1}`), 10000)
	res, err := b.store.Put(context.Background(), key, bytes.NewReader(content))
	require.NoError(t, err)

	r, err := b.store.Open(context.Background(), key)
	require.NoError(t, err)
	require.Equal(t, candidate.Info{Key: key, SHA256: res.SHA256, Size: res.Size, ETag: res.ETag, LastModified: r.Info().LastModified}, r.Info())
	// iotest.TestReader reads in several patterns and checks io.EOF at the end.
	require.NoError(t, iotest.TestReader(r, content))
	require.NoError(t, r.Close())
}

func TestOpenDetectsChangedContent(t *testing.T) {
	t.Parallel()
	content := []byte("the accepted result, 40 bytes long......")
	sdkErr := errors.New("checksum did not match: algorithm SHA256") // what the SDK's reader says
	tests := []struct {
		name     string
		tampered []byte
		endErr   error
		wantMsg  string
	}{
		{"same size", []byte("the accepted result, 40 bytes long.....!"), nil, "content has sha256"},
		{"shorter", content[:39], nil, "got 39 bytes, the recorded size is 40"},
		{"longer", append(append([]byte{}, content...), '!'), nil, "got 41 bytes, the recorded size is 40"},
		{"empty", []byte{}, nil, "got 0 bytes"},
		{"the SDK fails the end", []byte("the accepted result, 40 bytes long.....!"), sdkErr, "the S3 client failed the read too: checksum did not match"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			key := mustKey(t, "job-42", 1, "a", "txt")
			_, err := b.store.Put(context.Background(), key, bytes.NewReader(content))
			require.NoError(t, err)
			b.bucket.tamper(t, key.String(), tt.tampered, tt.endErr)

			r, err := b.store.Open(context.Background(), key)
			require.NoError(t, err)
			got, err := io.ReadAll(r)
			require.ErrorIs(t, err, candidate.ErrChecksumMismatch)
			require.ErrorContains(t, err, tt.wantMsg)
			var ce *candidate.ChecksumError
			require.ErrorAs(t, err, &ce)
			require.Equal(t, key, ce.Key)
			require.LessOrEqual(t, len(got), len(tt.tampered))
			_, err = r.Read(make([]byte, 1))
			require.ErrorIs(t, err, candidate.ErrChecksumMismatch, "the error is sticky")
			require.ErrorIs(t, r.Close(), candidate.ErrChecksumMismatch, "Close reports it again")
		})
	}
}

// A body that fails before its end is a read error, not a mismatch.
func TestReadErrorIsNotAMismatch(t *testing.T) {
	t.Parallel()
	b := setup(t)
	key := mustKey(t, "job-42", 1, "a", "txt")
	_, err := b.store.Put(context.Background(), key, strings.NewReader("0123456789"))
	require.NoError(t, err)
	reset := errors.New("connection reset")
	b.bucket.tamper(t, key.String(), []byte("01234"), reset)
	r, err := b.store.Open(context.Background(), key)
	require.NoError(t, err)
	_, err = io.ReadAll(r)
	require.ErrorIs(t, err, reset)
	require.NotErrorIs(t, err, candidate.ErrChecksumMismatch)
	require.ErrorContains(t, err, "candidate: read candidates/job-42/g0000000001/a.txt: connection reset")
	require.NoError(t, r.Close())
}

// A caller that reads exactly Info().Size bytes and stops, as io.ReadFull
// does, never sees io.EOF: the Read that completes the size must report a
// mismatch, and Close reports it again.
func TestReadingExactlyTheSizeDetectsAMismatch(t *testing.T) {
	t.Parallel()
	content := []byte("the accepted result, 40 bytes long......")
	tests := []struct {
		name     string
		tampered []byte
		pauseAt  int // the body pauses once after this many bytes; 0: never
		wantMsg  string
	}{
		{"same size", []byte("the accepted result, 40 bytes long.....!"), 0, "content has sha256"},
		{"same size, the body pauses before its end", []byte("the accepted result, 40 bytes long.....!"), 40, "content has sha256"},
		{"longer", append(append([]byte{}, content...), "and more"...), 0, "got 41 bytes, the recorded size is 40"},
		{"shorter", content[:39], 0, "got 39 bytes, the recorded size is 40"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			key := mustKey(t, "job-42", 1, "a", "txt")
			_, err := b.store.Put(context.Background(), key, bytes.NewReader(content))
			require.NoError(t, err)
			b.bucket.tamper(t, key.String(), tt.tampered, nil)
			if tt.pauseAt > 0 {
				b.bucket.pauseAfter(t, key.String(), tt.pauseAt)
			}

			r, err := b.store.Open(context.Background(), key)
			require.NoError(t, err)
			_, err = io.ReadFull(r, make([]byte, r.Info().Size))
			require.ErrorIs(t, err, candidate.ErrChecksumMismatch)
			require.ErrorContains(t, err, tt.wantMsg)
			require.ErrorIs(t, r.Close(), candidate.ErrChecksumMismatch, "Close reports it again")
		})
	}
}

// When the whole size was read but the body did not show its end, Close
// looks for it; before the whole size was read, Close checks nothing.
func TestCloseChecksTheEndOnlyAfterTheWholeSize(t *testing.T) {
	t.Parallel()
	content := []byte("0123456789")
	tests := []struct {
		name     string
		tampered []byte // nil: the genuine content
		pauseAt  int
		read     int // bytes read before Close
		wantErr  string
	}{
		{"whole size read, more follows after a pause", []byte("0123456789 and more"), 10, 10, "got 11 bytes, the recorded size is 10"},
		{"whole size read, the end follows after a pause", nil, 10, 10, ""},
		{"head of a good candidate", nil, 0, 4, ""},
		{"head of a corrupt candidate: nothing could be checked", []byte("012345678!"), 0, 4, ""},
		{"head of a longer candidate: nothing could be checked", []byte("0123456789 and more"), 0, 4, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			key := mustKey(t, "job-42", 1, "a", "txt")
			_, err := b.store.Put(context.Background(), key, bytes.NewReader(content))
			require.NoError(t, err)
			if tt.tampered != nil {
				b.bucket.tamper(t, key.String(), tt.tampered, nil)
			}
			if tt.pauseAt > 0 {
				b.bucket.pauseAfter(t, key.String(), tt.pauseAt)
			}
			r, err := b.store.Open(context.Background(), key)
			require.NoError(t, err)
			got := make([]byte, tt.read)
			_, err = io.ReadFull(r, got)
			require.NoError(t, err)
			require.Equal(t, content[:tt.read], got)
			err = r.Close()
			if tt.wantErr == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, candidate.ErrChecksumMismatch)
			require.ErrorContains(t, err, tt.wantErr)
		})
	}
}

// An empty candidate is read whole without a single Read: Close checks it.
func TestCloseChecksAnEmptyCandidateNeverRead(t *testing.T) {
	t.Parallel()
	b := setup(t)
	good := mustKey(t, "job-42", 1, "a", "txt")
	grown := mustKey(t, "job-42", 1, "b", "txt")
	for _, k := range []candidate.Key{good, grown} {
		_, err := b.store.Put(context.Background(), k, strings.NewReader(""))
		require.NoError(t, err)
	}
	b.bucket.tamper(t, grown.String(), []byte("!"), nil)

	r, err := b.store.Open(context.Background(), good)
	require.NoError(t, err)
	require.NoError(t, r.Close())

	r, err = b.store.Open(context.Background(), grown)
	require.NoError(t, err)
	err = r.Close()
	require.ErrorIs(t, err, candidate.ErrChecksumMismatch)
	require.ErrorContains(t, err, "got 1 bytes, the recorded size is 0")
}

func TestOpenAndHeadCheckMetadataAgainstKey(t *testing.T) {
	t.Parallel()
	content := []byte("x")
	good := map[string]string{"job-id": "job-42", "generation": "1", "attempt-id": "a", "sha256": checksum.SHA256Hex(content)}
	with := func(k, v string) map[string]string {
		m := map[string]string{}
		for mk, mv := range good {
			m[mk] = mv
		}
		if v == "" {
			delete(m, k)
		} else {
			m[k] = v
		}
		return m
	}
	tests := []struct {
		name string
		meta map[string]string
		want string
	}{
		{"no metadata", nil, "metadata sha256"},
		{"no sha256", with("sha256", ""), "metadata sha256"},
		{"upper-case sha256", with("sha256", strings.ToUpper(checksum.SHA256Hex(content))), "metadata sha256"},
		{"short sha256", with("sha256", "abc"), "metadata sha256"},
		{"other job", with("job-id", "job-43"), "metadata job id"},
		{"other generation", with("generation", "2"), "metadata generation"},
		{"padded generation", with("generation", "01"), "metadata generation"},
		{"other attempt", with("attempt-id", "b"), "metadata attempt id"},
		{"no attempt", with("attempt-id", ""), "metadata attempt id"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			key := mustKey(t, "job-42", 1, "a", "txt")
			b.bucket.rawPut(t, key.String(), content, tt.meta)
			_, err := b.store.Head(context.Background(), key)
			require.ErrorIs(t, err, candidate.ErrInvalidMetadata)
			require.ErrorContains(t, err, tt.want)
			_, err = b.store.Open(context.Background(), key)
			require.ErrorIs(t, err, candidate.ErrInvalidMetadata)
		})
	}
	t.Run("control: good metadata", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		key := mustKey(t, "job-42", 1, "a", "txt")
		b.bucket.rawPut(t, key.String(), content, good)
		_, err := b.store.Head(context.Background(), key)
		require.NoError(t, err)
	})
}

// S3 verified its own checksum at upload; metadata that contradicts it
// cannot be trusted.
func TestS3ChecksumMustAgreeWithMetadata(t *testing.T) {
	t.Parallel()
	b := setup(t)
	key := mustKey(t, "job-42", 1, "a", "txt")
	_, err := b.store.Put(context.Background(), key, strings.NewReader("content"))
	require.NoError(t, err)
	b.bucket.setChecksum(t, key.String(), base64.StdEncoding.EncodeToString(make([]byte, 32)))
	_, err = b.store.Head(context.Background(), key)
	require.ErrorIs(t, err, candidate.ErrChecksumMismatch)
	_, err = b.store.Open(context.Background(), key)
	require.ErrorIs(t, err, candidate.ErrChecksumMismatch)

	// A multipart object's checksum is a checksum of checksums: not compared.
	b.bucket.setChecksum(t, key.String(), "AAAA-2")
	_, err = b.store.Head(context.Background(), key)
	require.NoError(t, err)
}

func TestHead(t *testing.T) {
	t.Parallel()
	b := setup(t)
	key := mustKey(t, "job-42", 2, "attempt-b", "json")
	res, err := b.store.Put(context.Background(), key, strings.NewReader("{}"))
	require.NoError(t, err)
	info, err := b.store.Head(context.Background(), key)
	require.NoError(t, err)
	require.Equal(t, key, info.Key)
	require.Equal(t, res.SHA256, info.SHA256)
	require.Equal(t, int64(2), info.Size)
	require.Equal(t, res.ETag, info.ETag)
	require.False(t, info.LastModified.IsZero())
}

func TestMissingCandidateIsErrNotFound(t *testing.T) {
	t.Parallel()
	b := setup(t)
	key := mustKey(t, "job-42", 1, "nobody", "json")
	_, err := b.store.Head(context.Background(), key)
	require.ErrorIs(t, err, candidate.ErrNotFound)
	require.ErrorContains(t, err, "candidate: head candidates/job-42/g0000000001/nobody.json")
	_, err = b.store.Open(context.Background(), key)
	require.ErrorIs(t, err, candidate.ErrNotFound)
	require.ErrorContains(t, err, "candidate: open")
}

func TestOtherErrorsAreNotErrNotFound(t *testing.T) {
	t.Parallel()
	s, err := candidate.New(candidate.Config{Client: memoryS3(t), Bucket: "no-such-bucket"})
	require.NoError(t, err)
	key := mustKey(t, "job-42", 1, "a", "json")
	// Not Head: S3's answer to a HEAD has no body to name NoSuchBucket
	// in, so a missing bucket is NotFound to it, as a missing key is.
	_, err = s.Open(context.Background(), key)
	require.ErrorContains(t, err, "NoSuchBucket")
	require.NotErrorIs(t, err, candidate.ErrNotFound)
	_, err = s.List(context.Background(), "job-42")
	require.ErrorContains(t, err, "candidate: list candidates/job-42/: api error NoSuchBucket")
	require.ErrorContains(t, s.Delete(context.Background(), key), "candidate: delete")
}

func TestListReturnsEveryGenerationInOrder(t *testing.T) {
	t.Parallel()
	b := setup(t) // the test bucket lists two keys a page
	ctx := context.Background()
	keys := []candidate.Key{
		mustKey(t, "job-42", 10, "attempt-d", "json"),
		mustKey(t, "job-42", 1, "attempt-a", "json"),
		mustKey(t, "job-42", 2, "attempt-c", "json"),
		mustKey(t, "job-42", 2, "attempt-b", "csv"),
		mustKey(t, "job-42", 9, "attempt-e", "json"),
	}
	for _, k := range keys {
		_, err := b.store.Put(ctx, k, strings.NewReader(k.AttemptID))
		require.NoError(t, err)
	}
	// Neighbours that must not be listed: another job whose id extends
	// job-42's, a job whose id is a prefix of it, and a foreign object.
	for _, k := range []candidate.Key{mustKey(t, "job-421", 1, "x", "json"), mustKey(t, "job-4", 1, "y", "json")} {
		_, err := b.store.Put(ctx, k, strings.NewReader("neighbour"))
		require.NoError(t, err)
	}
	b.bucket.rawPut(t, "candidates/job-42/notes.txt", []byte("not a candidate"), nil)

	b.bucket.TakeCalls()
	entries, err := b.store.List(ctx, "job-42")
	require.NoError(t, err)
	require.Equal(t, 3, b.bucket.TakeCalls()[s3mem.OpListObjectsV2], "six objects, two a page")
	var got []candidate.Key
	for _, e := range entries {
		got = append(got, e.Key)
		require.Equal(t, int64(len(e.Key.AttemptID)), e.Size)
		require.NotEmpty(t, e.ETag)
	}
	require.Equal(t, []candidate.Key{keys[1], keys[3], keys[2], keys[4], keys[0]}, got)

	entries, err = b.store.List(ctx, "job-none")
	require.NoError(t, err)
	require.Empty(t, entries)

	_, err = b.store.List(ctx, "../job-42")
	require.ErrorIs(t, err, candidate.ErrInvalidKey)
}

func TestDelete(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	orphan := mustKey(t, "job-42", 1, "attempt-a", "json")
	accepted := mustKey(t, "job-42", 2, "attempt-b", "json")
	for _, k := range []candidate.Key{orphan, accepted} {
		_, err := b.store.Put(ctx, k, strings.NewReader(k.AttemptID))
		require.NoError(t, err)
	}
	require.NoError(t, b.store.Delete(ctx, orphan))
	require.NoError(t, b.store.Delete(ctx, orphan), "deleting twice is fine")
	_, err := b.store.Head(ctx, orphan)
	require.ErrorIs(t, err, candidate.ErrNotFound)
	entries, err := b.store.List(ctx, "job-42")
	require.NoError(t, err)
	require.Len(t, entries, 1)
	require.Equal(t, accepted, entries[0].Key)

	require.ErrorIs(t, b.store.Delete(ctx, candidate.Key{JobID: "job-42", Generation: 1, AttemptID: "a/../b", Ext: "json"}), candidate.ErrInvalidKey)
}

func TestOperationsRejectInvalidKeys(t *testing.T) {
	t.Parallel()
	b := setup(t)
	bad := candidate.Key{JobID: "job-42", Generation: 1, AttemptID: "../../x", Ext: "json"}
	_, err := b.store.Head(context.Background(), bad)
	require.ErrorIs(t, err, candidate.ErrInvalidKey)
	_, err = b.store.Open(context.Background(), bad)
	require.ErrorIs(t, err, candidate.ErrInvalidKey)
}
