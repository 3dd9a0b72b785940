package awstest

import (
	"context"
	"sync"
	"sync/atomic"

	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/smithy-go/middleware"
)

// LostResponses lets the next request of an armed operation reach the
// service and then loses its answer: the write was applied, the caller
// cannot know, and the SDK retries it like a dropped connection. It is how
// the stores' tests show that a retried write recognises its own success.
// Install it with a client's APIOptions: o.APIOptions = append(o.APIOptions, f.Install).
type LostResponses struct {
	mu    sync.Mutex
	armed map[string]bool
	fired atomic.Int32
}

// Arm loses the answer of the next request of operation op ("UpdateItem").
func (f *LostResponses) Arm(op string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.armed == nil {
		f.armed = map[string]bool{}
	}
	f.armed[op] = true
}

// Fired is how many answers have been lost so far.
func (f *LostResponses) Fired() int32 { return f.fired.Load() }

// Install adds the fault to a client's middleware stack.
func (f *LostResponses) Install(stack *middleware.Stack) error {
	return stack.Finalize.Add(middleware.FinalizeMiddlewareFunc("awstest.loseResponse",
		func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
			out, md, err := next.HandleFinalize(ctx, in)
			op := awsmiddleware.GetOperationName(ctx)
			f.mu.Lock()
			fire := f.armed[op]
			delete(f.armed, op)
			f.mu.Unlock()
			if fire {
				f.fired.Add(1)
				return middleware.FinalizeOutput{}, md, lostResponse{}
			}
			return out, md, err
		}), middleware.After)
}

// lostResponse is the error a lost answer turns into: retryable, like a
// dropped connection.
type lostResponse struct{}

func (lostResponse) Error() string        { return "injected: response lost after the request was applied" }
func (lostResponse) RetryableError() bool { return true }
