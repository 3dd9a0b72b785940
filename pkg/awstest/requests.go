package awstest

import (
	"context"
	"sync"

	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/smithy-go/middleware"
)

// Requests counts the API requests SDK clients send, once per attempt: it
// sits after the retry middleware, so an SDK retry counts again. Install it
// with a client's APIOptions: o.APIOptions = append(o.APIOptions, r.Count("s3.")).
type Requests struct {
	mu sync.Mutex
	n  map[string]int
}

// Count returns an API option that counts each request as prefix+operation
// (prefix "s3." gives "s3.PutObject").
func (r *Requests) Count(prefix string) func(*middleware.Stack) error {
	return r.CountExcept(prefix, nil)
}

// skippedKey marks a request CountExcept leaves out.
type skippedKey struct{}

// CountExcept is Count leaving out each request whose input skip reports
// (nil: none), e.g. a once-per-process write that is no job's cost.
func (r *Requests) CountExcept(prefix string, skip func(input any) bool) func(*middleware.Stack) error {
	return func(stack *middleware.Stack) error {
		if skip != nil {
			err := stack.Initialize.Add(middleware.InitializeMiddlewareFunc("awstest.skipRequests",
				func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
					if skip(in.Parameters) {
						ctx = context.WithValue(ctx, skippedKey{}, true)
					}
					return next.HandleInitialize(ctx, in)
				}), middleware.After)
			if err != nil {
				return err
			}
		}
		return stack.Finalize.Add(middleware.FinalizeMiddlewareFunc("awstest.countRequests",
			func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
				if ctx.Value(skippedKey{}) != nil {
					return next.HandleFinalize(ctx, in)
				}
				r.mu.Lock()
				if r.n == nil {
					r.n = map[string]int{}
				}
				r.n[prefix+awsmiddleware.GetOperationName(ctx)]++
				r.mu.Unlock()
				return next.HandleFinalize(ctx, in)
			}), middleware.After)
	}
}

// Take returns the counts since the last Take and starts again from zero.
func (r *Requests) Take() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := r.n
	r.n = nil
	if n == nil {
		n = map[string]int{}
	}
	return n
}
