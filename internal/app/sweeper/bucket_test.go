package sweeper_test

import (
	"bytes"
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/internal/app/sweeper"
	"github.com/fifoworker/fifoworker/pkg/candidate"
	"github.com/fifoworker/fifoworker/pkg/s3mem"
)

// testBucket is the name of the bucket the tests' candidates and cursors
// go to.
const testBucket = "candidates-test"

// bucket is s3mem.FaultyS3, the in-memory S3 that
// pkg/candidate's conformance run holds to the emulator's behaviour: it
// counts requests by operation and can fail chosen ones (Fail). On top of
// it, what these tests need that a real bucket does not offer: it records
// each listing, and can answer as S3 answers a role without s3:ListBucket.
// Every other answer is the in-memory S3's, and its clock is the test's.
type bucket struct {
	*s3mem.FaultyS3

	mu sync.Mutex
	// deniesMissing answers a GetObject of a missing key with 403
	// AccessDenied, as S3 does to a caller without s3:ListBucket (an IAM
	// answer, which s3mem and the emulator, with no policies, never
	// give).
	deniesMissing bool
	// listed records each listing's StartAfter and the keys it returned.
	listed []listing
}

type listing struct {
	startAfter string
	keys       []string
}

var (
	_ candidate.S3API   = (*bucket)(nil)
	_ sweeper.CursorAPI = (*bucket)(nil)
)

func newBucket(t testing.TB, now func() time.Time) *bucket {
	t.Helper()
	faulty, err := s3mem.NewFaultyS3(s3mem.Config{Buckets: []string{testBucket}, Now: now})
	require.NoError(t, err)
	return &bucket{FaultyS3: faulty}
}

func apiError(code string) error {
	return &smithy.GenericAPIError{Code: code, Message: "injected by the test bucket"}
}

func (b *bucket) GetObject(ctx context.Context, in *s3.GetObjectInput, optFns ...func(*s3.Options)) (*s3.GetObjectOutput, error) {
	out, err := b.FaultyS3.GetObject(ctx, in, optFns...)
	if b.deniesMissing && errors.As(err, new(*types.NoSuchKey)) {
		return nil, apiError("AccessDenied")
	}
	return out, err
}

func (b *bucket) ListObjectsV2(ctx context.Context, in *s3.ListObjectsV2Input, optFns ...func(*s3.Options)) (*s3.ListObjectsV2Output, error) {
	out, err := b.FaultyS3.ListObjectsV2(ctx, in, optFns...)
	if err != nil {
		return nil, err
	}
	l := listing{startAfter: aws.ToString(in.StartAfter)}
	for _, o := range out.Contents {
		l.keys = append(l.keys, aws.ToString(o.Key))
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.listed = append(b.listed, l)
	return out, nil
}

// rawPut stores an object as any other client could, bypassing the store,
// the counts and the faults: a plain PutObject.
func (b *bucket) rawPut(t testing.TB, key string, body []byte) {
	t.Helper()
	_, err := b.S3.PutObject(t.Context(), &s3.PutObjectInput{
		Bucket: aws.String(testBucket), Key: aws.String(key), Body: bytes.NewReader(body),
	})
	require.NoError(t, err)
}

// body returns the content of the object at key, which must exist.
func (b *bucket) body(t testing.TB, key string) string {
	t.Helper()
	content, ok := b.Object(testBucket, key)
	require.True(t, ok, "no object at %s", key)
	return string(content)
}

// has tells whether there is an object at key.
func (b *bucket) has(key string) bool {
	_, ok := b.Object(testBucket, key)
	return ok
}

// modified returns the LastModified of the object at key, as a HeadObject
// that is neither counted nor failed reads it.
func (b *bucket) modified(t testing.TB, key string) time.Time {
	t.Helper()
	out, err := b.S3.HeadObject(t.Context(), &s3.HeadObjectInput{Bucket: aws.String(testBucket), Key: aws.String(key)})
	require.NoError(t, err)
	return aws.ToTime(out.LastModified)
}

// keys returns every key in the bucket, in order.
func (b *bucket) keys() []string { return b.Keys(testBucket, "") }

// takeListings returns the listings since the last call and starts again.
func (b *bucket) takeListings() []listing {
	b.mu.Lock()
	defer b.mu.Unlock()
	l := b.listed
	b.listed = nil
	return l
}
