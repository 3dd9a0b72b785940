package candidate_test

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/base/checksum"
	"github.com/fifoworker/fifoworker/pkg/candidate"
)

// The store's tests against an S3: each runs on the emulator
// (TestIntegrationStore, integration_test.go) and on s3mem.S3
// (TestMemoryS3Conformance, memorys3_test.go), the in-memory S3 the
// simulation and other packages' tests use. They check the store; that
// s3mem answers every S3 call as the emulator and AWS do is
// s3mem/s3memtest's conformance suite's job, which pkg/s3mem runs on both.

// s3Bundle is a candidate store on a bucket of its own.
type s3Bundle struct {
	client   candidate.S3API
	bucket   string
	store    *candidate.Store
	spoolDir string
	// put stores an object as any other client could, bypassing Store. A
	// non-empty checksum is the object's S3 SHA-256 checksum, stored as
	// given even when it does not match the body: the emulator does not
	// verify it on upload, s3mem.S3.PutRaw does not either (S3 itself
	// would refuse such a put).
	put func(t *testing.T, key string, body []byte, meta map[string]string, checksum string)
}

var storeConformance = []struct {
	name string
	run  func(t *testing.T, b *s3Bundle)
}{
	{"KeyIsWrittenOnce", testKeyIsWrittenOnce},
	{"CandidatesOfOneJob", testCandidatesOfOneJob},
	{"ConcurrentWritersOfOneKey", testConcurrentWritersOfOneKey},
	{"ChecksumIsStored", testChecksumIsStored},
	{"DetectsWrongContent", testDetectsWrongContent},
	{"LargeCandidate", testLargeCandidate},
	{"ListPageWalksTheBucket", testListPageWalksTheBucket},
}

// rawGet reads an object with the plain client, bypassing Store.
func (b *s3Bundle) rawGet(t *testing.T, key string) []byte {
	t.Helper()
	out, err := b.client.GetObject(t.Context(), &s3.GetObjectInput{Bucket: aws.String(b.bucket), Key: aws.String(key)})
	require.NoError(t, err)
	defer func() { require.NoError(t, out.Body.Close()) }()
	body, err := io.ReadAll(out.Body)
	require.NoError(t, err)
	return body
}

// rawPut stores an object bypassing Store (see put).
func (b *s3Bundle) rawPut(t *testing.T, key string, body []byte, meta map[string]string, checksum string) {
	t.Helper()
	b.put(t, key, body, meta, checksum)
}

func (b *s3Bundle) readAll(t *testing.T, key candidate.Key) ([]byte, error) {
	t.Helper()
	r, err := b.store.Open(t.Context(), key)
	require.NoError(t, err)
	body, err := io.ReadAll(r)
	return body, errors.Join(err, r.Close())
}

func testKeyIsWrittenOnce(t *testing.T, b *s3Bundle) {
	key := mustKey(t, "job-42", 2, "worker-b", "json")

	first, err := b.store.Put(t.Context(), key, strings.NewReader(`{"articles":120}`))
	require.NoError(t, err)
	require.Equal(t, checksum.SHA256Hex([]byte(`{"articles":120}`)), first.SHA256)
	require.Equal(t, int64(16), first.Size)
	require.NotEmpty(t, first.ETag)
	require.False(t, first.AlreadyExisted)

	_, err = b.store.Put(t.Context(), key, strings.NewReader(`{"articles":0}`))
	var exists *candidate.ExistsError
	require.ErrorAs(t, err, &exists)
	require.ErrorIs(t, err, candidate.ErrExists)
	require.Equal(t, first.SHA256, exists.SHA256)
	require.Equal(t, []byte(`{"articles":120}`), b.rawGet(t, key.String()), "the first object is unchanged")

	// The same bytes again: our own earlier success, not a conflict.
	again, err := b.store.Put(t.Context(), key, strings.NewReader(`{"articles":120}`))
	require.NoError(t, err)
	require.True(t, again.AlreadyExisted)
	require.Equal(t, first.ETag, again.ETag)
	require.Equal(t, first.SHA256, again.SHA256)

	body, err := b.readAll(t, key)
	require.NoError(t, err)
	require.Equal(t, []byte(`{"articles":120}`), body)
	requireNoSpools(t, b.spoolDir)
}

