package worker_test

import (
	"github.com/aws/smithy-go"

	"github.com/fifoworker/fifoworker/pkg/candidate"
	"github.com/fifoworker/fifoworker/pkg/candidate/candidatetest"
)

// testBucket is the name of the bucket the tests' candidates go to.
const testBucket = "candidates-test"

// bucket is candidatetest.FaultyS3 on a MemoryS3, the in-memory S3 that
// pkg/candidate's conformance run holds to the emulator's behaviour: it
// counts the PutObject calls, and errors queued with failNextPuts are the
// next PutObject calls' answers. Every other S3 answer is MemoryS3's.
type bucket struct{ *candidatetest.FaultyS3 }

var _ candidate.S3API = bucket{}

func newBucket() bucket {
	return bucket{candidatetest.NewFaultyS3(candidatetest.NewMemoryS3([]string{testBucket}))}
}

// keys returns every key in the bucket, in order.
func (b bucket) keys() []string { return b.Keys(testBucket, "") }

func (b bucket) putCalls() int { return b.Calls(candidatetest.OpPutObject) }

func (b bucket) failNextPuts(errs ...error) { b.FailNextPuts(errs...) }

// apiError is an S3 error answer with its code, as the SDK returns it.
func apiError(code, msg string) error { return &smithy.GenericAPIError{Code: code, Message: msg} }

// memoryCandidates is a candidate store on a bucket of its own in memory,
// spooling in dir, for tests that need neither counts nor faults.
func memoryCandidates(dir string) *candidate.Store {
	return candidate.New(candidatetest.NewMemoryS3([]string{testBucket}), testBucket, candidate.WithSpoolDir(dir))
}
