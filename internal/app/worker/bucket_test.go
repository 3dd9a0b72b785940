package worker_test

import (
	"testing"

	"github.com/aws/smithy-go"
	"github.com/stretchr/testify/require"

	"github.com/fifoworker/fifoworker/pkg/candidate"
	"github.com/fifoworker/fifoworker/pkg/s3mem"
)

// testBucket is the name of the bucket the tests' candidates go to.
const testBucket = "candidates-test"

// bucket is s3mem.FaultyS3, the in-memory S3 that pkg/candidate's
// conformance run holds to the emulator's behaviour: it counts the
// PutObject calls, and errors queued with failNextPuts are the next
// PutObject calls' answers. Every other S3 answer is the in-memory S3's.
type bucket struct{ *s3mem.FaultyS3 }

var _ candidate.S3API = bucket{}

func newBucket(tb testing.TB) bucket {
	tb.Helper()
	faulty, err := s3mem.NewFaultyS3(s3mem.Config{Buckets: []string{testBucket}})
	require.NoError(tb, err)
	return bucket{faulty}
}

// keys returns every key in the bucket, in order.
func (b bucket) keys() []string { return b.Keys(testBucket, "") }

func (b bucket) putCalls() int { return b.Calls(s3mem.OpPutObject) }

func (b bucket) failNextPuts(errs ...error) { b.FailNextPuts(errs...) }

// apiError is an S3 error answer with its code, as the SDK returns it.
func apiError(code, msg string) error { return &smithy.GenericAPIError{Code: code, Message: msg} }

// memoryCandidates is a candidate store on a bucket of its own in memory,
// spooling in a directory of tb's, for tests that need neither counts nor
// faults.
func memoryCandidates(tb testing.TB) *candidate.Store {
	tb.Helper()
	mem, err := s3mem.New(s3mem.Config{Buckets: []string{testBucket}})
	require.NoError(tb, err)
	s, err := candidate.New(candidate.Config{Client: mem, Bucket: testBucket, SpoolDir: tb.TempDir()})
	require.NoError(tb, err)
	return s
}