func testCandidatesOfOneJob(t *testing.T, b *s3Bundle) {
	ctx := t.Context()
	a := mustKey(t, "job-42", 1, "worker-a", "json")
	bb := mustKey(t, "job-42", 2, "worker-b", "json")
	resA, err := b.store.Put(ctx, a, strings.NewReader(`{"articles":100}`))
	require.NoError(t, err)
	resB, err := b.store.Put(ctx, bb, strings.NewReader(`{"articles":120}`))
	require.NoError(t, err)
	// Neighbours that are not job-42's candidates.
	_, err = b.store.Put(ctx, mustKey(t, "job-4", 1, "x", "json"), strings.NewReader("job-4"))
	require.NoError(t, err)
	_, err = b.store.Put(ctx, mustKey(t, "job-421", 1, "y", "json"), strings.NewReader("job-421"))
	require.NoError(t, err)
	b.rawPut(t, "candidates/job-42/notes.txt", []byte("not a candidate"), nil, "")

	entries, err := b.store.List(ctx, "job-42")
	require.NoError(t, err)
	require.Len(t, entries, 2)
	require.Equal(t, a, entries[0].Key)
	require.Equal(t, resA.Size, entries[0].Size)
	require.Equal(t, resA.ETag, entries[0].ETag)
	require.Equal(t, bb, entries[1].Key)
	require.Equal(t, resB.ETag, entries[1].ETag)

	info, err := b.store.Head(ctx, bb)
	require.NoError(t, err)
	require.Equal(t, bb, info.Key)
	require.Equal(t, resB.SHA256, info.SHA256)
	require.Equal(t, resB.Size, info.Size)
	require.Equal(t, resB.ETag, info.ETag)
	require.False(t, info.LastModified.IsZero())

	body, err := b.readAll(t, a)
	require.NoError(t, err)
	require.Equal(t, `{"articles":100}`, string(body))

	// The sweeper removes A's orphan; B's accepted candidate stays.
	require.NoError(t, b.store.Delete(ctx, a))
	require.NoError(t, b.store.Delete(ctx, a), "deleting again succeeds")
	_, err = b.store.Head(ctx, a)
	require.ErrorIs(t, err, candidate.ErrNotFound)
	_, err = b.store.Open(ctx, a)
	require.ErrorIs(t, err, candidate.ErrNotFound)
	entries, err = b.store.List(ctx, "job-42")
	require.NoError(t, err)
	require.Len(t, entries, 1)
	require.Equal(t, bb, entries[0].Key)
}

// N writers of one key at once: exactly one wins, every other one is told
// the key exists, and the stored object is the winner's.
func testConcurrentWritersOfOneKey(t *testing.T, b *s3Bundle) {
	key := mustKey(t, "job-42", 1, "worker-a", "txt")
	const n = 8
	var (
		wg      sync.WaitGroup
		start   = make(chan struct{})
		results = make([]candidate.Result, n)
		errs    = make([]error, n)
	)
	for i := range n {
		wg.Go(func() {
			<-start
			results[i], errs[i] = b.store.Put(t.Context(), key, strings.NewReader(fmt.Sprintf("writer %d", i)))
		})
	}
	close(start)
	wg.Wait()

	winner := -1
	for i, err := range errs {
		if err == nil {
			require.Equal(t, -1, winner, "writers %d and %d both succeeded", winner, i)
			winner = i
			continue
		}
		require.ErrorIs(t, err, candidate.ErrExists, "writer %d", i)
	}
	require.NotEqual(t, -1, winner, "nobody succeeded")
	require.False(t, results[winner].AlreadyExisted)
	want := fmt.Sprintf("writer %d", winner)
	require.Equal(t, []byte(want), b.rawGet(t, key.String()))
	require.Equal(t, checksum.SHA256Hex([]byte(want)), results[winner].SHA256)
	requireNoSpools(t, b.spoolDir)
}

// The SHA-256 goes into S3's own checksum as well as into the metadata;
// the emulator stores the checksum header and returns it.
func testChecksumIsStored(t *testing.T, b *s3Bundle) {
	key := mustKey(t, "job-42", 1, "worker-a", "json")
	content := []byte(`{"articles":100}`)
	_, err := b.store.Put(t.Context(), key, bytes.NewReader(content))
	require.NoError(t, err)

	out, err := b.client.HeadObject(t.Context(), &s3.HeadObjectInput{
		Bucket: aws.String(b.bucket), Key: aws.String(key.String()), ChecksumMode: types.ChecksumModeEnabled,
	})
	require.NoError(t, err)
	sum := sha256.Sum256(content)
	require.Equal(t, base64.StdEncoding.EncodeToString(sum[:]), aws.ToString(out.ChecksumSHA256))
	require.Equal(t, map[string]string{
		"job-id": "job-42", "generation": "1", "attempt-id": "worker-a", "sha256": checksum.SHA256Hex(content),
	}, out.Metadata)
	require.Equal(t, "application/json", aws.ToString(out.ContentType))
}

