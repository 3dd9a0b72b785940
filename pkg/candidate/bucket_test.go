package candidate_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/pkg/candidate"
	"github.com/fifoworker/fifoworker/pkg/s3mem"
)

// testBucket is the name of the bucket the unit tests' candidates go to.
const testBucket = "candidates-test"

// bucket is s3mem.S3, the in-memory S3 that the conformance
// run (conformance_test.go) holds to the emulator's behaviour, with what a
// test needs that a real bucket does not offer: s3mem.FaultyS3's
// counts, failed puts and held put, and three things of its own.
//
//   - It lists at most pageSize keys a page, whatever MaxKeys asks, so
//     that a few keys take several pages.
//   - It can change the body GetObject returns for a key, leaving the
//     object's headers (metadata, Content-Length, checksum) as they are:
//     what corruption in transit, or a writer that lied about its hash,
//     looks like to the reader (see tamper and pauseAfter).
//   - It can keep only the size and hash of put bodies (discardBodies), for
//     tests that measure the store's memory.
//
// Every other answer is the in-memory S3's.
type bucket struct {
	*s3mem.FaultyS3

	pageSize int32

	mu       sync.Mutex
	bodies   map[string]*alteredBody
	discard  bool
	received map[string]received
}

// alteredBody is the body GetObject returns for a key in place of the
// stored one.
type alteredBody struct {
	body []byte
	// pauseAt, when positive, makes the body return (0, nil) once after
	// that many bytes: a body that has not shown whether more follows.
	pauseAt int
	// endErr, when set, ends the body instead of io.EOF, as the SDK's
	// checksum-validating reader does on a mismatch.
	endErr error
}

// received is what reached PutObject while bodies were discarded.
type received struct {
	size          int64  // bytes read from the body
	sha256        string // hex, of those bytes
	contentLength int64  // the request's Content-Length
	checksum      string // the request's ChecksumSHA256
}

var _ candidate.S3API = (*bucket)(nil)

// memoryS3 is an in-memory S3 with the test bucket, for tests that need
// neither counts nor faults.
func memoryS3(t testing.TB) *s3mem.S3 {
	t.Helper()
	m, err := s3mem.New(s3mem.Config{Buckets: []string{testBucket}})
	require.NoError(t, err)
	return m
}

func newBucket(t testing.TB) *bucket {
	t.Helper()
	faulty, err := s3mem.NewFaultyS3(s3mem.Config{Buckets: []string{testBucket}})
	require.NoError(t, err)
	return &bucket{
		FaultyS3: faulty,
		pageSize: 2,
		bodies:   map[string]*alteredBody{},
		received: map[string]received{},
	}
}

func apiError(code string) error {
	return &smithy.GenericAPIError{Code: code, Message: "injected by the test bucket"}
}

// PutObject hands the request on; while bodies are discarded it reads the
// body itself, notes what arrived, and hands on the request with an empty
// body in its place (so the object holds no content).
func (b *bucket) PutObject(ctx context.Context, in *s3.PutObjectInput, optFns ...func(*s3.Options)) (*s3.PutObjectOutput, error) {
	b.mu.Lock()
	discard := b.discard
	b.mu.Unlock()
	if !discard {
		return b.FaultyS3.PutObject(ctx, in, optFns...)
	}
	h := sha256.New()
	var n int64
	if in.Body != nil {
		var err error
		if n, err = io.Copy(h, in.Body); err != nil {
			return nil, err
		}
	}
	b.mu.Lock()
	b.received[aws.ToString(in.Key)] = received{
		size: n, sha256: hex.EncodeToString(h.Sum(nil)),
		contentLength: aws.ToInt64(in.ContentLength), checksum: aws.ToString(in.ChecksumSHA256),
	}
	b.mu.Unlock()
	empty := *in
	empty.Body, empty.ContentLength, empty.ChecksumSHA256 = bytes.NewReader(nil), aws.Int64(0), nil
	return b.FaultyS3.PutObject(ctx, &empty, optFns...)
}

// GetObject returns the in-memory S3's answer, with the body replaced for a key
// whose body was altered.
func (b *bucket) GetObject(ctx context.Context, in *s3.GetObjectInput, optFns ...func(*s3.Options)) (*s3.GetObjectOutput, error) {
	out, err := b.FaultyS3.GetObject(ctx, in, optFns...)
	if err != nil {
		return nil, err
	}
	var altered io.Reader
	b.mu.Lock()
	if alt := b.bodies[aws.ToString(in.Key)]; alt != nil {
		altered = alt.reader()
	}
	b.mu.Unlock()
	if altered == nil {
		return out, nil
	}
	if err := out.Body.Close(); err != nil {
		return nil, err
	}
	out.Body = io.NopCloser(altered)
	return out, nil
}

