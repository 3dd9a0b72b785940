package worker_test

import (
	"context"
	"sync"

	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"

	"github.com/fifoworker/fifoworker/pkg/candidate"
	"github.com/fifoworker/fifoworker/pkg/candidate/candidatetest"
)

// testBucket is the name of the bucket the tests' candidates go to.
const testBucket = "candidates-test"

// bucket is candidatetest.MemoryS3, the in-memory S3 that pkg/candidate's
// conformance run holds to the emulator's behaviour, with two things a
// test needs that a real bucket does not offer: a count of PutObject
// calls, and errors queued with failNextPuts, which the next PutObject
// calls return before the put reaches the bucket. Every S3 answer is
// MemoryS3's.
type bucket struct {
	*candidatetest.MemoryS3

	mu       sync.Mutex
	puts     int
	failPuts []error
}

var _ candidate.S3API = (*bucket)(nil)

func newBucket() *bucket {
	return &bucket{MemoryS3: candidatetest.NewMemoryS3([]string{testBucket})}
}

// PutObject counts the call and fails it with the next queued error, if
// any; otherwise MemoryS3 answers.
func (b *bucket) PutObject(ctx context.Context, in *s3.PutObjectInput, optFns ...func(*s3.Options)) (*s3.PutObjectOutput, error) {
	b.mu.Lock()
	b.puts++
	var injected error
	if len(b.failPuts) > 0 {
		injected, b.failPuts = b.failPuts[0], b.failPuts[1:]
	}
	b.mu.Unlock()
	if injected != nil {
		return nil, injected
	}
	return b.MemoryS3.PutObject(ctx, in, optFns...)
}

// keys returns every key in the bucket, in order.
func (b *bucket) keys() []string { return b.Keys(testBucket, "") }

func (b *bucket) putCalls() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.puts
}

func (b *bucket) failNextPuts(errs ...error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.failPuts = append(b.failPuts, errs...)
}

// apiError is an S3 error answer with its code, as the SDK returns it.
func apiError(code, msg string) error { return &smithy.GenericAPIError{Code: code, Message: msg} }

// memoryCandidates is a candidate store on a bucket of its own in memory,
// spooling in dir, for tests that need neither counts nor faults.
func memoryCandidates(dir string) *candidate.Store {
	return candidate.New(candidatetest.NewMemoryS3([]string{testBucket}), testBucket, candidate.WithSpoolDir(dir))
}