// An object at a candidate key whose bytes do not match its recorded hash
// fails once its size has been read, whether or not it also carries an S3
// checksum (which the SDK checks too). The emulator does not verify
// checksums on upload, which is what lets these objects be made.
func testDetectsWrongContent(t *testing.T, b *s3Bundle) {
	genuine := sha256.Sum256([]byte("genuine content"))
	meta := func(attempt string) map[string]string {
		return map[string]string{"job-id": "job-42", "generation": "1", "attempt-id": attempt, "sha256": checksum.SHA256Hex([]byte("genuine content"))}
	}
	for _, tt := range []struct {
		attempt, checksum string
		sdkToo            bool // the SDK's own check fails the read as well
	}{
		{"no-s3-checksum", "", false},
		{"with-s3-checksum", base64.StdEncoding.EncodeToString(genuine[:]), true},
	} {
		key := mustKey(t, "job-42", 1, tt.attempt, "txt")
		b.rawPut(t, key.String(), []byte("forged content!"), meta(tt.attempt), tt.checksum)
		_, err := b.readAll(t, key)
		require.ErrorIs(t, err, candidate.ErrChecksumMismatch, tt.attempt)
		if tt.sdkToo {
			require.ErrorContains(t, err, "the S3 client failed the read too")
		} else {
			require.NotContains(t, err.Error(), "the S3 client failed the read too")
		}

		// A caller that reads exactly the size and stops learns it too.
		r, err := b.store.Open(t.Context(), key)
		require.NoError(t, err)
		_, err = io.ReadFull(r, make([]byte, r.Info().Size))
		require.ErrorIs(t, err, candidate.ErrChecksumMismatch, tt.attempt)
		require.ErrorIs(t, r.Close(), candidate.ErrChecksumMismatch, tt.attempt)
	}

	other := mustKey(t, "job-42", 1, "worker-b", "txt")
	b.rawPut(t, other.String(), []byte("x"), map[string]string{"sha256": checksum.SHA256Hex([]byte("x"))}, "")
	_, err := b.store.Head(t.Context(), other)
	require.ErrorIs(t, err, candidate.ErrInvalidMetadata)
}

// A candidate larger than any buffer streams through the spool and back.
func testLargeCandidate(t *testing.T, b *s3Bundle) {
	key := mustKey(t, "job-42", 1, "worker-a", "bin")
	content := make([]byte, 12<<20)
	_, err := rand.Read(content)
	require.NoError(t, err)
	w, err := b.store.Create(t.Context(), key)
	require.NoError(t, err)
	defer func() { require.NoError(t, w.Close()) }()
	for chunk := range slices.Chunk(content, 100_000) {
		_, err := w.Write(chunk)
		require.NoError(t, err)
	}
	res, err := w.Commit()
	require.NoError(t, err)
	require.Equal(t, int64(len(content)), res.Size)
	require.Equal(t, checksum.SHA256Hex(content), res.SHA256)

	body, err := b.readAll(t, key)
	require.NoError(t, err)
	require.True(t, bytes.Equal(content, body), "content differs")
	requireNoSpools(t, b.spoolDir)
}

// ListPage walks every candidate of the bucket in key order, a bounded page
// at a time, reporting keys under candidates/ that are not candidates and
// leaving out everything outside the prefix.
func testListPageWalksTheBucket(t *testing.T, b *s3Bundle) {
	ctx := t.Context()
	var want []string
	for _, k := range []candidate.Key{
		mustKey(t, "job-1", 1, "a", "txt"), mustKey(t, "job-1", 2, "b", "txt"),
		mustKey(t, "job-2", 1, "c", "txt"), mustKey(t, "job-3", 3, "d", "txt"),
	} {
		_, err := b.store.Put(ctx, k, strings.NewReader(k.String()))
		require.NoError(t, err)
		want = append(want, k.String())
	}
	b.rawPut(t, "candidates/job-2/notes.txt", []byte("not a candidate"), nil, "")
	b.rawPut(t, "sweeper/cursor", []byte("outside the prefix"), nil, "")

	var got, unparsable []string
	after := ""
	for pages := 0; ; pages++ {
		require.Less(t, pages, 10, "the walk does not end")
		p, err := b.store.ListPage(ctx, after, 2)
		require.NoError(t, err)
		require.LessOrEqual(t, len(p.Entries)+len(p.Unparsable), 2)
		for _, e := range p.Entries {
			got = append(got, e.Key.String())
			require.Equal(t, int64(len(e.Key.String())), e.Size)
			require.False(t, e.LastModified.IsZero())
		}
		for _, o := range p.Unparsable {
			unparsable = append(unparsable, o.Key)
			require.ErrorIs(t, o.Err, candidate.ErrInvalidKey)
		}
		if p.Next == "" {
			break
		}
		after = p.Next
	}
	require.Equal(t, want, got)
	require.Equal(t, []string{"candidates/job-2/notes.txt"}, unparsable)

	// From a key that is no candidate's, and from beyond the prefix.
	p, err := b.store.ListPage(ctx, "candidates/job-1/g0000000002", 100)
	require.NoError(t, err)
	require.Len(t, p.Entries, 3)
	require.Equal(t, want[1], p.Entries[0].Key.String())
	p, err = b.store.ListPage(ctx, "candidates/zzz", 100)
	require.NoError(t, err)
	require.Empty(t, p.Entries)
	require.Empty(t, p.Next)
}