func (a alteredBody) reader() io.Reader {
	var r io.Reader = bytes.NewReader(a.body)
	if a.pauseAt > 0 {
		at := min(a.pauseAt, len(a.body))
		r = io.MultiReader(bytes.NewReader(a.body[:at]), &pauseOnce{}, bytes.NewReader(a.body[at:]))
	}
	if a.endErr != nil {
		r = io.MultiReader(r, errReader{a.endErr})
	}
	return r
}

// ListObjectsV2 asks the in-memory S3 for at most pageSize keys.
func (b *bucket) ListObjectsV2(ctx context.Context, in *s3.ListObjectsV2Input, optFns ...func(*s3.Options)) (*s3.ListObjectsV2Output, error) {
	small := *in
	small.MaxKeys = aws.Int32(b.pageSize)
	if in.MaxKeys != nil {
		small.MaxKeys = aws.Int32(min(*in.MaxKeys, b.pageSize))
	}
	return b.FaultyS3.ListObjectsV2(ctx, &small, optFns...)
}

// putCalls returns how many PutObject calls were made.
func (b *bucket) putCalls() int { return b.Calls(s3mem.OpPutObject) }

// stored is an object as the bucket holds it.
type stored struct {
	body     []byte
	meta     map[string]string
	checksum string // S3's SHA-256 checksum, base64; "" when there is none
}

// object returns the object at key, or nil, read past the counts, the
// faults and any altered body.
func (b *bucket) object(t testing.TB, key string) *stored {
	t.Helper()
	body, ok := b.Object(testBucket, key)
	if !ok {
		return nil
	}
	head, err := b.S3.HeadObject(t.Context(), &s3.HeadObjectInput{
		Bucket: aws.String(testBucket), Key: aws.String(key), ChecksumMode: types.ChecksumModeEnabled,
	})
	require.NoError(t, err)
	return &stored{body: body, meta: head.Metadata, checksum: aws.ToString(head.ChecksumSHA256)}
}

// rawPut stores an object as any other S3 client could, bypassing the
// store, the counts and the faults: a plain PutObject, without an S3
// checksum.
func (b *bucket) rawPut(t testing.TB, key string, body []byte, meta map[string]string) {
	t.Helper()
	_, err := b.S3.PutObject(t.Context(), &s3.PutObjectInput{
		Bucket: aws.String(testBucket), Key: aws.String(key), Body: bytes.NewReader(body), Metadata: meta,
	})
	require.NoError(t, err)
}

// setChecksum replaces the S3 checksum of the object at key, keeping its
// content and metadata: an object S3 would not have accepted (see
// s3mem.S3.PutRaw), or the checksum of a multipart object.
func (b *bucket) setChecksum(t testing.TB, key, checksum string) {
	t.Helper()
	obj := b.object(t, key)
	require.NotNil(t, obj, "no object at %s", key)
	require.NoError(t, b.PutRaw(testBucket, key, obj.body, obj.meta, checksum))
}

// alter changes the body GetObject returns for key, starting from the
// stored content.
func (b *bucket) alter(t testing.TB, key string, change func(*alteredBody)) {
	t.Helper()
	content, ok := b.Object(testBucket, key)
	require.True(t, ok, "no object at %s", key)
	b.mu.Lock()
	defer b.mu.Unlock()
	alt := b.bodies[key]
	if alt == nil {
		alt = &alteredBody{body: content}
		b.bodies[key] = alt
	}
	change(alt)
}

// tamper replaces the body GetObject returns for key, ending it with
// endErr if not nil, and leaves its headers (metadata, Content-Length,
// checksum) alone.
func (b *bucket) tamper(t testing.TB, key string, body []byte, endErr error) {
	t.Helper()
	b.alter(t, key, func(a *alteredBody) { a.body, a.endErr = body, endErr })
}

// pauseAfter makes the body GetObject returns for key pause once, returning
// (0, nil), after n bytes.
func (b *bucket) pauseAfter(t testing.TB, key string, n int) {
	t.Helper()
	b.alter(t, key, func(a *alteredBody) { a.pauseAt = n })
}

// discardBodies makes the following puts keep only what received reports:
// the objects they store are empty.
func (b *bucket) discardBodies() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.discard = true
}

// receivedAt returns what the put of key sent while bodies were
// discarded.
func (b *bucket) receivedAt(t testing.TB, key string) received {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	r, ok := b.received[key]
	require.True(t, ok, "no discarded put of %s", key)
	return r
}

// pauseOnce reads nothing, once without an error and then with io.EOF.
type pauseOnce struct{ done bool }

func (p *pauseOnce) Read([]byte) (int, error) {
	if p.done {
		return 0, io.EOF
	}
	p.done = true
	return 0, nil
}

// statusError is an error that has an HTTP status and no S3 error code,
// like the SDK's error for a HEAD response without a body.
type statusError struct{ status int }

func (e statusError) Error() string {
	return fmt.Sprintf("http %d %s", e.status, http.StatusText(e.status))
}
func (e statusError) HTTPStatusCode() int { return e.status }
