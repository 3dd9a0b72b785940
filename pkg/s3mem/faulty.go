package s3mem

import (
	"context"
	"io"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// The operations FaultyS3 counts and can fail, by name.
const (
	OpPutObject     = "PutObject"
	OpGetObject     = "GetObject"
	OpHeadObject    = "HeadObject"
	OpListObjectsV2 = "ListObjectsV2"
	OpDeleteObject  = "DeleteObject"
)

// FaultyS3 is an S3 with what a test needs that a real bucket does not
// offer, and nothing else: it counts the requests by operation and notes
// when each was made, fails the ones the test chooses, and can hold a
// PutObject until its context ends. Every request it neither fails nor
// holds is the S3's to answer, so what the bucket holds and how it answers
// are the S3's, which the conformance suite (s3memtest) holds to AWS's
// behaviour, on a FaultyS3 too.
//
// A request is counted first, even one that is then failed or held. A
// PutObject that FaultyS3 fails reads its body to the end first, as S3
// reads a request before it answers: a caller that sent the same reader
// again would send nothing the second time, and the bucket would refuse
// it.
//
// Inspect the bucket through the embedded S3 (Object, Keys, or its own
// methods, which nothing counts or fails). It is safe for concurrent use.
type FaultyS3 struct {
	*S3

	mu    sync.Mutex
	calls map[string][]time.Time
	fail  func(op, key string) error
	// failPuts are the errors of the next PutObject calls, in order.
	failPuts []error
	// hold, when set, is closed by the next PutObject call, which then
	// waits for its context to end.
	hold chan struct{}
}

var _ api = (*FaultyS3)(nil)

// NewFaultyS3 returns an S3 with cfg's buckets, all empty, with nothing
// failed or held yet.
func NewFaultyS3(cfg Config) (*FaultyS3, error) {
	m, err := New(cfg)
	if err != nil {
		return nil, err
	}
	return &FaultyS3{S3: m, calls: map[string][]time.Time{}}, nil
}

// Fail sets the function asked before each request reaches the bucket,
// with the operation (OpPutObject and so on) and the request's key (a
// listing's prefix): a non-nil answer is the request's error. Nil asks
// nothing. Errors queued with FailNextPuts come first.
func (f *FaultyS3) Fail(fn func(op, key string) error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fail = fn
}

// FailNextPuts makes the next PutObject calls fail with errs, in order.
func (f *FaultyS3) FailNextPuts(errs ...error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failPuts = append(f.failPuts, errs...)
}

// HoldNextPut makes the next PutObject call wait, without reading its
// body, until its context ends, and return the context's error; errors
// queued with FailNextPuts wait for the calls after it. The channel it
// returns is closed when that call starts waiting.
func (f *FaultyS3) HoldNextPut() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.hold = make(chan struct{})
	return f.hold
}

// Calls returns how many requests of the operation were made.
func (f *FaultyS3) Calls(op string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.calls[op])
}

// CallTimes returns when each request of the operation was made.
func (f *FaultyS3) CallTimes(op string) []time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]time.Time(nil), f.calls[op]...)
}

// TakeCalls returns the number of requests of each operation made since
// the last TakeCalls, and starts counting again.
func (f *FaultyS3) TakeCalls() map[string]int {
	f.mu.Lock()
	defer f.mu.Unlock()
	counts := make(map[string]int, len(f.calls))
	for op, times := range f.calls {
		counts[op] = len(times)
	}
	f.calls = map[string][]time.Time{}
	return counts
}

// begin counts a request and returns the error it is to fail with, if
// any; for a PutObject, held is the channel to close before waiting.
func (f *FaultyS3) begin(op string, key *string) (held chan struct{}, err error) {
	f.mu.Lock()
	f.calls[op] = append(f.calls[op], time.Now())
	fail := f.fail
	if op == OpPutObject {
		held, f.hold = f.hold, nil
		if held == nil && len(f.failPuts) > 0 {
			err, f.failPuts = f.failPuts[0], f.failPuts[1:]
		}
	}
	f.mu.Unlock()
	if held == nil && err == nil && fail != nil {
		err = fail(op, aws.ToString(key))
	}
	return held, err
}

// pass counts a request other than PutObject and fails it as Fail says,
// or else hands it to call, S3's method for it.
func pass[In, Out any](ctx context.Context, f *FaultyS3, op string, key *string,
	call func(context.Context, In, ...func(*s3.Options)) (Out, error), in In, optFns []func(*s3.Options),
) (Out, error) {
	if _, err := f.begin(op, key); err != nil {
		var none Out
		return none, err
	}
	return call(ctx, in, optFns...)
}

// PutObject counts the call, holds it or fails it as the test said, or
// else hands it to S3.
func (f *FaultyS3) PutObject(ctx context.Context, in *s3.PutObjectInput, optFns ...func(*s3.Options)) (*s3.PutObjectOutput, error) {
	held, err := f.begin(OpPutObject, in.Key)
	if held != nil {
		close(held)
		<-ctx.Done()
		return nil, ctx.Err()
	}
	if err != nil {
		if in.Body != nil {
			_, _ = io.Copy(io.Discard, in.Body) // S3 reads the request before it answers
		}
		return nil, err
	}
	return f.S3.PutObject(ctx, in, optFns...)
}

// GetObject counts the call and fails it as Fail says, or else hands it to
// S3.
func (f *FaultyS3) GetObject(ctx context.Context, in *s3.GetObjectInput, optFns ...func(*s3.Options)) (*s3.GetObjectOutput, error) {
	return pass(ctx, f, OpGetObject, in.Key, f.S3.GetObject, in, optFns)
}

// HeadObject counts the call and fails it as Fail says, or else hands it
// to S3.
func (f *FaultyS3) HeadObject(ctx context.Context, in *s3.HeadObjectInput, optFns ...func(*s3.Options)) (*s3.HeadObjectOutput, error) {
	return pass(ctx, f, OpHeadObject, in.Key, f.S3.HeadObject, in, optFns)
}

// ListObjectsV2 counts the call and fails it as Fail says (with the
// listing's prefix), or else hands it to S3.
func (f *FaultyS3) ListObjectsV2(ctx context.Context, in *s3.ListObjectsV2Input, optFns ...func(*s3.Options)) (*s3.ListObjectsV2Output, error) {
	return pass(ctx, f, OpListObjectsV2, in.Prefix, f.S3.ListObjectsV2, in, optFns)
}

// DeleteObject counts the call and fails it as Fail says, or else hands it
// to S3.
func (f *FaultyS3) DeleteObject(ctx context.Context, in *s3.DeleteObjectInput, optFns ...func(*s3.Options)) (*s3.DeleteObjectOutput, error) {
	return pass(ctx, f, OpDeleteObject, in.Key, f.S3.DeleteObject, in, optFns)
}
